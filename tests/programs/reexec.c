/* Image `n` runs `step` (n + 1) * 1000 times, then, for n > 0, replaces a process by image
 * n - 1 with `execl` of itself: its own (`self`, the pid stays), or a forked child's (`fork`,
 * the parent waits for it), so that the exec'd image does not know it was forked. Every
 * image's recording must survive under its own name (the step counts tell them apart). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static void step(unsigned i) { sink += i; }

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    int n = atoi(argv[2]);
    for (unsigned i = 0; i < (unsigned)(n + 1) * 1000; i++) step(i);
    printf("image %d\n", n);
    fflush(stdout);
    if (n == 0) return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", n - 1);
    if (!strcmp(argv[1], "fork")) {
        pid_t child = fork();
        if (child == 0) {
            execl("/proc/self/exe", argv[0], argv[1], next, (char *)NULL);
            _exit(127);
        }
        int status;
        waitpid(child, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    execl("/proc/self/exe", argv[0], argv[1], next, (char *)NULL);
    return 127;
}
