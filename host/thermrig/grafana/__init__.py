"""Grafana dashboards and provisioning for thermrig's InfluxDB, generated with grafana-foundation-sdk."""
