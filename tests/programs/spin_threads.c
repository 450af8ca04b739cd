/* spin_threads T M: T threads each call step() M times; main prints "ready" once they are
 * started, joins them and prints the sum. Each worker's event stream is the same whatever the
 * scheduling, so a killed run's per-thread streams must be prefixes of a full run's. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long step(long x) { return (x * 1103515245 + 12345) & 0x7fffffff; }

static long m;

static void *work(void *arg) {
    long x = (long)arg;
    for (long i = 0; i < m; i++) x = step(x);
    return (void *)x;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int t = atoi(argv[1]);
    m = atol(argv[2]);
    pthread_t th[64];
    if (t > 64) t = 64;
    for (int i = 0; i < t; i++) pthread_create(&th[i], NULL, work, (void *)1L);
    printf("ready\n");
    fflush(stdout);
    long sum = 0;
    for (int i = 0; i < t; i++) {
        void *r;
        pthread_join(th[i], &r);
        sum += (long)r;
    }
    printf("%ld\n", sum);
    return 0;
}
