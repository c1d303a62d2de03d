#!/usr/bin/env bash
# Fuzz the firmware's receive path (tests/fuzz/fuzz_rig.c) for a bounded time; replay the saved
# regression inputs first. A crash is copied into tests/vectors/fuzz/ as a new regression input.
# Usage: scripts/fuzz.sh SECONDS
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/fuzz
mkdir -p "$out/corpus" "$out/artifacts"
clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DRIG_BOARD='"fuzz"' \
  -I"$root/firmware/core" "$root"/firmware/core/*.c "$root/tests/fuzz/fuzz_rig.c" -o "$out/fuzz_rig"
mapfile -t regressions < <(find "$root/tests/vectors/fuzz" -type f ! -name '*.md' | sort)
if [ ${#regressions[@]} -gt 0 ]; then
  "$out/fuzz_rig" "${regressions[@]}" >"$out/regressions.log" 2>&1 \
    || { tail -30 "$out/regressions.log"; echo "fuzz: a saved regression input fails again"; exit 1; }
  echo "fuzz: ${#regressions[@]} regression inputs replayed clean"
fi
cp -n "$root"/tests/fuzz/corpus/* "$out/corpus/"
status=0
"$out/fuzz_rig" -max_total_time="$seconds" -dict="$root/tests/fuzz/frames.dict" -print_final_stats=1 \
  -artifact_prefix="$out/artifacts/" "$out/corpus" >"$out/fuzz.log" 2>&1 || status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log")
crashes=$(find "$out/artifacts" -type f | wc -l)
echo "fuzz: $runs executions in ${seconds} s, corpus $(ls "$out/corpus" | wc -l) inputs, $crashes crashes"
if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  tail -40 "$out/fuzz.log"
  for f in "$out"/artifacts/*; do
    cp "$f" "$root/tests/vectors/fuzz/$(basename "$f")"
    echo "fuzz: saved $(basename "$f") as a regression input in tests/vectors/fuzz/"
  done
  exit 1
fi
