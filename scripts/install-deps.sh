#!/usr/bin/env bash
# Installs what building and testing wpp needs on a fresh Debian 12 machine with a Rust
# toolchain: LLVM 22 (for the instrumenter and `wpp cc`), zstd/xz/gzip (benchmark baselines),
# cmake/ninja (bench/projects: real projects built with CC=wpp-cc),
# and the rustfmt/clippy components. Safe to run again: it installs only what is missing.
set -euo pipefail

# The consumers the export tests read wpp's output back with (crates/wpp/tests/exports.rs):
# go tool pprof, callgrind_annotate, genhtml, headless Chromium, and python3-jsonschema with
# npm for speedscope's own file-format schema. cmake, ninja-build and bc: the real projects
# bench/projects/check.sh builds with their own build systems.
apt_packages=(clang-22 llvm-22-dev lld-22 libpolly-22-dev libzstd-dev zlib1g-dev zstd xz-utils gzip
    golang-go valgrind lcov chromium python3-jsonschema npm
    cmake ninja-build bc)
missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "install-deps: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

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
