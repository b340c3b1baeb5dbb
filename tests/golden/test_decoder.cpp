// Parity with PyTorch: decoder layers and stacks (causal self-attention, cross-attention to a
// memory of another length), and the incremental path: stepping position by position through the
// key/value cache gives the same bits as the whole-sequence forward.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include <statiformer/layers/stack.hpp>

#include "../support/golden.hpp"
#include "options.hpp"

namespace {
using namespace stf;
using stf::test::golden_options;
using stf::test::GoldenCase;

template <class Model, class Cache, index_t NCaches, index_t B, index_t S, index_t M, index_t D>
void run_batched(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  Model model{};
  stf::test::bind_golden(model.params, c);
  const std::vector<int> valid = c.ints("mem_valid_len");
  const float* x = c.data("x", B * S * D);
  const float* memory = c.data("memory", B * M * D);
  std::vector<float> y(B * S * D), scratch(Model::scratch_floats), step_scratch(Model::step_scratch_floats);
  auto caches = std::make_unique<Cache[]>(NCaches);
  for (index_t b = 0; b < B; ++b) {
    const index_t mem_valid = static_cast<index_t>(valid[b]);
    float* yb = y.data() + b * S * D;
    REQUIRE(model.forward(CMat<S, D>(x + b * S * D), CMat<M, D>(memory + b * M * D), Mat<S, D>(yb), mem_valid,
                          scratch.data()) == Status::ok);
    // incremental decoding over the cache: bit-identical rows
    if constexpr (NCaches == 1)
      model.prepare_memory(memory + b * M * D, caches[0]);
    else
      model.prepare_memory(memory + b * M * D, caches.get());
    for (index_t pos = 0; pos < S; ++pos) {
      float row[D];
      if constexpr (NCaches == 1)
        model.step(x + (b * S + pos) * D, pos, mem_valid, caches[0], row, step_scratch.data());
      else
        model.step(x + (b * S + pos) * D, pos, mem_valid, caches.get(), row, step_scratch.data());
      INFO("batch " << b << " position " << pos);
      CHECK(std::memcmp(row, yb + pos * D, sizeof row) == 0);
    }
  }
  stf::test::check_close(c, "y", y.data(), c.data("y", B * S * D), B * S * D);
}

template <class Mask>
void load_bytes(const GoldenCase& c, const char* name, Mask& m) {
  const float* f = c.data(name, sizeof m);
  auto* bytes = reinterpret_cast<std::uint8_t*>(&m);
  for (std::size_t i = 0; i < sizeof m; ++i) bytes[i] = f[i] != 0.0f;
}

/// nn.TransformerDecoderLayer with tgt_mask (and the causal mask), memory_mask and both
/// key-padding masks (gaps), as Layer::Masks.
template <class Layer, index_t S, index_t M, index_t D>
void run_masks(const char* name) {
  const GoldenCase c = stf::test::load_golden(name);
  Layer layer{};
  stf::test::bind_golden(layer.params, c);
  TorchBoolMask<S, S> tgt_mask{};
  TorchBoolMask<S, M> memory_mask{};
  KeyPaddingMask<S> tgt_pad{};
  KeyPaddingMask<M> memory_pad{};
  load_bytes(c, "tgt_mask", tgt_mask);
  load_bytes(c, "memory_mask", memory_mask);
  load_bytes(c, "tgt_key_padding_mask", tgt_pad);
  load_bytes(c, "memory_key_padding_mask", memory_pad);
  std::vector<float> y(S * D), scratch(Layer::scratch_floats);
  REQUIRE(layer.forward(CMat<S, D>(c.data("x", S * D)), CMat<M, D>(c.data("memory", M * D)), Mat<S, D>(y.data()),
                        {.tgt_mask = &tgt_mask,
                         .memory_mask = &memory_mask,
                         .tgt_key_padding_mask = &tgt_pad,
                         .memory_key_padding_mask = &memory_pad},
                        scratch.data()) == Status::ok);
  stf::test::check_close(c, "y", y.data(), c.data("y", S * D), S * D);
}
}  // namespace

#define STF_GOLDEN_DECODER_LAYER_MASKS(name, S, M, D, H, F, norm_first, act)                                          \
  TEST_CASE("golden decoder layer masks " #name, "[golden][decoder][mask]") {                                         \
    run_masks<DecoderLayer<S, M, D, H, F, golden_options(norm_first, LayerNormKind::torch, STF_ACT_##act)>, S, M, D>( \
        #name);                                                                                                       \
  }
#define STF_GOLDEN_DECODER_LAYER(name, B, S, M, D, H, F, norm_first, act)                                   \
  TEST_CASE("golden decoder layer " #name, "[golden][decoder]") {                                           \
    using L = DecoderLayer<S, M, D, H, F, golden_options(norm_first, LayerNormKind::torch, STF_ACT_##act)>; \
    run_batched<L, L::Cache, 1, B, S, M, D>(#name);                                                         \
  }
#define STF_GOLDEN_DECODER_STACK(name, B, S, M, D, H, F, N, norm_first, final_norm, ln) \
  TEST_CASE("golden decoder stack " #name, "[golden][decoder]") {                       \
    using L = DecoderLayer<S, M, D, H, F, golden_options(norm_first, STF_LN_##ln)>;     \
    run_batched<DecoderStack<L, N, bool(final_norm)>, L::Cache, N, B, S, M, D>(#name);  \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
