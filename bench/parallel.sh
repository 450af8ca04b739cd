#!/usr/bin/env bash
# Parallel compression (issue 15 item 2): `wpp compress` at several thread counts, per algorithm,
# on the traces given, side by side in one run. Prints one Markdown table: events/s (wall),
# CPU seconds (the process's, workers included), .wpp bytes and grammar symbols at each
# thread count, and the speed-up and size ratio of each thread count against one thread.
#
#   bench/parallel.sh [--threads "1 2"] [--algorithms "sequitur frequency"] [--wpp PATH]
#                     [--chunk-events N] [--compress-seams] TRACE...
#
# High-entropy synthetic traces: bench/entropy-trace.py EVENTS SEED > t.txt, then
# `wpp trace convert t.txt --to binary -o t.trace`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
THREADS="1 2"
ALGORITHMS="sequitur sequitur1 frequency phrase"
WPP_BIN=${WPP:-}
EXTRA=()
TRACES=()
while (($#)); do
    case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --algorithms) ALGORITHMS=$2; shift 2 ;;
    --wpp) WPP_BIN=$2; shift 2 ;;
    --chunk-events) EXTRA+=(--chunk-events "$2"); shift 2 ;;
    --compress-seams) EXTRA+=(--compress-seams); shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) TRACES+=("$1"); shift ;;
    esac
done
((${#TRACES[@]})) || { sed -n '2,12p' "$0"; exit 2; }
if [[ -z $WPP_BIN ]]; then
    (cd "$ROOT" && cargo build --release -q -p wpp)
    WPP_BIN=$ROOT/target/release/wpp
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "# wpp compress --threads N ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| trace | algorithm | threads | events | events/s | CPU s | symbols | .wpp bytes | speed-up | bytes / 1 thread |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for trace in "${TRACES[@]}"; do
    for alg in $ALGORITHMS; do
        base=
        for n in $THREADS; do
            json=$OUT/r.json
            "$WPP_BIN" compress "$trace" -o "$OUT/o.wpp" --algorithm "$alg" --threads "$n" \
                "${EXTRA[@]}" --json > "$json" 2>/dev/null
            line=$(python3 - "$json" "$(basename "$trace")" "$alg" "$n" "$base" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
name, alg, n, base = sys.argv[2:6]
eps, size = r["events_per_sec"], r["wpp_bytes"]
if base:
    b_eps, b_size = map(float, base.split(","))
    ratio = f"{eps / b_eps:.2f}x | {size / b_size:.3f}"
else:
    ratio = "1.00x | 1.000"
cpu = r["cpu_seconds"]
print(f"{eps},{size}\t| {name} | {alg} | {n} | {r['events']} | {eps / 1e6:.2f} M | "
      f"{cpu:.1f} | {r['symbols']} | {size} | {ratio} |")
PY
)
            [[ -n $base ]] || base=${line%%$'\t'*}
            echo "${line#*$'\t'}"
        done
    done
done
