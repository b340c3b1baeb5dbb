# Firmware footprint: measured sections against the model's constexpr predictions.
#   cmake -DELF=fw_demo.elf -DSIZE=arm-none-eabi-size -DNM=arm-none-eabi-nm [-DEMULATOR="qemu;...;-kernel"]
#         [-DLABEL=cortex-m4] [-DHEADER=ON] [-DCHECK=ON] [-DBY_PART="python3;tools/size_by_part.py;..."]
#         -P FirmwareSize.cmake
# Measured: .text (with the vector table, exception index and init_array), .rodata, .data, .bss from
# `size -A`. Predicted: the absolute symbols the firmware exports (runtime/footprint.hpp):
# stf_fw_weight_bytes + stf_fw_const_bytes (flash), stf_fw_arena_bytes + stf_fw_state_bytes (RAM),
# stf_fw_ram_overhead_min_bytes, stf_fw_ram_overhead_max_bytes (the band of the runtime's known RAM
# overhead). With EMULATOR, the firmware is run and its "stack high-water: N B of M B" line is
# reported. With CHECK, fails if
#   .data + .bss - (arena + state) is outside [min, max]   (RAM the prediction does not know of,
#                                                          or a prediction above the RAM allocated),
#   .rodata < weights + PE table               (the weights are not in flash),
#   stack high-water >= stack size             (the stack overflowed).
# With BY_PART, a command (tools/size_by_part.py with its options and ELFs, ELF first) is run after
# the table with --expect-total <.text>: the code by part, whose total must be this table's .text;
# its exit status is this script's.
foreach(var ELF SIZE NM)
  if(NOT ${var})
    message(FATAL_ERROR "FirmwareSize.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(COMMAND ${SIZE} -A ${ELF} OUTPUT_VARIABLE size_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SIZE} -A ${ELF} failed")
endif()
foreach(section text rodata data bss)
  set(${section} 0)
endforeach()
string(REPLACE "\n" ";" size_lines "${size_out}")
foreach(line IN LISTS size_lines)
  if(line MATCHES "^\\.([A-Za-z_.]+) +([0-9]+) +[0-9]+")
    set(name ${CMAKE_MATCH_1})
    set(bytes ${CMAKE_MATCH_2})
    if(name MATCHES "^(vectors|text|ARM\\.extab|ARM\\.exidx|init_array)$")
      math(EXPR text "${text} + ${bytes}")
    elseif(name MATCHES "^(rodata|data|bss)$")
      math(EXPR ${name} "${${name}} + ${bytes}")
    endif()
  endif()
endforeach()

execute_process(COMMAND ${NM} ${ELF} OUTPUT_VARIABLE nm_out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} ${ELF} failed")
endif()
foreach(sym weight_bytes const_bytes arena_bytes state_bytes ram_overhead_min_bytes ram_overhead_max_bytes)
  if(NOT nm_out MATCHES "([0-9a-fA-F]+) A stf_fw_${sym}\n")
    message(FATAL_ERROR "${ELF} exports no stf_fw_${sym} (see runtime/footprint.hpp)")
  endif()
  math(EXPR ${sym} "0x${CMAKE_MATCH_1}")
endforeach()

set(stack "-")
if(EMULATOR)
  execute_process(COMMAND ${EMULATOR} ${ELF} OUTPUT_VARIABLE run_out ERROR_VARIABLE run_err RESULT_VARIABLE rc
                  TIMEOUT 600)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "running ${ELF} failed (${rc}):\n${run_out}${run_err}")
  endif()
  if(NOT run_out MATCHES "stack high-water: ([0-9]+) B of ([0-9]+) B")
    message(FATAL_ERROR "${ELF} printed no 'stack high-water: N B of M B' line")
  endif()
  set(stack_used ${CMAKE_MATCH_1})
  set(stack_size ${CMAKE_MATCH_2})
  set(stack "${stack_used} / ${stack_size}")
endif()

math(EXPR flash_pred "${weight_bytes} + ${const_bytes}")
math(EXPR ram_pred "${arena_bytes} + ${state_bytes}")
math(EXPR ram "${data} + ${bss}")
math(EXPR ram_over "${ram} - ${ram_pred}")
math(EXPR ram_low "${ram_pred} + ${ram_overhead_min_bytes}")
math(EXPR ram_high "${ram_pred} + ${ram_overhead_max_bytes}")

function(pad text width out)
  string(LENGTH "${text}" n)
  set(result "${text}")
  while(n LESS width)
    string(PREPEND result " ")
    math(EXPR n "${n} + 1")
  endwhile()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
# One row: the label, then each value right-aligned in its width.
function(table_row label fields)
  set(row "${label}")
  string(LENGTH "${row}" n)
  while(n LESS 16)
    string(APPEND row " ")
    math(EXPR n "${n} + 1")
  endwhile()
  foreach(field IN LISTS fields)
    string(REGEX MATCH "^(.*):([0-9]+)$" _ "${field}")
    pad("${CMAKE_MATCH_1}" ${CMAKE_MATCH_2} value)
    string(APPEND row " ${value}")
  endforeach()
  message("${row}")
endfunction()
set(widths 6 7 6 6 1 7 8 6 9 1 14 1 0)
if(HEADER)
  message("                 measured: arm-none-eabi-size | predicted: constexpr footprint  | RAM beyond     |")
  set(names .text .rodata .data .bss | weights "PE table" arena "K/V cache" | prediction | "stack high-water")
  set(fields "")
  foreach(name width IN ZIP_LISTS names widths)
    list(APPEND fields "${name}:${width}")
  endforeach()
  table_row("target" "${fields}")
endif()
if(NOT LABEL)
  get_filename_component(LABEL ${ELF} NAME_WE)
endif()
set(values ${text} ${rodata} ${data} ${bss} | ${weight_bytes} ${const_bytes} ${arena_bytes} ${state_bytes} |
           "+${ram_over}/${ram_overhead_min_bytes}-${ram_overhead_max_bytes}" | "${stack} B")
set(fields "")
foreach(value width IN ZIP_LISTS values widths)
  list(APPEND fields "${value}:${width}")
endforeach()
table_row("${LABEL}" "${fields}")

if(BY_PART)
  execute_process(COMMAND ${BY_PART} --expect-total ${text} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the code by part failed (${rc}): ${BY_PART} --expect-total ${text}")
  endif()
endif()

if(CHECK)
  set(errors "")
  if(ram GREATER ram_high)
    string(APPEND errors "RAM: .data + .bss = ${ram} B exceeds the prediction arena + K/V = ${ram_pred} B by "
                         "${ram_over} B, more than the runtime's known overhead (at most ${ram_overhead_max_bytes} B)\n")
  elseif(ram LESS ram_low)
    string(APPEND errors "RAM: .data + .bss = ${ram} B exceeds the prediction arena + K/V = ${ram_pred} B by only "
                         "${ram_over} B, less than the runtime's known overhead (at least ${ram_overhead_min_bytes} B): "
                         "the prediction claims RAM the firmware does not allocate\n")
  endif()
  if(rodata LESS flash_pred)
    string(APPEND errors "flash: .rodata = ${rodata} B is smaller than the predicted weights + PE table "
                         "(${flash_pred} B): the weights are not in flash\n")
  endif()
  if(EMULATOR AND NOT stack_used LESS stack_size)
    string(APPEND errors "stack: the high-water mark reached the stack size (${stack_size} B): overflow\n")
  endif()
  if(errors)
    message(FATAL_ERROR "${errors}")
  endif()
  message("footprint within the prediction: RAM ${ram} B = ${ram_pred} B + ${ram_over} B overhead, in "
          "[${ram_overhead_min_bytes}, ${ram_overhead_max_bytes}] B; "
          "weights + PE ${flash_pred} B in .rodata (${rodata} B)")
endif()
