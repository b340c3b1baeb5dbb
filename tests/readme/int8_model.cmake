# The README's int8 block, as a reader runs it: the ```sh block under "### int8" is run line by line
# in a scratch folder (with the checkout's include/, src/, tools/ and examples/ beside it): a seeded
# PyTorch model, tools/export.py --emit-model --quantize w8a8, and the README's g++ line building
# examples/exported/int8_main.cpp, which exits 1 beyond 2 % of PyTorch's largest output.
# -DSOURCE_DIR=<checkout> -DWORK_DIR=<scratch folder>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "\n### int8[^\n]*\n[^`]*```sh\n([^`]*)```" block "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no ```sh block under \"### int8\"")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
foreach(dir include src tools examples)
  file(CREATE_LINK ${SOURCE_DIR}/${dir} ${WORK_DIR}/${dir} SYMBOLIC)
endforeach()
file(WRITE ${WORK_DIR}/readme_block.sh "set -e\n${CMAKE_MATCH_1}")
message(STATUS "README block:\n${CMAKE_MATCH_1}")
execute_process(COMMAND sh -x readme_block.sh WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's int8 block failed (exit ${rc})")
endif()
if(NOT out MATCHES "within the int8 target" OR NOT out MATCHES "weights \\(constexpr\\): [0-9]+ B int8")
  message(FATAL_ERROR "the program did not report the int8 model within its target")
endif()
