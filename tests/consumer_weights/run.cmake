# ctest driver: configure, build and run tests/consumer_weights as a user's project would, taking
# statiformer by MODE: "install" (install the built package into a scratch prefix, find_package) or
# "subdirectory" (add_subdirectory of the checkout CHECKOUT). Variables: MODE, BUILD_DIR (install),
# CHECKOUT (subdirectory), SOURCE_DIR, WORK_DIR, CXX; C_DRIVER (ON: link with the C driver, the default C compiler);
# for a cross build TOOLCHAIN (the toolchain file, instead of CXX) and EMULATOR (its program and
# arguments joined by '|') that runs the program.
file(REMOVE_RECURSE ${WORK_DIR})
if(MODE STREQUAL "install")
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                  RESULT_VARIABLE rc OUTPUT_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install failed")
  endif()
  set(how -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "subdirectory")
  set(how -DSTF_CHECKOUT=${CHECKOUT})
else()
  message(FATAL_ERROR "MODE must be install or subdirectory")
endif()
if(TOOLCHAIN)
  list(APPEND how --toolchain ${TOOLCHAIN})
else()
  list(APPEND how -DCMAKE_CXX_COMPILER=${CXX})
endif()
string(REPLACE "|" ";" emulator "${EMULATOR}")
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_BUILD_TYPE=Release ${how} -DSTF_C_DRIVER=${C_DRIVER}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer (${MODE}) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer (${MODE}) failed")
endif()
execute_process(COMMAND ${emulator} ${WORK_DIR}/build/consumer_weights RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer (${MODE}) failed: ${rc}")
endif()
