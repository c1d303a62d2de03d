#!/usr/bin/env bash
# The embedded default, InfluxDB 1.x (influxd), built once per machine from the Go module proxy and
# crates.io by build_influxd.sh (a second run with this version installed returns at once). Beside it,
# influxd-1.8.10, the embedded default of earlier releases: the upgrade test starts it to write the data
# a user's earlier `thermrig db up` left, then reads that data with the default.
set -euo pipefail
version=v1.13.2
gobin="$(go env GOPATH)/bin"
bash "$(dirname "$0")/build_influxd.sh" github.com/influxdata/influxdb "$version" "$gobin/influxd"

earlier=v1.8.10
if ! go version -m "$gobin/influxd-${earlier#v}" 2>/dev/null | grep -q "github.com/influxdata/influxdb[[:space:]]*$earlier"; then
  t0=$SECONDS
  echo "setup: building influxd-${earlier#v} with go install (about 80 s, once)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if ! GOBIN="$tmp" GOTOOLCHAIN=local go install "github.com/influxdata/influxdb/cmd/influxd@$earlier"; then
    echo "setup: influxd-${earlier#v} failed at step 'go install'" >&2
    exit 1
  fi
  mv "$tmp/influxd" "$gobin/influxd-${earlier#v}"
  echo "setup: influxd-${earlier#v} built in $((SECONDS - t0)) s"
fi
