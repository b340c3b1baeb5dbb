// Parity with PyTorch: scaled dot-product attention and multi-head attention.
#include <catch2/catch.hpp>

#include <cstring>
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

  Tensor<Sq, D> out{};
  Tensor<Sq, Sk> weights{};
  float scratch[ScaledDotProductAttention<Sq, Sk, D>::scratch_floats];
  const Status st =
      ScaledDotProductAttention<Sq, Sk, D>::forward(CMat<Sq, D>(c.data("q", Sq * D)), CMat<Sk, D>(c.data("k", Sk * D)),
                                                    CMat<Sk, D>(c.data("v", Sk * D)), out, mask, scratch, weights.data);
  REQUIRE(st == Status::ok);
  stf::test::check_close(c, "out", out.data, c.data("out", Sq * D), Sq * D);
  stf::test::check_close(c, "weights", weights.data, c.data("weights", Sq * Sk), Sq * Sk);
}

template <index_t B, index_t Sq, index_t Sk, index_t D, index_t H, bool Bias>
void run_mha(const char* name, bool packed, bool is_self, const std::string& mask_kind) {
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
  const float* query = c.data("query", B * Sq * D);
  const float* kv = is_self ? query : c.data("kv", B * Sk * D);
  std::vector<float> out(B * Sq * D), weights(B * H * Sq * Sk);
  std::vector<float> scratch(MHA::scratch_floats);
  for (index_t b = 0; b < B; ++b) {
    AttentionMask mask{Sk, false, 0, nullptr, MaskFill::neg_inf};
    if (mask_kind == "padding" || mask_kind == "padding_causal") mask.valid_keys = static_cast<index_t>(valid[b]);
    if (mask_kind == "causal" || mask_kind == "padding_causal") mask.causal = true;
    const Status st =
        mha.forward(CMat<Sq, D>(query + b * Sq * D), CMat<Sk, D>(kv + b * Sk * D), Mat<Sq, D>(out.data() + b * Sq * D),
                    mask, scratch.data(), weights.data() + b * H * Sq * Sk);
    REQUIRE(st == Status::ok);
  }
  stf::test::check_close(c, "out", out.data(), c.data("out", B * Sq * D), B * Sq * D);
  stf::test::check_close(c, "weights", weights.data(), c.data("weights", B * H * Sq * Sk), B * H * Sq * Sk);
}
}  // namespace

#define STF_GOLDEN_SDPA(name, Sq, Sk, D, mask, fill) \
  TEST_CASE("golden sdpa " #name, "[golden][sdpa]") { run_sdpa<Sq, Sk, D>(#name, #mask, STF_FILL_##fill); }
#define STF_GOLDEN_MHA(name, B, Sq, Sk, D, H, bias, packed, is_self, mask)           \
  TEST_CASE("golden mha " #name, "[golden][mha]") {                                  \
    run_mha<B, Sq, Sk, D, H, bool(bias)>(#name, bool(packed), bool(is_self), #mask); \
  }
// words.hpp must follow the macros above and precede the cases.
// clang-format off
#include "words.hpp"
#include "cases.inc"
// clang-format on
