/* trace-addr must leave the program's heap alone: the runtime writes (and compresses) the
 * address trace on the program's own thread, so anything it took from malloc would move the
 * program's blocks. Prints where each block lands relative to the first, with tens of
 * thousands of accesses (several address-trace chunks) between the allocations; native and
 * recorded runs must print the same. (Not the first block's own address: the block runtime's
 * start-up moves it by the same amount in every recording mode.) */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    enum { BLOCKS = 8, WORDS = 4096 };
    char *first = malloc(24);
    long total = 0;
    for (int b = 0; b < BLOCKS; b++) {
        int *p = malloc(WORDS * sizeof(int) + (size_t)b * 100);
        for (int i = 0; i < WORDS; i++)
            p[i] = i * b;
        for (int i = 0; i < WORDS; i++)
            total += p[i];
        printf("block %d at first%+ld\n", b, (long)((char *)p - first));
        if (b % 2)
            free(p);
    }
    printf("total %ld\n", total);
    free(first);
    return 0;
}
