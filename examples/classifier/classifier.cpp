// The transformer classifier: token embedding·√D + positional encoding → 2 post-norm encoder layers →
// a per-token classifier, as one static graph, trained in PyTorch (tools/train_classifier.py) to give
// each token its count in the sequence (capped at 5) minus 1. Weights and the input come from the
// generated headers; the program prints the model summary and each token's class and logits.
//
//   classifier           float32: fails if any logit differs from PyTorch's by more than 1e-5 relative
//   classifier --int8    w8a8 (int8 linears and linear inputs; classifier_weights_w8a8.hpp), --w8a32
//                        int8 weights only: prints the logits' distance to PyTorch's float model and
//                        fails if a token's class differs from its class
#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include <statiformer/statiformer.hpp>

#include "classifier_model.hpp"
#include "classifier_weights.hpp"
#include "classifier_weights_w8a32.hpp"
#include "classifier_weights_w8a8.hpp"

namespace {
using namespace stf;
using namespace classifier_example;

// the generated headers' models are the example's types
static_assert(std::is_same_v<stf_classifier::Model, Model>);
static_assert(std::is_same_v<stf_classifier_w8a8::Model, ModelW8a8>);
static_assert(std::is_same_v<stf_classifier_w8a32::Model, ModelW8a32>);

// static storage: arenas included, nothing on the heap
Model model_f32;
ModelW8a8 model_w8a8;
ModelW8a32 model_w8a32;

/// Binds `model` to `table`, runs it on the header's test input (`want`: PyTorch's float logits)
/// and prints each token. Float32 must match PyTorch to 1e-5; int8 must give PyTorch's classes.
template <class M, index_t N>
int run(M& model, const WeightEntry (&table)[N], const int* tokens, index_t valid, const float* want,
        const char* format) {
  const BindResult bound = bind_table(model, table);
  if (!bound) {
    std::printf("bind failed: %s: %s\n", bound.name.c_str(), to_string(bound.status));
    return 1;
  }
  M::summary([](const char* line) { std::puts(line); });
  if (Status st = model.forward(nullptr, RunContext{tokens, valid}); st != Status::ok) {
    std::printf("forward failed: %s\n", to_string(st));
    return 1;
  }
  const bool f32 = std::strcmp(format, "float32") == 0;
  const CMat<kSeqLen, kClasses> logits = model.output();
  int bad = 0, other_class = 0;
  double worst = 0;
  std::printf("\n%s model\ntoken  count  class  logits (statiformer; PyTorch float32 max |diff|)\n", format);
  for (index_t s = 0; s < valid; ++s) {
    index_t best = 0, want_best = 0, count = 0;
    double max_diff = 0;
    for (index_t t = 0; t < valid; ++t) count += tokens[t] == tokens[s];
    for (index_t c = 0; c < kClasses; ++c) {
      best = logits(s, c) > logits(s, best) ? c : best;
      want_best = want[s * kClasses + c] > want[s * kClasses + want_best] ? c : want_best;
      const double w = want[s * kClasses + c];
      const double diff = std::fabs(logits(s, c) - w);
      max_diff = diff > max_diff ? diff : max_diff;
      bad += diff > 1e-5 * std::fabs(w) + 1e-5;
    }
    other_class += best != want_best;
    worst = max_diff > worst ? max_diff : worst;
    std::printf("%5d  %5zu  %5zu  ", tokens[s], count, best);
    for (index_t c = 0; c < kClasses; ++c) std::printf("%+.5f ", static_cast<double>(logits(s, c)));
    std::printf("; %.2e\n", max_diff);
  }
  if (f32) {
    std::printf("%s\n", bad ? "MISMATCH with PyTorch" : "matches PyTorch (1e-5)");
    return bad ? 1 : 0;
  }
  std::printf("%s model: weights %zu B against float32's %zu B; logits within %.3f of PyTorch's float model; %s\n",
              format, static_cast<std::size_t>(M::weight_bytes), static_cast<std::size_t>(Model::weight_bytes), worst,
              other_class ? "CLASSES DIFFER from PyTorch's" : "every class equal to PyTorch's");
  return other_class ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  const char* format = "float32";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--int8") == 0) {
      format = "w8a8";
    } else if (std::strcmp(argv[i], "--w8a32") == 0) {
      format = "w8a32";
    } else {
      std::fprintf(stderr, "usage: classifier [--int8 | --w8a32]\n");
      return 2;
    }
  }
  if (std::strcmp(format, "w8a8") == 0) {
    namespace h = stf_classifier_w8a8;
    return run(model_w8a8, h::table, h::test_tokens, h::test_valid_len, h::test_logits, format);
  }
  if (std::strcmp(format, "w8a32") == 0) {
    namespace h = stf_classifier_w8a32;
    return run(model_w8a32, h::table, h::test_tokens, h::test_valid_len, h::test_logits, format);
  }
  namespace h = stf_classifier;
  return run(model_f32, h::table, h::test_tokens, h::test_valid_len, h::test_logits, format);
}
