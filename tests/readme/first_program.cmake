# The README's "A first program", exactly as a reader copies it: the C++ block that starts with
# "// first.cpp" is written to first.cpp, and the README's command line that builds it is run in a
# scratch folder (with the checkout's include/ and src/ beside it), then the program it builds.
# -DSOURCE_DIR=<checkout> -DWORK_DIR=<scratch folder>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "```cpp\n(// first\\.cpp[^`]*)```" block "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no ```cpp block starting with // first.cpp")
endif()
set(program "${CMAKE_MATCH_1}")
string(REGEX MATCH "\n(g\\+\\+ [^\n]*first\\.cpp[^\n]*)\n" line "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no g++ command line that builds first.cpp")
endif()
set(command "${CMAKE_MATCH_1}")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/first.cpp "${program}")
file(CREATE_LINK ${SOURCE_DIR}/include ${WORK_DIR}/include SYMBOLIC)
file(CREATE_LINK ${SOURCE_DIR}/src ${WORK_DIR}/src SYMBOLIC)
message(STATUS "README command: ${command}")
execute_process(COMMAND sh -c "${command}" WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's first-program command line failed (exit ${rc})")
endif()
