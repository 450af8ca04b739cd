/* A function with 2^14 acyclic paths (more than the bl mode's array limit, so its paths are
 * counted in the runtime's hash table), run on many inputs. */
#include <stdio.h>

__attribute__((noinline)) static unsigned many(unsigned x) {
    unsigned acc = 0;
#define STEP(k)                   \
    if (x & (1u << k)) acc += k;  \
    else acc ^= k * 3u;
    STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6)
    STEP(7) STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13)
    return acc;
}

int main(void) {
    unsigned s = 0, x = 12345;
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        s += many(x >> 9);
    }
    printf("%u\n", s);
    return 0;
}
