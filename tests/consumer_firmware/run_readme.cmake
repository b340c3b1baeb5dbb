# ctest driver: a firmware engineer's build of examples/firmware_template, with the template's own
# toolchain file, run exactly as README.md's "Firmware" section writes it. The ```sh block whose
# first line is "# firmware, WAY" (WAY: find_package or add_subdirectory) is copied out of the
# README, "cortex-m4" replaced by the core of this build (PRESET), and run by sh in a scratch
# folder laid out like a checkout (links to its CMakeLists.txt, cmake/, include/, src/, examples/,
# and build/PRESET to this build, whose library the block installs). Lines that configure or build
# the preset itself (`cmake --preset`) are not run again: this test runs inside that build.
# The template's own ctest runs the firmware under qemu-system-arm; its output must show the
# PyTorch match, the kernel variant KERNELS, and non-zero per-layer cycles.
# -DSOURCE_DIR=<checkout> -DBUILD_DIR=<this build> -DPRESET=cortex-m4|cortex-m55 -DWAY=... -DKERNELS=...
# -DWORK_DIR=<scratch folder>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "```sh\n(# firmware, ${WAY}\n[^`]*)```" block "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no ```sh block starting with '# firmware, ${WAY}'")
endif()
string(REPLACE "cortex-m4" "${PRESET}" script "${CMAKE_MATCH_1}")
string(REGEX REPLACE "(^|\n)(cmake --preset [^\n]*)" "\\1# (built by this test's build) \\2" script "${script}")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/build)
foreach(entry CMakeLists.txt cmake include src examples)
  file(CREATE_LINK ${SOURCE_DIR}/${entry} ${WORK_DIR}/${entry} SYMBOLIC)
endforeach()
file(CREATE_LINK ${BUILD_DIR} ${WORK_DIR}/build/${PRESET} SYMBOLIC)
file(WRITE ${WORK_DIR}/readme.sh "set -ex\n${script}")
message(STATUS "README commands (${PRESET}):\n${script}")
execute_process(COMMAND sh ${WORK_DIR}/readme.sh WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's firmware commands (${WAY}, ${PRESET}) failed (exit ${rc})")
endif()
# The per-layer cycles must be the emulator's deterministic ones (qemu -icount, in the template's run
# line): without it SysTick follows the host's clock and the figures change from run to run. The
# block's last line (build, which is then a no-op, and the template's ctest) runs once more.
string(REGEX MATCH "[^\n]+\n*$" last_line "${script}")
execute_process(COMMAND sh -ec "${last_line}" WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE again
                ERROR_VARIABLE err)
string(REGEX MATCH "cycles per layer[^\n]*\n([^\n]*\n)*[^\n]*forward  [0-9]+" cycles "${out}")
string(REGEX MATCH "cycles per layer[^\n]*\n([^\n]*\n)*[^\n]*forward  [0-9]+" cycles_again "${again}")
message(STATUS "second run:\n${cycles_again}")
if(NOT rc EQUAL 0 OR NOT cycles OR NOT cycles STREQUAL cycles_again)
  message(FATAL_ERROR "a second run of '${last_line}' failed or gave other per-layer cycles (exit ${rc})")
endif()
foreach(want "output: matches PyTorch" "kernel variant ${KERNELS}\n" "\n[^\n]*  0 EncoderLayer  [1-9]"
             "\n[^\n]*  2 LayerNorm  [1-9]" "100% tests passed")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the firmware's output lacks '${want}'")
  endif()
endforeach()
