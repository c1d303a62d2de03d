#!/usr/bin/env bash
# Build one InfluxDB OSS server (influxd, no UI) from the Go module proxy and crates.io and install it.
# Used by setup_influxd.sh (1.x) and setup_influxd2.sh (2.x); each build happens once per machine: the
# module, Go build and cargo caches are the user's own, the work folder is under ~/.cache/thermrig.
#
# Usage: build_influxd.sh MODULE VERSION DEST
#   MODULE  github.com/influxdata/influxdb (1.x) or github.com/influxdata/influxdb/v2
#   DEST    the binary to install; left as it is when it already reports VERSION
#
# Obstacles of a build from the proxy, and what this script does about each:
#   1. `go install MODULE/cmd/influxd@VERSION` refuses a module with a replace directive, and flux's
#      pkg-config wrapper needs a main module to find flux in: the module's source is copied to a
#      writable folder and built there;
#   2. 1.9+ and 2.x link flux's Rust library (libflux), built by InfluxData's pkg-config wrapper at the
#      version the module's go.mod pins; flux pins an old Rust toolchain rustup cannot fetch offline,
#      so the build uses the installed stable one (RUSTUP_TOOLCHAIN=stable);
#   3. the wrapper's go.mod parser stops at a `toolchain` line: it is removed from the copy, and a
#      `go` line a patch release above the installed Go is lowered to it (same language version);
#   4. flux-core denies warnings and a current rustc raises new lints: a rustc wrapper caps lints at
#      warnings for every crate of the build, the build script's own copy of flux-core included.
# Each step prints its time; a failed step stops the build with one line naming it and the log.
set -euo pipefail

module=$1
version=$2
dest=$3
name=$(basename "$dest")
work="${XDG_CACHE_HOME:-$HOME/.cache}/thermrig/$name-$version"
log="$work/build.log"
src="$work/src"
tools="$work/bin"

installed_version() { # the version DEST reports: "InfluxDB v1.13.2 (git: ...)" or "InfluxDB v2.8.0 (git: ...) ..."
  [ -x "$1" ] && "$1" version 2>/dev/null | awk '{print $2}'
}
if [ "$(installed_version "$dest" || true)" = "$version" ]; then
  exit 0
fi

mkdir -p "$work" "$(dirname "$dest")"
: >"$log"
started=$SECONDS
step_no=0
steps=6
step() { # step NAME FUNCTION: run one step, its output into the log, its time on the terminal
  local label=$1
  shift
  step_no=$((step_no + 1))
  local t0=$SECONDS
  printf 'setup: %s %s [%d/%d] %s ... ' "$name" "$version" "$step_no" "$steps" "$label"
  echo "== $label" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    echo "failed"
    echo "setup: $name $version failed at step '$label' after $((SECONDS - t0)) s (log: $log)" >&2
    exit 1
  fi
  echo "$((SECONDS - t0)) s"
}

# A fresh Debian machine may lack the Rust toolchain libflux needs (Rust 1.72 or later: bookworm's
# rustc is 1.63, its rustc-web is current).
rust_toolchain() {
  if command -v cargo >/dev/null 2>&1 && command -v rustc >/dev/null 2>&1; then
    rustc --version
    return 0
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq rustc-web cargo-web
  rustc --version
}

json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p"; }

module_source() {
  local info dir zip have want
  info=$(cd "$work" && go mod download -json "$module@$version" || true)
  echo "$info"
  dir=$(json_field Dir <<<"$info")
  zip=$(json_field Zip <<<"$info")
  rm -rf "$src" "$work/unzipped"
  if [ -n "$dir" ] && [ -d "$dir" ]; then
    cp -r "$dir" "$src" || return 1
  elif [ -n "$zip" ] && [ -f "$zip" ] && json_field Error <<<"$info" | grep -q 'requires go '; then
    # downloaded, but Go leaves a module asking for a newer Go packed: unpack it ourselves (its go line
    # is lowered below when only the patch release differs)
    python3 -m zipfile -e "$zip" "$work/unzipped" || return 1
    mv "$work/unzipped/$module@$version" "$src" || return 1
    rm -rf "$work/unzipped"
  else
    return 1
  fi
  chmod -R u+w "$src"
  cd "$src" || return 1
  go mod edit -toolchain=none || return 1
  have=$(go env GOVERSION)
  have=${have#go}
  want=$(go mod edit -json | json_field Go)
  if [ "${want%.*}" = "${have%.*}" ] && [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | tail -1)" = "$want" ] &&
    [ "$want" != "$have" ]; then
    echo "go.mod asks for go $want; building with the installed go $have (same language version)"
    go mod edit -go="$have" || return 1
  fi
}

pkg_config_wrapper() {
  mkdir -p "$tools"
  if ! (cd "$src" && go build -o "$tools/pkg-config" github.com/influxdata/pkg-config); then
    # The proxy refuses pkg-config v0.3.1 (403, "not available"), the wrapper influxdb 2.10.0 pins; the
    # build tool alone is taken at v0.3.0, the version influxdb 1.13.2 pins, built in a module of its
    # own: influxdb's go.mod is left as it is (`go get` there would downgrade flux with it).
    echo "the pinned pkg-config wrapper cannot be had: building v0.3.0 on its own"
    rm -rf "$work/wrapper" && mkdir -p "$work/wrapper" || return 1
    (cd "$work/wrapper" && go mod init wrapper && GOFLAGS=-mod=mod go get github.com/influxdata/pkg-config@v0.3.0 &&
      go build -o "$tools/pkg-config" github.com/influxdata/pkg-config) || return 1
  fi
  cat >"$tools/rustc-cap-lints" <<'EOF'
#!/bin/sh
exec "$@" --cap-lints=warn
EOF
  chmod +x "$tools/rustc-cap-lints"
}

libflux() { # the wrapper builds libflux with cargo when asked for flux's flags
  if ! (cd "$src" && go list -m github.com/influxdata/flux) >/dev/null 2>&1; then
    echo "no flux in this version"
    return 0
  fi
  (cd "$src" && "$PKG_CONFIG" --cflags --libs flux)
}

influxd() {
  local ver=$version tags=""
  # `influxd version` prints "InfluxDB v%s" in 1.8, "InfluxDB %s" of the release tag in 1.9+ and 2.x
  grep -q 'InfluxDB v%s' "$src/cmd/influxd/main.go" && ver=${version#v}
  # 2.x keeps its metadata in SQLite; these are the tags its release builds use
  [ "$module" = github.com/influxdata/influxdb/v2 ] && tags="-tags sqlite_foreign_keys,sqlite_json"
  # shellcheck disable=SC2086
  (cd "$src" && go build $tags \
    -ldflags "-X main.version=$ver -X main.commit=module-proxy -X main.branch=$version -X main.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    -o "$tools/influxd" ./cmd/influxd)
}

install_binary() {
  [ "$(installed_version "$tools/influxd")" = "$version" ] || return 1
  install -m 0755 "$tools/influxd" "$dest.tmp" && mv "$dest.tmp" "$dest"
}

export RUSTUP_TOOLCHAIN=stable RUSTC_WRAPPER="$tools/rustc-cap-lints" PKG_CONFIG="$tools/pkg-config" GOTOOLCHAIN=local
echo "setup: building $name $version from the Go module proxy (once; log $log)"
step "rust toolchain" rust_toolchain
step "module source" module_source
step "pkg-config wrapper" pkg_config_wrapper
step "libflux (rust)" libflux
step "influxd (go)" influxd
step "install as $dest" install_binary
echo "setup: $name $version built and installed in $((SECONDS - started)) s"
