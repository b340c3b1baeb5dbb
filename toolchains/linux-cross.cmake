# What the Linux cross toolchain files share: the compilers of a Debian cross triple, its sysroot,
# and the qemu-user emulator (required: without it test discovery would silently find nothing).
#   stf_linux_cross(TRIPLE PROCESSOR QEMU [QEMU_ARGS...])
include(${CMAKE_CURRENT_LIST_DIR}/emulator.cmake)

macro(stf_linux_cross triple processor qemu)
  set(CMAKE_SYSTEM_NAME Linux)
  set(CMAKE_SYSTEM_PROCESSOR ${processor})
  set(CMAKE_C_COMPILER ${triple}-gcc)
  set(CMAKE_CXX_COMPILER ${triple}-g++)
  set(CMAKE_FIND_ROOT_PATH /usr/${triple})
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
  # Boost and Catch2 are header-only and live in the host's /usr/include.
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
  stf_require_emulator(${qemu} qemu-user ${ARGN} -L /usr/${triple})
endmacro()
