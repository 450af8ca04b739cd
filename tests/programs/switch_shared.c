/* A switch whose cases share a target: `case 1: case 2:` are two edges from the switch's block
 * to one block (parallel edges), so Ball–Larus numbers two paths through the same blocks,
 * which `wpp profile show` must tell apart. Built at -O0 (at -O1 clang makes the switch a
 * table lookup). Prints how often each case ran. */
#include <stdio.h>

__attribute__((noinline)) static int kind(int x) {
    switch (x) {
    case 1:
    case 2:
        return 10;
    case 3:
        return 20;
    default:
        return 30;
    }
}

int main(void) {
    int counts[4] = {0, 0, 0, 0};
    for (int i = 0; i < 100; i++) {
        int k = kind(i % 10);
        counts[k / 10]++;
    }
    printf("1-2: %d, 3: %d, other: %d\n", counts[1], counts[2], counts[3]);
    return 0;
}
