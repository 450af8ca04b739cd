/* zlib workload for the wpp real-workload benchmark.
 *
 *   zlib-driver [N]
 *
 * Generates a deterministic corpus of N * 64 KiB (1 = small, CI) mixing English-like text with
 * a skewed word distribution, numbers, long repeats and noisy binary runs; deflates it with
 * several levels and strategies through the streaming API with small buffers, inflates it back
 * (also in small chunks), and prints sizes and checksums (crc32, adler32) of every stream. Also
 * runs the one-shot compress2/uncompress API and, on a slice, the gzip file API (gzwrite/gzread
 * on ./zlib-driver.tmp.gz in the current directory, removed afterwards). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zlib.h"

static unsigned long long rng = 0x243F6A8885A308D3ull;
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

static void die(const char *what, int rc) {
    fprintf(stderr, "zlib-driver: %s failed (%d)\n", what, rc);
    exit(1);
}

static size_t make_corpus(unsigned char *buf, size_t n) {
    size_t i = 0;
    while (i < n) {
        unsigned kind = rnd(100);
        if (kind < 80) { /* a sentence of skewed words */
            unsigned len = 3 + rnd(12);
            for (unsigned w = 0; w < len && i < n; w++) {
                unsigned r = rnd(NWORDS);
                r = r * r / NWORDS; /* skew towards frequent words */
                const char *s = words[r];
                for (size_t k = 0; s[k] && i < n; k++)
                    buf[i++] = (unsigned char)(w == 0 && k == 0 ? s[k] - 32 : s[k]);
                if (i < n) buf[i++] = w + 1 == len ? '.' : ' ';
            }
            if (i < n) buf[i++] = rnd(4) ? ' ' : '\n';
        } else if (kind < 90) { /* numbers */
            char tmp[32];
            int l = snprintf(tmp, sizeof tmp, "%u,%u;", rnd(100000), rnd(1000));
            for (int k = 0; k < l && i < n; k++) buf[i++] = (unsigned char)tmp[k];
        } else if (kind < 95) { /* a long repeat of earlier data */
            if (i > 1000) {
                size_t from = i - 1 - rnd(i < 30000 ? (unsigned)i - 1 : 30000), len = 20 + rnd(300);
                for (size_t k = 0; k < len && i < n; k++) buf[i++] = buf[from + k];
            }
        } else { /* noisy binary */
            unsigned len = 16 + rnd(200);
            for (unsigned k = 0; k < len && i < n; k++) buf[i++] = (unsigned char)rnd(256);
        }
    }
    return n;
}

/* deflate src through a small output buffer, appending to out; returns compressed length */
static size_t deflate_stream(const unsigned char *src, size_t n, unsigned char *out, size_t cap,
                             int level, int strategy, int window_bits) {
    z_stream z;
    memset(&z, 0, sizeof z);
    int rc = deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, strategy);
    if (rc != Z_OK) die("deflateInit2", rc);
    size_t in_off = 0, out_len = 0;
    unsigned char chunk[4096];
    int flush;
    do {
        size_t avail = n - in_off < 16384 ? n - in_off : 16384;
        z.next_in = (unsigned char *)src + in_off;
        z.avail_in = (uInt)avail;
        in_off += avail;
        flush = in_off == n ? Z_FINISH : Z_NO_FLUSH;
        do {
            z.next_out = chunk;
            z.avail_out = sizeof chunk;
            rc = deflate(&z, flush);
            if (rc == Z_STREAM_ERROR) die("deflate", rc);
            size_t have = sizeof chunk - z.avail_out;
            if (out_len + have > cap) die("deflate (output too big)", 0);
            memcpy(out + out_len, chunk, have);
            out_len += have;
        } while (z.avail_out == 0);
    } while (flush != Z_FINISH);
    if (rc != Z_STREAM_END) die("deflate end", rc);
    deflateEnd(&z);
    return out_len;
}

/* inflate in odd-sized input chunks into back; returns inflated length */
static size_t inflate_stream(const unsigned char *src, size_t n, unsigned char *back, size_t cap,
                             int window_bits) {
    z_stream z;
    memset(&z, 0, sizeof z);
    int rc = inflateInit2(&z, window_bits);
    if (rc != Z_OK) die("inflateInit2", rc);
    size_t in_off = 0;
    z.next_out = back;
    z.avail_out = (uInt)cap;
    do {
        size_t avail = n - in_off < 3001 ? n - in_off : 3001;
        z.next_in = (unsigned char *)src + in_off;
        z.avail_in = (uInt)avail;
        in_off += avail;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) die("inflate", rc);
    } while (rc != Z_STREAM_END && in_off < n);
    if (rc != Z_STREAM_END) die("inflate end", rc);
    size_t len = cap - z.avail_out;
    inflateEnd(&z);
    return len;
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1) scale = 1;
    size_t n = (size_t)scale * (64u << 10);
    unsigned char *src = malloc(n), *back = malloc(n + 1);
    size_t cap = compressBound(n) + 1024;
    unsigned char *dst = malloc(cap);
    if (!src || !back || !dst) die("malloc", 0);
    make_corpus(src, n);
    printf("zlib %s corpus %zu bytes crc32 %08lx adler32 %08lx\n", zlibVersion(), n,
           crc32(0, src, (uInt)n), adler32(1, src, (uInt)n));

    static const struct {
        int level, strategy, wbits;
        const char *name;
    } runs[] = {
        {1, Z_DEFAULT_STRATEGY, 15, "level 1"},
        {6, Z_DEFAULT_STRATEGY, 15, "level 6"},
        {9, Z_DEFAULT_STRATEGY, 15, "level 9"},
        {6, Z_FILTERED, 15, "level 6 filtered"},
        {6, Z_HUFFMAN_ONLY, 15, "huffman only"},
        {6, Z_RLE, 15, "rle"},
        {4, Z_DEFAULT_STRATEGY, 31, "level 4 gzip"},
        {9, Z_DEFAULT_STRATEGY, -10, "level 9 raw w10"},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        size_t clen = deflate_stream(src, n, dst, cap, runs[r].level, runs[r].strategy, runs[r].wbits);
        size_t blen = inflate_stream(dst, clen, back, n + 1, runs[r].wbits);
        int same = blen == n && memcmp(src, back, n) == 0;
        printf("%-18s %zu -> %zu bytes crc32 %08lx adler32 %08lx round-trip %s\n", runs[r].name, n,
               clen, crc32(0, dst, (uInt)clen), adler32(1, dst, (uInt)clen), same ? "ok" : "FAILED");
        if (!same) return 1;
    }

    uLongf dlen = (uLongf)cap;
    int rc = compress2(dst, &dlen, src, (uLong)n, Z_BEST_COMPRESSION);
    if (rc != Z_OK) die("compress2", rc);
    uLongf blen = (uLongf)n;
    rc = uncompress(back, &blen, dst, dlen);
    if (rc != Z_OK || blen != n || memcmp(src, back, n)) die("uncompress", rc);
    printf("%-18s %zu -> %lu bytes crc32 %08lx round-trip ok\n", "compress2", n,
           (unsigned long)dlen, crc32(0, dst, (uInt)dlen));

    /* gzip file API on a slice */
    size_t slice = n < (64u << 10) ? n : (64u << 10);
    const char *tmp = "zlib-driver.tmp.gz";
    gzFile gz = gzopen(tmp, "wb6");
    if (!gz) die("gzopen w", 0);
    for (size_t off = 0; off < slice; off += 1000) {
        unsigned len = (unsigned)(slice - off < 1000 ? slice - off : 1000);
        if (gzwrite(gz, src + off, len) != (int)len) die("gzwrite", 0);
    }
    if (gzclose(gz) != Z_OK) die("gzclose w", 0);
    gz = gzopen(tmp, "rb");
    if (!gz) die("gzopen r", 0);
    size_t got = 0;
    int k;
    while ((k = gzread(gz, back + got, 777)) > 0) got += (size_t)k;
    gzclose(gz);
    remove(tmp);
    printf("%-18s %zu bytes round-trip %s\n", "gzip file", slice,
           got == slice && memcmp(src, back, slice) == 0 ? "ok" : "FAILED");

    free(src);
    free(dst);
    free(back);
    return fflush(stdout) == 0 ? 0 : 1;
}
