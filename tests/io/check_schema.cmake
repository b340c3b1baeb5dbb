# Runs stf_schema MODEL (under the emulator when cross-compiling) and compares with the committed JSON.
execute_process(COMMAND ${EMULATOR} ${TOOL} ${MODEL} OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "stf_schema ${MODEL} failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${EXPECTED} RESULT_VARIABLE differ)
if(differ)
  message(FATAL_ERROR "stf_schema ${MODEL} differs from ${EXPECTED}: regenerate the schema and the fixtures "
                      "(tools/gen_io_fixtures.py)")
endif()
