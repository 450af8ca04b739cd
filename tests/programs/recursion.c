/* Recursion, function pointers, switch, goto. Prints call counts ("calls NAME=N") that the
 * integration test compares with the Enter events of the trace (an oracle independent of the
 * instrumentation). */
#include <stdio.h>

static long n_fib, n_ack, n_op_add, n_op_mul, n_op_sub, n_classify, n_collatz;

__attribute__((noinline)) long fib(int n) {
    n_fib++;
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) long ack(long m, long n) {
    n_ack++;
    if (m == 0) return n + 1;
    if (n == 0) return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}

__attribute__((noinline)) static long op_add(long a, long b) { n_op_add++; return a + b; }
__attribute__((noinline)) static long op_mul(long a, long b) { n_op_mul++; return a * b % 1000003; }
__attribute__((noinline)) static long op_sub(long a, long b) { n_op_sub++; return a - b; }

__attribute__((noinline)) static const char *classify(int x) {
    n_classify++;
    switch (x % 7) {
    case 0: return "zero";
    case 1: case 2: return "small";
    case 3: return "three";
    case 5: return "five";
    default: break;
    }
    return x > 50 ? "big" : "other";
}

/* Collatz steps with goto-based control flow. */
__attribute__((noinline)) static int collatz(long n) {
    n_collatz++;
    int steps = 0;
top:
    if (n == 1) goto done;
    if (n & 1) goto odd;
    n /= 2;
    steps++;
    goto top;
odd:
    n = 3 * n + 1;
    steps++;
    goto top;
done:
    return steps;
}

int main(void) {
    long (*ops[3])(long, long) = {op_add, op_mul, op_sub};
    long acc = 1;
    for (int i = 0; i < 300; i++) acc = ops[(i * 7 + 3) % 3](acc, i + 1);
    printf("acc=%ld fib=%ld ack=%ld\n", acc, fib(18), ack(2, 3));
    int hist[6] = {0};
    for (int i = 0; i < 100; i++) {
        const char *c = classify(i);
        switch (c[0]) {
        case 'z': hist[0]++; break;
        case 's': hist[1]++; break;
        case 't': hist[2]++; break;
        case 'f': hist[3]++; break;
        case 'b': hist[4]++; break;
        default: hist[5]++;
        }
    }
    printf("hist=%d,%d,%d,%d,%d,%d\n", hist[0], hist[1], hist[2], hist[3], hist[4], hist[5]);
    long steps = 0;
    for (long n = 1; n < 200; n++) steps += collatz(n);
    printf("collatz=%ld\n", steps);
    printf("calls fib=%ld\ncalls ack=%ld\ncalls op_add=%ld\ncalls op_mul=%ld\ncalls op_sub=%ld\n"
           "calls classify=%ld\ncalls collatz=%ld\ncalls main=1\n",
           n_fib, n_ack, n_op_add, n_op_mul, n_op_sub, n_classify, n_collatz);
    return 0;
}
