#!/usr/bin/env bash
# Generates the seed corpora in fuzz/corpus/<target>/ with the crates' own writers.
# Usage: fuzz/seed.sh [corpus-dir]
set -euo pipefail
cd "$(dirname "$0")"
cargo run --quiet --release --example seeds -- "${1:-corpus}"
