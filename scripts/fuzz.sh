#!/usr/bin/env bash
# Fuzz the firmware's two text parsers for a bounded time: the serial receive path (tests/fuzz/fuzz_rig.c)
# and the virtual-wires codec (tests/fuzz/fuzz_wires.c), SECONDS split between them, the two side by side
# (a core each). Each target first replays its saved regression inputs (tests/vectors/fuzz/<target>/); a
# crash is copied there as a new one.
# Usage: scripts/fuzz.sh SECONDS
set -euo pipefail
seconds=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
targets=(rig wires)
share=$(( seconds / ${#targets[@]} > 0 ? seconds / ${#targets[@]} : 1 ))

fuzz_one() {
  local target=$1 out saved regressions status runs crashes
  out=$root/build/fuzz/$target
  saved=$root/tests/vectors/fuzz/$target
  mkdir -p "$out/corpus" "$out/artifacts"
  clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -DRIG_BOARD='"fuzz"' \
    -I"$root/firmware/core" "$root"/firmware/core/*.c "$root/tests/fuzz/fuzz_$target.c" -o "$out/fuzz_$target"
  regressions=()
  if [ -d "$saved" ]; then
    mapfile -t regressions < <(find "$saved" -type f | sort)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    "$out/fuzz_$target" "${regressions[@]}" >"$out/regressions.log" 2>&1 \
      || { tail -30 "$out/regressions.log"; echo "fuzz $target: a saved regression input fails again"; exit 1; }
    echo "fuzz $target: ${#regressions[@]} regression inputs replayed clean"
  fi
  cp -n "$root/tests/fuzz/corpus_$target"/* "$out/corpus/"
  status=0
  "$out/fuzz_$target" -max_total_time="$share" -dict="$root/tests/fuzz/$target.dict" -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$out/corpus" >"$out/fuzz.log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log")
  crashes=$(find "$out/artifacts" -type f | wc -l)
  echo "fuzz $target: $runs executions in ${share} s, corpus $(ls "$out/corpus" | wc -l) inputs, $crashes crashes"
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    tail -40 "$out/fuzz.log"
    mkdir -p "$saved"
    for f in "$out"/artifacts/*; do
      cp "$f" "$saved/$(basename "$f")"
      echo "fuzz $target: saved $(basename "$f") as a regression input in tests/vectors/fuzz/$target/"
    done
    return 1
  fi
}

pids=()
for target in "${targets[@]}"; do
  fuzz_one "$target" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
exit "$failed"
