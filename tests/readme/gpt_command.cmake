# The README's gpt command line, as a reader runs it: the `./build/native/examples/gpt ...` line in
# the ```sh block under "## A decoder-only example" is found and the built example is run with its
# arguments. The output must hold the check's match with PyTorch and the prompt's continuations.
# -DSOURCE_DIR=<checkout> -DGPT=<the gpt executable>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "## A decoder-only example[^\n]*\n+```sh\n\\./build/native/examples/gpt ([^#\n]*[^ #\n])" line
             "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no `./build/native/examples/gpt ...` line under \"## A decoder-only example\"")
endif()
separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_1}")
message(STATUS "README command: ./build/native/examples/gpt ${CMAKE_MATCH_1}")
execute_process(COMMAND ${GPT} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's gpt command line failed (exit ${rc})")
endif()
foreach(expected "40 greedy tokens equal to PyTorch's" ": matches PyTorch\n" "\ngreedy   \"" "\nsampled  \""
                 "\nfootprint (constexpr): 53536 parameters")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output lacks: ${expected}")
  endif()
endforeach()
