# The README's "One compile" block, as a reader runs it: the ```sh block under "### One compile" is run
# line by line in a scratch folder (with the checkout's include/, src/, tools/ and examples/ beside
# it): a seeded PyTorch model is made, tools/export.py --emit-model writes my_model.hpp (the C++
# type, the weights, bind(), a stored input with PyTorch's output and check()), and the README's
# g++ line builds examples/exported/main.cpp against it and runs it, which exits 1 unless the
# error relative to PyTorch's largest output is <= 1e-5; then the same for a decoder-only model
# (my_gpt.hpp, examples/exported/gpt_main.cpp: log-probabilities within 1e-4 and PyTorch's greedy
# tokens). The headers are then compiled again with the tree's warnings as errors (a generated
# header must not warn in a user's -Werror build).
# -DSOURCE_DIR=<checkout> -DWORK_DIR=<scratch folder> -DCXX=<the C++ compiler>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "\n### One compile[^\n]*\n[^`]*```sh\n([^`]*)```" block "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no ```sh block under \"### One compile\"")
endif()
set(script "set -e\n${CMAKE_MATCH_1}")
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
foreach(dir include src tools examples)
  file(CREATE_LINK ${SOURCE_DIR}/${dir} ${WORK_DIR}/${dir} SYMBOLIC)
endforeach()
file(WRITE ${WORK_DIR}/readme_block.sh "${script}")
message(STATUS "README block:\n${CMAKE_MATCH_1}")
execute_process(COMMAND sh -x readme_block.sh WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's one-compile block failed (exit ${rc})")
endif()
if(NOT out MATCHES "max abs error relative[^\n]*: matches PyTorch")
  message(FATAL_ERROR "the program did not report a match with PyTorch")
endif()
# the decoder-only lines: both ways within 1e-4 and PyTorch's greedy tokens (gpt_main.cpp)
if(NOT out MATCHES "bound by name: [^\n]*greedy tokens equal to PyTorch's: matches PyTorch\n"
   OR NOT out MATCHES "bound at compile time: [^\n]*greedy tokens equal to PyTorch's: matches PyTorch\n")
  message(FATAL_ERROR "the decoder-only program did not report a match with PyTorch")
endif()
foreach(main main gpt_main)
  execute_process(COMMAND ${CXX} -std=c++20 -O2 -c -o warnings_${main}.o -Wall -Wextra -Wpedantic -Werror -Wshadow
                          -Wconversion -ffp-contract=off -DSTF_NO_DISPATCH -Iinclude -I. examples/exported/${main}.cpp
                  WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the header examples/exported/${main}.cpp includes warns with the tree's warnings as errors:\n${err}")
  endif()
endforeach()
