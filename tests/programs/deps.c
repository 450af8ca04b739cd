/* Memory dependences with hand-known answers (crates/wpp-instrument/tests/deps.rs).
 * Each access the test checks is on a line marked with a comment naming it; the test finds
 * the markers, so the expected dependences are written in the test by name. Built with -O1 -g:
 * the noinline helpers keep each access a real load or store. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void set(int *p, int v) {
    *p = v; /* S_SET */
}

NOINLINE int get(const int *q) {
    return *q; /* L_GET */
}

struct S {
    int a;
    char b[12];
};

NOINLINE void fill(struct S *s) {
    s->a = 7; /* S_FILL_A */
    memset(s->b, 'x', sizeof s->b); /* S_FILL_B */
}

NOINLINE void copy(struct S *d, const struct S *s) {
    memcpy(d, s, sizeof *d); /* S_COPY */
}

NOINLINE int read_a(const struct S *s) {
    return s->a; /* L_READ_A */
}

union U {
    unsigned char b[4];
    unsigned w;
};

NOINLINE void put_byte(union U *u, int i, unsigned char v) {
    u->b[i] = v; /* S_BYTE */
}

NOINLINE unsigned word(const union U *u) {
    return u->w; /* L_WORD */
}

NOINLINE int frame_a(int x) {
    volatile int t[4];
    t[2] = x; /* S_FRAME_A */
    return t[2] + 1; /* L_FRAME_A */
}

NOINLINE int frame_b(int x) {
    volatile int u[4];
    u[2] = x * 2; /* S_FRAME_B */
    return u[2]; /* L_FRAME_B */
}

NOINLINE void fill_loop(int *a, int n) {
    for (int i = 0; i < n; i++)
        a[i] = i * 3; /* S_LOOP */
}

NOINLINE int sum(const int *a, int n) {
    int s = 0;
    for (int i = 0; i < n; i++)
        s += a[i]; /* L_SUM */
    return s;
}

NOINLINE int scribble(int x) {
    volatile int big[64];
    for (int i = 0; i < 64; i++)
        big[i] = x + i; /* S_SCRIBBLE */
    return big[x & 63];
}

NOINLINE int va_sum(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; i++)
        s += va_arg(ap, int); /* L_VA */
    va_end(ap);
    return s;
}

NOINLINE int format(int v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    return buf[0] * 256 + buf[1]; /* L_FMT */
}

NOINLINE long parse(const char *s) {
    char *end;
    double d = strtod(s, &end);
    return (long)d * 100 + (end - s); /* L_END */
}

struct P {
    char c;
    int i; /* three bytes of padding before it */
};

NOINLINE void take(const struct P *p, struct P *out) {
    memcpy(out, p, sizeof *p); /* L_PAD */
}

NOINLINE int padded(int v) {
    struct P p, q;
    p.c = 1;
    p.i = v;
    take(&p, &q);
    return q.i;
}

int main(void) {
    /* Aliasing through arguments: set #1 writes a, set #2 writes b, set #3 writes a
     * through an alias; get #1 reads a (set #3), get #2 reads b (set #2). */
    int a = 0, b = 0;
    int *alias = &a;
    set(&a, 1);
    set(&b, 2);
    set(alias, 3);
    int r = get(&a);
    r += get(&b);
    printf("alias %d\n", r);

    /* A struct copied with memcpy: the copy's source bytes come from fill, the field read
     * after the copy from the copy. */
    struct S s1, s2;
    fill(&s1);
    copy(&s2, &s1);
    printf("struct %d %c\n", read_a(&s2), s2.b[3]);

    /* A union written as four bytes and read as a word: four writers, one byte each. */
    union U u;
    for (int i = 0; i < 4; i++)
        put_byte(&u, i, (unsigned char)(i + 1));
    printf("union %08x\n", word(&u));

    /* A heap block freed and reused: set #4 writes the block, get #3 reads it; after free,
     * malloc returns the same bytes, which are external for get #4 (the allocator wrote its
     * free-list links there; the value read is not printed, it differs between runs) until
     * set #5 writes them for get #5. */
    int *h = malloc(64);
    set(h, 9);
    r = get(h);
    free(h);
    int *h2 = malloc(64);
    volatile int garbage = get(h2);
    (void)garbage;
    set(h2, 4);
    r += get(h2);
    printf("heap %d\n", r);
    free(h2);

    /* Stack slots reused by a later call: frame_b's load reads frame_b's store, never
     * frame_a's, though both use the same stack bytes. */
    printf("frames %d %d\n", frame_a(5), frame_b(6));

    /* A store inside a loop read after it: sum's k-th load reads fill_loop's k-th store. */
    int arr[10];
    fill_loop(arr, 10);
    printf("loop %d\n", sum(arr, 10));

    /* Variadic arguments: va_arg reads the register save area the prologue wrote (no store
     * of the program), never the stale stack bytes scribble left there. */
    int sc = scribble(1);
    printf("va %d %d\n", sc, va_sum(3, 10, 20, 30));

    /* libc writes the program reads back: snprintf's digits, strtod's end pointer (both
     * external, never scribble's stale stack bytes). */
    sc = scribble(2);
    int f = format(42);
    printf("libc %d %d %ld\n", sc, f, parse("3.5x"));

    /* A struct's padding is never written: copying it reads uninitialized bytes (external),
     * not the stores of the dead frame (scribble's) that used the same stack bytes. */
    sc = scribble(3);
    printf("padding %d %d\n", sc, padded(5));
    return 0;
}
