#!/bin/sh
# The per-event cost of instrumented shared libraries as `wpp cc` builds them (issue #12 item 2),
# next to the prototype's figures (run.sh): the same work, half in the executable and half in a
# library, built three ways with `wpp cc -O2`:
#   static   one executable (today's layout: local-exec thread-locals, constant ids)
#   shared   the executable + libfib.so (initial-exec thread-locals, base + id per Enter and,
#            in trace-addr, per memory access)
#   native   clang-22 -O2, uninstrumented, as the baseline
# and counts instructions with cachegrind (I refs of the whole process, the runtime's writer
# thread included: exact and the same run to run; binaries stripped of debug info). Raw recordings (WPP_RAW=1) into a temporary
# directory; prints I refs, the ratio to static, and checks outputs and events agree.
# MODE trace-blocks (default): a naive fib(N) on each side, 3 events per call (the worst case
# for a per-Enter cost). MODE trace-addr: each side fills and sums an array of N longs 100
# times (memory-bound: the worst case for a per-access cost); the two layouts must also record
# the same dependences (`wpp deps list`, memory-instruction ids aside).
# Usage: bench/shared-modules/wpp.sh [WPP] [N] [MODE]   (default target/release/wpp, 24, trace-blocks)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
wpp=${1:-$root/target/release/wpp}
n=${2:-24}
mode=${3:-trace-blocks}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$out"
if [ "$mode" = trace-addr ]; then
    cat >lib.c <<'C'
void fib_fill(long *a, long n) { for (long i = 0; i < n; i++) a[i] = i * 7 + (a[i] & 1); }
long fib_sum(const long *a, long n) { long s = 0; for (long i = 0; i < n; i++) s += a[i] ^ i; return s; }
C
    cat >main.c <<'C'
#include <stdio.h>
#include <stdlib.h>
void fib_fill(long *a, long n);
long fib_sum(const long *a, long n);
static void own_fill(long *a, long n) { for (long i = 0; i < n; i++) a[i] = i * 5 + (a[i] & 1); }
static long own_sum(const long *a, long n) { long s = 0; for (long i = 0; i < n; i++) s += a[i] ^ i; return s; }
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 24, s = 0;
    long *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    for (int r = 0; r < 100; r++) {
        own_fill(a, n); fib_fill(b, n);
        s += own_sum(a, n) + fib_sum(b, n);
    }
    printf("%ld\n", s);
    return 0;
}
C
else
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
fi
clang-22 -O2 main.c lib.c -o native
"$wpp" cc --wpp-mode="$mode" -O2 main.c lib.c -o static
"$wpp" cc --wpp-mode="$mode" -O2 -fPIC -shared lib.c -o libfib.so
"$wpp" cc --wpp-mode="$mode" -O2 main.c -L. -lfib -Wl,-rpath,"$out" -o shared
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
if [ "$mode" = trace-addr ]; then
    for p in static shared; do "$wpp" deps list "$p.check.trace.at" | sed 's/#[0-9]*//g' >"$p.deps"; done
    [ -s static.deps ] && cmp -s static.deps shared.deps ||
        { echo "the two layouts recorded other dependences" >&2; exit 1; }
    echo "$(wc -l <static.deps) dependences, the same in both layouts"
    "$wpp" deps stats static.check.trace.at | grep -E '^(load|store) instances'
fi
native=$(irefs native); static=$(irefs static); shared=$(irefs shared)
echo "native $native"
echo "static $static $(echo "scale=3; $static / $static" | bc)"
echo "shared $shared $(echo "scale=3; $shared / $static" | bc)"
