#!/usr/bin/env bash
# Build influxd 1.8.10 from the Go module proxy (about 80 s once), unless that version is installed.
set -euo pipefail
version=v1.8.10
bin="$(go env GOPATH)/bin/influxd"
if [ -x "$bin" ] && go version -m "$bin" 2>/dev/null | grep -q "github.com/influxdata/influxdb[[:space:]]*$version"; then
  exit 0
fi
echo "setup: building influxd $version with go install (about 80 s, once)"
go install "github.com/influxdata/influxdb/cmd/influxd@$version"
