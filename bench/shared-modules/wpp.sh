#!/bin/sh
# The per-event cost of instrumented shared libraries as `wpp cc` builds them (issue #12 item 2),
# next to the prototype's figures (run.sh): the same call-bound work, a naive fib(N) in the
# executable and one in a library, built three ways with `wpp cc -O2` (trace-blocks):
#   static   one executable (today's layout: local-exec thread-locals, constant Enter words)
#   shared   the executable + libfib.so (initial-exec thread-locals, base + id per Enter)
#   native   clang-22 -O2, uninstrumented, as the baseline
# and counts instructions with cachegrind (I refs of the whole process, the runtime's writer
# thread included: exact and the same run to run; binaries stripped of debug info). Raw recordings (WPP_RAW=1) into a temporary
# directory; prints I refs, the ratio to static, and checks outputs and events agree.
# Usage: bench/shared-modules/wpp.sh [WPP] [N]   (default target/release/wpp, fib 24)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
wpp=${1:-$root/target/release/wpp}
n=${2:-24}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
cat >lib.c <<'C'
long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
C
cat >main.c <<'C'
#include <stdio.h>
#include <stdlib.h>
long fib(long n);
static long own_fib(long n) { return n < 2 ? n : own_fib(n - 1) + own_fib(n - 2); }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 24;
    printf("%ld\n", own_fib(n) + fib(n));
    return 0;
}
C
clang-22 -O2 main.c lib.c -o native
"$wpp" cc --wpp-mode=trace-blocks -O2 main.c lib.c -o static
"$wpp" cc --wpp-mode=trace-blocks -O2 -fPIC -shared lib.c -o libfib.so
"$wpp" cc --wpp-mode=trace-blocks -O2 main.c -L. -lfib -Wl,-rpath,"$out" -o shared
# Valgrind 3.19 gives up on the DWARF of a program with the packaged runtime: measure stripped.
strip -g native static shared libfib.so
irefs() { WPP_RAW=1 WPP_QUIET=1 WPP_OUT=$out/$1.trace valgrind --tool=cachegrind --cache-sim=no \
    --cachegrind-out-file=/dev/null "./$1" "$n" 2>&1 >/dev/null | sed -n 's/.*I *refs: *//p' | tr -d ,; }
want=$(./native "$n")
for p in static shared; do
    got=$(WPP_RAW=1 WPP_QUIET=1 WPP_OUT=$out/$p.check.trace "./$p" "$n")
    [ "$got" = "$want" ] || { echo "$p prints $got, native $want" >&2; exit 1; }
done
"$wpp" functions static.check.trace >static.functions
"$wpp" functions shared.check.trace >shared.functions
cmp -s static.functions shared.functions || { echo "the two layouts recorded other events" >&2; exit 1; }
cat static.functions
native=$(irefs native); static=$(irefs static); shared=$(irefs shared)
echo "native $native"
echo "static $static $(echo "scale=3; $static / $static" | bc)"
echo "shared $shared $(echo "scale=3; $shared / $static" | bc)"
