// The layers lay out their buffers as the kernels want them (strides, padding, aliasing) without
// changing a bit: a layer's output equals the same computation spelled with the reference kernels
// on plain, unpadded buffers.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/statiformer.hpp>

#include "../support/test_data.hpp"

using namespace stf;

namespace {
using stf_test::data;

/// Which keys each query may attend to, spelled out element by element with plain index
/// arithmetic (not with AttentionMask, the code under test): key ki is masked for query qi iff
/// ki >= valid (padding), or causal and ki > qi + offset, or the boolean pattern says 0.
struct ExpectedMask {
  index_t valid;
  bool causal = false;
  index_t offset = 0;
  const std::uint8_t* pattern = nullptr;  // [SeqQ, SeqK], 1 = attend
};

/// Multi-head attention of xq over xkv with the reference kernels, V in rows of DModel floats;
/// every row's mask is given to the kernel as an explicit per-key array.
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
std::vector<float> reference_mha(const std::vector<float>& xq, const std::vector<float>& xkv,
                                 const std::vector<std::vector<float>>& w, const std::vector<std::vector<float>>& b,
                                 const ExpectedMask& em, MaskFill fill) {
  constexpr index_t hd = DModel / NHeads;
  std::vector<float> q(SeqQ * DModel), k(SeqK * DModel), kt(DModel * SeqK), v(SeqK * DModel), y(SeqQ * DModel);
  ref::linear(xq.data(), SeqQ, DModel, w[0].data(), b[0].data(), DModel, q.data());
  ref::linear(xkv.data(), SeqK, DModel, w[1].data(), b[1].data(), DModel, k.data());
  ref::transpose(k.data(), SeqK, DModel, DModel, kt.data(), SeqK);
  ref::linear(xkv.data(), SeqK, DModel, w[2].data(), b[2].data(), DModel, v.data());
  std::vector<std::uint8_t> allow(SeqQ * SeqK);
  std::vector<ref::RowMask> rows(SeqQ);
  std::vector<ref::MaskArrays> arrays(SeqQ);
  for (index_t qi = 0; qi < SeqQ; ++qi) {
    for (index_t ki = 0; ki < SeqK; ++ki) {
      bool masked = ki >= em.valid;
      if (em.causal && ki > qi + em.offset) masked = true;
      if (em.pattern && em.pattern[qi * SeqK + ki] == 0) masked = true;
      allow[qi * SeqK + ki] = masked ? 0 : 1;
    }
    arrays[qi].allow = allow.data() + qi * SeqK;
    rows[qi] = {SeqK, &arrays[qi]};
  }
  std::vector<float> p(attention_scratch_floats(SeqQ, SeqK, hd));
  for (index_t h = 0; h < NHeads; ++h)
    ref::attention_rows(q.data() + h * hd, DModel, SeqQ, kt.data() + h * hd * SeqK, SeqK, v.data() + h * hd, DModel, hd,
                        SeqK, rows.data(), fill, p.data(), q.data() + h * hd, DModel);
  ref::linear(q.data(), SeqQ, DModel, w[3].data(), b[3].data(), DModel, y.data());
  return y;
}

/// The layer with `mask` against the reference with the independently spelled `em`.
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
void check_mha(const AttentionMask& mask, const ExpectedMask& em) {
  using MHA = MultiHeadAttention<SeqQ, SeqK, DModel, NHeads>;
  std::vector<std::vector<float>> w, b;
  auto mha = std::make_unique<MHA>();
  for (std::uint32_t i = 0; i < 4; ++i) {
    w.push_back(data(DModel * DModel, 11 + i, 0.2f));
    b.push_back(data(DModel, 21 + i, 0.1f));
  }
  mha->params.q = {CMat<DModel, DModel>(w[0].data()), CVec<DModel>(b[0].data())};
  mha->params.k = {CMat<DModel, DModel>(w[1].data()), CVec<DModel>(b[1].data())};
  mha->params.v = {CMat<DModel, DModel>(w[2].data()), CVec<DModel>(b[2].data())};
  mha->params.o = {CMat<DModel, DModel>(w[3].data()), CVec<DModel>(b[3].data())};
  const auto xq = data(SeqQ * DModel, 1), xkv = data(SeqK * DModel, 2);
  std::vector<float> scratch(MHA::scratch_floats), y(SeqQ * DModel);
  mha->run(xq.data(), xkv.data(), mask, scratch.data(), y.data());
  const auto want = reference_mha<SeqQ, SeqK, DModel, NHeads>(xq, xkv, w, b, em, mask.fill);
  INFO("SeqQ " << SeqQ << " SeqK " << SeqK << " DModel " << DModel << " NHeads " << NHeads << ", V row stride "
               << MHA::v_stride);
  CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
}
}  // namespace

TEST_CASE("multi-head attention with padded value rows equals the reference kernels on plain buffers", "[layers]") {
  // DModel a multiple of 128: V's rows are one line longer than DModel (attention_value_stride)
  STATIC_REQUIRE(MultiHeadAttention<8, 8, 128, 4>::v_stride == 144);
  STATIC_REQUIRE(MultiHeadAttention<8, 8, 256, 8>::v_stride == 272);
  STATIC_REQUIRE(MultiHeadAttention<8, 8, 96, 4>::v_stride == 96);
  check_mha<13, 13, 128, 4>(AttentionMask::causal_mask(11), {11, true});
  check_mha<9, 40, 256, 8>(AttentionMask::padding(37), {37});  // cross: keys over a block boundary
  check_mha<7, 7, 96, 4>(AttentionMask::padding(7), {7});      // unpadded
}

TEST_CASE("multi-head attention masks keys exactly where padding, causal and boolean masks say", "[layers][mask]") {
  // padding: the last valid key on, just before and just after a 32-key block boundary
  for (MaskFill fill : {MaskFill::neg_inf, MaskFill::neg_1e9}) {
    check_mha<6, 40, 32, 2>(AttentionMask::padding(32, fill), {32});
    check_mha<6, 40, 32, 2>(AttentionMask::padding(33, fill), {33});
    check_mha<6, 40, 32, 2>(AttentionMask::padding(1, fill), {1});
    check_mha<13, 70, 64, 4>(AttentionMask::padding(65, fill), {65});
  }
  // causal (self-attention: the diagonal and below), with padding, and shifted by an offset (a
  // decoder step: query q is position q + offset)
  check_mha<13, 13, 32, 2>(AttentionMask::causal_mask(13), {13, true});
  check_mha<12, 40, 32, 4>(AttentionMask::causal_mask(40), {40, true});
  check_mha<7, 7, 16, 2>(AttentionMask::causal_mask(5, MaskFill::neg_1e9), {5, true});
  AttentionMask shifted = AttentionMask::causal_mask(40);
  shifted.causal_offset = 28;  // query 3 attends to keys 0..31, query 4 to 0..32
  check_mha<6, 40, 32, 2>(shifted, {40, true, 28});
  // boolean: a pattern with a fully masked row (both fills), a row with only its last key
  using M = MultiHeadAttention<7, 35, 32, 2>;
  BoolMask<7, 35> bm{};
  for (index_t i = 0; i < 7 * 35; ++i) bm.allow[i] = (i * 7 + i / 35) % 5 < 3;
  for (index_t k = 0; k < 35; ++k) bm.allow[2 * 35 + k] = 0;
  for (index_t k = 0; k < 35; ++k) bm.allow[4 * 35 + k] = k == 34;
  for (MaskFill fill : {MaskFill::neg_inf, MaskFill::neg_1e9})
    check_mha<7, 35, 32, 2>(M::mask(bm, fill), {35, false, 0, bm.allow});
}

TEST_CASE("multi-head attention over few keys splits its rows into balanced calls without changing a bit", "[layers]") {
  // (where the variant takes tall groups: 16 rows over up to 32 keys as 8 + 8, not 12 + 4)
  constexpr bool tall = kAttentionCallRows > kAttentionRowGroup;
  STATIC_REQUIRE(attention_call_rows(16, 16) == (tall ? 8 : kAttentionCallRows));
  STATIC_REQUIRE(attention_call_rows(16, 17) == (tall ? 8 : kAttentionCallRows));
  STATIC_REQUIRE(attention_call_rows(16, 32) == (tall ? 8 : kAttentionCallRows));
  STATIC_REQUIRE(attention_call_rows(16, 33) == kAttentionCallRows);
  STATIC_REQUIRE(attention_call_rows(13, 13) == kAttentionCallRows);
  STATIC_REQUIRE(attention_call_rows(25, 16) == kAttentionCallRows);
  // where AVX-512's rows in lanes take every row in one call (x86_lanes.hpp): 16 rows of 8 dimensions over
  // at most 16 keys, of 16 dimensions over at most 13; else as above
  constexpr bool lanes = kAttentionLaneRows > 0;
  STATIC_REQUIRE(attention_call_rows(16, 16, 8) == (lanes ? 16 : attention_call_rows(16, 16)));
  STATIC_REQUIRE(attention_call_rows(16, 17, 8) == attention_call_rows(16, 17));
  STATIC_REQUIRE(attention_call_rows(16, 13, 16) == (lanes ? 16 : attention_call_rows(16, 13)));
  STATIC_REQUIRE(attention_call_rows(16, 14, 16) == attention_call_rows(16, 14));
  STATIC_REQUIRE(attention_call_rows(10, 10, 8) == (lanes ? 10 : attention_call_rows(10, 10)));
  STATIC_REQUIRE(attention_call_rows(16, 16, 32) == attention_call_rows(16, 16));
  STATIC_REQUIRE(attention_call_rows(8, 8, 8) == attention_call_rows(8, 8));
  STATIC_REQUIRE(attention_call_rows(17, 17, 8) == attention_call_rows(17, 17));
  // where every row attends to the same keys and AVX-512's softmax in lanes over key blocks takes them
  // (x86_lane_blocks.hpp: 16 rows of 16 to 64 dimensions, a multiple of 16, over more than 16 keys): a vector
  // of rows a call; else as above
  STATIC_REQUIRE(attention_prefix_call_rows(128, 128, 32, 128) == (lanes ? 16 : attention_call_rows(128, 128, 32)));
  STATIC_REQUIRE(attention_prefix_call_rows(25, 25, 16, 25) == (lanes ? 16 : attention_call_rows(25, 25, 16)));
  STATIC_REQUIRE(attention_prefix_call_rows(64, 64, 48, 17) == (lanes ? 16 : attention_call_rows(64, 64, 48)));
  STATIC_REQUIRE(attention_prefix_call_rows(64, 64, 32, 16) == attention_call_rows(64, 64, 32));
  STATIC_REQUIRE(attention_prefix_call_rows(64, 64, 24, 64) == attention_call_rows(64, 64, 24));
  STATIC_REQUIRE(attention_prefix_call_rows(64, 64, 80, 64) == attention_call_rows(64, 64, 80));
  STATIC_REQUIRE(attention_prefix_call_rows(15, 64, 32, 64) == attention_call_rows(15, 64, 32));
  check_mha<16, 16, 32, 4>(AttentionMask::padding(16), {16});
  check_mha<16, 16, 64, 4>(AttentionMask::causal_mask(16), {16, true});
  check_mha<15, 15, 32, 2>(AttentionMask::padding(12), {12});
  check_mha<24, 10, 32, 4>(AttentionMask::padding(10), {10});  // cross: 12 + 12
  check_mha<14, 16, 48, 3>(AttentionMask::causal_mask(9), {9, true});
  // over 17 to 32 keys (the tall groups' two score vectors per row)
  check_mha<16, 24, 32, 4>(AttentionMask::padding(21), {21});
  check_mha<20, 20, 64, 4>(AttentionMask::causal_mask(20), {20, true});
  check_mha<32, 32, 64, 4>(AttentionMask::padding(32), {32});
  // calls of a vector of rows where every row attends to the same keys (AVX-512's softmax in lanes over key
  // blocks): 16 + 16 + 8 rows over 66 of 70 keys, and under a causal mask, which they decline (calls of 12)
  check_mha<40, 70, 128, 4>(AttentionMask::padding(66), {66});
  check_mha<40, 40, 128, 4>(AttentionMask::causal_mask(40), {40, true});
}
