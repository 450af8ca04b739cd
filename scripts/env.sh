# Sourced by the scripts: where LLVM 22 lives for llvm-sys/inkwell.
export LLVM_SYS_221_PREFIX="${LLVM_SYS_221_PREFIX:-/usr/lib/llvm-22}"
