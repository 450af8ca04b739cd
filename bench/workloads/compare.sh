#!/usr/bin/env bash
# Compare the results of two builds run by run.sh; exit 1 on any difference.
#
# Usage: bench/workloads/compare.sh [--size small|full] [--stderr] DIR_A DIR_B [WORKLOAD...]
#
# Compares, for every size run in both directories (or only --size) and every workload run in
# either (or only the WORKLOADs named), WORKLOAD/stdout.txt and WORKLOAD/exit.txt byte for byte
# (--stderr: stderr.txt too).
# A workload present on one side only is a difference. Comparing nothing at all is an error.
set -euo pipefail

SIZES=()
WORKLOADS=()
FILES=(stdout.txt exit.txt)
ARGS=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --size) SIZES+=("$2"); shift 2 ;;
    --size=*) SIZES+=("${1#*=}"); shift ;;
    --stderr) FILES+=(stderr.txt); shift ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    lua | sqlite | bzip2 | zlib) WORKLOADS+=("$1"); shift ;;
    *) ARGS+=("$1"); shift ;;
    esac
done
[[ ${#ARGS[@]} -eq 2 ]] || { echo "usage: compare.sh [--size small|full] [--stderr] DIR_A DIR_B [WORKLOAD...]" >&2; exit 2; }
A=${ARGS[0]}/results
B=${ARGS[1]}/results
if [[ ${#SIZES[@]} -eq 0 ]]; then
    for s in small full; do [[ -d $A/$s && -d $B/$s ]] && SIZES+=("$s"); done
fi
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=(lua sqlite bzip2 zlib)
[[ ${#SIZES[@]} -gt 0 ]] || { echo "compare.sh: no size was run in both $A and $B" >&2; exit 2; }

status=0
compared=0
for s in "${SIZES[@]}"; do
    for w in "${WORKLOADS[@]}"; do
        ha=0 hb=0
        [[ -f $A/$s/$w/stdout.txt ]] && ha=1
        [[ -f $B/$s/$w/stdout.txt ]] && hb=1
        [[ $ha == 0 && $hb == 0 ]] && continue
        if [[ $ha != "$hb" ]]; then
            echo "DIFF  $s/$w: results only in $([[ $ha == 1 ]] && echo "$A" || echo "$B")"
            status=1
            continue
        fi
        same=1
        for f in "${FILES[@]}"; do
            if ! cmp -s "$A/$s/$w/$f" "$B/$s/$w/$f"; then
                same=0
                echo "DIFF  $s/$w/$f:"
                diff -u "$A/$s/$w/$f" "$B/$s/$w/$f" | head -n 20 || true
            fi
        done
        compared=$((compared + 1))
        if [[ $same == 1 ]]; then echo "same  $s/$w"; else status=1; fi
    done
done
[[ $compared -gt 0 ]] || { echo "compare.sh: nothing to compare" >&2; exit 2; }
exit $status
