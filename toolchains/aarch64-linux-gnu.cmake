# Cross build for 64-bit Arm Linux (Debian: g++-aarch64-linux-gnu, qemu-user). Tests run under
# qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR, so ctest and Catch2's test discovery work.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Boost and Catch2 are header-only and live in the host's /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

include(${CMAKE_CURRENT_LIST_DIR}/emulator.cmake)
stf_require_emulator(qemu-aarch64 qemu-user -L /usr/aarch64-linux-gnu)
