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

/// Multi-head attention of xq over xkv with the reference kernels, V in rows of DModel floats.
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
std::vector<float> reference_mha(const std::vector<float>& xq, const std::vector<float>& xkv,
                                 const std::vector<std::vector<float>>& w, const std::vector<std::vector<float>>& b,
                                 const AttentionMask& mask) {
  constexpr index_t hd = DModel / NHeads;
  std::vector<float> q(SeqQ * DModel), k(SeqK * DModel), kt(DModel * SeqK), v(SeqK * DModel), y(SeqQ * DModel);
  ref::linear(xq.data(), SeqQ, DModel, w[0].data(), b[0].data(), DModel, q.data());
  ref::linear(xkv.data(), SeqK, DModel, w[1].data(), b[1].data(), DModel, k.data());
  ref::transpose(k.data(), SeqK, DModel, DModel, kt.data(), SeqK);
  ref::linear(xkv.data(), SeqK, DModel, w[2].data(), b[2].data(), DModel, v.data());
  std::vector<ref::RowMask> rows(SeqQ);
  for (index_t i = 0; i < SeqQ; ++i) rows[i] = mask.row(i, SeqK);
  std::vector<float> p(attention_scratch_floats(SeqQ, SeqK, hd));
  for (index_t h = 0; h < NHeads; ++h)
    ref::attention_rows(q.data() + h * hd, DModel, SeqQ, kt.data() + h * hd * SeqK, SeqK, v.data() + h * hd, DModel, hd,
                        SeqK, rows.data(), mask.fill, p.data(), q.data() + h * hd, DModel);
  ref::linear(q.data(), SeqQ, DModel, w[3].data(), b[3].data(), DModel, y.data());
  return y;
}

template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
void check_mha(const AttentionMask& mask) {
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
  const auto want = reference_mha<SeqQ, SeqK, DModel, NHeads>(xq, xkv, w, b, mask);
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
  check_mha<13, 13, 128, 4>(AttentionMask::causal_mask(11));
  check_mha<9, 40, 256, 8>(AttentionMask::padding(37));  // cross: keys over a block boundary
  check_mha<7, 7, 96, 4>(AttentionMask::padding(7));     // unpadded
}
