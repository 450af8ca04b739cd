/* A signal handler that runs instrumented code while main runs it too: a 1 ms SIGALRM
 * (installed with signal) whose handler calls tick_work three times and, every fourth tick,
 * raises SIGUSR1 (installed with sigaction, SA_SIGINFO), whose handler calls tick_work once.
 * main loops over step until 60 ticks. The program counts its own calls; the recording must
 * have the same, and each handler's call where it ran. It also checks that sigaction and
 * signal report the program's own handlers back (the runtime wraps them). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile long ticks, usr1, work_calls;
static long steps;

__attribute__((noinline)) static long tick_work(long x) {
    work_calls++;
    return x % 3 == 0 ? x / 3 : x + 1;
}

__attribute__((noinline)) static long step(long s) {
    steps++;
    switch (s % 5) {
    case 0: return s + 3;
    case 1: return s * 2 + 1;
    case 2: return s - 1;
    default: return s + (s & 1);
    }
}

static void on_usr1(int sig, siginfo_t *info, void *context) {
    (void)sig, (void)info, (void)context;
    usr1++;
    tick_work(usr1);
}

static void on_alarm(int sig) {
    (void)sig;
    ticks++;
    long x = ticks;
    for (int i = 0; i < 3; i++) x = tick_work(x);
    if (ticks % 4 == 0) raise(SIGUSR1);
}

int main(void) {
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_usr1;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGUSR1, &act, NULL) != 0) return 2;
    if (signal(SIGALRM, on_alarm) == SIG_ERR) return 2;
    struct sigaction old;
    sigaction(SIGUSR1, NULL, &old);
    int ok = old.sa_sigaction == on_usr1 && (old.sa_flags & SA_SIGINFO);
    ok = ok && signal(SIGALRM, on_alarm) == on_alarm;
    printf("handlers %s\n", ok ? "reported back" : "NOT reported back");
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
    long s = 1;
    while (ticks < 60) s = step(s) % 1000003;
    struct itimerval stop = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &stop, NULL);
    fprintf(stderr, "steps=%ld ticks=%ld usr1=%ld work=%ld\n", steps, (long)ticks, (long)usr1,
            (long)work_calls);
    return s == -1;
}
