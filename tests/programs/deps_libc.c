/* libc writes the program reads back, with hand-known answers (crates/wpp-instrument/tests/
 * deps.rs): every load of the scenario functions called from main reads bytes libc wrote, so
 * its only writer is external, never the program's store that held those bytes before (each
 * scenario first writes them with poke, or reuses a heap block poke wrote). Where libc fails
 * and writes nothing (at_eof: fgets at the end of the stream; missing: stat of a missing
 * file; half_scanned: the conversion after the one sscanf matched; appended: the bytes
 * before the ones strcat appended), the load reads the program's store. Built with -O1 -g. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void poke(char *p, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (char)('a' + i);
}

static int compare(const void *a, const void *b) {
    return *(const int *)a - *(const int *)b;
}

NOINLINE int sorted(void) {
    int v[4];
    for (int i = 0; i < 4; i++)
        v[i] = 4 - i;
    qsort(v, 4, sizeof v[0], compare);
    return v[0] * 10 + v[3];
}

NOINLINE int first_line(FILE *f) {
    char buf[16];
    poke(buf, sizeof buf);
    if (!fgets(buf, sizeof buf, f))
        return -1;
    return buf[0] * 256 + buf[2];
}

NOINLINE int next_line(FILE *f) {
    char *reused = malloc(120);
    poke(reused, 120);
    free(reused);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    int r = n > 0 ? line[0] + (int)n : -1;
    free(line);
    return r;
}

NOINLINE int at_eof(FILE *f) {
    char buf[4];
    buf[0] = 'z';
    char *r = fgets(buf, sizeof buf, f);
    return r ? 0 : buf[0];
}

NOINLINE int now(void) {
    time_t t = 5;
    struct timespec ts;
    poke((char *)&ts, sizeof ts);
    time(&t);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return t > 1000 && ts.tv_nsec >= 0;
}

NOINLINE int is_dir(void) {
    struct stat st;
    poke((char *)&st, sizeof st);
    stat("/", &st);
    return S_ISDIR(st.st_mode);
}

NOINLINE long missing(void) {
    struct stat st;
    st.st_size = 7;
    if (stat("/nonexistent-wpp/x", &st) == 0)
        return -1;
    return st.st_size;
}

NOINLINE int piped(void) {
    int fds[2];
    poke((char *)fds, sizeof fds);
    if (pipe(fds) != 0)
        return -1;
    int ok = fds[0] >= 0 && fds[1] > fds[0];
    close(fds[0]);
    close(fds[1]);
    return ok;
}

NOINLINE int day(void) {
    time_t t = 86400 * 40;
    struct tm tm;
    char year[8];
    poke((char *)&tm, sizeof tm);
    poke(year, sizeof year);
    gmtime_r(&t, &tm);
    strftime(year, sizeof year, "%Y", &tm);
    return tm.tm_mday * 100 + tm.tm_mon;
}

NOINLINE int year_digit(void) {
    time_t t = 0;
    struct tm tm;
    char year[8];
    poke(year, sizeof year);
    gmtime_r(&t, &tm);
    strftime(year, sizeof year, "%Y", &tm);
    return year[3];
}

NOINLINE int duplicated(void) {
    char *p = malloc(4);
    poke(p, 4);
    free(p);
    char *d = strdup("xy");
    int r = d[0] * 256 + d[2];
    free(d);
    return r;
}

NOINLINE int token_end(void) {
    char s[8];
    poke(s, sizeof s);
    s[2] = ',';
    s[5] = 0;
    char *t = strtok(s, ",");
    if (!t)
        return -1;
    return s[2];
}

NOINLINE int scanned(void) {
    int a = 1;
    char word[8];
    poke(word, sizeof word);
    int n = sscanf("12 ab", "%d %7s", &a, word);
    return n * 1000 + a + word[0] + word[2];
}

NOINLINE int half_scanned(void) {
    int a = 1, b = 2;
    int n = sscanf("7 x", "%d %d", &a, &b);
    return n * 100 + a * 10 + b;
}

NOINLINE int appended(const char *tail) {
    char s[8];
    poke(s, sizeof s);
    s[2] = 0;
    strcat(s, tail);
    return s[0] * 65536 + s[2] * 256 + s[4];
}

NOINLINE int formatted(void) {
    char *reused = malloc(8);
    poke(reused, 8);
    free(reused);
    char *p = NULL;
    int n = asprintf(&p, "%d", 42);
    int r = n > 0 ? p[0] * 256 + p[2] : -1;
    free(p);
    return r;
}

int main(void) {
    static const char text[] = "hi\nthere\n";
    FILE *f = fmemopen((void *)text, sizeof text - 1, "r");
    if (!f)
        return 1;
    printf("qsort %d\n", sorted());
    printf("fgets %d\n", first_line(f));
    printf("getline %d\n", next_line(f));
    printf("eof %d\n", at_eof(f));
    fclose(f);
    printf("time %d\n", now());
    printf("stat %d %ld\n", is_dir(), missing());
    printf("pipe %d\n", piped());
    printf("tm %d %d\n", day(), year_digit());
    printf("strdup %d\n", duplicated());
    printf("strtok %d\n", token_end());
    printf("sscanf %d %d\n", scanned(), half_scanned());
    printf("strcat %d asprintf %d\n", appended(text + 7), formatted());
    return 0;
}
