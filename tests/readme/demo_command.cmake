# The README's "Profiles and summaries" command line, as a reader runs it: the `./run demo ...`
# line in the README's ```sh block is found, and the built demo is run with its arguments
# (`./run demo ARGS` runs build/native/examples/demo ARGS). The output must hold the summary's and
# the profile's CSV, with rows named as the weights are.
# -DSOURCE_DIR=<checkout> -DDEMO=<the demo executable>
file(READ ${SOURCE_DIR}/README.md readme)
string(REGEX MATCH "## Profiles and summaries\n+```sh\n\\./run demo ([^#\n]*[^ #\n])" line "${readme}")
if(NOT CMAKE_MATCH_1)
  message(FATAL_ERROR "README.md: no `./run demo ...` line under \"## Profiles and summaries\"")
endif()
separate_arguments(args UNIX_COMMAND "${CMAKE_MATCH_1}")
message(STATUS "README command: ./run demo ${CMAKE_MATCH_1}")
execute_process(COMMAND ${DEMO} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's demo command line failed (exit ${rc})")
endif()
foreach(expected
        "\nlayer,type,phase,input,output,params,param_bytes,mult_adds,output_bytes\n"
        "\nencoder.layers.1,EncoderLayer,encode,10x32,10x32,8544,34176,88320,1280\n"
        "\ndecoder.layers.0.cross_attn,memory K/V,encode,10x32,2x10x32,0,0,20480,2560\n"
        "\ntotal,,,,,44141,176564,,\n"
        "\nlayer,calls,ns,ns_per_run,share_percent\n"
        "\ndecoder.layers.1,3500,"  # 35 steps for the 5 inputs, 100 times
        "\ndropped,0,0,,\n")
  string(FIND "${out}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the output lacks: ${expected}")
  endif()
endforeach()
