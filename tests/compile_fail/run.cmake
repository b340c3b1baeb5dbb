# Compile-fail check, Eigen failtest style. Usage:
#   cmake -DCOMPILER=... -DINCLUDES="a;b" -DSOURCE=file.cpp -P run.cmake
# 1. SOURCE must compile without STF_CF_FAIL (the control: the file is otherwise valid);
# 2. with -DSTF_CF_FAIL it must fail, and the diagnostics must match every `// expect: REGEX`
#    line of SOURCE.
set(flags -std=c++20 -fsyntax-only -ffp-contract=off)
foreach(dir IN LISTS INCLUDES)
  if(NOT dir STREQUAL "/usr/include")  # re-adding it as -isystem breaks <cmath>'s include_next
    list(APPEND flags -I${dir})
  endif()
endforeach()

execute_process(COMMAND ${COMPILER} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "control build (without STF_CF_FAIL) failed:\n${out}${err}")
endif()

execute_process(COMMAND ${COMPILER} ${flags} -DSTF_CF_FAIL ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "expected a compile error with STF_CF_FAIL, but it compiled")
endif()
set(diag "${out}${err}")

file(STRINGS ${SOURCE} expects REGEX "^// expect: ")
if(NOT expects)
  message(FATAL_ERROR "${SOURCE} has no '// expect: REGEX' line")
endif()
foreach(line IN LISTS expects)
  string(REGEX REPLACE "^// expect: " "" regex "${line}")
  if(NOT diag MATCHES "${regex}")
    message(FATAL_ERROR "diagnostic does not match '${regex}':\n${diag}")
  endif()
  message(STATUS "matched: ${regex}")
endforeach()
