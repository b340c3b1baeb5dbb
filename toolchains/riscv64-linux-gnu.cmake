# Cross build for 64-bit RISC-V Linux, RV64GC (lp64d) (Debian: g++-riscv64-linux-gnu, qemu-user).
# Tests run under qemu-riscv64. Debian 12 has no riscv64 architecture, so no Google Benchmark:
# build with STF_BUILD_BENCH=OFF (the riscv64 preset does).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Boost and Catch2 are header-only and live in the host's /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

include(${CMAKE_CURRENT_LIST_DIR}/emulator.cmake)
stf_require_emulator(qemu-riscv64 qemu-user -L /usr/riscv64-linux-gnu)
