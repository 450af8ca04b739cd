/* The variadic members of the exec family, which stable Rust cannot define: each collects
 * its arguments into an array and calls the `v` form, which the runtime wraps (lib.rs, `mod
 * exec`) to end the recording before the new image. glibc's own execl/execlp/execle call
 * execve internally, past the wrappers, and would lose the recording's last flush interval. */
#include <stdarg.h>
#include <stddef.h>
#include <unistd.h>

/* Counts the arguments up to and including the terminating NULL. */
static size_t count_args(const char *arg, va_list ap) {
    size_t n = 1;
    va_list copy;
    va_copy(copy, ap);
    while (arg != NULL) {
        arg = va_arg(copy, const char *);
        n++;
    }
    va_end(copy);
    return n;
}

/* Fills `argv` with `arg` and the `n - 1` arguments after it (the last one NULL). */
static void collect_args(char **argv, size_t n, const char *arg, va_list ap) {
    argv[0] = (char *)arg;
    for (size_t i = 1; i < n; i++) argv[i] = va_arg(ap, char *);
}

/* Declares `argv`: `arg` and the arguments after it up to the terminating NULL; `ap` is left
 * after that NULL (where execle's environment is). */
#define COLLECT_ARGS(arg, ap)                                                                    \
    va_list ap;                                                                                  \
    va_start(ap, arg);                                                                           \
    size_t n = count_args(arg, ap);                                                              \
    char *argv[n];                                                                               \
    collect_args(argv, n, arg, ap)

int execl(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg, ap);
    va_end(ap);
    return execv(path, argv);
}

int execlp(const char *file, const char *arg, ...) {
    COLLECT_ARGS(arg, ap);
    va_end(ap);
    return execvp(file, argv);
}

int execle(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg, ap);
    char **envp = va_arg(ap, char **);
    va_end(ap);
    return execve(path, argv, envp);
}
