/* The runtime must not allocate from the program's heap while the program runs: a program
 * that branches on heap addresses (SQLite tests `p >= start && p < end` against its lookaside
 * buffer) would otherwise take other paths when recorded, and differently in each mode.
 *
 * This program replaces malloc & co. with counting wrappers around glibc's, produces millions
 * of events (hundreds of trace-buffer hand-offs, online compression) and prints how many
 * allocation calls its own thread made meanwhile: none natively, so none when recorded. Only
 * the main thread counts: a background thread's glibc allocations come from its own arena and
 * do not move the main thread's blocks. The wrappers are named __wpp_* so that they are not
 * instrumented (they run inside the runtime's own calls). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static pthread_t main_thread;
static volatile int counting;
static unsigned long calls;

static void __wpp_test_count(void) {
    if (counting && pthread_equal(pthread_self(), main_thread))
        calls++;
}
void *__wpp_test_malloc(size_t n) { __wpp_test_count(); return __libc_malloc(n); }
void *__wpp_test_calloc(size_t k, size_t n) { __wpp_test_count(); return __libc_calloc(k, n); }
void *__wpp_test_realloc(void *p, size_t n) { __wpp_test_count(); return __libc_realloc(p, n); }
void __wpp_test_free(void *p) { __wpp_test_count(); __libc_free(p); }
int __wpp_test_posix_memalign(void **p, size_t align, size_t n) {
    __wpp_test_count();
    *p = __libc_memalign(align, n);
    return *p ? 0 : 12 /* ENOMEM */;
}
void *__wpp_test_aligned_alloc(size_t align, size_t n) {
    __wpp_test_count();
    return __libc_memalign(align, n);
}
void *malloc(size_t) __attribute__((alias("__wpp_test_malloc")));
void *calloc(size_t, size_t) __attribute__((alias("__wpp_test_calloc")));
void *realloc(void *, size_t) __attribute__((alias("__wpp_test_realloc")));
void free(void *) __attribute__((alias("__wpp_test_free")));
int posix_memalign(void **, size_t, size_t) __attribute__((alias("__wpp_test_posix_memalign")));
void *aligned_alloc(size_t, size_t) __attribute__((alias("__wpp_test_aligned_alloc")));

__attribute__((noinline)) static long step(long x) { return x % 7 == 0 ? x / 7 : x + 1; }

int main(void) {
    main_thread = pthread_self();
    long sum = step(1);
    counting = 1;
    for (long i = 0; i < 3000000; i++)
        sum += step(i);
    counting = 0;
    printf("sum %ld\nallocation calls during the run: %lu\n", sum, calls);
    return 0;
}
