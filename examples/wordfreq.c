/* The bundled example that scripts/demo.sh records: counts word frequencies in a generated
 * text with a chained hash table, sorts the words with qsort and prints the most frequent.
 * Small, deterministic, and with the control flow real programs have: loops, a switch, a
 * comparison callback through a function pointer, recursion and library calls. `noinline`
 * keeps the helpers as functions of their own at -O2, so the trace shows them by name. */
#define NOINLINE __attribute__((noinline))
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 1024

struct word {
    char text[16];
    long count;
    struct word *next;
};

static struct word *table[BUCKETS];
static long distinct;

NOINLINE static unsigned hash(const char *s) {
    unsigned h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h % BUCKETS;
}

NOINLINE static void count_word(const char *w) {
    unsigned h = hash(w);
    for (struct word *p = table[h]; p; p = p->next)
        if (strcmp(p->text, w) == 0) {
            p->count++;
            return;
        }
    struct word *p = calloc(1, sizeof *p);
    strncpy(p->text, w, sizeof p->text - 1);
    p->count = 1;
    p->next = table[h];
    table[h] = p;
    distinct++;
}

/* A deterministic pseudo-random word: syllables chosen by a linear congruential generator. */
NOINLINE static void make_word(unsigned long *seed, char *out) {
    static const char *syllables[] = {"ka", "lo", "mi", "ne", "ru", "ta", "shi", "po"};
    int n = 1 + (int)(*seed >> 33) % 3;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        *seed = *seed * 6364136223846793005ul + 1442695040888963407ul;
        unsigned k = (unsigned)(*seed >> 60);
        switch (k) {
        case 0: case 1: case 2: case 3: strcat(out, syllables[k]); break;
        case 4: case 5: strcat(out, syllables[4 + (k & 1)]); break;
        default: strcat(out, syllables[6 + (k & 1)]); break;
        }
    }
}

NOINLINE static int by_count(const void *a, const void *b) {
    const struct word *x = *(struct word *const *)a, *y = *(struct word *const *)b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return strcmp(x->text, y->text);
}

NOINLINE static long digits(long n) { return n < 10 ? 1 : 1 + digits(n / 10); }

int main(int argc, char **argv) {
    long words = argc > 1 ? atol(argv[1]) : 200000;
    unsigned long seed = 42;
    char w[16];
    for (long i = 0; i < words; i++) {
        make_word(&seed, w);
        count_word(w);
    }
    struct word **all = malloc(distinct * sizeof *all);
    long n = 0;
    for (int b = 0; b < BUCKETS; b++)
        for (struct word *p = table[b]; p; p = p->next) all[n++] = p;
    qsort(all, n, sizeof *all, by_count);
    printf("%ld words, %ld distinct\n", words, distinct);
    for (long i = 0; i < 10 && i < n; i++)
        printf("%-8s %*ld\n", all[i]->text, (int)digits(words), all[i]->count);
    return 0;
}
