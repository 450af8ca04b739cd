#!/usr/bin/env bash
# The main job on a bundled example: record the whole program path of a real C program
# (examples/wordfreq.c) with `wpp cc`, then inspect it without unpacking it — statistics, hot
# subpaths, path matching — check it against a raw recording of the same run, compare the three
# compressors, and take a Ball–Larus path profile.
#
#   scripts/demo.sh [OUT_DIR]      # default: demo-out/ (kept, so you can explore the files)
#
# Installs what it needs first (LLVM 22 from Debian; see scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-demo-out}"
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "installing what recording needs (LLVM 22), where missing"
scripts/install-deps.sh
. scripts/env.sh

step "building wpp with the instrumenter, and its runtime (release)"
cargo build --release -p wpp -p wpp-rt --features wpp/llvm
wpp="$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)/wpp"

step "compiling examples/wordfreq.c natively and with \`wpp cc --mode trace-blocks\`"
clang-22 -O2 examples/wordfreq.c -o "$out/wordfreq.native"
"$wpp" cc --mode trace-blocks -- -O2 examples/wordfreq.c -o "$out/wordfreq"

step "running it: the program writes a raw spool at its own speed; the finisher compresses it (phrases + SEQUITUR) into the .wpp (WPP_FINISH=wait: before it exits)"
"$out/wordfreq.native" > "$out/native.txt"
WPP_OUT="$out/wordfreq.wpp" WPP_QUIET=0 WPP_FINISH=wait "$out/wordfreq" > "$out/recorded.txt"
cmp "$out/native.txt" "$out/recorded.txt" && echo "output identical to the native build:"
head -3 "$out/recorded.txt"

step "statistics (Larus Table 1's columns)"
"$wpp" stats "$out/wordfreq.wpp"

step "hot paths: the 10 costliest minimal subpaths of 2 to 8 events, each ≥ 1% of the run (Larus §4, exact counts)"
"$wpp" hot "$out/wordfreq.wpp" --top 10

step "path matching on the compressed trace: blocks 0,1 of count_word (Zhang–Gupta §4)"
"$wpp" match "$out/wordfreq.wpp" --function count_word --path 0,1 --count --scheme 2
"$wpp" match "$out/wordfreq.wpp" --function count_word --path 0,1 --count --scheme 1

step "recording the same run raw, and verifying the online .wpp against it"
WPP_RAW=1 WPP_OUT="$out/wordfreq.trace" "$out/wordfreq" > /dev/null
"$wpp" verify "$out/wordfreq.wpp" "$out/wordfreq.trace"

step "every compressor side by side on the raw trace"
"$wpp" compress "$out/wordfreq.trace" -o "$out/wordfreq.best.wpp" --algorithm all --index
"$wpp" verify "$out/wordfreq.best.wpp" "$out/wordfreq.trace"

step "a Ball–Larus path profile of the same program (\`wpp cc --mode bl\`)"
"$wpp" cc --mode bl -- -O2 examples/wordfreq.c -o "$out/wordfreq.bl"
WPP_OUT="$out/wordfreq.blprof" "$out/wordfreq.bl" > /dev/null
"$wpp" profile show "$out/wordfreq.blprof" | head -20

step "done: files in $out/"
ls -l "$out"
