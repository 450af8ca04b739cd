/* fork() in an address trace: each process records its own accesses. bump stores (and loads)
 * a volatile counter: 100 times before the fork, 500 more in the parent, 1000 in the child. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long counter;

__attribute__((noinline)) static void bump(void) { counter++; }

static void bumps(int n) {
    for (int i = 0; i < n; i++) bump();
}

int main(void) {
    bumps(100);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        bumps(1000);
        return 0;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    bumps(500);
    printf("counter %ld, child exited %d\n", (long)counter, WEXITSTATUS(status));
    return 0;
}
