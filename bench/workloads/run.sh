#!/usr/bin/env bash
# Run the workloads built by build.sh and save everything that must be identical between two
# builds (native vs. instrumented, -O2 vs. -O0, ...).
#
# Usage: bench/workloads/run.sh [--size small|full] [--reps N] [--prepare-only] DIR [WORKLOAD...]
#
#   DIR          a build.sh output directory (holds the executables lua sqlite bzip2 zlib)
#   --size S     small (default; each workload well under 1 s, for CI tests) or full (about 1 s
#                of native CPU time per workload on the reference machine)
#   --reps N     run each workload N times (default 1); every repetition must produce the same
#                results (a determinism check), times of all repetitions are recorded
#   WORKLOAD...  any of: lua sqlite bzip2 zlib (default: those present in DIR)
#
# Results go to DIR/results/SIZE/:
#   WORKLOAD/stdout.txt    the program's stdout (for bzip2: a summary, see below)   [compared]
#   WORKLOAD/exit.txt      exit status of every program invocation                 [compared]
#   WORKLOAD/stderr.txt    stderr (NOT compared: a recording runtime may log there)
#   WORKLOAD/cmd.txt       the exact command lines, run in WORKLOAD/work/
#   WORKLOAD/work/         the working directory of the run; files a recording runtime writes
#                          into the current directory (e.g. PROGRAM.PID.wpp) land here and stay
#                          until the next run of that workload
#   WORKLOAD/times.tsv     workload, rep, wall, user, sys seconds of the latest invocation
#                          (bash `time`; input preparation and checksumming excluded)
#   times.tsv              all workloads' times.tsv with a header
# The environment is passed through unchanged (WPP_OUT, WPP_RAW, ... reach the programs).
# For bzip2 the summary holds size and SHA-256 of the corpus and of every file bzip2 wrote, and
# the round-trip verdicts; bzip2's own stdout is compressed data, kept in work/.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SIZE=small
REPS=1
PREPARE_ONLY=0
DIR=
WORKLOADS=()
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --size) SIZE=$2; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --reps) REPS=$2; shift 2 ;;
    --reps=*) REPS=${1#*=}; shift ;;
    --prepare-only) PREPARE_ONLY=1; shift ;;
    -h | --help) usage; exit 0 ;;
    lua | sqlite | bzip2 | zlib) WORKLOADS+=("$1"); shift ;;
    -*) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) if [[ -z $DIR ]]; then DIR=$1; shift; else echo "run.sh: unknown workload $1" >&2; exit 2; fi ;;
    esac
done
[[ -n $DIR && -d $DIR ]] || { echo "run.sh: no build directory given (or not found): '$DIR'" >&2; usage >&2; exit 2; }
DIR=$(cd "$DIR" && pwd)

# ---- input sizes ------------------------------------------------------------------------------
# lua: bench.lua's N; sqlite: scale N (800 N customers, 6000 N orders); bzip2: corpus of N * 64 KiB;
# zlib: corpus of N * 64 KiB. `full` was tuned to about 1 s of CPU time each with clang-22 -O2
# on the reference machine (see bench/README.md).
case $SIZE in
small) N_LUA=1 N_SQLITE=1 N_BZIP2=2 N_ZLIB=1 ;;
full) N_LUA=42 N_SQLITE=26 N_BZIP2=44 N_ZLIB=32 ;;
*) echo "run.sh: --size must be small or full" >&2; exit 2 ;;
esac
# -----------------------------------------------------------------------------------------------

if [[ ${#WORKLOADS[@]} -eq 0 ]]; then
    for w in lua sqlite bzip2 zlib; do [[ -x $DIR/$w ]] && WORKLOADS+=("$w"); done
fi
[[ ${#WORKLOADS[@]} -gt 0 ]] || { echo "run.sh: no workloads built in $DIR" >&2; exit 2; }

RES=$DIR/results/$SIZE
mkdir -p "$RES" "$DIR/inputs"

# bzip2's corpus, generated once per size by the native helper (never instrumented).
corpus() {
    local c=$DIR/inputs/bzip2-corpus-$N_BZIP2
    if [[ ! -s $c ]]; then
        local gen=$DIR/gencorpus
        if [[ ! -x $gen ]]; then
            local hostcc=(clang-22 -O2)
            command -v clang-22 >/dev/null 2>&1 || hostcc=(cc -O2)
            "${hostcc[@]}" "$HERE/bzip2/gencorpus.c" -o "$gen"
        fi
        "$gen" "$N_BZIP2" >"$c.tmp"
        mv "$c.tmp" "$c"
    fi
    echo "$c"
}

if [[ $PREPARE_ONLY == 1 ]]; then
    [[ " ${WORKLOADS[*]} " == *" bzip2 "* ]] && corpus >/dev/null
    exit 0
fi

sha() { sha256sum "$1" | cut -d' ' -f1; }

# run_W: runs the workload in the current directory (WORKLOAD/work), stdout/stderr already
# redirected by the caller; appends "step status" lines to ../exit.txt.
step() { # step NAME CMD... (with optional redirections done by the caller)
    local name=$1 rc=0
    shift
    "$@" || rc=$?
    echo "$name $rc" >>../exit.txt
}
run_lua() { step lua "$DIR/lua" bench.lua "$N_LUA"; }
run_sqlite() { step sqlite "$DIR/sqlite" "$N_SQLITE"; }
run_zlib() { step zlib "$DIR/zlib" "$N_ZLIB"; }
# bzip2 runs with argv[0] = "bzip2" whatever directory holds it: it scans argv[0] (progName),
# so a path naming the mode's directory would make each mode's control flow differ.
bzip2() { (exec -a bzip2 "$DIR/bzip2" "$@"); }
run_bzip2() {
    step compress-9-stdin bzip2 -9 -c <corpus >c9.bz2
    step decompress-stdin bzip2 -d -c <c9.bz2 >c9.out
    step decompress-small bzip2 -d -s -c <c9.bz2 >c9s.out
    step compress-1-file bzip2 -1 -c corpus >c1.bz2
    step test-file bzip2 -t c1.bz2
    step decompress-file bzip2 -d -c c1.bz2 >c1.out
}
prepare() { # in work dir, untimed
    case $1 in
    lua) cp "$HERE/lua/bench.lua" bench.lua ;;
    bzip2) ln -sf "$(corpus)" corpus ;;
    esac
}
summarize() { # in work dir, untimed; writes the compared summary for bzip2
    case $1 in
    bzip2)
        {
            printf 'corpus %s %s\n' "$(stat -L -c %s corpus)" "$(sha corpus)"
            for f in c9.bz2 c1.bz2 c9.out c9s.out c1.out; do
                printf '%s %s %s\n' "$f" "$(stat -c %s "$f")" "$(sha "$f")"
            done
            for f in c9.out c9s.out c1.out; do
                if cmp -s corpus "$f"; then echo "round-trip $f ok"; else echo "round-trip $f DIFFERS"; fi
            done
        } >../stdout.txt
        ;;
    esac
}
cmdline() {
    case $1 in
    lua) echo "$DIR/lua bench.lua $N_LUA" ;;
    sqlite) echo "$DIR/sqlite $N_SQLITE" ;;
    zlib) echo "$DIR/zlib $N_ZLIB" ;;
    bzip2)
        local b="exec -a bzip2 $DIR/bzip2"
        printf '%s\n' "# corpus -> $(corpus)" "($b -9 -c) <corpus >c9.bz2" "($b -d -c) <c9.bz2 >c9.out" \
            "($b -d -s -c) <c9.bz2 >c9s.out" "($b -1 -c corpus) >c1.bz2" "($b -t c1.bz2)" \
            "($b -d -c c1.bz2) >c1.out"
        ;;
    esac
}

TIMEFORMAT='%3R %3U %3S'
status=0
for w in "${WORKLOADS[@]}"; do
    [[ -x $DIR/$w ]] || { echo "run.sh: $DIR/$w not built" >&2; status=1; continue; }
    wd=$RES/$w
    mkdir -p "$wd"
    cmdline "$w" >"$wd/cmd.txt"
    : >"$wd/times.tsv"
    for ((rep = 1; rep <= REPS; rep++)); do
        rm -rf "$wd/work" "$wd/exit.txt" "$wd/stdout.txt" "$wd/stderr.txt"
        mkdir -p "$wd/work"
        : >"$wd/exit.txt"
        t=$(
            cd "$wd/work"
            prepare "$w"
            { time "run_$w" >../stdout.txt 2>../stderr.txt; } 2>&1
        )
        (cd "$wd/work" && summarize "$w")
        read -r wall user sys <<<"$t"
        printf '%s\t%d\t%s\t%s\t%s\n' "$w" "$rep" "$wall" "$user" "$sys" >>"$wd/times.tsv"
        printf 'run.sh: %-6s %-5s rep %d: %6.3f s wall, %6.3f s user, %6.3f s sys\n' "$w" "$SIZE" "$rep" "$wall" "$user" "$sys" >&2
        if [[ $rep == 1 ]]; then
            cp "$wd/stdout.txt" "$wd/.stdout.rep1"
            cp "$wd/exit.txt" "$wd/.exit.rep1"
        elif ! cmp -s "$wd/stdout.txt" "$wd/.stdout.rep1" || ! cmp -s "$wd/exit.txt" "$wd/.exit.rep1"; then
            echo "run.sh: $w: repetition $rep differs from repetition 1 (nondeterministic!)" >&2
            status=1
        fi
    done
    rm -f "$wd/.stdout.rep1" "$wd/.exit.rep1"
    if grep -qv ' 0$' "$wd/exit.txt" || grep -q 'DIFFERS' "$wd/stdout.txt"; then
        echo "run.sh: $w FAILED (see $wd/exit.txt, $wd/stderr.txt)" >&2
        status=1
    fi
done
# RES/times.tsv: the latest times of every workload run at this size
{
    printf 'workload\trep\twall_s\tuser_s\tsys_s\n'
    for w in lua sqlite bzip2 zlib; do [[ -f $RES/$w/times.tsv ]] && cat "$RES/$w/times.tsv"; done
} >"$RES/times.tsv"
exit $status
