/* Four threads each call `step` N times: the counter increments of `bl` and `ppp` race on
 * every call, so the profiles are exact only if the increments are atomic. `step` has four
 * paths, taken a number of times known in advance (the test recomputes them); the volatile
 * thread-local sinks keep its branches branches at -O2. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define N 1000000

static pthread_barrier_t start;
static _Thread_local volatile long thirds, odds;

__attribute__((noinline)) static void step(long i) {
    if (i % 3 == 0) thirds++;
    if (i & 1) odds++;
}

__attribute__((noinline)) static void *worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start); /* all threads count at once: the most contention */
    for (long i = 0; i < N; i++) step(i);
    return (void *)(thirds + odds);
}

int main(void) {
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, NULL);
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("total=%ld\n", total);
    return 0;
}
