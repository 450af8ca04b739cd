#!/usr/bin/env bash
# Installs what building and testing wpp needs on a fresh Debian 12 machine with a Rust
# toolchain: LLVM 22 (for the instrumenter and `wpp cc`), zstd/xz/gzip (benchmark baselines),
# cmake/ninja (bench/projects: real projects built with CC=wpp-cc),
# the rustfmt/clippy components and cargo-nextest (the test runner of scripts/test-all.sh).
# Safe to run again: it installs only what is missing.
set -euo pipefail

# The consumers the export tests read wpp's output back with (crates/wpp/tests/exports.rs):
# go tool pprof, callgrind_annotate, genhtml, headless Chromium; speedscope's own file-format
# schema comes from npm and is checked with python's jsonschema (below). cmake, ninja-build and
# bc: the real projects bench/projects/check.sh builds with their own build systems.
apt_packages=(clang-22 llvm-22-dev lld-22 libpolly-22-dev libzstd-dev zlib1g-dev zstd xz-utils gzip
    golang-go valgrind lcov chromium
    cmake ninja-build bc)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
apt_install() {
    echo "install-deps: installing $*" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}
if ((${#missing[@]})); then
    apt_install "${missing[@]}"
fi

# The machine's node/npm and python3 (not Debian's: Debian's npm conflicts with the machine's
# node) install speedscope's schema and the validator the export test runs.
command -v npm >/dev/null 2>&1 || apt_install npm
python3 -c "import jsonschema" 2>/dev/null || python3 -m pip install --quiet jsonschema
# wpp-db's distributed route (crates/wpp-db/tests/spark.rs): PySpark in local-cluster mode on a
# Java 17 runtime reads the store's Parquet files and must answer every view as DataFusion does.
command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
python3 -c "import pyspark" 2>/dev/null || python3 -m pip install --quiet pyspark==4.3.0
# Meson builds fribidi in bench/projects/check.sh (CC=wpp-cc under a Meson build).
command -v meson >/dev/null 2>&1 || python3 -m pip install --quiet meson==1.12.1
# speedscope's JSON schema ships in its npm package.
if ! [ -f "$(npm root -g)/speedscope/dist/release/file-format-schema.json" ]; then
    echo "install-deps: installing speedscope (npm) for its file-format schema" >&2
    npm install -g --silent speedscope@1.25.0 >/dev/null
fi

for c in rustfmt clippy; do
    if ! cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1; then
        rustup component add "$c"
    fi
done
if ! cargo nextest --version >/dev/null 2>&1; then
    echo "install-deps: installing cargo-nextest (crates.io)" >&2
    cargo install --locked cargo-nextest
fi
