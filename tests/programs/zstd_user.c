/* A program that contains zstd (compiled in from the zstd-sys crate's sources): the runtime must
 * neither call its zstd nor be called by it (issue 12: it hung in raw mode). */
#include <stdio.h>
#include <string.h>
#include <zstd.h>
int main(void) {
    static char src[100000], dst[200000], back[100000];
    for (size_t i = 0; i < sizeof src; i++) src[i] = "abcab"[i % 5] + (i % 97 == 0);
    size_t n = ZSTD_compress(dst, sizeof dst, src, sizeof src, 3);
    if (ZSTD_isError(n)) { printf("error %s\n", ZSTD_getErrorName(n)); return 1; }
    size_t m = ZSTD_decompress(back, sizeof back, dst, n);
    printf("compressed %zu -> %zu, round trip %s\n", sizeof src, n,
           m == sizeof src && memcmp(src, back, m) == 0 ? "ok" : "BAD");
    return 0;
}
