#!/usr/bin/env bash
# Compressors on real recordings: runs `wpp compress --algorithm all --json` on a prefix of each
# raw trace ({zlib,bzip2,lua,sqlite} x {paths,blocks}-raw.trace) and prints one Markdown table
# (symbols, rules, .wpp bytes, CPU seconds, peak heap bytes per event, per algorithm) plus the
# average reduction against SEQUITUR computed two ways. See bench/README.md.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: bench/compressors.sh [--bytes N] [--algorithm A] [--window N] [--wpp PATH]
                            [--profile P] [--json-dir D] [--traces "W/K ..."] [DIR]

DIR holds WORKLOAD/KIND-raw.trace (default: bench/build of this checkout).
  --bytes N        prefix length in bytes (default 40000000; 0 = whole trace). Stored bytes:
                   the runtime zstd-compresses chunks (14-150x), so BENCHMARKS.md's 40 MB
                   prefixes are of plain recordings (WPP_ZSTD_LEVEL=0 when recording)
  --algorithm A    all (default), sequitur, sequitur1, frequency or phrase
  --window N       passed to `wpp compress` (frequency's bounded-buffer form)
  --wpp PATH       the wpp binary (default: $WPP, else cargo build --profile P -p wpp)
  --profile P      cargo profile for building wpp (default release)
  --json-dir D     keep each trace's JSON report in D
  --traces LIST    traces to run, as WORKLOAD/KIND (default: all eight)
EOF
}

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
BYTES=40000000
ALGORITHM=all
WINDOW=
WPP_BIN=${WPP:-}
PROFILE=release
JSON_DIR=
TRACES="zlib/paths zlib/blocks bzip2/paths bzip2/blocks lua/paths lua/blocks sqlite/paths sqlite/blocks"
DIR=$BENCH_DIR/build

while (($#)); do
    case $1 in
    --bytes) BYTES=$2; shift 2 ;;
    --algorithm) ALGORITHM=$2; shift 2 ;;
    --window) WINDOW=$2; shift 2 ;;
    --wpp) WPP_BIN=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --json-dir) JSON_DIR=$2; shift 2 ;;
    --traces) TRACES=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "compressors.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) DIR=$1; shift ;;
    esac
done

if [[ -z $WPP_BIN ]]; then
    (cd "$ROOT" && cargo build --quiet --profile "$PROFILE" -p wpp)
    dir=$PROFILE
    [[ $PROFILE == dev ]] && dir=debug
    WPP_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/$dir/wpp
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wpp-compressors.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
[[ -n $JSON_DIR ]] && mkdir -p "$JSON_DIR"

extra=()
[[ -n $WINDOW ]] && extra+=(--window "$WINDOW")
for t in $TRACES; do
    src=$DIR/${t%/*}/${t#*/}-raw.trace
    [[ -f $src ]] || { echo "compressors.sh: no trace $src" >&2; exit 1; }
    name=${t/\//-}
    if ((BYTES > 0)); then
        # A prefix of a chunked trace reads up to its last whole chunk (wpp warns; expected).
        head -c "$BYTES" "$src" >"$WORK/$name.trace"
        input=$WORK/$name.trace
    else
        input=$src
    fi
    echo "compressing $t ..." >&2
    "$WPP_BIN" compress "$input" -o "$WORK/$name.wpp" --algorithm "$ALGORITHM" "${extra[@]}" \
        --json 2> >(grep -v 'is truncated at byte offset' >&2) |
        jq -c --arg t "$t" '{trace: $t} + .' >"$WORK/$name.json"
    rm -f "$WORK/$name.trace" "$WORK/$name.wpp"
    [[ -n $JSON_DIR ]] && cp "$WORK/$name.json" "$JSON_DIR/"
    cat "$WORK/$name.json" >>"$WORK/all.jsonl"
done

python3 - "$WORK/all.jsonl" "$BYTES" <<'EOF'
import json, sys

reports = [json.loads(line) for line in open(sys.argv[1])]
prefix = int(sys.argv[2])
print(f"prefix: {'whole traces' if prefix == 0 else f'{prefix} bytes'}\n")
print("| trace | events | algorithm | symbols | rules | .wpp bytes | CPU s | peak B/event | symbols / SEQUITUR |")
print("|---|---|---|---|---|---|---|---|---|")
base = {}
for rep in reports:
    for run in rep["runs"]:
        if run["algorithm"] == "sequitur":
            base[rep["trace"]] = run
for rep in reports:
    for run in rep["runs"]:
        seq = base.get(rep["trace"])
        rel = f"{run['symbols'] / seq['symbols']:.3f}" if seq else "-"
        cpu = run["cpu_seconds"]
        algo = run["algorithm"] + (f" (window {run['window']})" if run["window"] else "")
        print(f"| {rep['trace']} | {run['events']:,} | {algo} | {run['symbols']:,} | {run['rules']:,} "
              f"| {run['wpp_bytes']:,} | {'-' if cpu is None else f'{cpu:.2f}'} "
              f"| {run['peak_heap_bytes'] / max(run['events'], 1):.1f} | {rel} |")

def summary(algorithm):
    pairs = [(base[rep["trace"]], run) for rep in reports for run in rep["runs"]
             if run["algorithm"] == algorithm and rep["trace"] in base]
    if not pairs or algorithm == "sequitur":
        return
    n = len(pairs)
    print(f"\n{algorithm} vs sequitur over {n} traces:")
    for field, what in (("symbols", "grammar symbols"), ("wpp_bytes", ".wpp bytes")):
        per_trace = sum(1 - r[field] / s[field] for s, r in pairs) / n
        # Tallam-Gupta Table II: compression ratio = input / output, averaged over programs,
        # then the averages compared (681 -> 1048).
        ratio_s = sum(s["events"] / s[field] for s, _ in pairs) / n
        ratio_r = sum(r["events"] / r[field] for _, r in pairs) / n
        print(f"  {what}: mean of per-trace reductions {100 * per_trace:.1f} %; "
              f"ratio of mean compression ratios (Table II method) {ratio_s:.1f} -> {ratio_r:.1f} "
              f"events/{field}, {100 * (1 - ratio_s / ratio_r):.1f} % smaller")
    cpu = [r["cpu_seconds"] / s["cpu_seconds"] for s, r in pairs
           if r["cpu_seconds"] and s["cpu_seconds"]]
    if cpu:
        print(f"  CPU time / SEQUITUR's: {min(cpu):.2f}-{max(cpu):.2f}x")
    peak = [r["peak_heap_bytes"] / max(r["events"], 1) for _, r in pairs]
    print(f"  peak heap: {min(peak):.1f}-{max(peak):.1f} B/event")

for algorithm in dict.fromkeys(run["algorithm"] for rep in reports for run in rep["runs"]):
    summary(algorithm)
EOF
