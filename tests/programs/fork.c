/* fork() without exec: both processes keep running instrumented code and each is recorded in
 * its own file. The child calls step() 3,000,000 times (far more buffers than the runtime's
 * hand-off queue holds), the parent 200,000 times. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static long step(long x) { return (x * 1103515245 + 12345) & 0x7fffffff; }

static long spin(long n) {
    long x = 1;
    for (long i = 0; i < n; i++) x = step(x);
    return x;
}

int main(void) {
    printf("parent before: %ld\n", spin(100000));
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        printf("child: %ld\n", spin(3000000));
        return 0;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    /* The kernel wrote status; code is the parent's own store and load after the fork (the
     * dependence tests recover it). */
    volatile int code = WEXITSTATUS(status);
    printf("child exited %d\n", code);
    printf("parent after: %ld\n", spin(100000));
    return 0;
}
