/* An instrumented library: fib with Enter/Block/Leave probes (call-heavy: Enter's cost shows). */
#define MODULE_NAME "libfib.so"
#define MODULE_FUNCTIONS 1
#include "probes.h"
long fib(long n) {
    ENTER(0);
    BLOCK(0);
    long r;
    if (n < 2) { BLOCK(1); r = n; }
    else { BLOCK(2); r = fib(n - 1) + fib(n - 2); }
    LEAVE();
    return r;
}
