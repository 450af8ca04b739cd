#!/usr/bin/env bash
# Table X of issue 11 (BENCHMARKS.md): user + system CPU of native, trace-addr, ewpp-filter and
# ewpp on zlib, bzip2, Lua and SQLite (or the WORKLOADs given; small inputs), best of 3, in the
# builds bench/check.sh made (SQLite's ewpp-filter build only with a check.sh whose not_built
# allows it; without it, that row says "run failed", the others go on and the exit status is 1):
#   bench/check.sh --modes "addr ewpp filter" && bench/deps-timing.sh [WORKLOAD...]
set -euo pipefail
cd "$(dirname "$0")/.."
export WPP=${WPP:-$PWD/target/release/wpp} WPP_RT_LIB=${WPP_RT_LIB:-$PWD/target/release/libwpp_rt.a}
. bench/lib.sh
B=${WPP_CHECK_BUILD:-$PWD/bench/build/check}
WORKLOADS=("$@")
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=(zlib bzip2 lua sqlite)
failed=0
for w in "${WORKLOADS[@]}"; do
  for m in native addr filter ewpp; do
    run_mode "$B" "$m" small 3 "$w" >/dev/null 2>&1 || { echo "$w $m run failed"; failed=1; continue; }
    best=$(awk '{print $4+$5}' "$B/$m/results/small/$w/times.tsv" | sort -n | head -1)
    echo "$w $m $best"
  done
done
exit "$failed"
