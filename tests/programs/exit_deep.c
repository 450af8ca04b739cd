/* Leaves the program from deep frames: exit() (argument "exit", the default) or abort()
 * (argument "abort"). Prints the depth it leaves from so the test can check that the runtime
 * marked exactly that many open frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mode_abort;

static void bye(void) { printf("atexit handler\n"); }

__attribute__((noinline)) static void down(int depth, int target) {
    if (depth == target) {
        printf("leaving at depth %d\n", depth + 2); /* down(0..=depth) and main */
        fflush(stdout);
        if (mode_abort) abort();
        exit(3);
    }
    down(depth + 1, target);
}

int main(int argc, char **argv) {
    mode_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
    atexit(bye);
    down(0, 9);
    return 0;
}
