/* An instrumented executable calling its own fib and the library's (linked, or dlopen'ed and
 * reloaded when DLOPEN is set). */
#define MODULE_NAME "main"
#define MODULE_FUNCTIONS 2
#include "probes.h"
#include <stdio.h>
#include <stdlib.h>
#ifdef DLOPEN
#include <dlfcn.h>
#else
long fib(long n);
#endif
static long own_fib(long n) {
    ENTER(1);
    BLOCK(0);
    long r = n < 2 ? n : own_fib(n - 1) + own_fib(n - 2);
    LEAVE();
    return r;
}
int main(int argc, char **argv) {
    ENTER(0);
    long n = argc > 1 ? atol(argv[1]) : 25, sum = own_fib(n);
#ifdef DLOPEN
    for (int load = 0; load < 2; load++) {
        void *h = dlopen("./libfib.so", RTLD_NOW);
        if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
        long (*fib)(long) = (long (*)(long))dlsym(h, "fib");
        sum += fib(n);
        dlclose(h);
    }
#else
    sum += fib(n);
#endif
    printf("%ld\n", sum);
    LEAVE();
    return 0;
}
