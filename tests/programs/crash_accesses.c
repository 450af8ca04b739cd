/* Many stores, then a crash (abort), or with the argument `sleep` a long sleep (to be killed):
   `trace-addr` keeps every access made before the fatal signal, or before the last periodic
   flush ahead of a SIGKILL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STORES 400000

static volatile long cells[64];

int main(int argc, char **argv) {
    for (int i = 0; i < STORES; i++) {
        cells[i % 64] = i;
    }
    printf("stored %d\n", STORES);
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
        sleep(60);
        return 0;
    }
    abort();
}
