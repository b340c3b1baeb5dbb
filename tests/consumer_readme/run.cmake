# ctest driver: one of README.md's "Using it in your project" blocks, run word for word as a user
# would. The ```sh block whose first line is "# BLOCK" is copied out of the README, the
# replacements REPLACE ("from=to|from=to...", in order: another target's names) applied, and run by
# sh in a scratch folder laid out like a checkout (links to its CMakeLists.txt, cmake/, include/,
# src/, examples/, tests/, toolchains/, and build/PRESET to this build, whose library the block
# installs). Lines that configure or build the preset itself (`cmake --preset`) are not run again:
# the test runs inside that build. Then every regular expression of EXPECT ("re|re...") must match
# the output. With REPEAT (firmware), the block's last line runs once more and the per-layer cycles
# must be the same: the emulator's deterministic count (qemu -icount), not the host's clock.
# -DSOURCE_DIR=<checkout> -DBUILD_DIR=<this build> -DPRESET=<its name in the block> -DBLOCK=...
# [-DREPLACE=...] [-DEXPECT=...] [-DREPEAT=ON] -DWORK_DIR=<scratch folder>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "```sh\n(# ${BLOCK}\n[^`]*)```" block "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no ```sh block starting with '# ${BLOCK}'")
endif()
set(script "${CMAKE_MATCH_1}")
string(REPLACE "|" ";" replacements "${REPLACE}")
foreach(pair IN LISTS replacements)
  string(REGEX MATCH "^([^=]*)=(.*)$" pair "${pair}")
  string(REPLACE "${CMAKE_MATCH_1}" "${CMAKE_MATCH_2}" script "${script}")
endforeach()
string(REGEX REPLACE "(^|\n)(cmake --preset [^\n]*)" "\\1# (built by this test's build) \\2" script "${script}")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/build)
foreach(entry CMakeLists.txt cmake include src examples tests toolchains)
  file(CREATE_LINK ${SOURCE_DIR}/${entry} ${WORK_DIR}/${entry} SYMBOLIC)
endforeach()
file(CREATE_LINK ${BUILD_DIR} ${WORK_DIR}/build/${PRESET} SYMBOLIC)
file(WRITE ${WORK_DIR}/readme.sh "set -ex\n${script}")
message(STATUS "README commands:\n${script}")
execute_process(COMMAND sh ${WORK_DIR}/readme.sh WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's block '${BLOCK}' failed (exit ${rc})")
endif()
if(REPEAT)
  string(REGEX MATCH "[^\n]+\n*$" last_line "${script}")
  execute_process(COMMAND sh -ec "${last_line}" WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE again ERROR_VARIABLE err)
  set(cycles_re "cycles per layer[^\n]*\n([^\n]*\n)*[^\n]*forward  [0-9]+")
  string(REGEX MATCH "${cycles_re}" cycles "${out}")
  string(REGEX MATCH "${cycles_re}" cycles_again "${again}")
  message(STATUS "second run:\n${cycles_again}")
  if(NOT rc EQUAL 0 OR NOT cycles OR NOT cycles STREQUAL cycles_again)
    message(FATAL_ERROR "a second run of '${last_line}' failed or gave other per-layer cycles (exit ${rc})")
  endif()
endif()
string(REPLACE "|" ";" expectations "${EXPECT}")
foreach(want IN LISTS expectations)
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the output lacks '${want}'")
  endif()
endforeach()
