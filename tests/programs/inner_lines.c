/* Lines inside one block: at -O0 a call does not end an LLVM block, so the three statement
 * lines of `step` from the call of `triple` to the condition are one block, which starts on
 * the call's line. `wpp annotate` must count each of them as often as `step` runs (5 times),
 * as gcov and llvm-cov do (crates/wpp/tests/exports.rs). */
#include <stdio.h>

static int triple(int x) { return 3 * x; }

static int step(int x) {
  int y = triple(x);
  y += 2;
  if (y > 9)
    return y;
  return 0;
}

int main(int argc, char **argv) {
  (void)argv;
  int s = 0;
  for (int i = 0; i < 5; i++)
    s += step(i + argc);
  printf("%d\n", s);
  return 0;
}
