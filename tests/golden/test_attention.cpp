// Parity with PyTorch: scaled dot-product attention and multi-head attention, each in both of the
// attention's modes: with the weights output (whole score rows, two passes) and without it (the
// streaming pass over key blocks and spans that the layers run). Cases reach past the 32-key block
// and the 128-key span (70, 130 and 300 keys).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/layers/attention.hpp>

#include "../support/golden.hpp"

namespace {
using namespace stf;
using stf::test::GoldenCase;

template <index_t Sq, index_t Sk, index_t D>
void run_sdpa(const char* name, const std::string& mask_kind, MaskFill fill) {
  const GoldenCase c = stf::test::load_golden(name);
  std::vector<std::uint8_t> allow(Sq * Sk);
  const float* m = c.data("mask", Sq * Sk);
  for (index_t i = 0; i < Sq * Sk; ++i) allow[i] = m[i] != 0.0f;
  AttentionMask mask{Sk, false, 0, nullptr, fill};
  if (mask_kind == "padding") mask.valid_keys = c.scalar("valid_len");
  if (mask_kind == "causal") mask.causal = true;
  if (mask_kind == "bool") mask.allow = allow.data();

  using Sdpa = ScaledDotProductAttention<Sq, Sk, D>;
  const CMat<Sq, D> q(c.data("q", Sq * D));
  const CMat<Sk, D> k(c.data("k", Sk * D)), v(c.data("v", Sk * D));
  std::vector<float> out(Sq * D), weights(Sq * Sk), scratch(Sdpa::scratch_floats);
  // with weights: the two-pass mode
  REQUIRE(Sdpa::forward(q, k, v, Mat<Sq, D>(out.data()), mask, scratch.data(), weights.data()) == Status::ok);
  stf::test::check_close(c, "out", out.data(), c.data("out", Sq * D), Sq * D);
  stf::test::check_close(c, "weights", weights.data(), c.data("weights", Sq * Sk), Sq * Sk);
  // without: the streaming mode
  std::fill(out.begin(), out.end(), 0.0f);
  REQUIRE(Sdpa::forward(q, k, v, Mat<Sq, D>(out.data()), mask, scratch.data()) == Status::ok);
  stf::test::check_close(c, "out_stream", out.data(), c.data("out", Sq * D), Sq * D);
}

template <index_t B, index_t Sq, index_t Sk, index_t D, index_t H, bool Bias>
void run_mha(const char* name, bool packed, bool is_self, const std::string& mask_kind, MaskFill fill) {
  const GoldenCase c = stf::test::load_golden(name);
  using MHA = MultiHeadAttention<Sq, Sk, D, H, Bias>;
  MHA mha{};
  if (packed) {
    stf::test::bind_golden(mha.params.o, c, "o");
    mha.params.bind_packed(CMat<3 * D, D>(stf::test::packed_in_proj(c, "in_proj_weight", D)),
                           Bias ? CVec<3 * D>(c.data("in_proj_bias", 3 * D)) : CVec<3 * D>{});
  } else {
    stf::test::bind_golden(mha.params, c);
  }
  const std::vector<int> valid = c.ints("valid_len");
  std::vector<std::uint8_t> allow;
  if (mask_kind == "bool") {
    const float* m = c.data("mask", Sq * Sk);
    for (index_t i = 0; i < Sq * Sk; ++i) allow.push_back(m[i] != 0.0f);
  }
  const float* query = c.data("query", B * Sq * D);
  const float* kv = is_self ? query : c.data("kv", B * Sk * D);
  std::vector<float> out(B * Sq * D), out_stream(B * Sq * D), weights(B * H * Sq * Sk);
  std::vector<float> scratch(MHA::scratch_floats);
  for (index_t b = 0; b < B; ++b) {
    AttentionMask mask{Sk, false, 0, nullptr, fill};
    if (mask_kind == "padding" || mask_kind == "padding_causal") mask.valid_keys = static_cast<index_t>(valid[b]);
    if (mask_kind == "causal" || mask_kind == "padding_causal") mask.causal = true;
    if (mask_kind == "bool") mask.allow = allow.data();
    const CMat<Sq, D> xq(query + b * Sq * D);
    const CMat<Sk, D> xkv(kv + b * Sk * D);
    // with weights (the two-pass mode), then without (the streaming mode)
    REQUIRE(mha.forward(xq, xkv, Mat<Sq, D>(out.data() + b * Sq * D), mask, scratch.data(),
                        weights.data() + b * H * Sq * Sk) == Status::ok);
    REQUIRE(mha.forward(xq, xkv, Mat<Sq, D>(out_stream.data() + b * Sq * D), mask, scratch.data()) == Status::ok);
  }
  stf::test::check_close(c, "out", out.data(), c.data("out", B * Sq * D), B * Sq * D);
  stf::test::check_close(c, "weights", weights.data(), c.data("weights", B * H * Sq * Sk), B * H * Sq * Sk);
  stf::test::check_close(c, "out_stream", out_stream.data(), c.data("out", B * Sq * D), B * Sq * D);
}

/// Bytes of a 0/1 float tensor from the file (PyTorch-convention masks: 1 = masked).
template <class Mask>
void load_bytes(const GoldenCase& c, const char* name, Mask& m) {
  const float* f = c.data(name, sizeof m);
  auto* bytes = reinterpret_cast<std::uint8_t*>(&m);
  for (std::size_t i = 0; i < sizeof m; ++i) bytes[i] = f[i] != 0.0f;
}

/// nn.MultiheadAttention with attn_mask and key_padding_mask (gaps), as TorchMasks.
template <index_t Sq, index_t Sk, index_t D, index_t H>
void run_mha_masks(const char* name, bool is_self, bool causal, bool float_mask) {
  const GoldenCase c = stf::test::load_golden(name);
  using MHA = MultiHeadAttention<Sq, Sk, D, H>;
  MHA mha{};
  stf::test::bind_golden(mha.params, c);
  TorchBoolMask<Sq, Sk> attn_mask{};
  KeyPaddingMask<Sk> pad{};
  load_bytes(c, "attn_mask", attn_mask);
  load_bytes(c, "key_padding_mask", pad);
  const float* query = c.data("query", Sq * D);
  const float* kv = is_self ? query : c.data("kv", Sk * D);
  std::vector<float> out(Sq * D), out_stream(Sq * D), weights(H * Sq * Sk), scratch(MHA::scratch_floats);
  // a float attn_mask: its values added, its -inf entries as the bool mask (the file holds no -inf)
  auto add = std::make_unique<TorchFloatMask<Sq, Sk>>();
  if (float_mask) std::copy_n(c.data("float_mask", Sq * Sk), Sq * Sk, add->add);
  const TorchMasks<Sq, Sk> masks{.attn_mask = &attn_mask,
                                 .key_padding_mask = &pad,
                                 .is_causal = causal,
                                 .float_mask = float_mask ? add.get() : nullptr};
  REQUIRE(mha.forward(CMat<Sq, D>(query), CMat<Sk, D>(kv), Mat<Sq, D>(out.data()), masks, scratch.data(),
                      weights.data()) == Status::ok);
  REQUIRE(mha.forward(CMat<Sq, D>(query), CMat<Sk, D>(kv), Mat<Sq, D>(out_stream.data()), masks, scratch.data()) ==
          Status::ok);
  stf::test::check_close(c, "out", out.data(), c.data("out", Sq * D), Sq * D);
  stf::test::check_close(c, "weights", weights.data(), c.data("weights", H * Sq * Sk), H * Sq * Sk);
  stf::test::check_close(c, "out_stream", out_stream.data(), c.data("out", Sq * D), Sq * D);
}
}  // namespace

#define STF_GOLDEN_MHA_MASKS(name, Sq, Sk, D, H, is_self, causal, float_mask)          \
  TEST_CASE("golden mha masks " #name, "[golden][mha][mask]") {                        \
    run_mha_masks<Sq, Sk, D, H>(#name, bool(is_self), bool(causal), bool(float_mask)); \
  }
#define STF_GOLDEN_SDPA(name, Sq, Sk, D, mask, fill) \
  TEST_CASE("golden sdpa " #name, "[golden][sdpa]") { run_sdpa<Sq, Sk, D>(#name, #mask, STF_FILL_##fill); }
#define STF_GOLDEN_MHA(name, B, Sq, Sk, D, H, bias, packed, is_self, mask, fill)                      \
  TEST_CASE("golden mha " #name, "[golden][mha]") {                                                   \
    run_mha<B, Sq, Sk, D, H, bool(bias)>(#name, bool(packed), bool(is_self), #mask, STF_FILL_##fill); \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
