#!/usr/bin/env bash
# InfluxDB 2.x (influxd2: the server the 2.x tests and a local 2.x run), built once per machine from the
# Go module proxy and crates.io by build_influxd.sh: about 10 min on one free core the first time, then
# nothing (a second run with this version installed returns at once).
# THERMRIG_INFLUXD2_VERSION builds another 2.x release (v2.7.12 and later build the same way).
set -euo pipefail
version="${THERMRIG_INFLUXD2_VERSION:-v2.8.0}"
exec bash "$(dirname "$0")/build_influxd.sh" github.com/influxdata/influxdb/v2 "$version" "$(go env GOPATH)/bin/influxd2"
