#!/usr/bin/env bash
# Benchmark of the recorder on the real workloads (issue 4, Performance): native time, the
# slowdown of every recording mode, trace and .wpp sizes, and Larus Table 1's columns of the
# online .wpp. Built on bench/workloads/{build,run,compare}.sh (see bench/README.md).
#
# Usage: bench/run.sh [--size small|full] [--modes "M..."] [--reps N] [--cflags F]
#                     [--wpp PATH] [--profile P] [--force] [--no-save] [-j N] [WORKLOAD...]
#
#   WORKLOAD...   any of lua sqlite bzip2 zlib (default: all four)
#   --size S      full (default; about 1 s natively per workload) or small
#   --modes "M"   default "bl ppp paths-raw paths-wpp blocks-raw"; also blocks-wpp, probes-raw and
#                 probes-wpp (trace-blocks with a probe per block, `--no-elide`).
#                 ppp's interesting set is the bl run's profile, so bl is run whenever ppp is.
#   --reps N      runs per build (default 3 for full, 1 for small); the best time counts, and
#                 every repetition must print the same output
#   --cflags F    flags of every build, native and instrumented (default -O2)
#   --wpp PATH    wpp to use (built with --features llvm); default: $WPP, else
#                 `cargo build --profile P -p wpp --features llvm -p wpp-rt` (P default:
#                 release) in ${CARGO_TARGET_DIR:-target}
#   --force       rebuild every executable (default: when older than wpp, its runtime, the
#                 workload's driver or build.sh, or built with other flags)
#   --no-save     print the report only (default: also append it to bench/results/DATE.md)
#   -j N          builds at a time (default: nproc); they all finish before anything is timed,
#                 except ppp's, which is built alone after the bl run
#
# Builds and run results: bench/build/bench/ (WPP_BENCH_BUILD): cc-VARIANT/WORKLOAD/ (one build
# per `wpp cc --mode`, and cc-native/), native/ and MODE/ (the runs of each mode, see
# workloads/run.sh; results/SIZE/WORKLOAD/work/ holds the recorder's output files).
# The report (markdown) goes to stdout; progress to stderr. Exit status 1 if any mode's output
# differed from native or a build/run failed (the report is still written).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SIZE=full
MODES="bl ppp paths-raw paths-wpp blocks-raw"
REPS=
CFLAGS=-O2
PROFILE=release
FORCE=0
SAVE=1
JOBS=$(nproc 2>/dev/null || echo 2)
WORKLOADS=()
ARGS="$*"
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --size) SIZE=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    --cflags) CFLAGS=$2; shift 2 ;;
    --wpp) WPP=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    --no-save) SAVE=0; shift ;;
    -j) JOBS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    lua | sqlite | bzip2 | zlib) WORKLOADS+=("$1"); shift ;;
    *) echo "run.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=("${ALL_WORKLOADS[@]}")
if [[ -z $REPS ]]; then if [[ $SIZE == full ]]; then REPS=3; else REPS=1; fi; fi
read -ra MODES <<<"$MODES"
for m in "${MODES[@]}"; do valid_mode "$m" || { echo "run.sh: unknown mode $m" >&2; exit 2; }; done
ORDER=()
for m in "${MODES[@]}"; do [[ $m == ppp ]] && ORDER=(bl); done
for m in "${MODES[@]}"; do [[ $m == bl && ${ORDER[0]:-} == bl ]] || ORDER+=("$m"); done

B=${WPP_BENCH_BUILD:-$ROOT/bench/build/bench}
mkdir -p "$B"
setup_wpp "$PROFILE"

status=0
# status of each workload/mode: ok | DIFF | build failed | run failed | (absent: not run)
declare -A ST
# Build everything but ppp first, $JOBS at a time (nothing is timed meanwhile), longest first.
"$WL/fetch.sh"
rm -rf "$B/status"
VARIANTS=(native)
for m in "${ORDER[@]}"; do
    v=$(mode_variant "$m")
    [[ $v == ppp || " ${VARIANTS[*]} " == *" $v "* ]] || VARIANTS+=("$v")
done
for w in sqlite lua bzip2 zlib; do
    [[ " ${WORKLOADS[*]} " == *" $w "* ]] || continue
    for v in "${VARIANTS[@]}"; do start_build "$v" "$w"; done
done
wait
# Then run, one at a time; ppp is built (alone) after the bl run that gives its profile.
for w in "${WORKLOADS[@]}"; do
    echo "== $w" >&2
    if ! built_ok native "$w" || ! run_mode "$B" native "$SIZE" "$REPS" "$w"; then
        ST[$w/native]="failed"
        status=1
        continue
    fi
    ST[$w/native]=ok
    for m in "${ORDER[@]}"; do
        v=$(mode_variant "$m")
        if [[ $v == ppp ]]; then
            if [[ ${ST[$w/bl]:-} == ok ]] && save_interesting "$B" "$SIZE" "$w"; then
                start_build ppp "$w"
                wait
            fi
        fi
        if ! built_ok "$v" "$w"; then
            ST[$w/$m]="build failed"; status=1; continue
        fi
        if ! run_mode "$B" "$m" "$SIZE" "$REPS" "$w"; then
            ST[$w/$m]="run failed"; status=1; continue
        fi
        if "$WL/compare.sh" --size "$SIZE" "$B/native" "$B/$m" "$w" >&2; then
            ST[$w/$m]=ok
        else
            ST[$w/$m]=DIFF; status=1
        fi
    done
done

# ---- report -------------------------------------------------------------------------------------
# times B MODE W -> "wall cpu" (best of the repetitions; cpu = user + sys)
times_of() {
    local f=$B/$1/results/$SIZE/$2/times.tsv
    [[ -s $f ]] || { echo "- -"; return; }
    awk -F'\t' 'NR == 1 || $3 < w { w = $3 } NR == 1 || $4 + $5 < c { c = $4 + $5 } END { printf "%.3f %.3f\n", w, c }' "$f"
}
sum_bytes() { # MODE W: total size of the mode's output files
    local f total=0
    while IFS= read -r f; do total=$((total + $(stat -c %s "$f"))); done < <(outputs "$B" "$1" "$SIZE" "$2")
    echo "$total"
}
have_mode() { local m; for m in "${ORDER[@]}"; do [[ $m == "$1" ]] && return 0; done; return 1; }
fmt_bytes() { numfmt --to=iec-i --suffix=B --format=%.1f "$1" 2>/dev/null || echo "$1"; }

report() {
    local w m nat nw nc mw mc cell
    echo "## wpp benchmark, $(date -u '+%F %H:%M') UTC"
    echo
    echo "\`bench/run.sh $ARGS\` — size \`$SIZE\`, best of $REPS run(s), cflags \`$CFLAGS\`;"
    echo "wpp \`$WPP\` (commit $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && [[ -n $(git status --porcelain -- crates 2>/dev/null) ]] && echo ', crates/ modified')),"
    echo "runtime \`$(basename "$WPP_RT_LIB")\`; $(clang-22 --version | head -n1); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "Slowdown = time of the mode / native time, wall-clock (CPU = user + sys in parentheses;"
    echo "the online \`.wpp\` compressor runs on its own thread, so its CPU can exceed its wall time)."
    echo "A cell is marked when the mode's output was not byte-identical to native or it failed."
    echo
    local hdr="| workload | native wall s (CPU s) |" sep="|---|---|"
    for m in "${ORDER[@]}"; do hdr+=" $m |"; sep+="---|"; done
    echo "$hdr"
    echo "$sep"
    declare -A LOGSUM LOGN
    for w in "${WORKLOADS[@]}"; do
        read -r nw nc <<<"$(times_of native "$w")"
        if [[ ${ST[$w/native]:-} != ok ]]; then
            echo "| $w | native failed |"
            continue
        fi
        local row="| $w | $nw ($nc) |"
        for m in "${ORDER[@]}"; do
            read -r mw mc <<<"$(times_of "$m" "$w")"
            case ${ST[$w/$m]:-} in
            ok | DIFF)
                cell=$(awk -v a="$mw" -v b="$nw" -v c="$mc" -v d="$nc" 'BEGIN { printf "%.2f× (%.2f×)", a / b, c / d }')
                [[ ${ST[$w/$m]} == DIFF ]] && cell+=" **output differs**"
                LOGSUM[$m]=$(awk -v s="${LOGSUM[$m]:-0}" -v a="$mw" -v b="$nw" 'BEGIN { print s + log(a / b) }')
                LOGN[$m]=$((${LOGN[$m]:-0} + 1))
                ;;
            *) cell="${ST[$w/$m]:-not run}" ;;
            esac
            row+=" $cell |"
        done
        echo "$row"
    done
    if [[ ${#WORKLOADS[@]} -gt 1 ]]; then
        local row="| geometric mean | |"
        for m in "${ORDER[@]}"; do
            if [[ -n ${LOGN[$m]:-} ]]; then
                row+=" $(awk -v s="${LOGSUM[$m]}" -v n="${LOGN[$m]}" 'BEGIN { printf "%.2f×", exp(s / n) }') |"
            else row+=" |"; fi
        done
        echo "$row"
    fi
    echo

    # Output sizes and Larus Table 1 for the online trace-paths .wpp.
    echo "Outputs (summed over the workload's processes: bzip2 runs its program six times)."
    echo "Table 1 columns from \`wpp stats --json\` of the \`paths-wpp\` run: events = trace length,"
    echo "paths = distinct acyclic paths (terminals), trace/wpp = binary trace bytes / .wpp bytes;"
    echo "events/s = events / wall time of the paths-wpp run (sustained online compression rate)."
    echo
    echo "| workload | paths-raw trace | blocks-raw trace | bl profile | ppp profile | .wpp | events | paths | rules | grammar symbols | trace bytes (stats) | trace/wpp | rules/path | events/s online |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    for w in "${WORKLOADS[@]}"; do
        local row="| $w |"
        for m in paths-raw blocks-raw bl ppp paths-wpp; do
            if have_mode "$m" && [[ ${ST[$w/$m]:-} == ok || ${ST[$w/$m]:-} == DIFF ]]; then
                row+=" $(fmt_bytes "$(sum_bytes "$m" "$w")") |"
            else row+=" - |"; fi
        done
        if have_mode paths-wpp && [[ ${ST[$w/paths-wpp]:-} == ok || ${ST[$w/paths-wpp]:-} == DIFF ]]; then
            read -r mw mc <<<"$(times_of paths-wpp "$w")"
            local files=()
            mapfile -t files < <(outputs "$B" paths-wpp "$SIZE" "$w")
            local js=()
            for f in "${files[@]}"; do js+=("$("$WPP" stats --json "$f" | tr -d '\n')"); done
            row+=$(printf '%s\n' "${js[@]}" | python3 -c '
import json, sys
wall = float(sys.argv[1])
s = [json.loads(l) for l in sys.stdin if l.strip()]
t = lambda k: sum(x[k] for x in s)
ev, rules, terms = t("events"), t("rules"), t("distinct_terminals")
fb, tb = t("file_bytes"), t("trace_bytes")
print(" %d | %d | %d | %d | %d | %.1f | %.2f | %.3g |" % (ev, terms, rules, t("grammar_symbols"), tb,
      tb / fb if fb else 0, rules / terms if terms else 0, ev / wall if wall else 0))
' "$mw")
        else
            row+=" - | - | - | - | - | - | - | - |"
        fi
        echo "$row"
    done
    echo
    echo "Build times (s, \`wpp cc\` includes instrumenting and compiling the whole program):"
    echo
    local vs=(native) v
    for m in "${ORDER[@]}"; do v=$(mode_variant "$m"); [[ " ${vs[*]} " == *" $v "* ]] || vs+=("$v"); done
    hdr="| workload |"; sep="|---|"
    for v in "${vs[@]}"; do hdr+=" $v |"; sep+="---|"; done
    echo "$hdr"; echo "$sep"
    for w in "${WORKLOADS[@]}"; do
        local row="| $w |"
        for v in "${vs[@]}"; do row+=" $(build_seconds "$B" "$v" "$w") |"; done
        echo "$row"
    done
    local bad=0
    for k in "${!ST[@]}"; do [[ ${ST[$k]} == ok ]] || bad=1; done
    if [[ $bad == 1 ]]; then
        echo
        echo "Not ok:"
        for k in "${!ST[@]}"; do [[ ${ST[$k]} == ok ]] || echo "- $k: ${ST[$k]}"; done
    fi
}

if [[ $SAVE == 1 ]]; then
    mkdir -p "$BENCH_DIR/results"
    out=$BENCH_DIR/results/$(date -u +%F).md
    { [[ -s $out ]] && echo; report; } | tee -a "$out"
    echo "run.sh: report appended to $out" >&2
else
    report
fi
exit $status
