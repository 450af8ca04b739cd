/* Many stores, then a crash (abort): `trace-addr` keeps every access its buffers handed over
   before the fatal signal, that is all but those of the dying thread's last buffer. */
#include <stdio.h>
#include <stdlib.h>

#define STORES 400000

static volatile long cells[64];

int main(void) {
    for (int i = 0; i < STORES; i++) {
        cells[i % 64] = i;
    }
    printf("stored %d\n", STORES);
    fflush(stdout);
    abort();
}
