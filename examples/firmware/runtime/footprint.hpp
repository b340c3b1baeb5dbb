// Footprint numbers of a firmware, exported as absolute ELF symbols so that the size check
// (cmake/FirmwareSize.cmake, `./run size`) reads the C++ constexpr predictions back with nm next to
// arm-none-eabi-size's measured sections.
#pragma once

#include <cstddef>

/// Inside a function marked [[gnu::used]]: defines the global absolute symbol `name` = value.
#define FW_EXPORT_SYMBOL(name, value) \
  __asm volatile(".globl " #name "\n\t.set " #name ", %c0" ::"i"(static_cast<unsigned>(value)))

namespace fw {

/// RAM a firmware needs beyond what the model's constexpr footprint predicts
/// (Model::arena_bytes + Model::state_bytes), all of it static (.data + .bss). Measured on the demo
/// firmware (GCC 12.2, newlib-nano): 840 B on each core, made of
///   - the model object's fields that are not activations: its parameter views (one pointer per
///     weight tensor, 92 for the demo) and decoding state, padded to the 64-byte tensor alignment:
///     sizeof(Model) - arena_bytes - state_bytes = 448 B;
///   - the runtime: the semihosting console's line buffer and state (264 B), the SysTick
///     extension (12 B);
///   - newlib: the reentrancy structure libm's errno reaches (_impure_data, 100 B);
///   - section alignment padding.
/// The size ctest (cmake/FirmwareSize.cmake) fails if .data + .bss exceeds the prediction by more.
inline constexpr std::size_t kRuntimeRamOverheadBytes = 1024;

}  // namespace fw
