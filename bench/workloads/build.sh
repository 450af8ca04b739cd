#!/usr/bin/env bash
# Build the real workloads (Lua 5.4, SQLite, bzip2, zlib) with a given C compiler command.
#
# Usage: bench/workloads/build.sh [--cc "CMD"] [--cflags "FLAGS"] [--out DIR] [--size small|full]
#                                 [--hostcc "CMD"] [WORKLOAD...]
#
#   --cc CMD       compiler command, word-split (default: clang-22). The native build and every
#                  instrumented build differ ONLY here, e.g.
#                    --cc clang-22                                  (native)
#                    --cc "wpp cc --mode trace-blocks --"           (instrumented; `wpp cc` runs
#                                                                   clang-22 itself)
#   --cflags F     optimisation/debug flags appended right after CMD (default: -O2), e.g. "-O0"
#                  or "-O2 -g". Keep them equal across the builds you compare.
#   --out DIR      output directory (default: bench/build/workloads/native)
#   --size S       also pre-generate the inputs of size S (small|full) for run.sh; the binaries
#                  themselves do not depend on the size
#   --hostcc CMD   compiler for the never-instrumented helper bzip2/gencorpus (default: clang-22
#                  -O2, or cc -O2 when clang-22 is missing)
#   WORKLOAD...    any of: lua sqlite bzip2 zlib (default: all)
#
# Every workload is ONE compiler invocation with all of its sources:
#     CMD FLAGS <workload flags> <sources...> -o DIR/<workload> <libs>
# because `wpp cc` compiles each .c to bitcode, links the modules, instruments and links the
# program in one go. The exact commands are written to DIR/build.log (shell-quoted, re-runnable)
# and build-info.txt. Sources come from fetch.sh (run automatically).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${WPP_WORKLOADS_BUILD:-$ROOT/bench/build/workloads}
SRC=$BUILD/src

CC_STR=clang-22
CFLAGS_STR=-O2
OUT=$BUILD/native
SIZE=
if command -v clang-22 >/dev/null 2>&1; then HOSTCC_STR="clang-22 -O2"; else HOSTCC_STR="cc -O2"; fi
WORKLOADS=()
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
    case $1 in
    --cc) CC_STR=$2; shift 2 ;;
    --cc=*) CC_STR=${1#*=}; shift ;;
    --cflags) CFLAGS_STR=$2; shift 2 ;;
    --cflags=*) CFLAGS_STR=${1#*=}; shift ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    --size) SIZE=$2; shift 2 ;;
    --size=*) SIZE=${1#*=}; shift ;;
    --hostcc) HOSTCC_STR=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    lua | sqlite | bzip2 | zlib) WORKLOADS+=("$1"); shift ;;
    *) echo "build.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
done
[[ ${#WORKLOADS[@]} -gt 0 ]] || WORKLOADS=(lua sqlite bzip2 zlib)
read -ra CC <<<"$CC_STR"
read -ra CFLAGS <<<"$CFLAGS_STR"
read -ra HOSTCC <<<"$HOSTCC_STR"

"$HERE/fetch.sh"
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)

# ---- per-workload flags, sources and libraries (identical for every variant) -----------------
L=$SRC/lua
# Lua 5.4.8: every core and library .c of the distribution except the stand-alone programs
# lua.c/luac.c (lua-src ships neither), plus our driver. LUA_USE_LINUX = POSIX + dlopen, as
# upstream `make linux`. The two -D hooks make the run deterministic: luai_makeseed (string-hash
# seed, by default time(NULL) mixed with ASLR'd addresses) and l_randomizePivot (table.sort's
# pivot randomisation, by default clock() and time()) become constants, so hash-table layout and
# sort order -- and therefore control flow -- are the same in every run. STRCACHE_N=1: the API
# string cache (lstring.c, luaS_new) is indexed by the C string's ADDRESS modulo STRCACHE_N, so
# with ASLR (and between differently linked builds) hits, misses and the GC's cache sweep took
# different paths in every run; one set of STRCACHE_M entries makes it address-independent.
LUA_FLAGS=(-std=gnu99 -DLUA_USE_LINUX '-Dluai_makeseed(L)=0x2545F491u'
    '-Dl_randomizePivot()=0x9E3779B9u' -DSTRCACHE_N=1 -DSTRCACHE_M=2 -I"$L")
LUA_SRCS=("$L"/{lapi,lcode,lctype,ldebug,ldo,ldump,lfunc,lgc,llex,lmem,lobject,lopcodes,lparser,lstate,lstring,ltable,ltm,lundump,lvm,lzio}.c
    "$L"/{lauxlib,lbaselib,lcorolib,ldblib,liolib,lmathlib,loadlib,loslib,lstrlib,ltablib,lutf8lib,linit}.c
    "$HERE/lua/driver.c")
LUA_LIBS=(-lm -ldl)

S=$SRC/sqlite
# SQLite 3.54.1 amalgamation. No threads, no extension loading (no dlopen), no /dev/urandom
# (OMIT_RANDOMNESS: the PRNG starts from zeros -> deterministic), temp storage in memory.
SQLITE_FLAGS=(-DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_RANDOMNESS
    -DSQLITE_TEMP_STORE=3 -I"$S")
SQLITE_SRCS=("$S/sqlite3.c" "$HERE/sqlite/driver.c")
SQLITE_LIBS=(-lm)

B=$SRC/bzip2
# bzip2 1.0.8: the real command-line program (bzip2.c) and the library, as upstream's Makefile.
BZIP2_FLAGS=(-D_FILE_OFFSET_BITS=64)
BZIP2_SRCS=("$B"/{blocksort,huffman,crctable,randtable,compress,decompress,bzlib,bzip2}.c)
BZIP2_LIBS=()

Z=$SRC/zlib
# zlib 1.3.2: every library .c (including the gz* file API) plus our driver.
ZLIB_FLAGS=(-DHAVE_UNISTD_H -DHAVE_STDARG_H -I"$Z")
ZLIB_SRCS=("$Z"/{adler32,compress,crc32,deflate,gzclose,gzlib,gzread,gzwrite,infback,inffast,inflate,inftrees,trees,uncompr,zutil}.c
    "$HERE/zlib/driver.c")
ZLIB_LIBS=()
# -----------------------------------------------------------------------------------------------

now() { date +%s.%N; }
{
    echo "cc: $CC_STR"
    echo "cflags: $CFLAGS_STR"
    echo "hostcc: $HOSTCC_STR"
    echo "compiler: $("${CC[0]}" --version 2>/dev/null | head -n1 || echo '?')"
    echo "date: $(date -u +%FT%TZ)"
    for w in lua sqlite bzip2 zlib; do echo "source $w: $(readlink "$SRC/$w")"; done
} >"$OUT/build-info.txt"
: >"$OUT/build.log"
: >"$OUT/build-times.tsv"

failed=()
for w in "${WORKLOADS[@]}"; do
    case $w in
    lua) flags=("${LUA_FLAGS[@]}"); srcs=("${LUA_SRCS[@]}"); libs=("${LUA_LIBS[@]}") ;;
    sqlite) flags=("${SQLITE_FLAGS[@]}"); srcs=("${SQLITE_SRCS[@]}"); libs=("${SQLITE_LIBS[@]}") ;;
    bzip2) flags=("${BZIP2_FLAGS[@]}"); srcs=("${BZIP2_SRCS[@]}"); libs=("${BZIP2_LIBS[@]+"${BZIP2_LIBS[@]}"}") ;;
    zlib) flags=("${ZLIB_FLAGS[@]}"); srcs=("${ZLIB_SRCS[@]}"); libs=("${ZLIB_LIBS[@]+"${ZLIB_LIBS[@]}"}") ;;
    esac
    cmd=("${CC[@]}" "${CFLAGS[@]+"${CFLAGS[@]}"}" "${flags[@]}" "${srcs[@]}" -o "$OUT/$w" "${libs[@]+"${libs[@]}"}")
    printf '%q ' "${cmd[@]}" | sed 's/ $//' >>"$OUT/build.log"
    echo >>"$OUT/build.log"
    rm -f "$OUT/$w"
    echo "build.sh: $w <- ${CC_STR} ${CFLAGS_STR} (${#srcs[@]} sources)" >&2
    t0=$(now)
    # Compile in a scratch directory so stray outputs (bitcode, objects) stay out of the way.
    mkdir -p "$OUT/obj/$w"
    if (cd "$OUT/obj/$w" && "${cmd[@]}") >"$OUT/logs/$w.build.log" 2>&1 && [[ -x $OUT/$w ]]; then
        t1=$(now)
        printf 'build.sh: %s built in %.1f s\n' "$w" "$(echo "$t1 - $t0" | bc -l)" >&2
        printf '%s\t%.1f\n' "$w" "$(echo "$t1 - $t0" | bc -l)" >>"$OUT/build-times.tsv"
    else
        echo "build.sh: $w FAILED; last lines of $OUT/logs/$w.build.log:" >&2
        tail -n 20 "$OUT/logs/$w.build.log" >&2
        failed+=("$w")
    fi
done

# The corpus generator for bzip2 is a host tool: always built natively, never instrumented.
if [[ " ${WORKLOADS[*]} " == *" bzip2 "* ]]; then
    "${HOSTCC[@]}" "$HERE/bzip2/gencorpus.c" -o "$OUT/gencorpus"
fi
if [[ -n $SIZE ]]; then
    "$HERE/run.sh" --size "$SIZE" --prepare-only "$OUT" "${WORKLOADS[@]}"
fi

if [[ ${#failed[@]} -gt 0 ]]; then
    echo "build.sh: failed: ${failed[*]}" >&2
    exit 1
fi
echo "build.sh: built ${WORKLOADS[*]} in $OUT" >&2
