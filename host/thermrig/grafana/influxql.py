"""An InfluxQL query target for grafana-foundation-sdk panels (the SDK ships no InfluxDB query type):
the raw-query form Grafana's InfluxDB data source stores, {refId, query, rawQuery, resultFormat}."""

from __future__ import annotations

from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.models.dashboard import DataSourceRef

DATASOURCE = DataSourceRef(type_val="influxdb", uid="thermrig-influxdb")  # provisioned with this uid


class InfluxQuery(cogvariants.Dataquery):
    def __init__(self, ref_id: str, query: str, result_format: str = "time_series") -> None:
        self.ref_id = ref_id
        self.query = query
        self.result_format = result_format

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": DATASOURCE.to_json(),
            "query": self.query,
            "rawQuery": True,
            "resultFormat": self.result_format,
        }


class InfluxQueryBuilder(cogbuilder.Builder[InfluxQuery]):
    def __init__(self, ref_id: str, query: str, result_format: str = "time_series") -> None:
        self._internal = InfluxQuery(ref_id, query, result_format)

    def build(self) -> InfluxQuery:
        return self._internal
