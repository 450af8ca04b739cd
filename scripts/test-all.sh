#!/usr/bin/env bash
# The test command: installs what the tests need, then checks formatting and lints and runs
# every test of every crate, the LLVM instrumenter's end-to-end tests included.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's line says when it started (seconds since the start), so a slow CI run shows
# which phase grew.
phase() { echo "== [${SECONDS} s] $*"; }
phase "scripts/install-deps.sh"
scripts/install-deps.sh
. scripts/env.sh
# A clean checkout builds once: incremental caches would only take disk (they were a third of
# a full target directory).
export CARGO_INCREMENTAL=0

phase "cargo fmt --check"
cargo fmt --all -- --check
phase "cargo clippy"
cargo clippy --workspace --all-targets --all-features -- -D warnings
phase "cargo nextest run (every test, the 10^7-event round trips of the acceptance criteria included)"
# One build for every crate, wpp-db's DataFusion included (the workspace's flate2 takes the
# zlib-rs backend Parquet turns on, so features unify and nothing is built twice). nextest runs
# the tests of all binaries side by side, slowest first (.config/nextest.toml); `cargo test`
# ran one binary at a time. The ignored tests run in this test profile (the crates at opt-level
# 1, their dependencies at 2): a release build of them took two minutes for half a minute of
# tests.
cargo nextest run --workspace --all-features --run-ignored all --no-fail-fast
phase "cargo test --doc"
cargo test --workspace --all-features --doc
phase "scripts/fuzz-replay.sh (every fuzz harness over its seed corpus; ~1-2 min with the build)"
scripts/fuzz-replay.sh
phase "bench/check.sh (real workloads: every recording mode, output identical to native; queries = brute force)"
# Uses the `wpp` (built with --features llvm) and runtime library that nextest just built
# in the test profile, found exactly in cargo's artifact list (a no-op rebuild). A separate
# `cargo build -p wpp --features llvm` would rebuild inkwell, wpp-instrument and wpp: without the
# dev-dependencies, features unify differently (bitflags without `std`). All four workloads
# run. sqlite, whose amalgamation takes 1.5-3 min per instrumented build, runs the default
# recording (with the query checks), the address trace and the eWPP: its probes-raw, paths,
# bl and ppp builds (6.5 min of CPU) are checked on the other three workloads, and run by
# bench/check.sh without --skip.
json=$(cargo test --workspace --all-features --no-run --message-format=json 2>/dev/null)
wpp_exe=$(grep -o '"executable":"[^"]*/wpp"' <<<"$json" | tail -n1 | cut -d'"' -f4 || true)
wpp_rt=$(grep -o '"[^"]*/libwpp_rt[^"/]*\.a"' <<<"$json" | tail -n1 | tr -d '"' || true)
wpp_query_check=$(grep -o '"executable":"[^"]*/wpp-query-check"' <<<"$json" | tail -n1 | cut -d'"' -f4 || true)
WPP=$wpp_exe WPP_RT_LIB=$wpp_rt WPP_QUERY_CHECK=$wpp_query_check bench/check.sh --profile test \
    --skip "sqlite:trace-blocks-probes sqlite:trace-paths sqlite:bl sqlite:ppp"
phase "bench/projects/check.sh (bzip2's Makefiles and tests, zlib-ng and zstd with CMake, zlib's configure and CMake, fribidi's Meson, all with CC=wpp-cc; ~6 min)"
WPP=$wpp_exe WPP_RT_LIB=$wpp_rt bench/projects/check.sh
phase "done"
