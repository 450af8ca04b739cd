/* Work done while the process exits: an atexit handler and a destructor, after main returns,
 * besides a constructor before it. Each calls work, whose calls the program counts. */
#include <stdio.h>
#include <stdlib.h>

static volatile long calls;

__attribute__((noinline)) static long work(int n) {
    calls++;
    long s = 0;
    for (int i = 0; i < n; i++) s += i;
    return s;
}

__attribute__((constructor)) static void before_main(void) { printf("ctor %ld\n", work(3)); }

__attribute__((destructor)) static void after_exit(void) {
    printf("dtor %ld (work calls %ld)\n", work(4), calls + 1);
}

static void at_exit_handler(void) { printf("atexit %ld\n", work(5)); }

int main(void) {
    atexit(at_exit_handler);
    printf("main %ld\n", work(6));
    return 0;
}
