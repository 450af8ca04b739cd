#!/usr/bin/env bash
# The main job on a bundled example: synthesize a control-flow trace, compress it into a whole
# program path (.wpp), print its statistics, verify the exact round trip, and compare the three
# compressors side by side.
#
#   scripts/demo.sh [OUT_DIR]      # default: demo-out/ (kept, so you can explore the files)
#
# EVENTS and SEED override the trace's length (default 10^6) and seed.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-demo-out}"
events="${EVENTS:-1000000}"
seed="${SEED:-1}"
mkdir -p "$out"

step() { printf '\n== %s\n' "$*"; }

step "building wpp (release)"
cargo build --release -p wpp
wpp="${CARGO_TARGET_DIR:-target}/release/wpp"

step "synthesizing a $events-event basic-block trace (seed $seed) → $out/blocks.trace"
"$wpp" synth --seed "$seed" --events "$events" --kind blocks -o "$out/blocks.trace"
ls -l "$out/blocks.trace"
echo "first events:"
"$wpp" trace cat "$out/blocks.trace" | awk '!/^[#D]/ { print; if (++n == 8) exit }'

step "compressing with SEQUITUR → $out/blocks.wpp"
"$wpp" compress "$out/blocks.trace" -o "$out/blocks.wpp" --algorithm sequitur

step "statistics (Larus Table 1's columns)"
"$wpp" stats "$out/blocks.wpp"

step "verifying that the grammar expands to exactly the trace"
"$wpp" verify "$out/blocks.wpp" "$out/blocks.trace"

step "decompressing and verifying the decompressed trace"
"$wpp" decompress "$out/blocks.wpp" -o "$out/blocks.back.trace"
"$wpp" verify "$out/blocks.wpp" "$out/blocks.back.trace"
cmp "$out/blocks.trace" "$out/blocks.back.trace" && echo "byte-identical to the original trace"

step "all three compressors side by side (the smallest .wpp → $out/blocks.best.wpp)"
"$wpp" compress "$out/blocks.trace" -o "$out/blocks.best.wpp" --algorithm all
"$wpp" verify "$out/blocks.best.wpp" "$out/blocks.trace"

step "done: files in $out/"
ls -l "$out"
