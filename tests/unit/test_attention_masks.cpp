// PyTorch's mask conventions at every level: TorchBoolMask (True = masked), KeyPaddingMask (True =
// padding, gaps allowed), is_causal, their union, on MultiHeadAttention, the encoder and decoder
// layers and stacks. Each is checked against the same masked set spelled in statiformer's own
// BoolMask convention (1 = attend), element by element with plain index arithmetic, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../support/test_data.hpp"

using namespace stf;

namespace {
using stf_test::data;

/// A [SeqQ, SeqK] attn_mask with gaps (True = masked), and a key-padding mask with gaps.
template <index_t SeqQ, index_t SeqK>
void make_torch_masks(TorchBoolMask<SeqQ, SeqK>& am, KeyPaddingMask<SeqK>& kp) {
  for (index_t i = 0; i < SeqQ; ++i)
    for (index_t j = 0; j < SeqK; ++j) am.masked[i * SeqK + j] = static_cast<std::uint8_t>((i * 3 + j * 5) % 7 < 2);
  for (index_t j = 0; j < SeqK; ++j) kp.pad[j] = static_cast<std::uint8_t>(j % 4 == 2);
}

/// The complement of the union: allow[i, j] = 1 iff neither mask masks (i, j), j < valid, and
/// (not causal or j <= i).
template <index_t SeqQ, index_t SeqK>
std::unique_ptr<BoolMask<SeqQ, SeqK>> allowed(const TorchBoolMask<SeqQ, SeqK>* am, const KeyPaddingMask<SeqK>* kp,
                                              bool causal, index_t valid) {
  auto bm = std::make_unique<BoolMask<SeqQ, SeqK>>();
  for (index_t i = 0; i < SeqQ; ++i)
    for (index_t j = 0; j < SeqK; ++j) {
      bool masked = j >= valid || (causal && j > i);
      if (am && am->masked[i * SeqK + j]) masked = true;
      if (kp && kp->pad[j]) masked = true;
      bm->allow[i * SeqK + j] = masked ? 0 : 1;
    }
  return bm;
}

template <class MHA>
void bind(MHA& mha, std::vector<std::vector<float>>& store) {
  constexpr index_t D = MHA::d_model;
  for (std::uint32_t i = 0; i < 8; ++i) store.push_back(data(i < 4 ? D * D : D, 31 + i, i < 4 ? 0.3f : 0.1f));
  mha.params.q = {CMat<D, D>(store[0].data()), CVec<D>(store[4].data())};
  mha.params.k = {CMat<D, D>(store[1].data()), CVec<D>(store[5].data())};
  mha.params.v = {CMat<D, D>(store[2].data()), CVec<D>(store[6].data())};
  mha.params.o = {CMat<D, D>(store[3].data()), CVec<D>(store[7].data())};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

/// Binds every parameter of a layer or stack to deterministic data (LayerNorm gains near 1).
struct Binder {
  std::vector<std::vector<float>> store;
  std::uint32_t seed = 100;
  void operator()(const Name& name, ParamRef ref) {
    store.push_back(data(ref.size(), seed++, 0.3f));
    if (ref.cols == 0 && std::strstr(name.c_str(), "norm") && std::strstr(name.c_str(), "weight"))
      for (float& g : store.back()) g += 1.0f;
    *ref.data = store.back().data();
  }
};
}  // namespace

TEST_CASE("multi-head attention: PyTorch-convention masks, with gaps, mask what PyTorch masks", "[mask][torch]") {
  constexpr index_t Sq = 9, Sk = 40, D = 16, H = 2;  // keys across a 32-key block
  using MHA = MultiHeadAttention<Sq, Sk, D, H>;
  std::vector<std::vector<float>> w;
  auto mha = std::make_unique<MHA>();
  bind(*mha, w);
  const auto xq = data(Sq * D, 1), xkv = data(Sk * D, 2);
  std::vector<float> scratch(MHA::scratch_floats);
  TorchBoolMask<Sq, Sk> am{};
  KeyPaddingMask<Sk> kp{};
  make_torch_masks(am, kp);
  auto run = [&](const auto& mask) {
    std::vector<float> y(Sq * D);
    REQUIRE(mha->forward(CMat<Sq, D>(xq.data()), CMat<Sk, D>(xkv.data()), Mat<Sq, D>(y.data()), mask, scratch.data()) ==
            Status::ok);
    return y;
  };
  struct Case {
    const TorchBoolMask<Sq, Sk>* am;
    const KeyPaddingMask<Sk>* kp;
    bool causal;
    index_t valid;
  };
  for (const Case& c : {Case{&am, nullptr, false, Sk}, Case{nullptr, &kp, false, Sk}, Case{&am, &kp, false, Sk},
                        Case{nullptr, &kp, true, Sk}, Case{&am, &kp, true, 37}, Case{nullptr, nullptr, true, 33}}) {
    INFO("attn_mask " << (c.am != nullptr) << " key_padding " << (c.kp != nullptr) << " causal " << c.causal
                      << " valid " << c.valid);
    const auto got = run(TorchMasks<Sq, Sk>{c.am, c.kp, c.causal, c.valid});
    const auto want = run(MHA::mask(*allowed<Sq, Sk>(c.am, c.kp, c.causal, c.valid)));
    CHECK(same_bits(got, want));
  }
  // designated initializers, as PyTorch's keywords
  CHECK(same_bits(run(TorchMasks<Sq, Sk>{.key_padding_mask = &kp, .is_causal = true}),
                  run(MHA::mask(*allowed<Sq, Sk>(nullptr, &kp, true, Sk)))));
}

TEST_CASE("a PyTorch-convention mask is not silently inverted: it differs from its complement", "[mask][torch]") {
  constexpr index_t S = 7, D = 8, H = 2;
  using MHA = MultiHeadAttention<S, S, D, H>;
  std::vector<std::vector<float>> w;
  auto mha = std::make_unique<MHA>();
  bind(*mha, w);
  const auto x = data(S * D, 3);
  std::vector<float> scratch(MHA::scratch_floats);
  // the same bytes read in both conventions: 1 on the diagonal and below
  TorchBoolMask<S, S> tm{};
  BoolMask<S, S> bm{};
  for (index_t i = 0; i < S; ++i)
    for (index_t j = 0; j < S; ++j) tm.masked[i * S + j] = bm.allow[i * S + j] = j <= i;
  // the last row: key 0 alone under the PyTorch reading, keys 1..6 under BoolMask's (none fully masked)
  tm.masked[(S - 1) * S] = bm.allow[(S - 1) * S] = 0;
  auto run = [&](const auto& mask) {
    std::vector<float> y(S * D);
    REQUIRE(mha->forward(CMat<S, D>(x.data()), CMat<S, D>(x.data()), Mat<S, D>(y.data()), mask, scratch.data()) ==
            Status::ok);
    return y;
  };
  const auto torch = run(TorchMasks<S, S>{.attn_mask = &tm});
  const auto own = run(MHA::mask(bm));
  // rows 0..S-2 attend to disjoint key sets under the two readings
  CHECK(std::memcmp(torch.data(), own.data(), (S - 1) * D * sizeof(float)) != 0);
  // the torch reading equals the BoolMask of the complement
  BoolMask<S, S> complement{};
  for (index_t k = 0; k < S * S; ++k) complement.allow[k] = tm.masked[k] ? 0 : 1;
  CHECK(same_bits(torch, run(MHA::mask(complement))));
}

TEST_CASE("fully masked rows under PyTorch-convention masks: context 0 (neg_inf), uniform (neg_1e9)", "[mask][torch]") {
  constexpr index_t S = 6, D = 8, H = 2;
  using MHA = MultiHeadAttention<S, S, D, H>;
  std::vector<std::vector<float>> w;
  auto mha = std::make_unique<MHA>();
  bind(*mha, w);
  const auto x = data(S * D, 4);
  std::vector<float> scratch(MHA::scratch_floats), y(S * D);
  TorchBoolMask<S, S> tm{};
  KeyPaddingMask<S> kp{};
  kp.pad[1] = kp.pad[3] = 1;
  for (index_t j = 0; j < S; ++j) tm.masked[2 * S + j] = j != 1 && j != 3;  // row 2: only padded keys left
  // neg_inf: row 2's context is 0, so its output is the out-projection's bias exactly
  REQUIRE(mha->forward(CMat<S, D>(x.data()), CMat<S, D>(x.data()), Mat<S, D>(y.data()),
                       TorchMasks<S, S>{&tm, &kp, false, S}, scratch.data()) == Status::ok);
  CHECK(std::memcmp(y.data() + 2 * D, w[7].data(), D * sizeof(float)) == 0);
  for (float v : y) CHECK(v == v);  // never NaN
  // neg_1e9: the weights of the fully masked row are 1/S over every key
  std::vector<float> weights(H * S * S);
  REQUIRE(mha->forward(CMat<S, D>(x.data()), CMat<S, D>(x.data()), Mat<S, D>(y.data()),
                       TorchMasks<S, S>{&tm, &kp, false, S}, scratch.data(), weights.data(),
                       MaskFill::neg_1e9) == Status::ok);
  for (index_t h = 0; h < H; ++h)
    for (index_t j = 0; j < S; ++j) CHECK(weights[h * S * S + 2 * S + j] == 1.0f / static_cast<float>(S));
  // and the other rows never weigh a padded key
  for (index_t h = 0; h < H; ++h)
    for (index_t i = 0; i < S; ++i)
      if (i != 2) CHECK(weights[h * S * S + i * S + 1] + weights[h * S * S + i * S + 3] == 0.0f);
}

TEST_CASE("encoder layer and stack take src_mask, src_key_padding_mask and is_causal", "[mask][torch]") {
  constexpr index_t S = 10, D = 16, H = 2, F = 24;
  using Layer = EncoderLayer<S, D, H, F>;
  using PreLayer = EncoderLayer<S, D, H, F, LayerOptions{.norm = NormPlacement::pre}>;
  TorchBoolMask<S, S> am{};
  KeyPaddingMask<S> kp{};
  make_torch_masks(am, kp);
  const auto x = data(S * D, 5);
  auto check_layer = [&](auto tag) {
    using L = decltype(tag);
    auto layer = std::make_unique<L>();
    Binder b;
    layer->params.visit(b, Name{""});
    std::vector<float> scratch(L::scratch_floats), got(S * D), want(S * D);
    for (bool causal : {false, true}) {
      REQUIRE(layer->forward(CMat<S, D>(x.data()), Mat<S, D>(got.data()),
                             {.src_mask = &am, .src_key_padding_mask = &kp, .is_causal = causal},
                             scratch.data()) == Status::ok);
      const auto bm = allowed<S, S>(&am, &kp, causal, S);
      layer->run(x.data(), want.data(), L::SelfAttention::mask(*bm, L::options.fill), scratch.data());
      CHECK(same_bits(got, want));
    }
    // a float src_mask reaches the attention as its additive mask
    auto fm = std::make_unique<TorchFloatMask<S, S>>();
    for (index_t i = 0; i < S * S; ++i) fm->add[i] = static_cast<float>(i % 7) * 0.5f - 1.5f;
    REQUIRE(layer->forward(CMat<S, D>(x.data()), Mat<S, D>(got.data()),
                           {.src_key_padding_mask = &kp, .src_float_mask = fm.get()}, scratch.data()) == Status::ok);
    AttentionMask am_float = AttentionMask::padding(S, L::options.fill);
    am_float.key_padding = kp.pad;
    am_float.additive = fm->add;
    layer->run(x.data(), want.data(), am_float, scratch.data());
    CHECK(same_bits(got, want));
    layer->run(x.data(), want.data(), AttentionMask::padding(S, L::options.fill), scratch.data());
    CHECK(!same_bits(got, want));
    // trailing padding as a key-padding mask == valid_len
    KeyPaddingMask<S> trailing{};
    for (index_t j = 7; j < S; ++j) trailing.pad[j] = 1;
    REQUIRE(layer->forward(CMat<S, D>(x.data()), Mat<S, D>(got.data()), {.src_key_padding_mask = &trailing},
                           scratch.data()) == Status::ok);
    REQUIRE(layer->forward(CMat<S, D>(x.data()), Mat<S, D>(want.data()), 7, scratch.data()) == Status::ok);
    CHECK(same_bits(got, want));
    REQUIRE(layer->forward(CMat<S, D>(x.data()), Mat<S, D>(got.data()), {.valid_len = 0}, scratch.data()) ==
            Status::invalid_length);
  };
  check_layer(Layer{});
  check_layer(PreLayer{});

  // the stack: every layer under the same masks, then the final norm
  using Stack = EncoderStack<Layer, 2, true>;
  auto stack = std::make_unique<Stack>();
  Binder b;
  stack->params.visit(b, Name{""});
  std::vector<float> scratch(Stack::scratch_floats), got(S * D), want(S * D);
  REQUIRE(stack->forward(CMat<S, D>(x.data()), Mat<S, D>(got.data()),
                         {.src_mask = &am, .src_key_padding_mask = &kp, .is_causal = true},
                         scratch.data()) == Status::ok);
  const auto bm = allowed<S, S>(&am, &kp, true, S);
  const AttentionMask m = Layer::SelfAttention::mask(*bm);
  Layer{stack->params.layers[0]}.run(x.data(), want.data(), m, scratch.data());
  Layer{stack->params.layers[1]}.run(want.data(), want.data(), m, scratch.data());
  Stack::Norm{stack->params.norm}.run(want.data(), S, want.data());
  CHECK(same_bits(got, want));
}

TEST_CASE("decoder layer and stack take tgt/memory masks and key-padding masks, step takes the memory's",
          "[mask][torch]") {
  constexpr index_t S = 7, M = 11, D = 16, H = 2, F = 24;
  using Layer = DecoderLayer<S, M, D, H, F>;
  TorchBoolMask<S, S> tm{};
  KeyPaddingMask<S> tkp{};
  make_torch_masks(tm, tkp);
  TorchBoolMask<S, M> mm{};
  KeyPaddingMask<M> mkp{};
  make_torch_masks(mm, mkp);
  const auto x = data(S * D, 6), mem = data(M * D, 7);
  auto layer = std::make_unique<Layer>();
  Binder b;
  layer->params.visit(b, Name{""});
  std::vector<float> scratch(Layer::scratch_floats), got(S * D), want(S * D);
  using SA = Layer::SelfAttention;
  using CA = Layer::CrossAttention;
  for (bool causal : {true, false}) {
    REQUIRE(layer->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(got.data()),
                           {.tgt_mask = &tm,
                            .memory_mask = &mm,
                            .tgt_key_padding_mask = &tkp,
                            .memory_key_padding_mask = &mkp,
                            .tgt_is_causal = causal,
                            .mem_valid_len = 9},
                           scratch.data()) == Status::ok);
    layer->run(x.data(), mem.data(), want.data(), SA::mask(*allowed<S, S>(&tm, &tkp, causal, S)),
               CA::mask(*allowed<S, M>(&mm, &mkp, false, 9)), scratch.data());
    CHECK(same_bits(got, want));
  }
  // the default masks are the old forward's: causal, memory up to mem_valid_len
  REQUIRE(layer->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(got.data()), {.mem_valid_len = 8},
                         scratch.data()) == Status::ok);
  REQUIRE(layer->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(want.data()), 8, scratch.data()) ==
          Status::ok);
  CHECK(same_bits(got, want));
  REQUIRE(layer->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(got.data()), {.mem_valid_len = M + 1},
                         scratch.data()) == Status::invalid_length);

  // step with a memory key-padding mask continues forward with the same one, row by row
  REQUIRE(layer->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(want.data()),
                         {.memory_key_padding_mask = &mkp}, scratch.data()) == Status::ok);
  auto cache = std::make_unique<Layer::Cache>();
  layer->prepare_memory(mem.data(), *cache);
  std::vector<float> step_scratch(Layer::step_scratch_floats);
  for (index_t pos = 0; pos < S; ++pos)
    layer->step(x.data() + pos * D, pos, M, *cache, got.data() + pos * D, step_scratch.data(), &mkp);
  CHECK(same_bits(got, want));

  // the stack
  using Stack = DecoderStack<Layer, 2, true>;
  auto stack = std::make_unique<Stack>();
  Binder bs;
  stack->params.visit(bs, Name{""});
  std::vector<float> sscratch(Stack::scratch_floats);
  REQUIRE(stack->forward(CMat<S, D>(x.data()), CMat<M, D>(mem.data()), Mat<S, D>(got.data()),
                         {.memory_mask = &mm, .tgt_key_padding_mask = &tkp}, sscratch.data()) == Status::ok);
  const auto self_allowed = allowed<S, S>(nullptr, &tkp, true, S);
  const auto cross_allowed = allowed<S, M>(&mm, nullptr, false, M);
  const AttentionMask sm = SA::mask(*self_allowed), cm = CA::mask(*cross_allowed);
  Layer{stack->params.layers[0]}.run(x.data(), mem.data(), want.data(), sm, cm, sscratch.data());
  Layer{stack->params.layers[1]}.run(want.data(), mem.data(), want.data(), sm, cm, sscratch.data());
  Stack::Norm{stack->params.norm}.run(want.data(), S, want.data());
  CHECK(same_bits(got, want));
}

TEST_CASE("float additive masks: added to the scaled scores before the softmax, -inf masks the key",
          "[mask][torch][additive]") {
  // against a double-precision spelling of softmax(q·kᵀ/√d + add) v, row by row
  constexpr index_t Sq = 5, Sk = 37, Hd = 8;  // keys across a 32-key block
  using Sdpa = ScaledDotProductAttention<Sq, Sk, Hd>;
  const auto q = data(Sq * Hd, 8), k = data(Sk * Hd, 9), v = data(Sk * Hd, 10);
  auto fm = std::make_unique<TorchFloatMask<Sq, Sk>>();
  for (index_t i = 0; i < Sq * Sk; ++i)
    fm->add[i] = i % 5 == 1 ? -std::numeric_limits<float>::infinity() : static_cast<float>(i % 9) * 0.4f - 1.6f;
  std::vector<float> scratch(Sdpa::scratch_floats), out(Sq * Hd), weights(Sq * Sk);
  AttentionMask mask = torch_mask(TorchMasks<Sq, Sk>{.float_mask = fm.get()});
  REQUIRE(Sdpa::forward(CMat<Sq, Hd>(q.data()), CMat<Sk, Hd>(k.data()), CMat<Sk, Hd>(v.data()), Mat<Sq, Hd>(out.data()),
                        mask, scratch.data(), weights.data()) == Status::ok);
  std::vector<float> out_stream(Sq * Hd);
  REQUIRE(Sdpa::forward(CMat<Sq, Hd>(q.data()), CMat<Sk, Hd>(k.data()), CMat<Sk, Hd>(v.data()),
                        Mat<Sq, Hd>(out_stream.data()), mask, scratch.data()) == Status::ok);
  for (index_t i = 0; i < Sq; ++i) {
    double s[Sk], m = -1e300, l = 0.0;
    for (index_t j = 0; j < Sk; ++j) {
      double d = 0.0;
      for (index_t e = 0; e < Hd; ++e) d += double(q[i * Hd + e]) * double(k[j * Hd + e]);
      s[j] = d / std::sqrt(double(Hd)) + double(fm->add[i * Sk + j]);
      m = s[j] > m ? s[j] : m;
    }
    for (index_t j = 0; j < Sk; ++j) l += (s[j] = std::exp(s[j] - m));
    for (index_t j = 0; j < Sk; ++j) CHECK(std::abs(weights[i * Sk + j] - s[j] / l) < 1e-6);
    for (index_t e = 0; e < Hd; ++e) {
      double o = 0.0;
      for (index_t j = 0; j < Sk; ++j) o += s[j] / l * double(v[j * Hd + e]);
      CHECK(std::abs(out[i * Hd + e] - o) < 1e-5);
      CHECK(std::abs(out_stream[i * Hd + e] - o) < 1e-5);
    }
  }
  // 0 / -inf as floats is the bool mask of the same pattern, bit for bit
  constexpr index_t S = 9, D = 16, H = 2;
  using MHA = MultiHeadAttention<S, S, D, H>;
  std::vector<std::vector<float>> w;
  auto mha = std::make_unique<MHA>();
  bind(*mha, w);
  const auto x = data(S * D, 11);
  std::vector<float> s2(MHA::scratch_floats), got(S * D), want(S * D);
  TorchFloatMask<S, S> zf{};
  TorchBoolMask<S, S> zb{};
  for (index_t i = 0; i < S * S; ++i) {
    zb.masked[i] = (i * 5) % 7 == 2 && i % S != 0;
    zf.add[i] = zb.masked[i] ? -std::numeric_limits<float>::infinity() : 0.0f;
  }
  REQUIRE(mha->forward(CMat<S, D>(x.data()), CMat<S, D>(x.data()), Mat<S, D>(got.data()),
                       TorchMasks<S, S>{.float_mask = &zf}, s2.data()) == Status::ok);
  REQUIRE(mha->forward(CMat<S, D>(x.data()), CMat<S, D>(x.data()), Mat<S, D>(want.data()),
                       TorchMasks<S, S>{.attn_mask = &zb}, s2.data()) == Status::ok);
  CHECK(same_bits(got, want));
}
