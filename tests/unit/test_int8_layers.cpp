// The int8 number formats on the layers (NumberFormat w8a32 and w8a8; kernels/QUANTIZATION.md):
//  - FeedForward and MultiHeadAttention in an int8 format equal the same computation spelled with
//    the int8 reference kernels (ref::linear_w8a8, ref::linear_w8a32, and in w8a8
//    ref::attention_rows_w8a8 over rows quantized per head; in w8a32 the float reference
//    attention), bit for bit;
//  - an int8 encoder layer stays within the accuracy targets of the float layer it was
//    quantized from (on this test's data);
//  - footprints are the int8 ones at compile time;
//  - binding (bind_table) and loading (safetensors: I8 weights + F32 scales) check dtypes, ranges
//    and the number format, all-or-nothing;
//  - the layers with a K/V cache (CausalLayer, DecoderLayer) and their models in an int8 format:
//    prefill then steps (or the whole-sequence forward) give the bits of steps alone, and they stay
//    within the accuracy targets of the float layer they were quantized from.
#include <algorithm>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <statiformer/kernels/reference.hpp>
#include <statiformer/statiformer.hpp>

#include "../support/test_data.hpp"

using namespace stf;

namespace {
using stf_test::data;

/// A linear's weights: float W (PyTorch [out, in]) in the float layer's stored layout, and its int8
/// quantization spelled out here from kernels/QUANTIZATION.md (s = max|W[o, :]| / 127, q =
/// clamp(round half to even(W / s), ±127), in k-quads: qweight_index).
struct TestLinear {
  index_t in, out;
  std::vector<float> w;  ///< [in, out] in panels (weight_index)
  std::vector<float> b;
  std::vector<std::int8_t> q;  ///< quad_padded(in) · out
  std::vector<float> s;

  TestLinear(index_t in_, index_t out_, std::uint32_t seed, float scale = 0.2f)
      : in(in_), out(out_), w(in_ * out_), b(data(out_, seed + 1000, 0.1f)), q(quad_padded(in_) * out_), s(out_) {
    const auto torch = data(in * out, seed, scale);  // [out, in]
    for (index_t o = 0; o < out; ++o)
      for (index_t k = 0; k < in; ++k) w[weight_index(in, out, k, o)] = torch[o * in + k];
    quantize(in, out, w.data(), q.data(), s.data());
  }
  /// The quantization of a float weight Wᵀ [in, out] stored in panels (weight_index) into q (k-quads,
  /// qweight_index; quad_padded(in) · out bytes, the padding left as it is) and s [out].
  static void quantize(index_t in, index_t out, const float* w, std::int8_t* q, float* s) {
    for (index_t o = 0; o < out; ++o) {
      float a = 0.0f;
      for (index_t k = 0; k < in; ++k) a = std::fmax(a, std::fabs(w[weight_index(in, out, k, o)]));
      s[o] = a / 127.0f;
      for (index_t k = 0; k < in; ++k) {
        float v = a == 0.0f ? 0.0f : std::nearbyint(w[weight_index(in, out, k, o)] / s[o]);
        v = std::fmin(127.0f, std::fmax(-127.0f, v));
        q[qweight_index(in, out, k, o)] = static_cast<std::int8_t>(v);
      }
    }
  }
  template <index_t In, index_t Out, bool B>
  void bind(LinearParams<In, Out, B>& p) const {
    p.weight = CMat<In, Out>(w.data());
    if constexpr (B) p.bias = CVec<Out>(b.data());
  }
  template <index_t In, index_t Out, bool B>
  void bind(QuantizedLinearParams<In, Out, B>& p) const {
    p.weight = q.data();
    p.weight_scale = CVec<Out>(s.data());
    if constexpr (B) p.bias = CVec<Out>(b.data());
  }
  /// y = act(x Wᵀ + b) by the reference kernel of format F.
  void reference(NumberFormat f, const float* x, index_t rows, float* y, Fuse act = Fuse::none) const {
    if (f == NumberFormat::w8a8) {
      std::vector<std::int8_t> row(in);
      ref::linear_w8a8(x, rows, in, q.data(), s.data(), b.data(), out, y, row.data(), act);
    } else {
      ref::linear_w8a32(x, rows, in, q.data(), s.data(), b.data(), out, y, act);
    }
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <index_t S, index_t D, index_t F, Activation Act, NumberFormat Fmt>
void check_feed_forward() {
  using FF = FeedForward<S, D, F, Act, false, Fmt>;
  const TestLinear l1(D, F, 31), l2(F, D, 32);
  auto ff = std::make_unique<FF>();
  l1.bind(ff->params.linear1);
  l2.bind(ff->params.linear2);
  const auto x = data(S * D, 5);
  std::vector<float> y(S * D), scratch(FF::scratch_floats);
  ff->run(x.data(), S, y.data(), scratch.data());
  std::vector<float> hidden(S * F), want(S * D);
  l1.reference(Fmt, x.data(), S, hidden.data(), fuse(Act));
  l2.reference(Fmt, hidden.data(), S, want.data());
  INFO("FeedForward<" << S << ", " << D << ", " << F << ">, format " << int(Fmt));
  CHECK(same_bits(y, want));
  // in place (y aliasing x), as the layers run it
  std::vector<float> xy = x;
  ff->run(xy.data(), S, xy.data(), scratch.data());
  CHECK(same_bits(xy, want));
}

template <index_t SeqQ, index_t SeqK, index_t D, index_t H, NumberFormat Fmt, bool A8 = false>
void check_mha(const AttentionMask& mask) {
  using MHA = MultiHeadAttention<SeqQ, SeqK, D, H, true, Fmt, A8>;
  const TestLinear lq(D, D, 41), lk(D, D, 42), lv(D, D, 43), lo(D, D, 44);
  auto mha = std::make_unique<MHA>();
  lq.bind(mha->params.q);
  lk.bind(mha->params.k);
  lv.bind(mha->params.v);
  lo.bind(mha->params.o);
  const auto xq = data(SeqQ * D, 6), xkv = data(SeqK * D, 7);
  std::vector<float> y(SeqQ * D), scratch(MHA::scratch_floats);
  mha->run(xq.data(), xkv.data(), mask, scratch.data(), y.data());
  // the reference: int8 projections, the float reference attention on plain buffers
  auto reference = [&](const float* xq_, const float* xkv_) {
    constexpr index_t hd = D / H;
    std::vector<float> q(SeqQ * D), k(SeqK * D), kt(D * SeqK), v(SeqK * D), want(SeqQ * D);
    lq.reference(Fmt, xq_, SeqQ, q.data());
    lk.reference(Fmt, xkv_, SeqK, k.data());
    ref::transpose(k.data(), SeqK, D, D, kt.data(), SeqK);
    lv.reference(Fmt, xkv_, SeqK, v.data());
    std::vector<ref::RowMask> rows(SeqQ);
    for (index_t i = 0; i < SeqQ; ++i) rows[i] = {mask.key_end(i, SeqK), nullptr};
    std::vector<float> p(attention_scratch_floats(SeqQ, SeqK, hd));
    if (A8) {  // the int8 attention: each head's rows quantized, int8 products
      std::vector<std::int8_t> q8(SeqQ * D), k8(SeqK * D), v8(SeqK * D);
      std::vector<float> sq(SeqQ), sk(SeqK), sv(SeqK), p8(attention_w8a8_scratch_floats());
      for (index_t h = 0; h < H; ++h) {
        for (index_t i = 0; i < SeqQ; ++i) sq[i] = ref::quantize_row(&q[i * D + h * hd], hd, &q8[i * D + h * hd]);
        for (index_t j = 0; j < SeqK; ++j) {
          sk[j] = ref::quantize_row(&k[j * D + h * hd], hd, &k8[j * D + h * hd]);
          sv[j] = ref::quantize_row(&v[j * D + h * hd], hd, &v8[j * D + h * hd]);
        }
        ref::attention_rows_w8a8(&q8[h * hd], D, sq.data(), SeqQ, &k8[h * hd], D, sk.data(), &v8[h * hd], D, sv.data(),
                                 hd, SeqK, rows.data(), mask.fill, p8.data(), q.data() + h * hd, D);
      }
    } else {
      for (index_t h = 0; h < H; ++h)
        ref::attention_rows(q.data() + h * hd, D, SeqQ, kt.data() + h * hd * SeqK, SeqK, v.data() + h * hd, D, hd, SeqK,
                            rows.data(), mask.fill, p.data(), q.data() + h * hd, D);
    }
    lo.reference(Fmt, q.data(), SeqQ, want.data());
    return want;
  };
  INFO("MultiHeadAttention<" << SeqQ << ", " << SeqK << ", " << D << ", " << H << ">, format " << int(Fmt)
                             << ", V row stride " << MHA::v_stride);
  CHECK(same_bits(y, reference(xq.data(), xkv.data())));
  if constexpr (SeqQ == SeqK) {
    // a self-attention (linear_rows_shared: Q, K and V from one quantization, K's rows through y
    // where y is apart from x; else K and V): y apart, in place, and y a row past x
    const auto want = reference(xq.data(), xq.data());
    std::vector<float> ys(SeqQ * D, -7.0f);
    mha->run(xq.data(), xq.data(), mask, scratch.data(), ys.data());
    CHECK(same_bits(ys, want));
    std::vector<float> xy = xq;
    mha->run(xy.data(), xy.data(), mask, scratch.data(), xy.data());
    CHECK(same_bits(xy, want));
    std::vector<float> buf((SeqQ + 1) * D);  // y a row past x: an output row lands on a later input row
    std::copy(xq.begin(), xq.end(), buf.begin());
    mha->run(buf.data(), buf.data(), mask, scratch.data(), buf.data() + D);
    CHECK(same_bits(std::vector<float>(buf.begin() + D, buf.end()), want));
  }
}

/// Max |a - b| over max |b|, and the smallest per-row cosine of a and b (rows of d).
struct Agreement {
  double rel = 0, min_cos = 1;
};
/// (Comparisons, not std::fmax: GCC 12 for aarch64 stops with an internal error vectorizing the
/// fmax reductions at -O3.)
Agreement agreement(const std::vector<float>& a, const std::vector<float>& b, index_t d) {
  Agreement r;
  double max_b = 0, max_err = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double yb = std::fabs(double(b[i])), e = std::fabs(double(a[i]) - b[i]);
    if (yb > max_b) max_b = yb;
    if (!(e <= max_err)) max_err = e;  // (a NaN sticks)
  }
  r.rel = max_err / max_b;
  for (std::size_t row = 0; row < a.size() / d; ++row) {
    double ab = 0, aa = 0, bb = 0;
    for (index_t i = 0; i < d; ++i) {
      const double x = a[row * d + i], y = b[row * d + i];
      ab += x * y, aa += x * x, bb += y * y;
    }
    const double cos = ab / std::sqrt(aa * bb);
    if (!(cos >= r.min_cos)) r.min_cos = cos;  // (a NaN sticks)
  }
  return r;
}

constexpr LayerOptions kW8A8{.format = NumberFormat::w8a8};
constexpr LayerOptions kW8A32{.format = NumberFormat::w8a32};
constexpr LayerOptions kW8A8Attention{.format = NumberFormat::w8a8, .int8_attention = true};

}  // namespace

TEST_CASE("int8 feed-forward equals the int8 reference kernels bit for bit", "[layers][int8]") {
  check_feed_forward<40, 32, 72, Activation::relu, NumberFormat::w8a8>();  // two row blocks of 32
  check_feed_forward<40, 32, 72, Activation::gelu, NumberFormat::w8a8>();
  check_feed_forward<7, 16, 64, Activation::gelu_tanh, NumberFormat::w8a8>();
  check_feed_forward<40, 32, 72, Activation::relu, NumberFormat::w8a32>();
  check_feed_forward<7, 18, 30, Activation::gelu, NumberFormat::w8a32>();  // reductions not in whole k-quads
}

TEST_CASE("int8 multi-head attention equals the int8 reference kernels (with int8_attention, its attention too)",
          "[layers][int8]") {
  check_mha<13, 13, 128, 4, NumberFormat::w8a8>(AttentionMask::causal_mask(11));  // V rows padded to 144
  check_mha<9, 40, 64, 2, NumberFormat::w8a8>(AttentionMask::padding(37));        // cross-attention
  check_mha<10, 10, 16, 2, NumberFormat::w8a8>(AttentionMask::padding(10));
  // more rows than a linear quantizes at a time (kQuantizedRowGroup; 48 on AVX512-VNNI): in place, a
  // later group's rows must not have been overwritten by an earlier group's outputs
  check_mha<50, 50, 32, 2, NumberFormat::w8a8>(AttentionMask::padding(47));
  check_mha<13, 13, 128, 4, NumberFormat::w8a8, true>(AttentionMask::causal_mask(11));
  check_mha<9, 40, 64, 2, NumberFormat::w8a8, true>(AttentionMask::padding(37));
  check_mha<10, 10, 16, 2, NumberFormat::w8a8, true>(AttentionMask::padding(10));
  check_mha<13, 13, 128, 4, NumberFormat::w8a32>(AttentionMask::padding(13));
  check_mha<9, 40, 64, 2, NumberFormat::w8a32>(AttentionMask::causal_mask(40));
}

namespace {
/// An encoder layer of format Opt and the float layer with the same (unquantized) weights, on the
/// same input: their agreement.
template <index_t S, index_t D, index_t H, index_t F, LayerOptions Opt>
Agreement encoder_layer_vs_float(std::uint32_t input_seed, float input_scale) {
  constexpr LayerOptions FloatOpt = [] {
    LayerOptions o = Opt;
    o.format = NumberFormat::f32;
    o.int8_attention = false;
    return o;
  }();
  using L8 = EncoderLayer<S, D, H, F, Opt>;
  using L32 = EncoderLayer<S, D, H, F, FloatOpt>;
  // weights in the range of PyTorch's initialization (bound 1/√in for nn.Linear)
  const float w = 1.0f / std::sqrt(float(D)), w2 = 1.0f / std::sqrt(float(F));
  const TestLinear q(D, D, 51, w), k(D, D, 52, w), v(D, D, 53, w), o(D, D, 54, w), l1(D, F, 55, w), l2(F, D, 56, w2);
  const auto gamma = data(D, 57, 0.2f), beta = data(D, 58, 0.1f);
  std::vector<float> g(D);
  for (index_t i = 0; i < D; ++i) g[i] = 1.0f + gamma[i];
  auto a = std::make_unique<L8>();
  auto b = std::make_unique<L32>();
  auto bind = [&](auto& p) {
    q.bind(p.self_attn.q), k.bind(p.self_attn.k), v.bind(p.self_attn.v), o.bind(p.self_attn.o);
    l1.bind(p.ff.linear1), l2.bind(p.ff.linear2);
    p.norm1 = {CVec<D>(g.data()), CVec<D>(beta.data())};
    p.norm2 = {CVec<D>(g.data()), CVec<D>(beta.data())};
  };
  bind(a->params);
  bind(b->params);
  const auto x = data(S * D, input_seed, input_scale);
  std::vector<float> ya(S * D), yb(S * D), sa(L8::scratch_floats), sb(L32::scratch_floats);
  REQUIRE(a->forward(CMat<S, D>(x.data()), Mat<S, D>(ya.data()), S, sa.data()) == Status::ok);
  REQUIRE(b->forward(CMat<S, D>(x.data()), Mat<S, D>(yb.data()), S, sb.data()) == Status::ok);
  return agreement(ya, yb, D);
}
}  // namespace

TEST_CASE("an int8 encoder layer stays within the issue's accuracy targets of its float layer", "[layers][int8]") {
  // Issue 23's targets (against the float model): w8a8 max error <= 2 % of max|y| and every row's
  // cosine >= 0.999; w8a32 <= 0.5 % and >= 0.9999. Inputs of two amplitudes (uniform, standard
  // deviation 1 and 2); no calibration exists to be held out from (the activation scales are per row,
  // at run time). The accuracy against PyTorch's float layers is tools/test_quantize.py's.
  for (float amplitude : {1.7320508f, 3.4641016f}) {
    const Agreement w8a8 = encoder_layer_vs_float<32, 64, 4, 128, kW8A8>(71, amplitude);
    const Agreement w8a8_pre = encoder_layer_vs_float<
        10, 16, 2, 32,
        LayerOptions{.norm = NormPlacement::pre, .activation = Activation::gelu, .format = NumberFormat::w8a8}>(
        72, amplitude);
    const Agreement w8a32 = encoder_layer_vs_float<32, 64, 4, 128, kW8A32>(73, amplitude);
    const Agreement a8 = encoder_layer_vs_float<32, 64, 4, 128, kW8A8Attention>(74, amplitude);
    INFO("amplitude " << amplitude << ": w8a8 " << w8a8.rel << " / " << w8a8.min_cos << ", w8a8 pre-norm "
                      << w8a8_pre.rel << " / " << w8a8_pre.min_cos << ", w8a32 " << w8a32.rel << " / " << w8a32.min_cos
                      << ", w8a8 + int8 attention " << a8.rel << " / " << a8.min_cos);
    CHECK(a8.rel <= 0.02);
    CHECK(a8.min_cos >= 0.999);
    CHECK(w8a8.rel <= 0.02);
    CHECK(w8a8.min_cos >= 0.999);
    CHECK(w8a8_pre.rel <= 0.02);
    CHECK(w8a8_pre.min_cos >= 0.999);
    CHECK(w8a32.rel <= 0.005);
    CHECK(w8a32.min_cos >= 0.9999);
  }
}

// ---- footprints at compile time ------------------------------------------------------------------

using Enc32 = EncoderLayer<64, 64, 4, 256>;
using Enc8 = EncoderLayer<64, 64, 4, 256, kW8A8>;
// float: every element 4 bytes; int8: weights 1 byte (in whole k-quads), scales, biases and norms 4
static_assert(param_bytes_of<Enc32::Params>() == 4 * Enc32::Params::param_count);
static_assert(param_bytes_of<Enc8::Params>() == (4 * 64 * 64 + 2 * 64 * 256) + 4 * (2 * (4 * 64 + 256 + 64) + 4 * 64));
static_assert(QuantizedLinearParams<18, 5>::param_bytes == 20 * 5 + 4 * (5 + 5));  // 18 padded to 20
static_assert(QuantizedLinearParams<18, 5, false>::param_bytes == 20 * 5 + 4 * 5);
// the scratch of the int8 formats holds whole hidden rows of a 32-row block (the second linear
// writes the outputs straight into y)
static_assert(FeedForward<64, 64, 256, Activation::relu, false, NumberFormat::w8a8>::scratch_floats ==
              32 * 256 + (linear_w8a8_scratch_bytes(32, 256) + 3) / 4);
static_assert(EncoderStack<Enc8, 2>::Params::param_bytes == 2 * param_bytes_of<Enc8::Params>());

TEST_CASE("int8 footprints: a model's weight_bytes count int8 weights as bytes", "[layers][int8][footprint]") {
  using Model8 = Sequential<64, Named<"encoder", EncoderStack<Enc8, 2, true>>>;
  using Model32 = Sequential<64, Named<"encoder", EncoderStack<Enc32, 2, true>>>;
  STATIC_REQUIRE(Model8::weight_bytes == 2 * param_bytes_of<Enc8::Params>() + 2 * 64 * 4);
  STATIC_REQUIRE(Model32::weight_bytes == Model32::param_count * 4);
  // the flash budget: int8 weights and their scales at most 30 % of the float ones
  STATIC_REQUIRE(Model8::weight_bytes * 10 <= Model32::weight_bytes * 3);
}

// ---- binding and loading ---------------------------------------------------------------------------

namespace {
using Small8 = EncoderLayer<4, 16, 2, 24, kW8A8>;

/// Every parameter of a Small8 layer as test data, in visit order: int8 weights, scales, floats.
struct SmallWeights {
  std::vector<std::vector<std::int8_t>> q;
  std::vector<std::vector<float>> f;
  std::vector<std::string> names;
  std::vector<bool> is_int8;
  SmallWeights() {
    Small8::Params p{};
    std::uint32_t seed = 90;
    p.visit(
        [&](const Name& name, ParamRef ref) {
          names.push_back(name.c_str());
          is_int8.push_back(ref.is_int8());
          if (ref.is_int8()) {
            std::vector<std::int8_t> v(ref.size());
            for (index_t i = 0; i < ref.size(); ++i) v[i] = static_cast<std::int8_t>(int(i * 37 + seed) % 255 - 127);
            q.push_back(v);
            f.emplace_back();
          } else {
            auto v = data(ref.size(), seed, 0.5f);
            if (ref.scale)
              for (float& x : v) x = std::fabs(x) / 127.0f;
            f.push_back(v);
            q.emplace_back();
          }
          ++seed;
        },
        {});
  }
};

/// A safetensors file of the weights with statiformer's metadata; `tweak` edits the header fields of
/// one tensor (its dtype) before writing.
std::vector<unsigned char> small_file(const SmallWeights& w, const std::string& format = "w8a8",
                                      const std::string& dtype_of_first_scale = "F32") {
  std::string header = "{\"__metadata__\": {\"format\": \"statiformer\", \"layout\": \"2\"";
  for_each_hparam(hparam_table<Small8::Params>, [&](const char* key, const char* value) {
    std::string v = value;
    if (std::string(key) == "number_format") v = format;
    header += std::string(", \"") + key + "\": \"" + v + "\"";
  });
  header += "}";
  std::vector<unsigned char> body;
  bool first_scale = true;
  Small8::Params p{};
  index_t i = 0;
  p.visit(
      [&](const Name&, ParamRef ref) {
        index_t rows = 0, cols = 0;
        stored_shape(ref, rows, cols);
        std::string dtype = ref.is_int8() ? "I8" : "F32";
        if (ref.scale && first_scale) dtype = dtype_of_first_scale, first_scale = false;
        const std::size_t begin = body.size();
        if (ref.is_int8())
          body.insert(body.end(), reinterpret_cast<const unsigned char*>(w.q[i].data()),
                      reinterpret_cast<const unsigned char*>(w.q[i].data()) + w.q[i].size());
        else if (dtype == "I8")  // a float tensor written as I8: one byte per element
          body.insert(body.end(), w.f[i].size(), 1);
        else
          body.insert(body.end(), reinterpret_cast<const unsigned char*>(w.f[i].data()),
                      reinterpret_cast<const unsigned char*>(w.f[i].data()) + 4 * w.f[i].size());
        header += ", \"" + w.names[i] + "\": {\"dtype\": \"" + dtype + "\", \"shape\": [" + std::to_string(rows) +
                  (cols ? ", " + std::to_string(cols) : "") + "], \"data_offsets\": [" + std::to_string(begin) + ", " +
                  std::to_string(body.size()) + "]}";
        ++i;
      },
      {});
  header += "}";
  while ((8 + header.size()) % 8) header += ' ';
  std::vector<unsigned char> file(8 + header.size() + body.size());
  for (int b = 0; b < 8; ++b) file[b] = static_cast<unsigned char>((header.size() >> (8 * b)) & 0xff);
  std::memcpy(file.data() + 8, header.data(), header.size());
  if (!body.empty()) std::memcpy(file.data() + 8 + header.size(), body.data(), body.size());
  return file;
}
}  // namespace

TEST_CASE("an int8 layer loads I8 weights and F32 scales from safetensors, checked", "[io][int8]") {
  const SmallWeights w;
  Small8 layer{};
  std::vector<unsigned char> file = small_file(w);
  // the schema's hyperparameters name the number format
  bool has_format = false;
  for_each_hparam(hparam_table<Small8::Params>, [&](const char* key, const char* value) {
    if (std::string(key) == "number_format") has_format = std::string(value) == "w8a8";
  });
  CHECK(has_format);

  LoadResult r = load_safetensors(layer.params, file.data(), file.size(), nullptr, 0);
  INFO(r.message);
  REQUIRE(r);
  CHECK(std::memcmp(layer.params.self_attn.q.weight, w.q[0].data(), w.q[0].size()) == 0);
  CHECK(layer.params.self_attn.q.weight == reinterpret_cast<const std::int8_t*>(file.data()) + 8 +
                                               (file[0] | file[1] << 8));  // in place: the first tensor

  // copied into the model's storage
  ParamStorage<Small8::Params> storage{};
  STATIC_REQUIRE(param_storage_floats<Small8::Params> == param_bytes_of<Small8::Params>() / 4);
  Small8 copied{};
  r = load_safetensors(copied.params, file.data(), file.size(), storage, LoadOptions{.copy = true});
  REQUIRE(r);
  CHECK(std::memcmp(copied.params.ff.linear2.weight, w.q[15].data(), w.q[15].size()) == 0);
  CHECK(reinterpret_cast<const void*>(copied.params.ff.linear2.weight) >= static_cast<const void*>(storage.data));

  const auto before = layer.params;
  auto unchanged = [&] {
    return layer.params.self_attn.q.weight == before.self_attn.q.weight &&
           layer.params.ff.linear1.weight_scale.data == before.ff.linear1.weight_scale.data;
  };
  SECTION("an int8 weight holding -128 is out of range") {
    std::vector<unsigned char> bad = file;
    const std::size_t data0 = 8 + (bad[0] | bad[1] << 8);
    bad[data0 + 5] = 0x80;
    r = load_safetensors(layer.params, bad.data(), bad.size(), nullptr, 0);
    CHECK(r.error == LoadError::out_of_range);
    CHECK(std::string(r.message).find("element 5 is -128") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a negative weight scale is out of range") {
    SmallWeights neg = w;
    neg.f[1][3] = -0.25f;  // self_attn.q.weight_scale
    std::vector<unsigned char> bad = small_file(neg);
    r = load_safetensors(layer.params, bad.data(), bad.size(), nullptr, 0);
    CHECK(r.error == LoadError::out_of_range);
    CHECK(std::string(r.tensor.c_str()) == "self_attn.q.weight_scale");
    CHECK(unchanged());
  }
  SECTION("a w8a32 file does not load into a w8a8 model (the same bytes, another computation)") {
    std::vector<unsigned char> other = small_file(w, "w8a32");
    r = load_safetensors(layer.params, other.data(), other.size(), nullptr, 0);
    CHECK(r.error == LoadError::hyperparameter);
    CHECK(std::string(r.message).find("number_format") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("a scale stored as I8 is a dtype error") {
    std::vector<unsigned char> bad = small_file(w, "w8a8", "I8");
    r = load_safetensors(layer.params, bad.data(), bad.size(), nullptr, 0);
    CHECK(r.error == LoadError::dtype);
    CHECK(std::string(r.message).find("F32, F16 or BF16 expected, found 'I8'") != std::string::npos);
    CHECK(unchanged());
  }
  SECTION("the float layer of the same shapes does not load the int8 file") {
    EncoderLayer<4, 16, 2, 24> f32{};
    r = load_safetensors(f32.params, file.data(), file.size(), nullptr, 0,
                         LoadOptions{.require_hyperparameters = false});
    CHECK(r.error != LoadError::ok);
    CHECK(r.error == LoadError::unexpected_name);  // the scales are not parameters of a float layer
  }
}

TEST_CASE("bind_table binds int8 entries and refuses a float entry where the model stores int8", "[io][int8]") {
  const SmallWeights w;
  std::vector<WeightEntry> entries;
  for (std::size_t i = 0; i < w.names.size(); ++i)
    entries.push_back(w.is_int8[i] ? WeightEntry{w.names[i].c_str(), nullptr, index_t(w.q[i].size()), w.q[i].data()}
                                   : WeightEntry{w.names[i].c_str(), w.f[i].data(), index_t(w.f[i].size())});
  auto lookup = [&](bool swap_first) {
    return [&entries, swap_first](const char* name, index_t& size, auto... tag) -> decltype(auto) {
      constexpr bool want_int8 = sizeof...(tag) == 1;
      for (std::size_t i = 0; i < entries.size(); ++i)
        if (std::strcmp(entries[i].name, name) == 0) {
          size = entries[i].size;
          const bool swapped = swap_first && i == 0;
          if constexpr (want_int8)
            return swapped ? static_cast<const std::int8_t*>(nullptr) : entries[i].data_i8;
          else
            return swapped ? reinterpret_cast<const float*>(entries[i].data_i8) : entries[i].data;
        }
      if constexpr (want_int8)
        return static_cast<const std::int8_t*>(nullptr);
      else
        return static_cast<const float*>(nullptr);
    };
  };
  Small8 layer{};
  BindResult r = bind_params(layer.params, lookup(false));
  REQUIRE(r);
  CHECK(layer.params.self_attn.k.weight == w.q[3].data());
  CHECK(layer.params.self_attn.k.weight_scale.data == w.f[4].data());

  Small8 other{};
  r = bind_params(other.params, lookup(true));  // the first weight offered as floats only
  CHECK(r.status == Status::weight_dtype_mismatch);
  CHECK(std::string(r.name.c_str()) == "self_attn.q.weight");
  CHECK(other.params.self_attn.k.weight == nullptr);  // nothing bound
}

TEST_CASE("the int8 file tools/export.py --quantize writes loads and runs", "[io][int8]") {
  // tests/fuzz/seeds/enc_w8a8.safetensors: tests/fuzz/make_seeds.py, a seeded nn.TransformerEncoder
  // quantized against the schema of this type (tools/schema/models.hpp's EncStackW8a8)
  using Stack = EncoderStack<EncoderLayer<3, 8, 2, 10, kW8A8>, 1, true>;
  std::vector<unsigned char> file;
  if (std::FILE* f = std::fopen(STF_FUZZ_SEEDS "/enc_w8a8.safetensors", "rb")) {
    unsigned char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) file.insert(file.end(), chunk, chunk + n);
    std::fclose(f);
  }
  REQUIRE(!file.empty());
  auto stack = std::make_unique<Stack>();
  const LoadResult r = load_safetensors(stack->params, file.data(), file.size(), nullptr, 0);
  INFO(r.message);
  REQUIRE(r);
  // linear2's reduction of 10 is stored padded to 12 (zeros in the padding)
  for (index_t o = 0; o < 8; ++o)
    for (index_t k = 10; k < 12; ++k) CHECK(stack->params.layers[0].ff.linear2.weight[qweight_index(10, 8, k, o)] == 0);
  const auto x = data(3 * 8, 3);
  std::vector<float> y(3 * 8), scratch(Stack::scratch_floats);
  REQUIRE(stack->forward(CMat<3, 8>(x.data()), Mat<3, 8>(y.data()), 3, scratch.data()) == Status::ok);
  for (float v : y) CHECK(std::isfinite(v));
}

// ---- the layers with a K/V cache and their models -------------------------------------------------

namespace {
/// Deterministic float weights of any model, bound by name (linears in the range of PyTorch's
/// initialization, bound 1/√in; norm gains around 1), and the same weights quantized by
/// TestLinear::quantize for the model's int8 twin (whose other parameters are the same floats).
struct ModelWeights {
  std::map<std::string, std::vector<float>> floats;
  std::vector<std::vector<std::int8_t>> int8;
  std::vector<std::vector<float>> scales;
  std::uint32_t seed = 300;

  const std::vector<float>& values(const std::string& name, const ParamRef& ref) {
    auto it = floats.find(name);
    if (it != floats.end()) return it->second;
    const bool gain = name.find("norm") != std::string::npos && name.find("weight") != std::string::npos;
    const bool embedding = name.find("embed") != std::string::npos;
    const float scale = gain ? 0.2f : (ref.cols && !embedding ? 1.0f / std::sqrt(float(ref.cols)) : 0.1f);
    std::vector<float> v = data(ref.rows * (ref.cols ? ref.cols : 1), seed++, scale);
    if (gain)
      for (float& x : v) x += 1.0f;
    if (embedding) v = data(v.size(), seed++, 1.0f);
    return floats.emplace(name, std::move(v)).first->second;
  }
  template <class Params>
  void bind(Params& params) {
    const float* last_scales = nullptr;
    params.visit(
        [&](const Name& name, ParamRef ref) {
          const std::string n = name.c_str();
          if (ref.is_int8()) {  // PyTorch's [out, in]: rows out, cols in
            const std::vector<float>& w = values(n, ref);
            int8.emplace_back(quad_padded(ref.cols) * ref.rows, std::int8_t{0});
            scales.emplace_back(ref.rows);
            TestLinear::quantize(ref.cols, ref.rows, w.data(), int8.back().data(), scales.back().data());
            *ref.data_i8 = int8.back().data();
            last_scales = scales.back().data();
          } else if (ref.scale) {
            *ref.data = last_scales;
          } else {
            *ref.data = values(n, ref).data();
          }
        },
        Name{});
  }
};

template <LayerOptions Opt>
constexpr LayerOptions float_of() {
  LayerOptions o = Opt;
  o.format = NumberFormat::f32;
  o.int8_attention = false;
  return o;
}

/// A causal layer of format Opt: prefill then steps (and a run continuing a prefill) give the bits
/// of steps alone; the int8 layer's prefill equals the encoder layer of the same parameters under a
/// causal mask, and is within the accuracy targets of the float layer.
template <index_t S, index_t D, index_t H, index_t F, LayerOptions Opt>
Agreement check_causal_layer(std::uint32_t input_seed) {
  using L = CausalLayer<S, D, H, F, Opt>;
  using L32 = CausalLayer<S, D, H, F, float_of<Opt>()>;
  ModelWeights w;
  auto layer = std::make_unique<L>();
  auto layer32 = std::make_unique<L32>();
  w.bind(layer32->params);
  w.bind(layer->params);
  const auto x = data(S * D, input_seed, 1.7320508f);
  auto cache = std::make_unique<typename L::Cache>();
  std::vector<float> scratch(L::scratch_floats);
  // steps alone
  std::vector<float> steps(S * D);
  for (index_t i = 0; i < S; ++i)
    REQUIRE(layer->step(x.data() + i * D, i, *cache, steps.data() + i * D, scratch.data()) == Status::ok);
  for (index_t p : {index_t{1}, index_t{2}, S / 2 + 1, S - 1, S}) {
    std::vector<float> got(S * D, -1.0f);
    REQUIRE(layer->prefill(x.data(), p, *cache, got.data(), scratch.data()) == Status::ok);
    for (index_t i = p; i < S; ++i)
      REQUIRE(layer->step(x.data() + i * D, i, *cache, got.data() + i * D, scratch.data()) == Status::ok);
    INFO("format " << int(Opt.format) << ", int8_attention " << Opt.int8_attention << ": prefill of " << p
                   << " positions, then steps");
    CHECK(same_bits(got, steps));
  }
  // a prefill of 3, a run over rows [3, S - 2) at once, then steps; in place (y aliasing x)
  std::vector<float> xy = x;
  REQUIRE(layer->prefill(xy.data(), 3, *cache, xy.data(), scratch.data()) == Status::ok);
  layer->run(xy.data() + 3 * D, 3, S - 5, *cache, xy.data() + 3 * D, scratch.data());
  for (index_t i = S - 2; i < S; ++i)
    REQUIRE(layer->step(xy.data() + i * D, i, *cache, xy.data() + i * D, scratch.data()) == Status::ok);
  CHECK(same_bits(xy, steps));

  // the encoder layer of the same parameters under a causal mask: the same bits
  using Enc = EncoderLayer<S, D, H, F, Opt>;
  auto enc = std::make_unique<Enc>();
  enc->params = layer->params;
  std::vector<float> ye(S * D), se(Enc::scratch_floats);
  REQUIRE(enc->forward(CMat<S, D>(x.data()), Mat<S, D>(ye.data()), typename Enc::Masks{.is_causal = true}, se.data()) ==
          Status::ok);
  CHECK(same_bits(ye, steps));

  auto cache32 = std::make_unique<typename L32::Cache>();
  std::vector<float> y32(S * D), scratch32(L32::scratch_floats);
  REQUIRE(layer32->prefill(x.data(), S, *cache32, y32.data(), scratch32.data()) == Status::ok);
  return agreement(steps, y32, D);
}

/// A decoder layer of format Opt: its steps (after prepare_memory) give the bits of the
/// whole-sequence forward's rows, with and without memory masks; within the accuracy targets of the
/// float layer.
template <index_t T, index_t M, index_t D, index_t H, index_t F, LayerOptions Opt>
Agreement check_decoder_layer(std::uint32_t input_seed) {
  using L = DecoderLayer<T, M, D, H, F, Opt>;
  using L32 = DecoderLayer<T, M, D, H, F, float_of<Opt>()>;
  ModelWeights w;
  auto layer = std::make_unique<L>();
  auto layer32 = std::make_unique<L32>();
  w.bind(layer32->params);
  w.bind(layer->params);
  const auto x = data(T * D, input_seed, 1.7320508f), memory = data(M * D, input_seed + 1, 1.7320508f);
  constexpr index_t valid = M - 2;
  KeyPaddingMask<M> pad{};
  pad.pad[1] = 1;
  std::vector<float> scratch(L::scratch_floats), step_scratch(L::step_scratch_floats),
      memory_scratch(L::memory_scratch_floats + 1);
  for (bool masked : {false, true}) {
    std::vector<float> whole(T * D), steps(T * D);
    typename L::Masks masks{.memory_key_padding_mask = masked ? &pad : nullptr, .mem_valid_len = valid};
    REQUIRE(layer->forward(CMat<T, D>(x.data()), CMat<M, D>(memory.data()), Mat<T, D>(whole.data()), masks,
                           scratch.data()) == Status::ok);
    auto cache = std::make_unique<typename L::Cache>();
    layer->prepare_memory(memory.data(), *cache, memory_scratch.data());
    for (index_t i = 0; i < T; ++i)
      layer->step(x.data() + i * D, i, valid, *cache, steps.data() + i * D, step_scratch.data(),
                  masked ? &pad : nullptr);
    INFO("format " << int(Opt.format) << ", int8_attention " << Opt.int8_attention << ", memory padding mask "
                   << masked);
    CHECK(same_bits(steps, whole));
  }
  std::vector<float> y(T * D), y32(T * D), scratch32(L32::scratch_floats);
  REQUIRE(layer->forward(CMat<T, D>(x.data()), CMat<M, D>(memory.data()), Mat<T, D>(y.data()), valid, scratch.data()) ==
          Status::ok);
  REQUIRE(layer32->forward(CMat<T, D>(x.data()), CMat<M, D>(memory.data()), Mat<T, D>(y32.data()), valid,
                           scratch32.data()) == Status::ok);
  return agreement(y, y32, D);
}

void check_targets(const Agreement& a, NumberFormat f) {
  INFO("max error / max|y| " << a.rel << ", smallest row cosine " << a.min_cos);
  if (f == NumberFormat::w8a8) {
    CHECK(a.rel <= 0.02);
    CHECK(a.min_cos >= 0.999);
  } else {
    CHECK(a.rel <= 0.005);
    CHECK(a.min_cos >= 0.9999);
  }
}

constexpr LayerOptions kW8A8Pre{
    .norm = NormPlacement::pre, .activation = Activation::gelu, .format = NumberFormat::w8a8};
constexpr LayerOptions kW8A32Pre{.norm = NormPlacement::pre, .format = NumberFormat::w8a32};
constexpr LayerOptions kW8A8PreAttention{
    .norm = NormPlacement::pre, .activation = Activation::gelu, .format = NumberFormat::w8a8, .int8_attention = true};
}  // namespace

TEST_CASE("an int8 causal layer: prefill then steps give the bits of steps alone, within the accuracy targets",
          "[layers][int8][kv_cache]") {
  // 40 positions: more rows than an int8 row block (32) and keys past an attention block (32)
  check_targets(check_causal_layer<40, 64, 4, 128, kW8A8>(81), NumberFormat::w8a8);
  check_targets(check_causal_layer<40, 64, 4, 128, kW8A32>(82), NumberFormat::w8a32);
  check_targets(check_causal_layer<12, 16, 2, 32, kW8A8Pre>(83), NumberFormat::w8a8);
  check_targets(check_causal_layer<12, 18, 3, 30, kW8A32Pre>(84), NumberFormat::w8a32);  // reductions not in k-quads
  // the int8 attention over the int8 K/V cache
  check_targets(check_causal_layer<40, 64, 4, 128, kW8A8Attention>(85), NumberFormat::w8a8);
  check_targets(check_causal_layer<12, 16, 2, 32, kW8A8PreAttention>(86), NumberFormat::w8a8);
  check_targets(check_causal_layer<13, 128, 4, 64, kW8A8Attention>(87), NumberFormat::w8a8);  // head_dim 32
}

TEST_CASE("an int8 decoder layer: steps give the bits of the whole-sequence forward, within the accuracy targets",
          "[layers][int8][kv_cache]") {
  check_targets(check_decoder_layer<40, 36, 64, 4, 128, kW8A8>(91), NumberFormat::w8a8);
  check_targets(check_decoder_layer<40, 36, 64, 4, 128, kW8A32>(92), NumberFormat::w8a32);
  check_targets(check_decoder_layer<12, 9, 16, 2, 32, kW8A8Pre>(93), NumberFormat::w8a8);
  check_targets(check_decoder_layer<12, 9, 18, 3, 30, kW8A32Pre>(94), NumberFormat::w8a32);
  // the int8 attention over the int8 K/V caches (the target's and the memory's)
  check_targets(check_decoder_layer<40, 36, 64, 4, 128, kW8A8Attention>(95), NumberFormat::w8a8);
  check_targets(check_decoder_layer<12, 9, 16, 2, 32, kW8A8PreAttention>(96), NumberFormat::w8a8);
}

namespace {
using Dec32 = DecoderLayer<64, 48, 64, 4, 256>;
using Dec8 = DecoderLayer<64, 48, 64, 4, 256, kW8A8>;
using Causal8 = CausalLayer<64, 64, 4, 256, kW8A32>;
// a decoder layer: ten linears (eight 64 × 64, 64 → 256, 256 → 64), their scales and biases, three norms
static_assert(param_bytes_of<Dec32::Params>() == 4 * Dec32::Params::param_count);
static_assert(param_bytes_of<Dec8::Params>() == (8 * 64 * 64 + 2 * 64 * 256) + 4 * (2 * (8 * 64 + 256 + 64) + 6 * 64));
static_assert(param_bytes_of<Causal8::Params>() == param_bytes_of<Enc8::Params>());

// the int8 K/V cache: int8 K and V rows (a quarter of the float cache's bytes) and a float scale per
// head and key for each
using Causal8A = CausalLayer<64, 64, 4, 256, kW8A8Attention>;
using Dec8A = DecoderLayer<64, 48, 64, 4, 256, kW8A8Attention>;
static_assert(Causal8::cache_bytes == 4 * 2 * 64 * 64 && Causal8::cache_floats == 2 * 64 * 64);
static_assert(Causal8A::cache_bytes == 2 * 64 * 64 + 4 * 2 * 4 * 64);
static_assert(Dec8::cache_bytes == 4 * 2 * (64 + 48) * 64);
static_assert(Dec8A::cache_bytes == 2 * (64 + 48) * 64 + 4 * 2 * 4 * (64 + 48));
static_assert(Dec8A::cache_bytes * 16 == Dec8::cache_bytes * 5);  // head_dim 16: 3.2 times smaller
static_assert(Gpt<64, 100, 64, 4, 256, 2, kW8A8Attention>::state_bytes == 2 * Causal8A::cache_bytes);

using Gpt8 = Gpt<64, 100, 64, 4, 256, 2, kW8A8>;
using Gpt32 = Gpt<64, 100, 64, 4, 256, 2>;
using Tr8 = Transformer<48, 64, 90, 100, 64, 4, 256, 2, kW8A32>;
using Tr32 = Transformer<48, 64, 90, 100, 64, 4, 256, 2>;
// int8 linears in the stacks; embeddings, generator and norms float
static_assert(Gpt8::weight_bytes ==
              Gpt32::weight_bytes - 2 * (4 * Enc32::Params::param_count) + 2 * param_bytes_of<Enc8::Params>());
static_assert(Tr8::weight_bytes == Tr32::weight_bytes - 2 * (4 * Enc32::Params::param_count) -
                                       2 * (4 * Dec32::Params::param_count) + 2 * param_bytes_of<Enc8::Params>() +
                                       2 * param_bytes_of<Dec8::Params>());
// the summaries' rows count the same bytes (each layer's param_bytes_of)
static_assert(Gpt8::summary_table().param_bytes() == Gpt8::weight_bytes);
static_assert(Tr8::summary_table().param_bytes() == Tr8::weight_bytes);
static_assert(Gpt32::summary_table().param_bytes() == Gpt32::weight_bytes);
static_assert(Sequential<64, Named<"encoder", EncoderStack<Enc8, 2, true>>>::summary_table().param_bytes() ==
              2 * param_bytes_of<Enc8::Params>() + 2 * 64 * 4);
}  // namespace

TEST_CASE("int8 decoder-only and encoder-decoder models: prefill then steps, footprints", "[models][int8][kv_cache]") {
  using Model = Gpt<40, 13, 32, 4, 64, 2, kW8A8Pre>;
  constexpr index_t S = Model::seq_len, V = Model::vocab;
  ModelWeights w;
  auto model = std::make_unique<Model>();
  w.bind(model->params);
  std::vector<int> tokens(S);
  for (index_t i = 0; i < S; ++i) tokens[i] = static_cast<int>((i * 7 + 3) % V);
  std::vector<float> steps(S * V);
  model->reset();
  for (index_t i = 0; i < S; ++i) REQUIRE(model->step(tokens[i], steps.data() + i * V) == Status::ok);
  for (index_t p : {index_t{1}, index_t{33}, S}) {
    std::vector<float> got(S * V, -1.0f);
    REQUIRE(model->prefill(tokens.data(), p, got.data(), PrefillOutput::every_row) == Status::ok);
    for (index_t i = p; i < S; ++i) REQUIRE(model->step(tokens[i], got.data() + i * V) == Status::ok);
    INFO("prefill of " << p << " positions, then steps");
    CHECK(same_bits(got, steps));
  }
  STATIC_REQUIRE(Gpt8::weight_bytes * 10 <= Gpt32::weight_bytes * 4);  // (the float embedding and generator stay)

  // with the int8 attention over int8 K/V caches
  using ModelA = Gpt<40, 13, 32, 4, 64, 2, kW8A8Attention>;
  auto model_a = std::make_unique<ModelA>();
  w.bind(model_a->params);
  model_a->reset();
  for (index_t i = 0; i < S; ++i) REQUIRE(model_a->step(tokens[i], steps.data() + i * V) == Status::ok);
  for (index_t p : {index_t{1}, index_t{33}, S}) {
    std::vector<float> got(S * V, -1.0f);
    REQUIRE(model_a->prefill(tokens.data(), p, got.data(), PrefillOutput::every_row) == Status::ok);
    for (index_t i = p; i < S; ++i) REQUIRE(model_a->step(tokens[i], got.data() + i * V) == Status::ok);
    INFO("int8 attention: prefill of " << p << " positions, then steps");
    CHECK(same_bits(got, steps));
  }

  // an int8 encoder-decoder decodes (its decoder's memory keys and values through prepare_memory's scratch)
  using Tr = Transformer<10, 12, 17, 19, 32, 4, 64, 2, kW8A8>;
  ModelWeights wt;
  auto tr = std::make_unique<Tr>();
  wt.bind(tr->params);
  std::vector<int> src(10);
  for (index_t i = 0; i < 10; ++i) src[i] = static_cast<int>(i * 5 % 17);
  std::vector<int> out(12);
  index_t out_len = 0;
  REQUIRE(tr->greedy_decode(src.data(), 8, 1, 2, out.data(), out_len) == Status::ok);
  CHECK(out_len >= 1);
  using TrA = Transformer<10, 12, 17, 19, 32, 4, 64, 2, kW8A8Attention>;
  auto tr_a = std::make_unique<TrA>();
  wt.bind(tr_a->params);
  REQUIRE(tr_a->greedy_decode(src.data(), 8, 1, 2, out.data(), out_len) == Status::ok);
  CHECK(out_len >= 1);
}

// ---- files of the int8 models with a K/V cache ----------------------------------------------------

namespace {
/// The safetensors file of a bound parameter struct (every tensor as its model reads it, I8 or F32)
/// with statiformer's metadata and the struct's hyperparameters: what tools/export.py writes.
template <class Params>
std::vector<unsigned char> file_of(Params& params) {
  std::string header = "{\"__metadata__\": {\"format\": \"statiformer\", \"layout\": \"2\"";
  for_each_hparam(hparam_table<Params>, [&](const char* key, const char* value) {
    header += std::string(", \"") + key + "\": \"" + value + "\"";
  });
  header += "}";
  std::vector<unsigned char> body;
  params.visit(
      [&](const Name& name, ParamRef ref) {
        index_t rows = 0, cols = 0;
        stored_shape(ref, rows, cols);
        const std::size_t begin = body.size();
        const auto* bytes = ref.is_int8() ? reinterpret_cast<const unsigned char*>(*ref.data_i8)
                                          : reinterpret_cast<const unsigned char*>(*ref.data);
        body.insert(body.end(), bytes, bytes + ref.bytes());
        header += std::string(", \"") + name.c_str() + "\": {\"dtype\": \"" + (ref.is_int8() ? "I8" : "F32") +
                  "\", \"shape\": [" + std::to_string(rows) + (cols ? ", " + std::to_string(cols) : "") +
                  "], \"data_offsets\": [" + std::to_string(begin) + ", " + std::to_string(body.size()) + "]}";
      },
      Name{});
  header += "}";
  while ((8 + header.size()) % 8) header += ' ';
  std::vector<unsigned char> file(8 + header.size() + body.size());
  for (int b = 0; b < 8; ++b) file[b] = static_cast<unsigned char>((header.size() >> (8 * b)) & 0xff);
  std::memcpy(file.data() + 8, header.data(), header.size());
  std::memcpy(file.data() + 8 + header.size(), body.data(), body.size());
  return file;
}

/// The value of a hyperparameter key of P's table ("" when absent).
template <class P>
std::string hparam(const char* key) {
  std::string found;
  for_each_hparam(hparam_table<P>, [&](const char* k, const char* v) {
    if (std::string(k) == key) found = v;
  });
  return found;
}
}  // namespace

TEST_CASE("int8 decoder-only and encoder-decoder files: the number format in the hyperparameters, loaded and run",
          "[io][int8][kv_cache]") {
  using G8 = Gpt<12, 13, 16, 2, 32, 2, kW8A8>;
  using G8A = Gpt<12, 13, 16, 2, 32, 2, kW8A8Attention>;
  using G32 = Gpt<12, 13, 16, 2, 32, 2>;
  using T8 = Transformer<6, 7, 11, 13, 16, 2, 32, 1, kW8A32>;
  // number_format (and int8_attention) only on the int8 modules: the float files are unchanged
  CHECK(hparam<G8::Params>("layers.1.number_format") == "w8a8");
  CHECK(hparam<G8::Params>("layers.1.int8_attention").empty());
  CHECK(hparam<G8A::Params>("layers.1.int8_attention") == "true");
  CHECK(hparam<G8::Params>("layers.1.causal") == "true");
  CHECK(hparam<G32::Params>("layers.1.number_format").empty());
  CHECK(hparam<T8::Params>("decoder.layers.0.number_format") == "w8a32");
  CHECK(hparam<T8::Params>("encoder.layers.0.number_format") == "w8a32");

  ModelWeights w;
  auto written = std::make_unique<G8A>();
  w.bind(written->params);
  const std::vector<unsigned char> file = file_of(written->params);
  auto loaded = std::make_unique<G8A>();
  const LoadResult r = load_safetensors(loaded->params, file.data(), file.size(), nullptr, 0);
  INFO(r.message);
  REQUIRE(r);
  const std::vector<int> prompt{3, 1, 4, 1, 5, 9};
  std::vector<float> a(13), b(13);
  REQUIRE(written->prefill(prompt.data(), 6, a.data()) == Status::ok);
  REQUIRE(loaded->prefill(prompt.data(), 6, b.data()) == Status::ok);
  CHECK(same_bits(a, b));

  // the file of the float attention's model lacks int8_attention: not loaded by the int8 attention's
  auto float_attention = std::make_unique<G8>();
  w.bind(float_attention->params);
  const std::vector<unsigned char> file8 = file_of(float_attention->params);
  auto other = std::make_unique<G8A>();
  const LoadResult r8 = load_safetensors(other->params, file8.data(), file8.size(), nullptr, 0);
  CHECK(r8.error == LoadError::hyperparameter);
  CHECK(std::string(r8.message).find("int8_attention") != std::string::npos);
  CHECK(std::string(r8.message).find("exported for a model without this one") != std::string::npos);
  // nor the converse: the int8 attention's file into the float attention's model (the same tensors)
  auto no_int8_attention = std::make_unique<G8>();
  const LoadResult ra = load_safetensors(no_int8_attention->params, file.data(), file.size(), nullptr, 0);
  CHECK(ra.error == LoadError::hyperparameter);
  CHECK(std::string(ra.message) ==
        "hyperparameter layers.0.int8_attention: file true, not in the model (weights exported for int8 attention: "
        "load them into a model with LayerOptions::int8_attention, or export them again without it)");
  // nor does a float model load an int8 file
  auto f32 = std::make_unique<G32>();
  CHECK(load_safetensors(f32->params, file8.data(), file8.size(), nullptr, 0).error != LoadError::ok);

  ModelWeights wt;
  auto t_written = std::make_unique<T8>();
  wt.bind(t_written->params);
  const std::vector<unsigned char> tfile = file_of(t_written->params);
  auto t_loaded = std::make_unique<T8>();
  const LoadResult rt = load_safetensors(t_loaded->params, tfile.data(), tfile.size(), nullptr, 0);
  INFO(rt.message);
  REQUIRE(rt);
  const std::vector<int> src{1, 2, 3, 4, 5, 6};
  std::vector<int> out_a(7), out_b(7);
  std::vector<float> lp_a(7), lp_b(7);
  index_t len_a = 0, len_b = 0;
  REQUIRE(t_written->greedy_decode(src.data(), 5, 0, -1, out_a.data(), len_a, lp_a.data()) == Status::ok);
  REQUIRE(t_loaded->greedy_decode(src.data(), 5, 0, -1, out_b.data(), len_b, lp_b.data()) == Status::ok);
  CHECK(out_a == out_b);
  CHECK(same_bits(lp_a, lp_b));
}

TEST_CASE("the int8 decoder-only file tools/export.py --emit-model --quantize writes loads and runs",
          "[io][int8][kv_cache]") {
  // tests/fuzz/seeds/gpt_w8a8.safetensors: tests/fuzz/make_seeds.py, a seeded tools/stf_torch.py GPT
  // exported as tools/schema/models.hpp's GptW8a8
  using Model =
      Gpt<3, 5, 8, 2, 10, 1,
          LayerOptions{.norm = NormPlacement::pre, .activation = Activation::gelu, .format = NumberFormat::w8a8}, true>;
  std::vector<unsigned char> file;
  if (std::FILE* f = std::fopen(STF_FUZZ_SEEDS "/gpt_w8a8.safetensors", "rb")) {
    unsigned char chunk[4096];
    for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, f)) > 0;) file.insert(file.end(), chunk, chunk + n);
    std::fclose(f);
  }
  REQUIRE(!file.empty());
  auto model = std::make_unique<Model>();
  const LoadResult r = load_safetensors(model->params, file.data(), file.size(), nullptr, 0);
  INFO(r.message);
  REQUIRE(r);
  // linear2's reduction of 10 is stored padded to 12 (zeros in the padding)
  const auto& layer = model->params.stack.layers[0];
  for (index_t o = 0; o < 8; ++o)
    for (index_t k = 10; k < 12; ++k) CHECK(layer.ff.linear2.weight[qweight_index(10, 8, k, o)] == 0);
  const int prompt[2] = {3, 1};
  std::vector<float> lp(2 * 5), steps(5);
  REQUIRE(model->prefill(prompt, 2, lp.data(), PrefillOutput::every_row) == Status::ok);
  for (float v : lp) CHECK(std::isfinite(v));
  // prefill then a step: the step alone's bits
  REQUIRE(model->step(4, steps.data()) == Status::ok);
  model->reset();
  std::vector<float> alone(5);
  for (int t : {3, 1, 4}) REQUIRE(model->step(t, alone.data()) == Status::ok);
  CHECK(same_bits(steps, alone));
}
