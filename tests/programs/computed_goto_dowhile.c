/* Computed goto through a `do { … } while (0)` macro, as interpreters write it: unoptimized,
 * each dispatch leaves an unreachable block behind the `goto *` (the loop's continuation), with
 * an edge into the next handler. Session 32's trial: at -O0 those edges skewed the path
 * numbering (path ids past the count, a bl profile silently short). */
#include <stdio.h>
#include <stdlib.h>

enum { OP_HALT, OP_INC, OP_DBL, OP_DEC, OP_JNZ, OP_NOP };

__attribute__((noinline)) static long interp(const unsigned char *code, int n, long acc) {
    static void *tbl[] = {&&halt, &&inc, &&dbl, &&dec, &&jnz, &&nop};
    int pc = 0;
    long cnt = 0;
#define NEXT                                                                                     \
    do {                                                                                         \
        if (pc >= n) goto halt;                                                                  \
        goto *tbl[code[pc++]];                                                                   \
    } while (0)
    NEXT;
inc:
    acc++;
    NEXT;
dbl:
    acc *= 2;
    NEXT;
dec:
    cnt--;
    NEXT;
jnz:
    if (cnt > 0) pc = code[pc];
    else pc++;
    NEXT;
nop:
    cnt = acc;
    NEXT;
halt:
    return acc + cnt;
}

int main(int argc, char **argv) {
    unsigned char code[] = {5, 1, 3, 4, 1, 2, 0};
    long r = interp(code, sizeof code, argc > 1 ? atoi(argv[1]) : 10);
    printf("interp=%ld\n", r);
    return 0;
}
