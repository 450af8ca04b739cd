#!/usr/bin/env bash
# Any length, bounded memory (issue 15 item 3): `wpp compress` of synthetic traces of growing
# length with segments, and without where that fits, side by side. Prints one Markdown table:
# per length and segment size, the segments written, peak RSS (`/usr/bin/time -v`, the whole
# process), peak heap (wpp's own count, above what was live before compressing), events/s
# (wall, end to end: reading, compressing, writing), .wpp bytes. Flat peak RSS and events/s
# down a column of lengths is the claim.
#
#   bench/segments.sh [--lengths "1e7 1e8 1e9"] [--segment-events N] [--unsegmented-up-to N]
#                     [--algorithm phrase] [--threads N] [--kind blocks|paths] [--wpp PATH]
#
# Each trace is written by `wpp synth` (seed 1) into a temporary folder, compressed, then
# deleted before the next length, so disk use is one trace (~0.1 byte per event). Not part of
# bench/check.sh: 10^9 events take minutes.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LENGTHS="1e7 1e8 1e9"
SEGMENT=$((1 << 25))
UNSEGMENTED_UP_TO=100000000
ALGORITHM=phrase
THREADS=$(nproc)
KIND=blocks
WPP_BIN=${WPP:-}
while (($#)); do
    case $1 in
    --lengths) LENGTHS=$2; shift 2 ;;
    --segment-events) SEGMENT=$2; shift 2 ;;
    --unsegmented-up-to) UNSEGMENTED_UP_TO=$2; shift 2 ;;
    --algorithm) ALGORITHM=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --kind) KIND=$2; shift 2 ;;
    --wpp) WPP_BIN=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
    esac
done
if [[ -z $WPP_BIN ]]; then
    (cd "$ROOT" && cargo build --release -q -p wpp)
    WPP_BIN=$ROOT/target/release/wpp
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "# wpp compress --segment-events ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "algorithm $ALGORITHM, --threads $THREADS, synthetic $KIND traces (wpp synth --seed 1)"
echo
echo "| events | --segment-events | segments | peak RSS MiB | peak heap MiB | events/s | .wpp bytes |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for length in $LENGTHS; do
    n=$(python3 -c "print(int(float('$length')))")
    trace=$OUT/t.trace
    "$WPP_BIN" synth --seed 1 --events "$n" --kind "$KIND" -o "$trace" 2>/dev/null
    segments=("$SEGMENT")
    ((n <= UNSEGMENTED_UP_TO)) && segments+=(0)
    for seg in "${segments[@]}"; do
        /usr/bin/time -v -o "$OUT/time" "$WPP_BIN" compress "$trace" -o "$OUT/o.wpp" \
            --algorithm "$ALGORITHM" --threads "$THREADS" --segment-events "$seg" \
            --zstd-level 3 --json > "$OUT/r.json" 2>/dev/null
        rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time")
        python3 - "$OUT/r.json" "$n" "$seg" "$rss" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
n, seg, rss = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f"| {n:.0e} | {seg if seg else '0 (one)'} | {r['segments']} | {rss / 1024:.0f} "
      f"| {r['peak_heap_bytes'] / 2**20:.0f} | {r['events_per_sec'] / 1e6:.1f} M "
      f"| {r['wpp_bytes']} |")
PY
        rm -f "$OUT/o.wpp"
    done
    rm -f "$trace"
done
