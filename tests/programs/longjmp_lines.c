/* Lines after a call that a longjmp leaves: `deep` recurses 4 levels and, for every third k,
 * jumps from the bottom back to main, abandoning the frames between. `after++` follows the
 * recursive call in the same -O0 block, so it runs only in frames whose call returned: 24
 * times, against 40 runs of the block (crates/wpp/tests/exports.rs). */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf jb;
static long calls, after;

static void deep(int n, int k) {
  calls++;
  if (n == 0) {
    if (k % 3 == 0)
      longjmp(jb, 1);
    return;
  }
  deep(n - 1, k);
  after++;
}

int main(void) {
  int jumps = 0;
  for (int k = 0; k < 10; k++) {
    if (setjmp(jb) == 0)
      deep(4, k);
    else
      jumps++;
  }
  printf("%ld %ld %d\n", calls, after, jumps);
  return 0;
}
