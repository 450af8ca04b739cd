/* churn N M US: N rounds over a global array (loads and stores), then "ready", then M more
 * rounds, each after usleep(US). The accesses do not depend on US, so a fast run (US = 0) is
 * the reference for a slow one that is killed: the killed run's address trace must hold a
 * prefix of its accesses. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile long cells[64];

__attribute__((noinline)) static void round_of(long r) {
    for (int i = 1; i < 64; i++) cells[i] = cells[i - 1] + r;
}

__attribute__((noinline)) static void pause_for(long us) { usleep((useconds_t)us); }

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    long n = atol(argv[1]), m = atol(argv[2]), us = atol(argv[3]);
    for (long r = 0; r < n; r++) round_of(r);
    printf("ready\n");
    fflush(stdout);
    for (long r = 0; r < m; r++) {
        pause_for(us);
        round_of(r);
    }
    printf("%ld\n", cells[63]);
    return 0;
}
