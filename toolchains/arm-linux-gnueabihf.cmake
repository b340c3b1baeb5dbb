# Cross build for 32-bit Arm Linux, ARMv7-A with NEON and VFPv4 (so fused multiply-add), hard-float
# ABI (Debian: g++-arm-linux-gnueabihf, qemu-user). Tests run under qemu-arm.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7-a)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)
set(stf_arch_flags "-march=armv7-a+neon-vfpv4 -mfpu=auto -mfloat-abi=hard")
set(CMAKE_C_FLAGS_INIT "${stf_arch_flags}")
set(CMAKE_CXX_FLAGS_INIT "${stf_arch_flags}")
set(CMAKE_FIND_ROOT_PATH /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Boost and Catch2 are header-only and live in the host's /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

include(${CMAKE_CURRENT_LIST_DIR}/emulator.cmake)
# -cpu cortex-a15: an ARMv7-A core with NEON and VFPv4, matching the compile flags.
stf_require_emulator(qemu-arm qemu-user -cpu cortex-a15 -L /usr/arm-linux-gnueabihf)
