/* setjmp/longjmp out of deep recursion, repeatedly and from nested setjmp sites. The trace must
 * stay balanced: frames abandoned by longjmp get exact Leave events. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf outer, inner;
static long n_dive, n_catcher, n_level;

__attribute__((noinline)) static void dive(int depth, int target, int which) {
    n_dive++;
    if (depth == target) longjmp(which ? inner : outer, depth + 1);
    dive(depth + 1, target, which);
    printf("never\n");
}

__attribute__((noinline)) static int catcher(int target) {
    n_catcher++;
    volatile int r = setjmp(inner);
    if (r == 0) {
        dive(0, target, 1);
        return -1;
    }
    return r;
}

__attribute__((noinline)) static int level(int k) {
    n_level++;
    if (k == 0) {
        dive(0, 7, 0);
        return 0;
    }
    return level(k - 1) + 1;
}

int main(void) {
    long total = 0;
    for (int i = 0; i < 20; i++) total += catcher(i % 9);
    printf("inner total=%ld\n", total);
    volatile int rounds = 0;
    int r = setjmp(outer);
    if (r != 0) printf("outer returned %d (round %d)\n", r, rounds);
    if (rounds < 3) {
        rounds++;
        level(rounds * 2);
    }
    printf("calls dive=%ld\ncalls catcher=%ld\ncalls level=%ld\ncalls main=1\n", n_dive,
           n_catcher, n_level);
    return 0;
}
