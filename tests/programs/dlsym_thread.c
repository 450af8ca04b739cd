/* A thread the instrumenter cannot see: `pthread_create` is looked up with `dlsym`, so the
   module never refers to it and the eWPP modes build the program. Main first runs enough
   loads and stores to fill several event buffers, then starts a worker that runs instrumented
   code: the collection run must refuse it at run time (its checks follow one thread), keep
   what main recorded before, and never record a dependence it cannot check. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static volatile long cells[64];

static void *worker(void *arg) {
    long sum = 0;
    for (int i = 0; i < 1000; i++) {
        cells[i % 64] = i;
        sum += cells[(i + 1) % 64];
    }
    *(long *)arg = sum;
    return 0;
}

int main(int argc, char **argv) {
    long sum = 0;
    for (int i = 0; i < 200000; i++) {
        cells[i % 64] = i;
        sum += cells[(i + 7) % 64];
    }
    if (argc > 1) { /* "alone": the same accesses of main, no thread */
        printf("sum %ld\n", sum);
        return 0;
    }
    create_fn create = (create_fn)dlsym(RTLD_DEFAULT, "pthread_create");
    pthread_t t;
    long result = 0;
    if (!create || create(&t, 0, worker, &result) != 0) {
        return 2;
    }
    pthread_join(t, 0);
    printf("sum %ld worker %ld\n", sum, result);
    return 0;
}
