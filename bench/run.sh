#!/usr/bin/env bash
# Real-workload benchmark of the recorder (issue 4): Lua 5.4, SQLite, bzip2 and zlib, built
# natively and with `wpp cc` in each mode; checks that every build prints byte-identical output
# and reports slowdowns and output sizes.
#
# Usage: bench/run.sh [-n REPS] [WORKLOAD...]      (workloads: lua sqlite bzip2 zlib)
# Env:   WPP_BENCH_BUILD (default bench/build), CARGO_TARGET_DIR, LLVM_SYS_191_PREFIX,
#        WPP_BENCH_MODES (default "bl ppp blocks-raw paths-raw paths-wpp"; ppp takes every
#        path that ran in the bl run as interesting, as PPP §5 did, so bl must come first)
#
# Sources come from crates.io through cargo (lua-src, libsqlite3-sys with its bundled
# amalgamation, bzip2-sys, libz-sys): a throwaway cargo project under the build folder depends
# on them and `cargo fetch`es them; `cargo metadata` says where they were unpacked. Only our
# drivers (bench/drivers) and inputs (bench/inputs) are part of the repository.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WPP_BENCH_BUILD:-$ROOT/bench/build}
export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
REPS=1
if [[ ${1:-} == -n ]]; then REPS=$2; shift 2; fi
WORKLOADS=${*:-lua sqlite bzip2 zlib}
MODES=${WPP_BENCH_MODES:-bl ppp blocks-raw paths-raw paths-wpp}
CC=${CC_NATIVE:-clang-19}

echo "== building wpp (release, --features llvm) and the runtime" >&2
(cd "$ROOT" && cargo build --release -q -p wpp --features llvm -p wpp-rt)
WPP=$CARGO_TARGET_DIR/release/wpp
export WPP_RT_LIB=$CARGO_TARGET_DIR/release/libwpp_rt.a

echo "== fetching workload sources through cargo" >&2
mkdir -p "$BUILD/fetch/src"
cat >"$BUILD/fetch/Cargo.toml" <<'EOF'
[package]
name = "wpp-bench-sources"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
lua-src = "=548.1.1"
libsqlite3-sys = { version = "=0.39.1", features = ["bundled"] }
bzip2-sys = "=0.1.13"
libz-sys = { version = "=1.1.31", features = ["static"] }
EOF
: >"$BUILD/fetch/src/lib.rs"
(cd "$BUILD/fetch" && cargo fetch -q)
src_of() { # crate name -> unpacked source directory
    (cd "$BUILD/fetch" && cargo metadata -q --format-version 1) |
        python3 -c "import json,sys,os; m=json.load(sys.stdin); print([os.path.dirname(p['manifest_path']) for p in m['packages'] if p['name']=='$1'][0])"
}

now() { date +%s.%N; }
# run_timed OUT_FILE CMD... : runs REPS times, prints the best wall time in seconds
run_timed() {
    local out=$1 best="" t0 t1 t
    shift
    for ((i = 0; i < REPS; i++)); do
        t0=$(now)
        "$@" >"$out"
        t1=$(now)
        t=$(echo "$t1 - $t0" | bc -l)
        if [[ -z $best ]] || (($(echo "$t < $best" | bc -l))); then best=$t; fi
    done
    printf '%.3f' "$best"
}

# build NAME MODE FLAGS... -- SOURCES... : builds $BUILD/NAME/MODE/prog
build() {
    local name=$1 mode=$2
    shift 2
    local dir="$BUILD/$name/$mode"
    mkdir -p "$dir"
    local t0 t1
    t0=$(now)
    case $mode in
    native) $CC "$@" -o "$dir/prog" ;;
    blocks-*) "$WPP" cc --mode trace-blocks -- "$@" -o "$dir/prog" ;;
    paths-*) "$WPP" cc --mode trace-paths -- "$@" -o "$dir/prog" ;;
    bl) "$WPP" cc --mode bl -- "$@" -o "$dir/prog" ;;
    ppp) "$WPP" cc --mode ppp --interesting "$BUILD/$name/bl.prof" -- "$@" -o "$dir/prog" ;;
    esac
    t1=$(now)
    printf '   built %s/%s in %.0f s\n' "$name" "$mode" "$(echo "$t1 - $t0" | bc -l)" >&2
}

# measure NAME STDIN ARGS... : runs every mode of NAME, prints a table row per mode
measure() {
    local name=$1 input=$2
    shift 2
    local dir="$BUILD/$name" native_t
    local run=("$@")
    [[ -x $dir/native/prog ]] || build "$name" native "${BUILD_ARGS[@]}"
    native_t=$(run_timed "$dir/native.out" bash -c '"$0" "${@}" <"'"$input"'"' "$dir/native/prog" "${run[@]}")
    printf '| %s | native | %s | 1.00 | - | - | - |\n' "$name" "$native_t"
    for mode in $MODES; do
        local out="$dir/$mode.trace" env=(WPP_RAW=1)
        [[ $mode == *-wpp ]] && out="$dir/$mode.wpp" && env=(WPP_RAW=0)
        [[ $mode == bl || $mode == ppp ]] && out="$dir/$mode.prof"
        [[ -x $dir/$mode/prog ]] || build "$name" "$mode" "${BUILD_ARGS[@]}"
        rm -f "$out"
        local t
        t=$(run_timed "$dir/$mode.out" env "${env[@]}" WPP_OUT="$out" bash -c '"$0" "${@}" <"'"$input"'"' "$dir/$mode/prog" "${run[@]}")
        local same=yes
        cmp -s "$dir/native.out" "$dir/$mode.out" || same=NO
        local bytes events
        bytes=$(stat -c %s "$out" 2>/dev/null || echo 0)
        events=$("$WPP" stats --json "$out" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("events","?"))' 2>/dev/null || echo "?")
        printf '| %s | %s | %s | %.2f | %s | %s | %s |\n' "$name" "$mode" "$t" \
            "$(echo "$t / $native_t" | bc -l)" "$same" "$bytes" "$events"
    done
}

echo "| workload | mode | seconds | slowdown | output identical | output bytes | events |"
echo "|---|---|---|---|---|---|---|"
for w in $WORKLOADS; do
    case $w in
    lua)
        LUA=$(src_of lua-src)/lua-5.4.8
        srcs=()
        for f in "$LUA"/*.c; do srcs+=("$f"); done
        BUILD_ARGS=(-O2 -DLUA_USE_LINUX -I"$LUA" "${srcs[@]}" "$ROOT/bench/drivers/lua_main.c" -lm -ldl)
        measure lua /dev/null "$ROOT/bench/inputs/bench.lua"
        ;;
    sqlite)
        SQ=$(src_of libsqlite3-sys)/sqlite3
        BUILD_ARGS=(-O2 -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -I"$SQ" "$SQ/sqlite3.c" "$ROOT/bench/drivers/sqlite_main.c" -lm)
        measure sqlite /dev/null 10
        ;;
    bzip2)
        BZ=$(src_of bzip2-sys)/bzip2-1.0.8
        BUILD_ARGS=(-O2 -D_FILE_OFFSET_BITS=64 "$BZ"/{bzip2,blocksort,huffman,crctable,randtable,compress,decompress,bzlib}.c)
        # Corpus: the SQLite amalgamation (9 MB of C) — real text, deterministic.
        measure bzip2 "$(src_of libsqlite3-sys)/sqlite3/sqlite3.c" -c -9
        ;;
    zlib)
        Z=$(src_of libz-sys)/src/zlib
        BUILD_ARGS=(-O2 -I"$Z" "$Z"/{adler32,compress,crc32,deflate,infback,inffast,inflate,inftrees,trees,uncompr,zutil}.c "$ROOT/bench/drivers/zlib_main.c")
        measure zlib /dev/null 2
        ;;
    *) echo "unknown workload $w" >&2 ;;
    esac
done
