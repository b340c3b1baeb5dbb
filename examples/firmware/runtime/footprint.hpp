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
/// (Model::arena_bytes + Model::state_bytes), all of it static (.data + .bss): the band the size
/// ctest (cmake/FirmwareSize.cmake) holds .data + .bss - prediction to, on both sides. Above it, RAM
/// goes somewhere the prediction does not know; below it, the prediction claims RAM the firmware
/// does not have (an arena_bytes larger than the arena the model allocates passed a one-sided check).
/// Measured on the demo firmware (GCC 12.2, newlib-nano, arm-none-eabi-nm -S): 840 B on the M4F, M7
/// and M55 (float32), made of
///   - the model object's fields that are not activations: its parameter views (one pointer per
///     weight tensor, 92 for the float32 demo) and decoding state, padded to the 64-byte tensor
///     alignment: sizeof(Model) - arena_bytes - state_bytes = 448 B for the float32 demo; each
///     firmware states its model's (demo_firmware.cpp: the int8 models hold a scale view more per
///     linear);
///   - the runtime: the semihosting console's line buffer, fill count and file descriptor
///     (256 + 4 + 4 B), the SysTick extension (8 + 4 B);
///   - newlib: the reentrancy structure libm's errno reaches and its pointer (_impure_data 96 B,
///     _impure_ptr 4 B), __fdlib_version (1 B);
///   - alignment padding inside .data and .bss (15 B).
/// The lower bound is the sum of the named objects (825 B for the float32 demo), the upper one adds
/// 64 B of padding. So an arena_bytes inflated by 16 B or more fails, as does RAM beyond the
/// prediction + the upper bound.
inline constexpr std::size_t kRuntimeOwnRamBytes = 264 + 12 + 101;  // runtime + newlib, without the model object
constexpr std::size_t runtime_ram_overhead_min(std::size_t model_object_overhead) {
  return model_object_overhead + kRuntimeOwnRamBytes;
}
constexpr std::size_t runtime_ram_overhead_max(std::size_t model_object_overhead) {
  return runtime_ram_overhead_min(model_object_overhead) + 64;
}
inline constexpr std::size_t kRuntimeRamOverheadMinBytes = runtime_ram_overhead_min(448);  // the float32 demo
inline constexpr std::size_t kRuntimeRamOverheadMaxBytes = runtime_ram_overhead_max(448);

}  // namespace fw
