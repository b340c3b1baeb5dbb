# Cross build for 64-bit Arm Linux (Debian: g++-aarch64-linux-gnu, qemu-user). Tests run under
# qemu-aarch64 through CMAKE_CROSSCOMPILING_EMULATOR, so ctest and Catch2's test discovery work.
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
stf_linux_cross(aarch64-linux-gnu aarch64 qemu-aarch64)
