# Cross build for 64-bit RISC-V Linux, RV64GC (lp64d) (Debian: g++-riscv64-linux-gnu, qemu-user).
# Tests run under qemu-riscv64. Debian 12 has no riscv64 architecture, so no Google Benchmark:
# build with STF_BUILD_BENCH=OFF (the riscv64 preset does).
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
stf_linux_cross(riscv64-linux-gnu riscv64 qemu-riscv64)
