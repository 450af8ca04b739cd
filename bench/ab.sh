#!/usr/bin/env bash
# Side-by-side CPU time of one recording mode in two builds of wpp (before/after a change):
# each build folder made by `bench/check.sh --modes MODE` with its own wpp, e.g.
#   WPP=old/target/release/wpp WPP_RT_LIB=old/target/release/libwpp_rt.a \
#     WPP_CHECK_BUILD=/tmp/a bench/check.sh --modes addr zlib lua
#   WPP_CHECK_BUILD=/tmp/b bench/check.sh --modes addr zlib lua
#   bench/ab.sh /tmp/a /tmp/b addr zlib lua
# Runs native and MODE of both builds alternately, REPS times (default 3; $REPS), on the
# inputs of size $SIZE (default small; the check.sh folders hold the builds, any size runs),
# and prints per run: workload, repetition, build, mode, user+sys seconds, wall seconds,
# bytes of the mode's output files.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
[[ $# -ge 4 ]] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
A=$1 B=$2 MODE=$3 SIZE=${SIZE:-small}
shift 3
for w in "$@"; do
    for rep in $(seq "${REPS:-3}"); do
        for b in "$A" "$B"; do
            for m in native "$MODE"; do
                run_mode "$b" "$m" "$SIZE" 1 "$w" >/dev/null 2>&1 || echo "run failed: $b $w $m" >&2
                t=$(awk '{print $4+$5, $3}' "$b/$m/results/$SIZE/$w/times.tsv" | sort -n | head -1)
                bytes=$(outputs "$b" "$m" "$SIZE" "$w" | xargs -r cat | wc -c)
                echo "$w $rep $b $m $t $bytes"
            done
        done
    done
done
