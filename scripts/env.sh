# Sourced by the scripts: where LLVM 19 lives for llvm-sys/inkwell.
export LLVM_SYS_191_PREFIX="${LLVM_SYS_191_PREFIX:-/usr/lib/llvm-19}"
