/* exits HOW: 100000 calls of step(), then ends from depth 3 (main -> down -> down) by HOW:
 * `_exit` (status 3), `_Exit` (4), `execv`, `execvp`, `execl`, `execlp` or `execle` of sh
 * (which prints a line and exits with 5), `abort`, or `return` (0). Neither `_exit` nor `exec` runs
 * atexit handlers: the runtime must end the recording itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static long step(long x) { return (x * 1103515245 + 12345) & 0x7fffffff; }

__attribute__((noinline)) static void end(const char *how) {
    char *args[] = {"sh", "-c", "echo exec ran; exit 5", NULL};
    if (!strcmp(how, "_exit")) _exit(3);
    if (!strcmp(how, "_Exit")) _Exit(4);
    if (!strcmp(how, "abort")) abort();
    if (!strcmp(how, "execv")) execv("/bin/sh", args);
    if (!strcmp(how, "execvp")) execvp("sh", args);
    if (!strcmp(how, "execl")) execl("/bin/sh", "sh", "-c", "echo exec ran; exit 5", (char *)NULL);
    if (!strcmp(how, "execlp")) execlp("sh", "sh", "-c", "echo exec ran; exit 5", (char *)NULL);
    if (!strcmp(how, "execle")) {
        char *env[] = {"PATH=/bin:/usr/bin", NULL};
        execle("/bin/sh", "sh", "-c", "echo exec ran; exit 5", (char *)NULL, env);
    }
}

__attribute__((noinline)) static void down(int n, const char *how) {
    if (n == 0) end(how);
    else down(n - 1, how);
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "return";
    long x = 1;
    for (int i = 0; i < 100000; i++) x = step(x);
    printf("%ld\n", x);
    fflush(stdout);
    down(1, how);
    return 0;
}
