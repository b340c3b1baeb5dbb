# Cross build for 64-bit Arm Linux (Debian: g++-aarch64-linux-gnu, qemu-user). Tests run under
# qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR, so ctest and Catch2's test discovery work.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
# Boost and Catch2 are header-only and live in the host's /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)

find_program(STF_QEMU_AARCH64 qemu-aarch64)
if(NOT STF_QEMU_AARCH64)
  # Without an emulator, Catch2's test discovery silently finds zero tests: refuse instead.
  message(FATAL_ERROR "toolchains/aarch64-linux-gnu.cmake: qemu-aarch64 not found (apt-get install qemu-user)")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR ${STF_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu)
