#!/bin/sh
# Prototype of one runtime per process for instrumented shared libraries (issue #12 item 2):
# what the per-event cost of module ids and shared thread-locals is, and whether an
# uninstrumented executable can dlopen an instrumented library. Prints instruction counts
# (cachegrind "I refs") of the same fib workload:
#   today      one module, the runtime's thread-locals local-exec, constant Enter words
#   today-base the same with Enter = base + id (one load of the module's base per Enter)
#   shared-ie  executable + libfib.so + libwpprt.so, thread-locals initial-exec, Enter = base + id
#   shared-gd  the same with the default model for -fPIC (general-dynamic: __tls_get_addr)
#   hybrid     the executable defines the thread-locals (local-exec) and has ids [0, n) with
#              constant Enter words; the library (initial-exec, base + id) and the runtime
#              bind to the executable's thread-locals
# Usage: bench/shared-modules/run.sh [N]   (fib N, default 25)
set -eu
n=${1:-25}
src=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-clang-22}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
flags="-O2 -I$src"
irefs() { valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*I *refs: *//p' | tr -d ,; }

mkdir today && $cc $flags -DLOCAL_TLS -o today/prog "$src/main.c" "$src/lib.c" "$src/rt.c"
mkdir today-base && $cc $flags -DLOCAL_TLS -DWITH_BASE -o today-base/prog "$src/main.c" "$src/lib.c" "$src/rt.c"
for model in initial-exec global-dynamic; do
    d=shared-$model && mkdir $d
    $cc $flags -fPIC -shared -o $d/libwpprt.so "$src/rt.c"
    $cc $flags -fPIC -shared -DTLS_MODEL_NAME="\"$model\"" -o $d/libfib.so "$src/lib.c" -L$d -lwpprt -Wl,-rpath,'$ORIGIN'
    $cc $flags -DTLS_MODEL_NAME="\"$model\"" -o $d/prog "$src/main.c" -L$d -lfib -lwpprt -Wl,-rpath,'$ORIGIN'
    $cc $flags -DTLS_MODEL_NAME="\"$model\"" -DDLOPEN -o $d/dlprog "$src/main.c" -L$d -lwpprt -ldl -Wl,-rpath,'$ORIGIN'
    $cc -O2 -o $d/uninstrumented "$src/uninstrumented.c" -ldl
done
export="-Wl,--export-dynamic-symbol=__wpp_exe_functions"
d=hybrid && mkdir $d && cp shared-initial-exec/lib*.so $d/
$cc $flags -DEXE_TLS -o $d/prog "$src/main.c" -L$d -lfib -lwpprt -Wl,-rpath,'$ORIGIN' $export
$cc $flags -DEXE_TLS -DDLOPEN -o $d/dlprog "$src/main.c" -L$d -lwpprt -ldl -Wl,-rpath,'$ORIGIN' $export
echo "== outputs (stdout; the runtime prints events and checksum on stderr)"
native=$(./today/prog "$n" 2>/dev/null)
for p in today/prog shared-initial-exec/prog shared-global-dynamic/prog hybrid/prog; do
    printf '%s: ' $p; ./$p "$n" 2>&1 | tr '\n' ' '; echo
    [ "$(./$p "$n" 2>/dev/null)" = "$native" ] || { echo "$p: output differs" >&2; exit 1; }
done
# The executable's ids come first in both layouts when it registers first (dlopen), so both
# must record the same event words.
a=$(cd shared-initial-exec && ./dlprog "$n" 2>&1 >/dev/null)
b=$(cd hybrid && ./dlprog "$n" 2>&1 >/dev/null)
[ "$a" = "$b" ] || { echo "dlopen recordings differ: $a / $b" >&2; exit 1; }
echo "== dlopen, dlclose, dlopen again from an instrumented executable"
(cd shared-initial-exec && PROTO_VERBOSE=1 ./dlprog "$n" 2>&1)
echo "== the same, hybrid (the executable's ids first, though it registers last)"
(cd hybrid && PROTO_VERBOSE=1 ./prog "$n" 2>&1)
(cd hybrid && PROTO_VERBOSE=1 ./dlprog "$n" 2>&1)
echo "== an uninstrumented executable dlopens the instrumented library"
(cd shared-initial-exec && ./uninstrumented 2>&1) || echo "FAILED"
echo "== instruction counts, fib($n) twice"
t=$(irefs ./today/prog "$n")
for p in today today-base shared-initial-exec shared-global-dynamic hybrid; do
    i=$(irefs ./$p/prog "$n")
    echo "$p: $i I refs, $(awk "BEGIN { printf \"%.3f\", $i / $t }") x today"
done
