#!/usr/bin/env bash
# Runs the recording tests (LLVM instrumenter + runtime on the C/C++ programs in
# tests/programs), installing LLVM 19 first where it is missing (Debian/Ubuntu, as root or with
# sudo). Usage: tests/run.sh [extra cargo test args]
#
# What it needs: clang-19, llvm-link-19 and libLLVM-19 (Debian packages clang-19 llvm-19-dev
# lld-19 libpolly-19-dev libzstd-dev zlib1g-dev), LLVM_SYS_191_PREFIX=/usr/lib/llvm-19.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKGS="clang-19 llvm-19-dev lld-19 libpolly-19-dev libzstd-dev zlib1g-dev"
if ! command -v clang-19 >/dev/null || ! command -v llvm-config-19 >/dev/null; then
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO=sudo
    echo "== installing LLVM 19 ($PKGS)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $PKGS >/dev/null
fi
export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}
cd "$ROOT"
# wpp-instrument's tests build wpp-rt (a dependency) and find its staticlib next to them.
cargo test -p wpp-rt -p wpp-instrument "$@"
# The CLI with LLVM support must build too.
cargo build -p wpp --features llvm
