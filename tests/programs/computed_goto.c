/* A tiny bytecode interpreter dispatching with computed goto (`indirectbr` in LLVM, whose edges
 * cannot be split: the path instrumentation must make them cut points), as Lua's VM does. */
#include <stdio.h>

enum { PUSH, ADD, MUL, DUP, JNZ, DEC, SWAP, POP, HALT };

__attribute__((noinline)) static long run(const int *code) {
    static void *dispatch[] = {&&push, &&add, &&mul, &&dup, &&jnz, &&dec, &&swap, &&pop, &&halt};
    long stack[64];
    int sp = 0, pc = 0;
#define NEXT goto *dispatch[code[pc++]]
    NEXT;
push:
    stack[sp++] = code[pc++];
    NEXT;
add:
    sp--;
    stack[sp - 1] += stack[sp];
    NEXT;
mul:
    sp--;
    stack[sp - 1] = stack[sp - 1] * stack[sp] % 1000003;
    NEXT;
dup:
    stack[sp] = stack[sp - 1];
    sp++;
    NEXT;
jnz:
    if (stack[--sp]) pc = code[pc];
    else pc++;
    NEXT;
dec:
    stack[sp - 1]--;
    NEXT;
swap: {
    long t = stack[sp - 1];
    stack[sp - 1] = stack[sp - 2];
    stack[sp - 2] = t;
    NEXT;
}
pop:
    sp--;
    NEXT;
halt:
    return stack[sp - 1];
}

int main(void) {
    /* acc = 1; n = 200; do { acc = acc * 3 + 7; } while (--n); return acc; */
    const int prog[] = {PUSH, 1, PUSH, 200,                   /* acc n */
                        SWAP, PUSH, 3, MUL, PUSH, 7, ADD, SWAP, /* 4: acc*3+7 n */
                        DEC, DUP, JNZ, 4,                     /* loop while --n */
                        POP, HALT};
    long r = 0;
    for (int i = 0; i < 50; i++) r += run(prog);
    printf("%ld\n", r);
    return 0;
}
