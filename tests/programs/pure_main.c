/* Calls a function defined in another translation unit (pure_weight.c) whose body only reads
 * memory. Compiled alone, this file cannot know that; once the program is linked and
 * instrumented, clang infers `memory(read)` for `weight`, and an optimizer that believed it
 * would hoist the loop's calls and delete the unused one. Every call must stay in the trace:
 * 5 in the loop, 1 whose result is unused. */
#include <stdio.h>

long weight(const char *s);

int main(int argc, char **argv) {
    const char *w = argc > 5 ? argv[1] : "hello";
    long total = 0;
    for (int i = 0; i < 5; i++)
        total += weight(w);
    weight(w);
    printf("total %ld\n", total);
    printf("calls weight=6\n");
    return 0;
}
