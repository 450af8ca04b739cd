/* zlib workload: deflates a generated, deterministic text corpus at several levels and inflates
 * it back, printing sizes and checksums. Scale with the first argument. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zlib.h"

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    size_t n = (size_t)scale * (1u << 20);
    unsigned char *src = malloc(n), *dst, *back = malloc(n);
    static const char *words[] = {"whole", "program", "paths", "grammar", "sequitur", "trace",
                                  "block", "edge", "loop", "call", "return", "profile"};
    unsigned seed = 1;
    for (size_t i = 0; i < n;) {
        seed = seed * 1103515245u + 12345u;
        const char *w = words[(seed >> 16) % 12];
        size_t l = strlen(w);
        for (size_t j = 0; j < l && i < n; j++) src[i++] = (unsigned char)w[j];
        if (i < n) src[i++] = (seed >> 8) % 9 ? ' ' : '\n';
    }
    uLongf cap = compressBound(n);
    dst = malloc(cap);
    for (int level = 1; level <= 9; level += 4) {
        uLongf dlen = cap;
        if (compress2(dst, &dlen, src, n, level) != Z_OK) return 1;
        uLongf blen = n;
        if (uncompress(back, &blen, dst, dlen) != Z_OK || blen != n || memcmp(src, back, n)) return 1;
        printf("level %d: %zu -> %lu bytes, adler %08lx, crc %08lx\n", level, n, (unsigned long)dlen,
               adler32(0, dst, dlen), crc32(0, dst, dlen));
    }
    free(src);
    free(dst);
    free(back);
    return 0;
}
