#!/usr/bin/env bash
# The fuzz targets' short, bounded CI step: writes every target's seed corpus with the crates'
# own writers (fuzz/examples/seeds.rs), then runs each harness of fuzz/src/lib.rs over it with
# the plain replay driver (stable toolchain, no libFuzzer run, no time limit to tune). It
# checks that the harnesses and their oracles still build and hold on valid, truncated and
# hand-made hostile inputs; the long coverage-guided runs are documented in fuzz/README.md.
# Shares the main target directory, so dependencies the workspace already built are reused.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export CARGO_TARGET_DIR=../target
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cargo run --quiet --no-default-features --example seeds -- "$corpus"
for target in trace_binary trace_text wpp_file cfg_json profiles trace_index profile_file program_db deps_files; do
    cargo run --quiet --no-default-features --example replay -- "$target" "$corpus/$target"
done
