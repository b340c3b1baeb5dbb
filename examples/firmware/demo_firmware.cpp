// The demo model (examples/demo: an encoder-decoder trained to reverse digit sequences) as
// bare-metal firmware on qemu-system-arm, its weights bound at compile time: the same inputs and
// output lines as the host demo, the log-probability hash (checked against the committed one), the
// per-layer instruction counts (SysTick under qemu -icount, through stf::Profiler), the footprint,
// the model summary (the library's printer) and the stack high-water mark. Exits 1 if a decoding
// is wrong or the hash differs.
//
// One source for every number format, chosen by STF_DEMO_FORMAT (examples/firmware/CMakeLists.txt):
// 0 float32 (fw_demo: demo_weights.hpp), 1 w8a8 (fw_demo_w8a8: demo_weights_w8a8.hpp, the host's
// `demo --int8`), 2 w8a32 (fw_demo_w8a32: demo_weights_w8a32.hpp, `demo --w8a32`).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <statiformer/statiformer.hpp>

#include "../demo/demo_model.hpp"
#include "../demo/logprob_hash.hpp"
#include "cycles.hpp"
#include "firmware.h"
#include "footprint.hpp"

#ifndef STF_DEMO_FORMAT
#define STF_DEMO_FORMAT 0
#endif
#if STF_DEMO_FORMAT == 1
#include "../demo/demo_weights_w8a8.hpp"
#elif STF_DEMO_FORMAT == 2
#include "../demo/demo_weights_w8a32.hpp"
#elif STF_DEMO_FORMAT != 0
#error "STF_DEMO_FORMAT: 0 (float32), 1 (w8a8) or 2 (w8a32)"
#endif

namespace {
using namespace stf;
namespace dm = stf_demo;

/// What differs between the number formats: the model type, its parameters bound at compile time,
/// its committed log-probability hash (logprob_hash.hpp), and the bytes of the model object beyond
/// its arena and K/V caches (its parameter views and decoding state, padded to the tensors'
/// 64-byte alignment; measured: sizeof(Model) - arena_bytes - state_bytes, the same on the three
/// cores), the first term of the runtime's RAM overhead band (runtime/footprint.hpp).
struct Float32 {
  using Model = dm::Model;
  static constexpr const char* name = "float32";
  static constexpr const Model::Params& params = dm::bound_model_params;
  static constexpr std::uint64_t committed_hash = dm::kCommittedLogprobHash;
  static constexpr std::size_t model_object_overhead = 448;  // 92 parameter views
};
#if STF_DEMO_FORMAT == 1
struct W8a8 {
  using Model = stf_demo_w8a8::Model;
  static constexpr const char* name = "w8a8";
  static constexpr const Model::Params& params = stf_demo_w8a8::bound_model_params;
  static constexpr std::uint64_t committed_hash = dm::kCommittedLogprobHashW8a8;
  static constexpr std::size_t model_object_overhead = 576;  // a weight-scale view more per linear
};
using Format = W8a8;
#elif STF_DEMO_FORMAT == 2
struct W8a32 {
  using Model = stf_demo_w8a32::Model;
  static constexpr const char* name = "w8a32";
  static constexpr const Model::Params& params = stf_demo_w8a32::bound_model_params;
  static constexpr std::uint64_t committed_hash = dm::kCommittedLogprobHashW8a32;
  static constexpr std::size_t model_object_overhead = 576;  // a weight-scale view more per linear
};
using Format = W8a32;
#else
using Format = Float32;
#endif

using dm::Input;
using dm::parse_digits;
using Model = Format::Model;
static_assert(Model::arena_bytes + Model::state_bytes <= 24 * 1024,
              "the demo's RAM budget (demo_model.hpp), in every format");
static_assert(Model::src_len == dm::kSrcLen && Model::tgt_len == dm::kTgtLen && Model::tgt_vocab == dm::kVocab,
              "the demo's number formats share one shape (demo_model.hpp)");
Model model;  // static: arena and caches live in .bss

void to_tokens(const Input& in, int (&src)[dm::kSrcLen]) {
  for (index_t i = 0; i < dm::kSrcLen; ++i) src[i] = i < in.len ? dm::kDigit0 + in.digits[i] : 0;
}

// Prints the input/output line exactly as examples/demo/demo.cpp does; returns whether it is right.
bool report(const Input& in, const int* out, index_t n) {
  bool ok = n == in.len + 2 && out[0] == dm::kBos && out[n - 1] == dm::kEos;
  for (index_t i = 0; ok && i < in.len; ++i) ok = out[1 + i] == dm::kDigit0 + in.digits[in.len - 1 - i];
  fw_puts("  input  ");
  for (index_t i = 0; i < in.len; ++i) {
    fw_put_i(in.digits[i], 0);
    fw_putc(' ');
  }
  fw_put_str("", static_cast<int>(2 * (dm::kSrcLen - in.len)));
  fw_puts("->  output ");
  for (index_t i = 1; i < n; ++i) {
    if (out[i] == dm::kEos) {
      fw_puts("<eos>");
    } else if (out[i] >= dm::kDigit0) {
      fw_put_i(out[i] - dm::kDigit0, 0);
      fw_putc(' ');
    } else {
      fw_putc('<');
      fw_put_i(out[i], 0);
      fw_puts("> ");
    }
  }
  fw_puts(ok ? "  correct\n" : "  WRONG\n");
  return ok;
}

void print_digits(const Input& in) {
  for (index_t i = 0; i < in.len; ++i) {
    if (i) fw_putc(' ');
    fw_put_i(in.digits[i], 0);
  }
}

using Clock = std::uint64_t (*)();
using Prof = Profiler<Clock>;

// Per-layer instruction counts of one greedy decoding of `in`, exact (see cycles.hpp).
void profile_layers(const Input& in) {
  int src[dm::kSrcLen];
  to_tokens(in, src);
  int out[dm::kTgtLen];
  index_t n = 0;
  bool exact = true;

  // The whole decoding without a profiler.
  std::uint64_t total_ticks = 0;
  fw::for_each_phase([&] {
    const std::uint64_t t0 = fw::systick_now();
    (void)model.greedy_decode(src, in.len, dm::kBos, dm::kEos, out, n);
    total_ticks += fw::systick_now() - t0;
  });
  std::uint64_t total = 0;
  exact = fw::exact_instructions(total_ticks, total) && exact;

  // Each layer through the profiler. Warm-up first: the profiler's first pass appends its entries
  // (a different path), later passes only accumulate. "empty" is a begin/end pair around nothing:
  // the profiler's own instructions inside each reading, subtracted below.
  Prof prof(&fw::systick_now);
  const LayerPath empty("empty");  // built outside the timed span, as the model's paths are
  (void)model.greedy_decode(src, in.len, dm::kBos, dm::kEos, out, n, prof);
  prof.begin(empty);
  prof.end(empty);
  std::uint64_t ticks_before[32] = {}, calls_before[32] = {};
  for (index_t i = 0; i < prof.size(); ++i) ticks_before[i] = prof[i].ticks, calls_before[i] = prof[i].calls;
  fw::for_each_phase([&] {
    (void)model.greedy_decode(src, in.len, dm::kBos, dm::kEos, out, n, prof);
    prof.begin(empty);
    prof.end(empty);
  });
  const index_t rows = prof.size() - 1;  // the last entry is "empty"
  std::uint64_t overhead = 0;
  exact = fw::exact_instructions(prof[rows].ticks - ticks_before[rows], overhead) && exact;

  fw_puts("\nper-layer instructions of one greedy decoding of \"");
  print_digits(in);
  fw_puts("\" on " STF_FW_CORE " (qemu -icount shift=0, SysTick at ");
  fw_put_u(fw::kSysTickHz / 1000000, 0);
  fw_puts(" MHz, readings summed over ");
  fw_put_u(fw::kPeriodInsns, 0);
  fw_puts(" phase offsets; decoder rows sum all steps)\n");
  fw_puts("  layer                         calls  instructions  share\n");
  std::uint64_t layers = 0;
  for (index_t i = 0; i < rows; ++i) {
    const std::uint64_t calls = (prof[i].calls - calls_before[i]) / fw::kPeriodInsns;
    std::uint64_t insns = 0;
    exact = fw::exact_instructions(prof[i].ticks - ticks_before[i], insns) && exact;
    insns -= calls * overhead;
    layers += insns;
    char name[40];
    (void)prof[i].name(name, sizeof name);  // the weights' prefix: encoder.layers.0, ...
    fw_puts("  ");
    fw_put_str(name, 28);
    fw_put_u(calls, 6);
    fw_put_u(insns, 14);
    fw_put_f(100.0 * static_cast<double>(insns) / static_cast<double>(total), 1, 6);
    fw_puts("%\n");
  }
  fw_puts("  ");
  fw_put_str("(rest: argmax, calls)", 34);
  fw_put_u(total - layers, 14);
  fw_put_f(100.0 * static_cast<double>(total - layers) / static_cast<double>(total), 1, 6);
  fw_puts("%\n  ");
  fw_put_str("total (no profiler)", 34);
  fw_put_u(total, 14);
  fw_puts("\n  (each reading holds ");
  fw_put_u(overhead, 0);
  fw_puts(" instructions of the profiler's own, subtracted above)\n");
  fw_puts(exact ? "  counts exact: every phase sum was a whole number of instructions\n"
                : "  WARNING: a phase sum was not a whole number of instructions (runs differed)\n");
}

[[gnu::used]] void export_footprint() {
  FW_EXPORT_SYMBOL(stf_fw_weight_bytes, Model::weight_bytes);
  FW_EXPORT_SYMBOL(stf_fw_const_bytes, Model::const_bytes);
  FW_EXPORT_SYMBOL(stf_fw_arena_bytes, Model::arena_bytes);
  FW_EXPORT_SYMBOL(stf_fw_state_bytes, Model::state_bytes);
  FW_EXPORT_SYMBOL(stf_fw_model_object_bytes, sizeof(Model));
  FW_EXPORT_SYMBOL(stf_fw_ram_overhead_min_bytes, fw::runtime_ram_overhead_min(Format::model_object_overhead));
  FW_EXPORT_SYMBOL(stf_fw_ram_overhead_max_bytes, fw::runtime_ram_overhead_max(Format::model_object_overhead));
}
}  // namespace

int main() {
  fw_puts("statiformer demo firmware on " STF_FW_CORE " (qemu-system-arm -M " STF_FW_MACHINE
          "): reverse a digit sequence (encoder-decoder, ");
  fw_put_u(dm::kNLayers, 0);
  fw_putc('+');
  fw_put_u(dm::kNLayers, 0);
  fw_puts(" layers, d_model ");
  fw_put_u(dm::kDModel, 0);
  fw_puts(", ");
  fw_put_u(dm::kNHeads, 0);
  fw_puts(" heads; ");
  fw_puts(Format::name);
  fw_puts("); kernels: ");
  fw_puts(stf::kKernelsSizeFirst ? "size-first" : "speed-first");  // (kernels/api.hpp)
  fw_puts("\n\n");

  // the parameters bound at compile time (demo_model.hpp): views into the weights in flash, their
  // sizes and hyperparameters checked by the compiler; no name lookup, no binding code linked
  model.params = Format::params;

  // the host demo's default inputs
  const char* texts[] = {"3 1 4 1 5", "2 7 1 8 2 8 1 8 2 8", "9", "0 1 2 3 4 5 6 7 8 9", "6 6 6 0"};
  Input inputs[5];
  int wrong = 0;
  for (index_t k = 0; k < 5; ++k) {
    Input& in = inputs[k];
    (void)parse_digits(texts[k], in);
    int src[dm::kSrcLen];
    to_tokens(in, src);
    int out[dm::kTgtLen];
    index_t n = 0;
    if (Status st = model.greedy_decode(src, in.len, dm::kBos, dm::kEos, out, n); st != Status::ok) {
      fw_puts("demo: decoding failed: ");
      fw_puts(to_string(st));
      fw_puts("\n");
      return 1;
    }
    wrong += !report(in, out, n);
  }

  {
    int src[dm::kSrcLen];
    to_tokens(inputs[0], src);
    std::uint64_t hash = 0;
    index_t steps = 0;
    if (dm::logprob_hash(model, src, inputs[0].len, dm::kBos, dm::kEos, hash, steps) != Status::ok) return 1;
    fw_puts("\nlogprob hash of \"");
    print_digits(inputs[0]);
    fw_puts("\" (FNV-1a 64 of the per-step log-probabilities, ");
    fw_put_u(steps, 0);
    fw_puts(" steps): 0x");
    fw_put_hex(hash, 16);
    fw_puts("\n");
    if (hash != Format::committed_hash) {
      fw_puts("demo: the log-probabilities differ from the committed hash 0x");
      fw_put_hex(Format::committed_hash, 16);
      fw_puts("\n");
      return 1;
    }
  }

  fw::systick_start();
  profile_layers(inputs[0]);

  fw_puts("\nfootprint (constexpr predictions)\n  weights ");
  fw_put_u(Model::weight_bytes, 0);
  fw_puts(" B + PE table ");
  fw_put_u(Model::const_bytes, 0);
  fw_puts(" B (flash");
  if constexpr (!std::is_same_v<Model, dm::Model>) {
    fw_puts("; the float32 model's weights: ");
    fw_put_u(dm::Model::weight_bytes, 0);
    fw_puts(" B");
  }
  fw_puts("); arena ");
  fw_put_u(Model::arena_bytes, 0);
  fw_puts(" B + K/V caches ");
  fw_put_u(Model::state_bytes, 0);
  fw_puts(" B (RAM); model object ");
  fw_put_u(sizeof(Model), 0);
  fw_puts(" B\n");
  // the library's summary printer: no heap, no stdio, integers only
  fw_puts("\nmodel summary\n");
  Model::summary([](const char* line) {
    fw_puts("  ");
    fw_puts(line);
    fw_putc('\n');
  });
  fw_puts("stack high-water: ");
  fw_put_u(fw_stack_high_water(), 0);
  fw_puts(" B of ");
  fw_put_u(fw_stack_size(), 0);
  fw_puts(" B\n");

  fw_puts(wrong ? "\nSOME DECODINGS ARE WRONG\n" : "\nall decodings correct\n");
  return wrong ? 1 : 0;
}
