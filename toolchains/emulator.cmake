# Shared by the toolchain files: pick the emulator that runs the target's executables on this host,
# or refuse to configure. Without an emulator, Catch2's test discovery (which runs each test binary
# with --list-test-names-only) silently finds zero tests and the build still "succeeds"; a firmware
# ctest could not run at all. So a cross build without an emulator is a configure error.
#
#   stf_require_emulator(<program> <debian package> [ARGS...])
#
# Uses CMAKE_CROSSCOMPILING_EMULATOR if the user gave one (-D...), else finds <program>; the extra
# arguments come after the program (qemu-user: -L <sysroot>; qemu-system: the machine options,
# with -kernel last, since CMake appends the executable).
include_guard(GLOBAL)

macro(stf_require_emulator stf_program stf_package)
  if(NOT CMAKE_CROSSCOMPILING_EMULATOR)
    find_program(STF_EMULATOR_PROGRAM ${stf_program})
    if(NOT STF_EMULATOR_PROGRAM OR NOT EXISTS "${STF_EMULATOR_PROGRAM}")
      message(FATAL_ERROR
              "${CMAKE_CURRENT_LIST_FILE}: no emulator for this cross build: '${stf_program}' was not "
              "found (STF_EMULATOR_PROGRAM=${STF_EMULATOR_PROGRAM}). Tests of a cross build run under "
              "an emulator; install it (apt-get install ${stf_package}) or pass "
              "-DCMAKE_CROSSCOMPILING_EMULATOR=<program;args>.")
    endif()
    set(CMAKE_CROSSCOMPILING_EMULATOR "${STF_EMULATOR_PROGRAM};${ARGN}")
  endif()
endmacro()
