/* Memory dependences across threads, known by hand: main hands a value to each worker before
   starting it and reads each worker's result after joining it; each worker also sums in a
   loop of its own (same-thread dependences through a volatile stack slot). The markers name the accesses. */
#include <pthread.h>
#include <stdio.h>

#define WORKERS 3

static int input[WORKERS];
static int output[WORKERS];

static void *worker(void *arg) {
    int w = (int)(long)arg;
    int v = input[w]; /* L_INPUT */
    volatile int sum = 0; /* S_ZERO */
    for (int i = 0; i < 4; i++) {
        sum += v; /* L_SUM */
    }
    output[w] = sum; /* S_OUTPUT */
    return 0;
}

int main(void) {
    pthread_t t[WORKERS];
    for (int w = 0; w < WORKERS; w++) {
        input[w] = 10 * (w + 1); /* S_INPUT */
        pthread_create(&t[w], 0, worker, (void *)(long)w);
        /* One worker at a time: the threads register in the same order in every run. */
        pthread_join(t[w], 0);
    }
    int total = 0;
    for (int w = 0; w < WORKERS; w++) {
        total += output[w]; /* L_OUTPUT */
    }
    printf("total %d\n", total);
    return 0;
}
