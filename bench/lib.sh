# Shared by bench/run.sh and bench/check.sh (sourced, not run): the recording modes, how each is
# built with bench/workloads/build.sh and run with bench/workloads/run.sh, and where `wpp` is.
#
# Modes (a build variant = one `wpp cc --mode`; the raw and online modes of a variant share its
# executables and differ only in the environment of the run):
#   mode        build variant (wpp cc --mode)   run environment   output in the run's work/
#   blocks-raw  trace-blocks                   WPP_RAW=1         PROGRAM.PID.trace
#   blocks-wpp  trace-blocks                   (WPP_RAW unset)   PROGRAM.PID.wpp
#   probes-raw  trace-blocks --no-elide        WPP_RAW=1         PROGRAM.PID.trace
#   probes-wpp  trace-blocks --no-elide        (WPP_RAW unset)   PROGRAM.PID.wpp
#   paths-raw   trace-paths                    WPP_RAW=1         PROGRAM.PID.trace
#   paths-wpp   trace-paths                    (WPP_RAW unset)   PROGRAM.PID.wpp
#   bl          bl                                               PROGRAM.PID.blprof
#   ppp         ppp --interesting P                              PROGRAM.PID.pppprof
#   addr        trace-addr                     WPP_RAW=1         PROGRAM.PID.at (+ PROGRAM.PID.trace)
#   ewpp        ewpp --exercised R             WPP_RAW=1         PROGRAM.PID.trace (the eCF)
#   filter      ewpp-filter                                      PROGRAM.PID.depf (the filtering run's report)
# trace-blocks records the paths its blocks run along, which readers decode back to blocks;
# --no-elide (variant trace-blocks-probes) gives every block a probe: the oracle of "blocks=probes".
# R is the filtering report (`wpp deps filter`) of the addr run's largest address trace, so
# `addr` runs before `ewpp`; pairs only other processes exercised are recorded as unexpected.
# P is the bl profile of the same workload and size (PPP §5: every path that ran in the BL run
# is interesting), so `bl` runs before `ppp`. bzip2 runs its program six times and leaves six
# profiles; P is their sum (`wpp profile merge`, see bench/README.md).

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/.." && pwd)
WL=$BENCH_DIR/workloads
ALL_WORKLOADS=(lua sqlite bzip2 zlib)
ALL_MODES=(bl ppp paths-raw paths-wpp blocks-raw blocks-wpp probes-raw probes-wpp addr ewpp filter)

mode_variant() {
    case $1 in
    blocks-raw | blocks-wpp) echo trace-blocks ;;
    probes-raw | probes-wpp) echo trace-blocks-probes ;;
    paths-raw | paths-wpp) echo trace-paths ;;
    bl) echo bl ;;
    ppp) echo ppp ;;
    addr) echo trace-addr ;;
    ewpp) echo ewpp ;;
    filter) echo ewpp-filter ;;
    *) return 1 ;;
    esac
}
mode_ext() {
    case $1 in
    *-raw | ewpp) echo trace ;;
    *-wpp) echo wpp ;;
    bl) echo blprof ;;
    ppp) echo pppprof ;;
    addr) echo at ;;
    filter) echo depf ;;
    esac
}
# The environment of a mode's run, as arguments of env(1).
mode_env() {
    case $1 in
    *-raw | addr | ewpp) echo "WPP_RAW=1" ;;
    *) echo "-u WPP_RAW" ;; # native, bl, ppp, *-wpp
    esac
}
valid_mode() { mode_variant "$1" >/dev/null 2>&1; }

# Sets WPP (the wpp executable) and exports WPP_RT_LIB (its runtime library).
#   $WPP set: use it (it must be built with --features llvm); else build
#   `cargo build --profile $1 -p wpp --features llvm -p wpp-rt` in ${CARGO_TARGET_DIR:-target}.
# The runtime is $WPP_RT_LIB if set, else the newer of libwpp_rt.a next to wpp and the newest
# deps/libwpp_rt-*.a there (`cargo test` builds the runtime only under deps/, so a
# libwpp_rt.a next to wpp may be left over from an older `cargo build`).
setup_wpp() {
    local profile=$1 dir
    export LLVM_SYS_221_PREFIX=${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}
    if [[ -z ${WPP:-} ]]; then
        local td=${CARGO_TARGET_DIR:-$ROOT/target}
        [[ $td == /* ]] || td=$ROOT/$td
        case $profile in
        dev) dir=debug ;;
        test) dir=debug ;;
        *) dir=$profile ;;
        esac
        echo "== cargo build --profile $profile -p wpp --features llvm -p wpp-rt" >&2
        (cd "$ROOT" && cargo build -q --profile "$profile" -p wpp --features llvm -p wpp-rt) || return 1
        WPP=$td/$dir/wpp
        WPP_FROM_CARGO=1
        export WPP_RT_LIB=${WPP_RT_LIB:-$td/$dir/libwpp_rt.a}
    fi
    if [[ $WPP != */* ]]; then WPP=$(command -v "$WPP" || echo "$WPP"); fi
    if [[ -e $WPP ]]; then WPP=$(cd "$(dirname "$WPP")" && pwd)/$(basename "$WPP"); fi
    [[ -x $WPP ]] || { echo "no wpp executable at $WPP" >&2; return 1; }
    if [[ -z ${WPP_RT_LIB:-} ]]; then
        local d cand
        d=$(dirname "$WPP")
        cand=$(ls -t "$d/libwpp_rt.a" "$d"/deps/libwpp_rt-*.a 2>/dev/null | head -n1 || true)
        [[ -n $cand ]] || { echo "no libwpp_rt.a next to $WPP or in its deps/" >&2; return 1; }
        export WPP_RT_LIB=$cand
    fi
    [[ -f $WPP_RT_LIB ]] || { echo "no runtime library at $WPP_RT_LIB" >&2; return 1; }
    echo "== wpp: $WPP" >&2
    echo "== runtime: $WPP_RT_LIB" >&2
}

# Sets WPP_QUERY_CHECK (the brute-force query cross-check, crates/wpp-query/src/bin/
# wpp-query-check.rs): $WPP_QUERY_CHECK if set; else, when setup_wpp built wpp, `cargo build
# --profile $1 -p wpp-query --bin wpp-query-check` in ${CARGO_TARGET_DIR:-target}; else (wpp
# given) the wpp-query-check next to $WPP, built by cargo as above if there is none.
# Call after setup_wpp.
setup_query_check() {
    local profile=$1 td dir
    if [[ -z ${WPP_QUERY_CHECK:-} && -z ${WPP_FROM_CARGO:-} ]]; then
        WPP_QUERY_CHECK=$(dirname "$WPP")/wpp-query-check
    fi
    if [[ -z ${WPP_QUERY_CHECK:-} || ! -x $WPP_QUERY_CHECK ]]; then
        td=${CARGO_TARGET_DIR:-$ROOT/target}
        [[ $td == /* ]] || td=$ROOT/$td
        case $profile in dev | test) dir=debug ;; *) dir=$profile ;; esac
        echo "== cargo build --profile $profile -p wpp-query --bin wpp-query-check" >&2
        (cd "$ROOT" && cargo build -q --profile "$profile" -p wpp-query --bin wpp-query-check) || return 1
        WPP_QUERY_CHECK=$td/$dir/wpp-query-check
    fi
    [[ -x $WPP_QUERY_CHECK ]] || { echo "no wpp-query-check at $WPP_QUERY_CHECK" >&2; return 1; }
    echo "== query check: $WPP_QUERY_CHECK" >&2
}

# needs_build EXE DEPS...: true if EXE is missing or older than any DEP (files or directories'
# files).
needs_build() {
    local exe=$1 d
    shift
    [[ -x $exe ]] || return 0
    for d in "$@"; do
        [[ -e $d ]] || continue
        [[ -n $(find -L "$d" -newer "$exe" -type f -print -quit 2>/dev/null) ]] && return 0
    done
    return 1
}

# build_workload B VARIANT WORKLOAD CFLAGS FORCE: builds $B/cc-VARIANT/WORKLOAD/WORKLOAD (VARIANT
# native: clang-22; else `wpp cc --mode VARIANT`) with build.sh, unless it is up to date
# (FORCE=1: always). ppp uses $B/interesting/WORKLOAD.blprof. One directory per executable, so
# builds can run in parallel. Build time (s) goes to its build-times.tsv.
build_workload() {
    local b=$1 variant=$2 w=$3 cflags=$4 force=$5 out cc
    local deps=("$WL/$w" "$WL/build.sh" "$WL/bzip2/gencorpus.c")
    out=$b/cc-$variant/$w
    if [[ $variant == native ]]; then
        cc=clang-22
    else
        cc="$WPP cc --mode $variant"
        [[ $variant == trace-blocks-probes ]] && cc="$WPP cc --mode trace-blocks --no-elide"
        deps+=("$WPP" "$WPP_RT_LIB")
        if [[ $variant == ppp ]]; then
            [[ -s $b/interesting/$w.blprof ]] || {
                echo "no bl profile for $w: run bl first" >&2
                return 1
            }
            cc+=" --interesting $b/interesting/$w.blprof"
            deps+=("$b/interesting/$w.blprof")
        fi
        if [[ $variant == ewpp ]]; then
            [[ -s $b/exercised/$w.depf ]] || {
                echo "no filtering report for $w: run addr first" >&2
                return 1
            }
            cc+=" --exercised $b/exercised/$w.depf"
            deps+=("$b/exercised/$w.depf")
        fi
        cc+=" --"
    fi
    mkdir -p "$out"
    if [[ $force == 1 ]] || [[ $(cat "$out/cflags" 2>/dev/null) != "$cflags" ]] || needs_build "$out/$w" "${deps[@]}"; then
        rm -f "$out/cflags"
        "$WL/build.sh" --cc "$cc" --cflags "$cflags" --out "$out" "$w" 2>"$out/build-out.txt" || {
            echo "   $w ($variant) FAILED to build: $out/logs/$w.build.log" >&2
            return 1
        }
        echo "$cflags" >"$out/cflags"
        echo "   built $w ($variant) in $(cut -f2 "$out/build-times.tsv") s" >&2
    else
        echo "   $w ($variant) is up to date" >&2
    fi
}
build_seconds() { cut -f2 "$1/cc-$2/$3/build-times.tsv" 2>/dev/null || echo -; }

# mode_dir B MODE: the run directory of MODE (or native): symlinks to the variant's executables,
# so that modes sharing a variant keep separate results.
mode_dir() {
    local b=$1 mode=$2 variant w
    if [[ $mode == native ]]; then variant=native; else variant=$(mode_variant "$mode"); fi
    mkdir -p "$b/$mode"
    for w in "${ALL_WORKLOADS[@]}"; do
        ln -sfn "../cc-$variant/$w/$w" "$b/$mode/$w"
    done
    ln -sfn "../cc-$variant/bzip2/gencorpus" "$b/$mode/gencorpus"
    echo "$b/$mode"
}

# run_mode B MODE SIZE REPS WORKLOAD: runs one workload in MODE (or native) with run.sh. In the
# *-wpp modes each process's .wpp is built after it exits by a detached finisher (wpp-rt's
# finisher module); run_mode then waits until every spool (*.trace) is gone and writes the
# seconds it waited — from the last process's exit to the last finished .wpp — to
# results/SIZE/WORKLOAD/finish-seconds.txt. With --reps > 1 the finishers of a repetition
# overlap the next one's run (time the *-wpp modes with --reps 1).
run_mode() {
    local b=$1 mode=$2 size=$3 reps=$4 w=$5 dir work t0
    dir=$(mode_dir "$b" "$mode")
    # shellcheck disable=SC2046
    env -u WPP_OUT -u WPP_FINISH $(mode_env "$mode") "$WL/run.sh" --size "$size" --reps "$reps" "$dir" "$w" || return 1
    [[ $mode == *-wpp ]] || return 0
    work=$dir/results/$size/$w/work
    t0=$EPOCHREALTIME
    while compgen -G "$work/*.trace" >/dev/null || compgen -G "$work/*.wpp.tmp" >/dev/null; do
        if awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { exit !(b - a > 3600) }'; then
            echo "$w $mode: a finisher left its spool in $work for an hour" >&2
            return 1
        fi
        sleep 0.05
    done
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f\n", b - a }' \
        >"$dir/results/$size/$w/finish-seconds.txt"
}

# outputs B MODE SIZE WORKLOAD: the recorder's output files of the latest run, one per line.
outputs() {
    local b=$1 mode=$2 size=$3 w=$4
    ls -1 "$b/$mode/results/$size/$w/work/"*."$(mode_ext "$mode")" 2>/dev/null || true
}

# save_interesting B SIZE WORKLOAD: the bl profiles of the bl run, one per process, merged
# (`wpp profile merge`: counts summed) become the interesting set of ppp (replaced only when its
# contents changed, so ppp is not rebuilt needlessly).
save_interesting() {
    local b=$1 size=$2 w=$3 ps
    mapfile -t ps < <(ls -1 "$b/bl/results/$size/$w/work/"*.blprof 2>/dev/null || true)
    [[ ${#ps[@]} -gt 0 ]] || { echo "bl run of $w left no profile" >&2; return 1; }
    mkdir -p "$b/interesting"
    "$WPP" profile merge "${ps[@]}" -o "$b/interesting/$w.blprof.new" || {
        echo "cannot merge the bl profiles of $w" >&2
        return 1
    }
    if cmp -s "$b/interesting/$w.blprof.new" "$b/interesting/$w.blprof"; then
        rm -f "$b/interesting/$w.blprof.new"
    else
        mv "$b/interesting/$w.blprof.new" "$b/interesting/$w.blprof"
    fi
}

# save_exercised B SIZE WORKLOAD: the filtering report (`wpp deps filter`) of the addr run's
# largest address trace, the exercised pairs of ewpp (replaced only when its contents changed).
save_exercised() {
    local b=$1 size=$2 w=$3 at
    at=$(ls -1S "$b/addr/results/$size/$w/work/"*.at 2>/dev/null | head -n1)
    [[ -n $at ]] || { echo "addr run of $w left no address trace" >&2; return 1; }
    mkdir -p "$b/exercised"
    "$WPP" deps filter "$at" -o "$b/exercised/$w.depf.new" >/dev/null || {
        echo "cannot filter $at" >&2
        return 1
    }
    if cmp -s "$b/exercised/$w.depf.new" "$b/exercised/$w.depf"; then
        rm -f "$b/exercised/$w.depf.new"
    else
        mv "$b/exercised/$w.depf.new" "$b/exercised/$w.depf"
    fi
}

# check_output MODE FILE: the recorder's output is complete and readable by wpp.
check_output() {
    local mode=$1 f=$2 err
    case $mode in
    *-wpp) err=$("$WPP" stats "$f" 2>&1 >/dev/null) || { echo "wpp stats $f: $err" >&2; return 1; } ;;
    ewpp) err=$("$WPP" deps stats "$f" 2>&1 >/dev/null) || { echo "wpp deps stats $f: $err" >&2; return 1; } ;;
    filter) err=$("$WPP" deps filter "$f" 2>&1 >/dev/null) || { echo "wpp deps filter $f: $err" >&2; return 1; } ;;
    *-raw)
        local last
        last=$("$WPP" trace cat "$f" 2>"$f.cat-err" | tail -n1) || { echo "wpp trace cat $f: $(cat "$f.cat-err")" >&2; return 1; }
        [[ -n $last ]] || { echo "wpp trace cat $f: empty trace" >&2; return 1; }
        if [[ -s $f.cat-err ]]; then echo "wpp trace cat $f: $(cat "$f.cat-err")" >&2; return 1; fi
        rm -f "$f.cat-err"
        ;;
    bl | ppp) err=$("$WPP" profile show "$f" 2>&1 >/dev/null) || { echo "wpp profile show $f: $err" >&2; return 1; } ;;
    addr) err=$("$WPP" deps stats --prefix 1000000 "$f" 2>&1 >/dev/null) || { echo "wpp deps stats $f: $err" >&2; return 1; } ;;
    esac
}

# start_build VARIANT WORKLOAD: build_workload in the background, at most $JOBS at a time, with
# $B, $CFLAGS, $FORCE of the caller; leaves $B/status/VARIANT.WORKLOAD (0 = ok). Clear
# $B/status before the first build.
start_build() { # VARIANT WORKLOAD
    while [[ $(jobs -rp | wc -l) -ge $JOBS ]]; do wait -n || true; done
    mkdir -p "$B/status"
    rm -f "$B/status/$1.$2"
    (
        rc=0
        build_workload "$B" "$1" "$2" "$CFLAGS" "$FORCE" || rc=$?
        echo "$rc" >"$B/status/$1.$2"
    ) &
}
built_ok() { # VARIANT WORKLOAD: waits for the build, true if it succeeded
    while [[ ! -s $B/status/$1.$2 ]] && [[ -n $(jobs -rp) ]]; do wait -n || true; done
    [[ $(cat "$B/status/$1.$2" 2>/dev/null) == 0 ]]
}

