# Cross build for 32-bit Arm Linux, ARMv7-A with NEON and VFPv4 (so fused multiply-add), hard-float
# ABI (Debian: g++-arm-linux-gnueabihf, qemu-user). Tests run under qemu-arm.
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
set(stf_arch_flags "-march=armv7-a+neon-vfpv4 -mfpu=auto -mfloat-abi=hard")
set(CMAKE_C_FLAGS_INIT "${stf_arch_flags}")
set(CMAKE_CXX_FLAGS_INIT "${stf_arch_flags}")
# -cpu cortex-a15: an ARMv7-A core with NEON and VFPv4, matching the compile flags.
stf_linux_cross(arm-linux-gnueabihf armv7-a qemu-arm -cpu cortex-a15)
