/* ticks N M US: N calls of step(), then "ready", then M more, each after usleep(US). The event
 * stream does not depend on US (usleep(0) takes the same paths), so a fast run (US = 0) is the
 * reference for a slow one that is killed: the killed run's events must be a prefix of it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static long step(long x) { return (x * 1103515245 + 12345) & 0x7fffffff; }

__attribute__((noinline)) static void pause_for(long us) { usleep((useconds_t)us); }

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    long n = atol(argv[1]), m = atol(argv[2]), us = atol(argv[3]);
    long x = 1;
    for (long i = 0; i < n; i++) x = step(x);
    printf("ready\n");
    fflush(stdout);
    for (long i = 0; i < m; i++) {
        pause_for(us);
        x = step(x);
    }
    printf("%ld\n", x);
    return 0;
}
