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
echo "== bench/check.sh (real workloads: every recording mode, output identical to native)"
# Reuses the test profile's build (`cargo test` just compiled wpp with --features llvm there, so
# this `cargo build --profile test` adds at most the uplifted wpp and libwpp_rt.a). sqlite is not
# in the default set (its instrumented builds take ~4 min per mode): `bench/check.sh sqlite`.
bench/check.sh --profile test
