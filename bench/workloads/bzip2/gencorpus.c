/* Deterministic corpus generator for the bzip2 workload (built with the host compiler, never
 * instrumented: it only makes the input).
 *
 *   gencorpus N > corpus      writes N * 64 KiB
 *
 * The corpus mixes English-like text with a skewed word distribution, numbers and CSV-like
 * records, long repeats of earlier data, noisy binary runs and, every 64 KiB, a 1 KiB stretch of
 * "abab..." (long runs: bzip2's initial run-length coding and deep block-sort comparisons). */
#include <stdio.h>
#include <stdlib.h>

static unsigned long long rng = 0xB7E151628AED2A6Bull;
static unsigned rnd(unsigned m) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % m;
}

static const char *const words[] = {
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
    "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has",
    "there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "whole",
    "program", "path", "grammar", "sequitur", "trace", "block", "edge", "loop", "call",
    "return", "profile", "compression", "instrumentation", "interpreter", "benchmark"};
#define NWORDS (sizeof words / sizeof words[0])

int main(int argc, char **argv) {
    long scale = argc > 1 ? atol(argv[1]) : 1;
    if (scale < 1) scale = 1;
    size_t n = (size_t)scale * (64u << 10), i = 0;
    unsigned char *buf = malloc(n);
    if (!buf) return 1;
    while (i < n) {
        if (i % 65536 < 2048 && i % 65536 >= 1024) { /* repetitive stretch */
            const char *pat = "abababababababab";
            while (i < n && i % 65536 < 2048) buf[i] = (unsigned char)pat[i % 2], i++;
            continue;
        }
        unsigned kind = rnd(100);
        if (kind < 75) {
            unsigned len = 3 + rnd(12);
            for (unsigned w = 0; w < len && i < n; w++) {
                unsigned r = rnd(NWORDS);
                r = r * r / NWORDS;
                const char *s = words[r];
                for (size_t k = 0; s[k] && i < n; k++)
                    buf[i++] = (unsigned char)(w == 0 && k == 0 ? s[k] - 32 : s[k]);
                if (i < n) buf[i++] = w + 1 == len ? '.' : ' ';
            }
            if (i < n) buf[i++] = rnd(4) ? ' ' : '\n';
        } else if (kind < 88) {
            char tmp[64];
            int l = snprintf(tmp, sizeof tmp, "%u,%u,%c%c,%u\n", rnd(100000), rnd(1000),
                             'A' + rnd(26), 'A' + rnd(26), rnd(7));
            for (int k = 0; k < l && i < n; k++) buf[i++] = (unsigned char)tmp[k];
        } else if (kind < 95) {
            if (i > 1000) {
                size_t from = i - 1 - rnd(i < 30000 ? (unsigned)i - 1 : 30000), len = 20 + rnd(300);
                for (size_t k = 0; k < len && i < n; k++) buf[i++] = buf[from + k];
            }
        } else {
            unsigned len = 16 + rnd(200);
            for (unsigned k = 0; k < len && i < n; k++) buf[i++] = (unsigned char)rnd(256);
        }
    }
    if (fwrite(buf, 1, n, stdout) != n) return 1;
    free(buf);
    return fflush(stdout) == 0 ? 0 : 1;
}
