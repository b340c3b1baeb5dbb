// A firmware that runs a transformer with statiformer: the weights are compiled into flash
// (stf_embed_weights in CMakeLists.txt) and bound in place, so they take no RAM; the activations
// live in the model object, a static of the size the compiler planned. It checks the output
// against PyTorch's, times each layer and compares the footprint the types predict with the one
// the linker made. Exit status 0 when everything holds.
#include <statiformer/io/safetensors.hpp>
#include <statiformer/statiformer.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "board.h"
#include "model.hpp"
#include "model_weights.hpp"  // generated: alignas(64) const unsigned char model_weights[], model_weights_size
#include "reference.hpp"

namespace {
// The kernels the layers call, chosen by the compile flags (-mcpu): Helium on the M55, else the
// scalar variant (with its Cortex-M4F assembly where the core has the FPU).
constexpr const char* kKernelVariant = std::is_same_v<stf::isa::active, stf::isa::mve>      ? "mve"
                                       : std::is_same_v<stf::isa::active, stf::isa::scalar> ? "scalar"
                                                                                            : "other";
app::Model model;  // static: .bss holds its parameter views and its activation arena

void put_line(const char* label, std::uint64_t value, const char* unit) {
  board_puts(label);
  board_put_u(value);
  board_puts(unit);
}
}  // namespace

int main() {
  board_puts("firmware template: 2-layer transformer encoder (d_model 8, 2 heads) on " FIRMWARE_CORE
             ", kernel variant ");
  board_puts(kKernelVariant);
  board_puts("\n");

  // 1. Weights: the embedded .safetensors, checked (names, shapes, layout, NaN) and bound in place.
  // The loader keeps ~64 B of stack per tensor it can take: 64 here (this model has 34), where the
  // default 256 would need 16 KB of stack.
  const stf::LoadResult loaded = stf::load_safetensors<64>(model, model_weights, model_weights_size, nullptr, 0);
  if (!loaded) {
    board_puts("loading the weights failed: ");
    board_puts(loaded.message);
    board_puts("\n");
    return 1;
  }

  // 2. One forward pass, each layer timed through the profiler.
  board_cycles_start();
  stf::Profiler<std::uint64_t (*)()> profiler(&board_cycles);
  const std::uint64_t start = board_cycles();
  const stf::Status status = model.forward(reference::kInput, stf::RunContext{nullptr, reference::kValidLen}, profiler);
  const std::uint64_t total = board_cycles() - start;
  if (status != stf::Status::ok) {
    board_puts("forward failed: ");
    board_puts(stf::to_string(status));
    board_puts("\n");
    return 1;
  }

  // 3. The output against PyTorch's (only the valid rows: padded rows are not comparable).
  const auto y = model.output();
  double max_diff = 0;
  int bad = 0;
  for (stf::index_t s = 0; s < reference::kValidLen; ++s)
    for (stf::index_t c = 0; c < app::kDModel; ++c) {
      const double want = reference::kPyTorchOutput[s * app::kDModel + c];
      const double diff = std::fabs(static_cast<double>(y(s, c)) - want);
      max_diff = diff > max_diff ? diff : max_diff;
      bad += !(diff <= 1e-5 + 1e-5 * std::fabs(want));  // NaN counts as bad
    }
  board_puts(bad ? "output: MISMATCH with PyTorch, max |diff| " : "output: matches PyTorch, max |diff| ");
  board_put_f(max_diff * 1e9, 0);
  board_puts("e-9 (tolerance 1e-5)\n");

  board_puts("\ncycles per layer (");
  board_puts(board_cycle_counter());
  board_puts(")\n");
  std::uint64_t layers = 0;
  char name[48];
  for (stf::index_t i = 0; i < profiler.size(); ++i) {
    profiler[i].name(name, sizeof name);  // the layer's parameter prefix, e.g. "layers.0"
    board_puts("  ");
    board_puts(name);
    put_line("  ", profiler[i].ticks, "\n");
    layers += profiler[i].ticks;
  }
  put_line("  forward  ", total, "\n");

  // 4. Footprint: what the model's type says next to what the linker placed.
  const auto bytes = [](const char* begin, const char* end) { return static_cast<std::uint64_t>(end - begin); };
  const std::uint64_t flash = bytes(__flash_start, __flash_end), ram = bytes(__data_start, __bss_end);
  board_puts("\nfootprint (constexpr from the model's type | linker)\n");
  put_line("  weights     ", app::Model::weight_bytes, " B");
  put_line(" (Model::weight_bytes) | embedded file ", model_weights_size, " B (tensors + header)\n");
  put_line("  activations ", app::Model::arena_bytes, " B");
  put_line(" (Model::arena_bytes) in the model object ", sizeof(model), " B (+ the parameters' views)\n");
  put_line("  flash used  ", flash, " B (code, weights, constants)\n");
  put_line("  RAM used    ", ram, " B static (.data + .bss)");
  put_line(", stack ", board_stack_used(), " B of ");
  put_line("", bytes(__stack_limit, __stack_top), " B\n");

  // What must hold, on any board: the weights are in flash, not copied to RAM; the activations and
  // the model object fit the static RAM the linker counted; the stack did not overflow; the
  // profile adds up.
  int failed = bad;
  const auto expect = [&failed](bool ok, const char* what) {
    if (!ok) {
      board_puts("FAILED: ");
      board_puts(what);
      board_puts("\n");
      ++failed;
    }
  };
  const auto in_flash = [&](const void* p) {
    return static_cast<const char*>(p) >= __flash_start && static_cast<const char*>(p) < __flash_end;
  };
  bool in_place = true;  // every parameter points into the embedded file: no copy in RAM
  model.visit([&](const stf::Name&, stf::ParamRef ref) {
    const auto* p = reinterpret_cast<const unsigned char*>(*ref.data);
    in_place = in_place && p >= model_weights && p + ref.size() * sizeof(float) <= model_weights + model_weights_size;
  });
  expect(in_flash(model_weights) && model_weights_size >= app::Model::weight_bytes && in_place,
         "weights bound in place, in flash");
  expect(sizeof(model) >= app::Model::arena_bytes && sizeof(model) <= ram, "model object in static RAM");
  expect(board_stack_used() < bytes(__stack_limit, __stack_top), "the stack stayed within STACK_SIZE");
  expect(total > 0 && layers > 0 && layers <= total, "per-layer cycles add up to at most the forward's");
  return failed ? 1 : 0;
}
