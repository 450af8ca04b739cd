#!/usr/bin/env bash
# The test command: installs what the tests need, then checks formatting and lints and runs
# every test of every crate, the LLVM instrumenter's end-to-end tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
. scripts/env.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
echo "== cargo test"
cargo test --workspace --all-features
