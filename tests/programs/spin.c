/* Runs until killed (at most ~60 s): prints "ready" once it has produced many events, so the
 * test can SIGKILL it mid-run and check that the trace prefix is readable. After "ready" it
 * keeps producing events, slowly: the runtime's writer is still writing when the kill comes,
 * yet keeps up, so the test's polls of the trace stay short. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static long step(long x) { return (x * 1103515245 + 12345) & 0x7fffffff; }

int main(void) {
    long x = 1;
    time_t start = time(NULL);
    for (long i = 0;; i++) {
        x = step(x);
        if (i == 2000000) {
            printf("ready\n");
            fflush(stdout);
        }
        if (i > 2000000 && (i & 0xff) == 0) usleep(1000);
        if ((i & 0xfffff) == 0 && time(NULL) - start > 60) break;
    }
    printf("%ld\n", x);
    return 0;
}
