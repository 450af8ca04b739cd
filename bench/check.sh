#!/usr/bin/env bash
# CI check on the real workloads (issue 4, item 5 and Acceptance): every recording mode on every
# workload prints exactly what the native build prints, and leaves an output wpp can read.
#
# Usage: bench/check.sh [--size small|full] [--modes "M..."] [--cflags F] [--wpp PATH]
#                       [--profile P] [--force] [-j N] [--skip "W:V..."] [WORKLOAD...]
#
#   WORKLOAD...   any of lua sqlite bzip2 zlib (default: all four; an instrumented build of
#                 sqlite's amalgamation takes ~1.5 min per mode)
#   --size S      input size (default small; see bench/README.md)
#   --modes "M"   default "blocks-raw probes-raw paths-raw paths-wpp bl ppp addr ewpp filter"
#                 (also: blocks-wpp, probes-wpp);
#                 ppp needs bl's profile, so bl is added when ppp is asked for; ewpp needs
#                 addr's filtering report, so addr is added when ewpp is asked for
#   --cflags F    flags of every build (default -O2)
#   --wpp PATH    the wpp to use (built with --features llvm); default: $WPP, else
#                 `cargo build --profile P -p wpp --features llvm -p wpp-rt` (P default: release)
#                 in ${CARGO_TARGET_DIR:-target}. The runtime library is $WPP_RT_LIB, else
#                 the newest libwpp_rt next to wpp or in its deps/.
#   --force       rebuild every executable (default: rebuild when older than wpp, its runtime,
#                 the workload's driver or build.sh, or built with other flags)
#   -j N          builds at a time (default: nproc); runs are sequential
#   --skip "W:V"  workload:variant pairs (`wpp cc --mode` names, trace-blocks-probes for
#                 probes-raw) not built, nor ppp without bl, ewpp without trace-addr: their
#                 modes print SKIP, their cross-checks do not run (CI skips sqlite's cheaper
#                 modes, checked on the other three workloads)
#   --query-events N  events of the blocks-raw trace the query check reads (default 500000;
#                 0: no query check)
#
# Per workload: build natively (clang-22) and with `wpp cc --mode M` for each variant
# (trace-blocks, trace-blocks --no-elide, trace-paths, bl, ppp --interesting <the bl run's
# profile>, trace-addr), run the size with
# bench/workloads/run.sh, and check per mode that
#   * the run succeeded and its outputs (stdout, exit statuses; bzip2: every file it wrote) are
#     byte-identical to the native run's (bench/workloads/compare.sh), and
#   * every process left its output file and wpp reads it: `wpp stats` (.wpp),
#     `wpp trace cat` to the last event (raw .trace), `wpp profile show` (.blprof, .pppprof),
#     `wpp deps stats --prefix 1000000` (.at: every chunk read and checked, the first 10^6
#     accesses replayed through the last-writer table);
#   * blocks-raw only: the queries on compressed traces agree with brute force on the first
#     --query-events events of the workload's largest trace (wpp-query-check: path matching
#     schemes 1-4, hot subpaths and subpath frequency on SEQUITUR, SEQUITUR(1) and frequency
#     grammars; one check per grammar and one for scheme 3, named "WORKLOAD query ...").
#     wpp-query-check is $WPP_QUERY_CHECK, else built by cargo like wpp (with --wpp or $WPP:
#     the one next to wpp, if any).
# and cross-checks per workload on the same deterministic, single-threaded runs (several
# processes are paired in pid order, the order run.sh starts them):
#   * "blocks=probes", when blocks-raw and probes-raw passed: each process's default block
#     recording (its paths, which the reader decodes to blocks) equals its recording with a
#     probe per block (`wpp trace blocks --compare`);
#   * "decode", when paths-raw and probes-raw passed: each process's trace-paths recording,
#     decoded through the CFGs it carries, equals its recording with a probe per block;
#   * "ppp=bl", when bl and ppp passed: each ppp profile's counts, interesting and residual
#     together, equal the bl profile's path by path (`wpp profile diff`);
#   * "ewpp=addr", when addr and ewpp passed: each process's dependences on program stores,
#     recovered from its eCF alone (`wpp deps list` of the eWPP), equal those recovered from its
#     address trace, instance by instance and in order, on the first --deps-prefix of them
#     (Tallam–Gupta §5; the ewpp build's report is the filtering of the largest address trace);
#   * "filter=addr", when addr and filter passed: each process's `--mode ewpp-filter` report,
#     classified by the program as it ran, is byte for byte `wpp deps filter` of its address
#     trace (Tallam–Gupta §3.1); not on sqlite, whose classes follow its builds' frame sizes
#     (see not_built below).
# ewpp=addr holds on sqlite too, whose allocator branches on heap addresses: the runtime never
# allocates from the program's heap (wpp_rt::heap).
# Builds and results: bench/build/check/ (WPP_CHECK_BUILD). Ends with the line
# `N passed, M failed` (one check = one workload in one mode, one query check or one
# cross-check); exit status 1 if M > 0.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SIZE=small
MODES="blocks-raw probes-raw paths-raw paths-wpp bl ppp addr ewpp filter"
DEPS_PREFIX=300000
CFLAGS=-O2
PROFILE=release
FORCE=0
JOBS=$(nproc 2>/dev/null || echo 2)
QUERY_EVENTS=500000
SKIP=
WORKLOADS=()
usage() { sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --size) SIZE=$2; shift 2 ;;
    --modes) MODES=$2; shift 2 ;;
    --cflags) CFLAGS=$2; shift 2 ;;
    --wpp) WPP=$2; shift 2 ;;
    --profile) PROFILE=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    -j) JOBS=$2; shift 2 ;;
    --skip) SKIP=$2; shift 2 ;;
    --query-events) QUERY_EVENTS=$2; shift 2 ;;
    --deps-prefix) DEPS_PREFIX=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    lua | sqlite | bzip2 | zlib) WORKLOADS+=("$1"); shift ;;
    *) echo "check.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=(sqlite zlib bzip2 lua)
read -ra MODES <<<"$MODES"
for m in "${MODES[@]}"; do valid_mode "$m" || { echo "check.sh: unknown mode $m" >&2; exit 2; }; done
# bl first (ppp needs its profile); a ppp-only check still runs bl, without counting it.
ORDER=()
COUNT_BL=0
for m in "${MODES[@]}"; do [[ $m == bl ]] && COUNT_BL=1; done
for m in "${MODES[@]}"; do [[ $m == ppp ]] && ORDER=(bl); done
for m in "${MODES[@]}"; do [[ $m == bl || $m == addr || $m == ewpp ]] || ORDER+=("$m"); done
[[ $COUNT_BL == 1 && ${ORDER[0]:-} != bl ]] && ORDER=(bl "${ORDER[@]}")
# addr before ewpp (ewpp needs its filtering report), last: their builds are the longest.
for m in "${MODES[@]}"; do [[ $m == addr || $m == ewpp ]] && ORDER+=(addr) && break; done
for m in "${MODES[@]}"; do [[ $m == ewpp ]] && ORDER+=(ewpp); done

B=${WPP_CHECK_BUILD:-$ROOT/bench/build/check}
mkdir -p "$B"
T0=$SECONDS
setup_wpp "$PROFILE"
if [[ $QUERY_EVENTS != 0 && " ${MODES[*]} " == *" blocks-raw "* ]]; then
    setup_query_check "$PROFILE" || WPP_QUERY_CHECK=
fi
"$WL/fetch.sh"

passed=0
failed=0
failures=()
pass() { passed=$((passed + 1)); echo "PASS  $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1${2:+: $2}"; }
counted() { [[ $1 != bl || $COUNT_BL == 1 ]]; }
declare -A PASSED # "WORKLOAD MODE" -> 1 for each passed check

rm -rf "$B/status"

# not_built WORKLOAD VARIANT: sqlite in ewpp-filter, whose check "filter=addr" cannot hold on
# it: the classes of Definitions 1-4 follow addresses, and 11 of sqlite's 19,281 pairs (stack
# slots of functions called from several depths) write one address in the trace-addr build but
# two in the ewpp-filter build, whose frames have other sizes. The run itself prints what native
# prints (checked by hand, 2026-11-27); its build would add ~3.5 min of CPU to CI. sqlite is
# built with SQLITE_THREADSAFE=0, so the ewpp mode takes it (ewpp's report is the address
# trace's filtering, of the same layout).
# Also the pairs of --skip, and ppp and ewpp when what they are built from (bl, trace-addr) is.
not_built() {
    [[ $1 == sqlite && $2 == ewpp-filter ]] || [[ " $SKIP " == *" $1:$2 "* ]] ||
        { [[ $2 == ppp ]] && not_built "$1" bl; } || { [[ $2 == ewpp ]] && not_built "$1" trace-addr; }
}

# Variants other than ppp and ewpp (which need the bl run's profile, the addr run's report): all
# workloads, longest builds first.
VARIANTS=(native)
for m in "${ORDER[@]}"; do
    v=$(mode_variant "$m")
    [[ $v == ppp || $v == ewpp || " ${VARIANTS[*]} " == *" $v "* ]] || VARIANTS+=("$v")
done
BY_COST=()
for w in sqlite lua bzip2 zlib; do [[ " ${WORKLOADS[*]} " == *" $w "* ]] && BY_COST+=("$w"); done
for w in "${BY_COST[@]}"; do
    for v in "${VARIANTS[@]}"; do not_built "$w" "$v" || start_build "$v" "$w"; done
done

# check WORKLOAD MODE: run MODE, compare with native, check the output files; prints PASS/FAIL.
check() {
    local w=$1 m=$2 v d t0 t files nproc_expected ok f bytes cmp_out
    v=$(mode_variant "$m")
    d=$B/$m/results/$SIZE/$w
    if not_built "$w" "$v"; then
        echo "SKIP  $w $m (not built: --skip, or not_built in bench/check.sh)"
        return 0
    fi
    if ! built_ok "$v" "$w"; then
        fail "$w $m" "build with wpp cc --mode $v failed (see $B/cc-$v/$w/logs/$w.build.log)"
        return 1
    fi
    t0=$SECONDS
    if ! run_mode "$B" "$m" "$SIZE" 1 "$w" 2>"$B/$m.$w.run-err"; then
        fail "$w $m" "run failed: $(grep -v '^run.sh: .* rep [0-9]*:' "$B/$m.$w.run-err" | tail -n 3 | tr '\n' ' ')"
        return 1
    fi
    t=$((SECONDS - t0))
    if ! cmp_out=$("$WL/compare.sh" --size "$SIZE" "$B/native" "$B/$m" "$w" 2>&1); then
        fail "$w $m" "output differs from native:"$'\n'"$cmp_out"
        return 1
    fi
    mapfile -t files < <(outputs "$B" "$m" "$SIZE" "$w")
    nproc_expected=$(wc -l <"$d/exit.txt")
    if [[ ${#files[@]} -ne $nproc_expected ]]; then
        fail "$w $m" "${#files[@]} output files (.$(mode_ext "$m")) for $nproc_expected processes in $d/work"
        return 1
    fi
    ok=1
    for f in "${files[@]}"; do check_output "$m" "$f" || ok=0; done
    if [[ $ok == 0 ]]; then
        fail "$w $m" "output file not readable"
        return 1
    fi
    bytes=$(cat "${files[@]}" | wc -c)
    PASSED["$w $m"]=1
    if counted "$m"; then pass "$w $m (${#files[@]} file(s), $bytes bytes, run ${t} s)"; fi
    if [[ $m == blocks-raw && $QUERY_EVENTS != 0 ]]; then query_check "$w" "${files[@]}"; fi
}

# query_check WORKLOAD TRACE...: wpp-query-check on the largest trace; each of its PASS/FAIL
# lines is one check.
query_check() {
    local w=$1 f out rc line n=0 nf=0 t0=$SECONDS
    shift
    if [[ -z $WPP_QUERY_CHECK ]]; then
        fail "$w query" "no wpp-query-check (see the cargo error above)"
        return
    fi
    f=$(ls -S "$@" | head -n1)
    out=$("$WPP_QUERY_CHECK" --events "$QUERY_EVENTS" --name "$w" "$f" 2>&1) && rc=0 || rc=$?
    while IFS= read -r line; do
        case $line in
        "PASS  "*) pass "${line#PASS  }"; n=$((n + 1)) ;;
        "FAIL  "*) fail "${line#FAIL  }"; n=$((n + 1)); nf=$((nf + 1)) ;;
        ?*) echo "$line" ;;
        esac
    done <<<"$out"
    if [[ $n == 0 || ($rc != 0 && $nf == 0) ]]; then
        fail "$w query" "wpp-query-check $f exited with status $rc"
    fi
    echo "      ($w query check: $((SECONDS - t0)) s on $(basename "$f"))"
}

# by_pid FILE...: the files PROGRAM.PID.EXT in the order their processes started.
by_pid() {
    local f b
    for f in "$@"; do
        b=${f##*/}
        b=${b%.*}
        echo "${b##*.} $f"
    done | sort -n | cut -d' ' -f2-
}

# pair_check WORKLOAD NAME MODE_A MODE_B CMD: when both modes passed, `CMD A B` succeeds for
# each process's pair of outputs (paired in pid order, the order run.sh starts them).
pair_check() {
    local w=$1 name=$2 ma=$3 mb=$4 cmd=$5 t0 i out
    local -a as bs
    [[ -n ${PASSED["$w $ma"]:-} && -n ${PASSED["$w $mb"]:-} ]] || return 0
    t0=$SECONDS
    mapfile -t as < <(by_pid $(outputs "$B" "$ma" "$SIZE" "$w"))
    mapfile -t bs < <(by_pid $(outputs "$B" "$mb" "$SIZE" "$w"))
    if [[ ${#as[@]} -ne ${#bs[@]} ]]; then
        fail "$w $name" "${#as[@]} $ma outputs but ${#bs[@]} $mb outputs"
        return 0
    fi
    for i in "${!as[@]}"; do
        if ! out=$("$cmd" "${as[$i]}" "${bs[$i]}" 2>&1); then
            fail "$w $name" "${as[$i]##*/} vs ${bs[$i]##*/}: $(tail -n 4 <<<"$out")"
            return 0
        fi
    done
    pass "$w $name (${#as[@]} pair(s), $((SECONDS - t0)) s)"
}
# The path recording $1, decoded through its CFGs, is the block recording $2.
decodes_to() { "$WPP" trace blocks "$1" --compare "$2"; }
# The ppp profile's counts (interesting + uninteresting) are the bl profile's.
same_counts() { "$WPP" profile diff --check "$1" "$2"; }
# The ewpp-filter run's report $2 is the filtering of the address trace $1.
same_report() {
    "$WPP" deps filter "$1" -o "$2.from-at" >/dev/null && cmp "$2.from-at" "$2"
}
# The first DEPS_PREFIX dependences on program stores of the address trace $1 are those of the
# eCF $2 (which lists no external reads, nor bytes, and marks pairs the filter did not see).
same_deps() {
    local a b
    a=$(set +o pipefail; "$WPP" deps list "$1" | grep -v ' <- external' | sed 's/ \[[0-9]* bytes[^]]*\]$//' | head -n "$DEPS_PREFIX")
    b=$(set +o pipefail; "$WPP" deps list "$2" | sed 's/ (not exercised by the filtering run)$//' | head -n "$DEPS_PREFIX")
    [[ -n $a ]] || { echo "no dependence in $1"; return 1; }
    [[ $a == "$b" ]] || { diff <(echo "$a") <(echo "$b") | head -n 5; return 1; }
}

for w in "${WORKLOADS[@]}"; do
    if ! built_ok native "$w" || ! run_mode "$B" native "$SIZE" 1 "$w" >/dev/null 2>"$B/native.$w.run-err"; then
        for m in "${MODES[@]}"; do fail "$w $m" "native build or run failed"; done
        continue
    fi
    for m in "${ORDER[@]}"; do
        [[ $m == ppp || $m == ewpp ]] && continue
        if [[ $m == bl ]]; then
            if check "$w" bl; then
                # the bl profile is ppp's interesting set: build ppp while the other modes run
                if [[ " ${ORDER[*]} " == *" ppp "* ]] && ! not_built "$w" ppp &&
                    save_interesting "$B" "$SIZE" "$w"; then
                    start_build ppp "$w"
                fi
            elif ! counted bl; then
                fail "$w bl" "(needed by ppp)"
            fi
        elif [[ $m == addr ]]; then
            # the largest address trace's report is ewpp's: build ewpp while the others run
            if check "$w" addr && [[ " ${ORDER[*]} " == *" ewpp "* ]] && ! not_built "$w" ewpp &&
                save_exercised "$B" "$SIZE" "$w"; then
                start_build ewpp "$w"
            fi
        else
            check "$w" "$m" || true
        fi
    done
    if [[ " ${ORDER[*]} " == *" ewpp "* ]] && ! not_built "$w" ewpp; then
        if [[ -e $B/status/ewpp.$w ]] || [[ -n $(jobs -rp) ]]; then
            check "$w" ewpp || true
        else
            fail "$w ewpp" "no filtering report (the addr check failed)"
        fi
    fi
    if [[ " ${ORDER[*]} " == *" ppp "* ]]; then
        if not_built "$w" ppp; then
            check "$w" ppp
        elif [[ -e $B/status/ppp.$w ]] || [[ -n $(jobs -rp) ]]; then
            check "$w" ppp || true
        else
            fail "$w ppp" "no bl profile"
        fi
    fi
    pair_check "$w" blocks=probes blocks-raw probes-raw decodes_to
    pair_check "$w" decode paths-raw probes-raw decodes_to
    pair_check "$w" ppp=bl ppp bl same_counts
    pair_check "$w" ewpp=addr addr ewpp same_deps
    pair_check "$w" filter=addr addr filter same_report
done
wait

echo "check.sh: $((SECONDS - T0)) s; builds and results in $B" >&2
if [[ $failed -gt 0 ]]; then
    echo "failed: ${failures[*]}" >&2
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
