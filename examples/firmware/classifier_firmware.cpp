// The classifier example (examples/classifier: embedding + PE + 2 post-norm encoder layers + a
// per-token classifier, as one static graph, trained by tools/train_classifier.py) as firmware, in
// the number format STF_CLASSIFIER_FORMAT (f32 by default; w8a8, w8a32: the encoder layers' linears
// int8). Runs the generated header's input and prints each token's class, the logits and their
// distance to PyTorch's float model, and the footprint. f32 exits 1 if a logit differs from PyTorch's
// by more than 1e-5 relative (MISMATCH); an int8 format exits 1 if a token's class differs from
// PyTorch's (DIFFER).
#include <cmath>
#include <type_traits>

#include <statiformer/statiformer.hpp>

#include "../classifier/classifier_model.hpp"
#include "../classifier/classifier_weights.hpp"
#include "../classifier/classifier_weights_w8a32.hpp"
#include "../classifier/classifier_weights_w8a8.hpp"
#include "firmware.h"

#ifndef STF_CLASSIFIER_FORMAT
#define STF_CLASSIFIER_FORMAT f32
#endif

namespace {
using namespace stf;
using namespace classifier_example;

/// The generated header of a number format: its weight table, test input and PyTorch's float logits.
template <NumberFormat F>
struct Header;
#define STF_CLASSIFIER_HEADER(format, ns)                                    \
  template <>                                                                \
  struct Header<NumberFormat::format> {                                      \
    static constexpr const char* name = #format;                             \
    static constexpr const auto& table = ns::table;                          \
    static constexpr const int* tokens = ns::test_tokens;                    \
    static constexpr index_t valid_len = ns::test_valid_len;                 \
    static constexpr const float* logits = ns::test_logits;                  \
    static_assert(std::is_same_v<ns::Model, ModelIn<NumberFormat::format>>); \
  };
STF_CLASSIFIER_HEADER(f32, stf_classifier)
STF_CLASSIFIER_HEADER(w8a8, stf_classifier_w8a8)
STF_CLASSIFIER_HEADER(w8a32, stf_classifier_w8a32)
#undef STF_CLASSIFIER_HEADER

constexpr NumberFormat kFormat = NumberFormat::STF_CLASSIFIER_FORMAT;
using H = Header<kFormat>;
using M = ModelIn<kFormat>;
M model;  // static: the arena lives in .bss
}  // namespace

int main() {
  fw_puts("statiformer classifier firmware (");
  fw_puts(H::name);
  fw_puts(") on " STF_FW_CORE "\n");
  if (const BindResult bound = bind_table(model, H::table); !bound) {
    fw_puts("bind failed: ");
    fw_puts(bound.name.c_str());
    fw_puts(": ");
    fw_puts(to_string(bound.status));
    fw_puts("\n");
    return 1;
  }
  const index_t valid = H::valid_len;
  if (Status st = model.forward(nullptr, RunContext{H::tokens, valid}); st != Status::ok) {
    fw_puts("forward failed: ");
    fw_puts(to_string(st));
    fw_puts("\n");
    return 1;
  }

  const CMat<kSeqLen, kClasses> logits = model.output();
  int bad = 0, other_class = 0;
  fw_puts("token  class  logits (statiformer); PyTorch float32 max |diff|\n");
  for (index_t s = 0; s < valid; ++s) {
    index_t best = 0, want_best = 0;
    double max_diff = 0;
    for (index_t c = 0; c < kClasses; ++c) {
      best = logits(s, c) > logits(s, best) ? c : best;
      want_best = H::logits[s * kClasses + c] > H::logits[s * kClasses + want_best] ? c : want_best;
      const double want = H::logits[s * kClasses + c];
      const double diff = std::fabs(static_cast<double>(logits(s, c)) - want);
      max_diff = diff > max_diff ? diff : max_diff;
      bad += diff > 1e-5 * std::fabs(want) + 1e-5;
    }
    other_class += best != want_best;
    fw_put_i(H::tokens[s], 5);
    fw_put_u(best, 7);
    fw_puts("  ");
    for (index_t c = 0; c < kClasses; ++c) {
      fw_put_f(static_cast<double>(logits(s, c)), 5, 9);
      fw_putc(' ');
    }
    fw_puts("; ");
    if (kFormat == NumberFormat::f32) {
      fw_put_f(max_diff * 1e9, 0, 0);
      fw_puts("e-9\n");
    } else {
      fw_put_f(max_diff, 4, 0);
      fw_puts("\n");
    }
  }
  fw_puts("footprint (constexpr): weights ");
  fw_put_u(M::weight_bytes, 0);
  fw_puts(" B (float32 model: ");
  fw_put_u(Model::weight_bytes, 0);
  fw_puts(" B); arena ");
  fw_put_u(M::arena_bytes, 0);
  fw_puts(" B\nstack high-water: ");
  fw_put_u(fw_stack_high_water(), 0);
  fw_puts(" B\n");
  if (kFormat == NumberFormat::f32) {
    fw_puts(bad ? "MISMATCH with PyTorch\n" : "matches PyTorch (1e-5)\n");
    return bad ? 1 : 0;
  }
  fw_puts(other_class ? "classes DIFFER from PyTorch's float model\n" : "every class equal to PyTorch's float model\n");
  return other_class ? 1 : 0;
}
