/* Four threads doing recursive work; output printed by main after joining, so it is
 * deterministic. The trace must hold one balanced stream per thread. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4

__attribute__((noinline)) static long work(long n) { return n < 2 ? n : work(n - 1) + work(n - 2); }

__attribute__((noinline)) static void *worker(void *arg) {
    long k = (long)arg;
    long s = 0;
    for (int i = 0; i < 30; i++) s += work(10 + k);
    return (void *)s;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        printf("thread %d: %ld\n", i, (long)r);
    }
    printf("threads=%d\n", THREADS);
    return 0;
}
