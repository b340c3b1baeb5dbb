# Bare-metal Cortex-M (Debian: gcc-arm-none-eabi, libnewlib-arm-none-eabi, libstdc++-arm-none-eabi-dev
# for the C++ headers, qemu-system-arm). The core is a cache variable:
#   STF_CORTEX_M=m4   Cortex-M4F, FPv4-SP        qemu-system-arm -M mps2-an386
#   STF_CORTEX_M=m7   Cortex-M7, FPv5 (DP)       qemu-system-arm -M mps2-an500
#   STF_CORTEX_M=m55  Cortex-M55, MVE (Helium)   qemu-system-arm -M mps3-an547
# Every target is built -fno-exceptions -fno-rtti, in sections (the link garbage-collects).
# Executables here are firmware: they run in qemu-system-arm with semihosting (the emulator below,
# `-kernel` last because CMake appends the executable) and need the startup code and linker
# script of examples/firmware/; try_compile only builds static libraries.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # nothing links without a linker script
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES STF_CORTEX_M)

set(STF_CORTEX_M "m4" CACHE STRING "Cortex-M core: m4 (Cortex-M4F), m7 (Cortex-M7) or m55 (Cortex-M55 with Helium)")
set_property(CACHE STF_CORTEX_M PROPERTY STRINGS m4 m7 m55)
if(STF_CORTEX_M STREQUAL "m4")
  set(stf_cpu_flags "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
  set(STF_QEMU_MACHINE mps2-an386)
  set(STF_SYSTICK_HZ 25000000)
elseif(STF_CORTEX_M STREQUAL "m7")
  set(stf_cpu_flags "-mcpu=cortex-m7 -mfpu=fpv5-d16 -mfloat-abi=hard")
  set(STF_QEMU_MACHINE mps2-an500)
  set(STF_SYSTICK_HZ 25000000)
elseif(STF_CORTEX_M STREQUAL "m55")
  # -mcpu=cortex-m55 with the hard-float ABI enables MVE integer + float (__ARM_FEATURE_MVE == 3).
  set(stf_cpu_flags "-mcpu=cortex-m55 -mfloat-abi=hard")
  set(STF_QEMU_MACHINE mps3-an547)
  set(STF_SYSTICK_HZ 32000000)
else()
  message(FATAL_ERROR "toolchains/arm-none-eabi.cmake: STF_CORTEX_M must be m4, m7 or m55 (got '${STF_CORTEX_M}')")
endif()

set(stf_common_flags "${stf_cpu_flags} -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${stf_common_flags}")
set(CMAKE_ASM_FLAGS_INIT "${stf_cpu_flags}")
# No exceptions, no RTTI, no thread-safe statics (no __cxa_guard_* without libsupc++).
set(CMAKE_CXX_FLAGS_INIT "${stf_common_flags} -fno-exceptions -fno-rtti -fno-threadsafe-statics")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${stf_cpu_flags} -nostartfiles --specs=nano.specs --specs=nosys.specs -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Boost (header-only Hana) lives in the host's /usr/include, which arm-none-eabi-g++ does not search
# and must not: glibc's headers there would shadow newlib's. Expose only boost/ through a symlink
# in the build tree; the project's CMakeLists then finds it as STF_BOOST_INCLUDE_DIR.
get_property(stf_in_try_compile GLOBAL PROPERTY IN_TRY_COMPILE)
if(NOT stf_in_try_compile AND NOT STF_BOOST_INCLUDE_DIR AND EXISTS /usr/include/boost/version.hpp)
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/stf-boost-only)
  file(CREATE_LINK /usr/include/boost ${CMAKE_BINARY_DIR}/stf-boost-only/boost SYMBOLIC)
  set(STF_BOOST_INCLUDE_DIR ${CMAKE_BINARY_DIR}/stf-boost-only CACHE PATH "directory holding only boost/")
endif()
set(CMAKE_DISABLE_FIND_PACKAGE_Boost TRUE)  # the host's BoostConfig.cmake would add /usr/include

# arm-none-eabi-size (CMAKE_SIZE is not set for Generic targets).
find_program(STF_SIZE arm-none-eabi-size)

include(${CMAKE_CURRENT_LIST_DIR}/emulator.cmake)
stf_require_emulator(qemu-system-arm qemu-system-arm -M ${STF_QEMU_MACHINE} -nographic -monitor none -serial none
                     -semihosting-config enable=on,target=native -icount shift=0 -kernel)
