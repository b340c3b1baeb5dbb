// Runtime misuse returns a status and writes nothing; odd numbers never cause UB or NaN from masks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

using namespace stf;

namespace {
/// Constant non-trivial weights for every parameter of `params`.
template <class Params>
std::vector<float> fill_params(Params& params, float scale = 0.05f) {
  index_t total = 0;
  params.visit([&](const Name&, ParamRef r) { total += r.size(); }, {});
  std::vector<float> storage(total);
  for (index_t i = 0; i < total; ++i) storage[i] = scale * static_cast<float>((i * 37) % 23) - 0.5f * scale * 11;
  index_t offset = 0;
  params.visit(
      [&](const Name&, ParamRef r) {
        *r.data = storage.data() + offset;
        offset += r.size();
      },
      {});
  return storage;
}
}  // namespace

TEST_CASE("valid length 0 or beyond SeqLen is refused and writes nothing", "[errors]") {
  EncoderLayer<6, 8, 2, 16> layer{};
  auto w = fill_params(layer.params);
  Tensor<6, 8> x{}, y{};
  for (float& v : y.data) v = 7.0f;
  std::vector<float> scratch(decltype(layer)::scratch_floats);
  CHECK(layer.forward(x, y, 0, scratch.data()) == Status::invalid_length);
  CHECK(layer.forward(x, y, 7, scratch.data()) == Status::invalid_length);
  for (float v : y.data) CHECK(v == 7.0f);
  CHECK(layer.forward(x, y, 6, scratch.data()) == Status::ok);
}

TEST_CASE("encoder-decoder refuses bad tokens, lengths and capacity without changing its state", "[errors]") {
  using M = Transformer<4, 5, 7, 7, 8, 2, 16, 1>;
  static M model;
  auto w = fill_params(model.params);
  const int src[4] = {1, 2, 3, 4};
  REQUIRE(model.encode(src, 4) == Status::ok);
  const std::vector<float> memory(model.memory().data, model.memory().data + 4 * 8);
  float logprobs[7] = {};

  const int bad_high[4] = {1, 7, 3, 4}, bad_neg[4] = {1, -1, 3, 4};
  CHECK(model.encode(bad_high, 4) == Status::token_out_of_range);
  CHECK(model.encode(bad_neg, 4) == Status::token_out_of_range);
  CHECK(model.encode(src, 0) == Status::invalid_length);
  CHECK(model.encode(src, 5) == Status::invalid_length);
  CHECK(std::equal(memory.begin(), memory.end(), model.memory().data));  // untouched

  CHECK(model.step(7, logprobs) == Status::token_out_of_range);
  CHECK(model.step(-3, logprobs) == Status::token_out_of_range);
  CHECK(model.position() == 0);
  for (int t = 0; t < 5; ++t) REQUIRE(model.step(t % 7, logprobs) == Status::ok);
  logprobs[0] = 42.0f;
  CHECK(model.step(0, logprobs) == Status::capacity_exceeded);
  CHECK(logprobs[0] == 42.0f);

  int out[5];
  index_t n = 99;
  CHECK(model.greedy_decode(src, 4, 9, -1, out, n) == Status::token_out_of_range);  // bad start token
  CHECK(n == 99);
  // a shorter source is padding, not an error
  CHECK(model.greedy_decode(src, 2, 0, -1, out, n) == Status::ok);
  CHECK(n == 5);
}

TEST_CASE("encoder-decoder masks: contradictions and fully masked rows are refused, writing nothing",
          "[errors][mask]") {
  using M = Transformer<4, 5, 7, 7, 8, 2, 16, 1>;
  static M model;
  auto w = fill_params(model.params);
  const int src[4] = {1, 2, 3, 4};
  KeyPaddingMask<4> pad{{0, 1, 0, 0}};  // a gap: key 1 is padding
  REQUIRE(model.encode(src, {.src_key_padding_mask = &pad}) == Status::ok);
  float logprobs[7];
  REQUIRE(model.step(1, logprobs) == Status::ok);
  const std::vector<float> memory(model.memory().data, model.memory().data + 4 * 8);
  const index_t position = model.position();
  auto refused = [&](const M::Masks& masks, Status want) {
    CHECK(model.encode(src, masks) == want);
    int out[5] = {-7, -7, -7, -7, -7};
    index_t n = 99;
    CHECK(model.greedy_decode(src, masks, 0, -1, out, n) == want);
    CHECK(n == 99);
    CHECK(out[1] == -7);
    CHECK(std::memcmp(memory.data(), model.memory().data, memory.size() * sizeof(float)) == 0);
    CHECK(model.position() == position);
  };
  // the step cannot run a non-causal target side: refused, not ignored
  refused({.tgt_is_causal = false}, Status::invalid_mask);
  TorchBoolMask<5, 5> tgt{};
  for (index_t i = 0; i < 5; ++i)
    for (index_t j = 0; j < 5; ++j) tgt.masked[i * 5 + j] = j > i;
  tgt.masked[3 * 5 + 1] = 1;  // one more masked key than causal
  refused({.tgt_mask = &tgt}, Status::invalid_mask);
  // a key padding mask that calls a key valid which the length calls padding
  KeyPaddingMask<4> none{};
  refused({.src_key_padding_mask = &none, .src_valid_len = 3}, Status::invalid_mask);
  refused({.src_valid_len = 3, .memory_key_padding_mask = &none}, Status::invalid_mask);
  // an all-masked source: no encoder row and no decoding position has a key (PyTorch: NaN)
  KeyPaddingMask<4> all{{1, 1, 1, 1}};
  refused({.src_key_padding_mask = &all}, Status::invalid_mask);
  refused({.src_key_padding_mask = &pad, .memory_key_padding_mask = &all}, Status::invalid_mask);
  // an encoder row with no key: src_mask's row 2 masks the keys the padding leaves
  TorchBoolMask<4, 4> src_mask{};
  src_mask.masked[2 * 4 + 0] = src_mask.masked[2 * 4 + 2] = src_mask.masked[2 * 4 + 3] = 1;
  refused({.src_mask = &src_mask, .src_key_padding_mask = &pad}, Status::invalid_mask);
  // causal over a source whose first key is padding leaves row 0 no key
  KeyPaddingMask<4> first{{1, 0, 0, 0}};
  refused({.src_key_padding_mask = &first, .src_is_causal = true}, Status::invalid_mask);
  // a decoding position with no memory key: memory_mask row 4 masks every key the padding leaves
  TorchBoolMask<5, 4> memory_mask{};
  memory_mask.masked[4 * 4 + 0] = memory_mask.masked[4 * 4 + 2] = memory_mask.masked[4 * 4 + 3] = 1;
  refused({.src_key_padding_mask = &pad, .memory_mask = &memory_mask}, Status::invalid_mask);
  // the same through float masks: -inf masks a key, so an all -inf row, or -inf over every key
  // the padding leaves, leaves no key
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  TorchFloatMask<4, 4> src_float{};
  for (index_t j = 0; j < 4; ++j) src_float.add[1 * 4 + j] = ninf;  // row 1: all -inf
  refused({.src_float_mask = &src_float}, Status::invalid_mask);
  src_float = {};
  src_float.add[2 * 4 + 0] = src_float.add[2 * 4 + 2] = src_float.add[2 * 4 + 3] = ninf;
  refused({.src_key_padding_mask = &pad, .src_float_mask = &src_float}, Status::invalid_mask);
  TorchFloatMask<5, 4> memory_float{};
  for (index_t j = 0; j < 4; ++j) memory_float.add[2 * 4 + j] = ninf;  // position 2: all -inf
  refused({.memory_float_mask = &memory_float}, Status::invalid_mask);
  memory_float = {};
  memory_float.add[4 * 4 + 0] = memory_float.add[4 * 4 + 2] = memory_float.add[4 * 4 + 3] = ninf;
  refused({.src_key_padding_mask = &pad, .memory_float_mask = &memory_float}, Status::invalid_mask);
  // and mixed: the bool mask takes keys 0 and 2 of position 4, the float mask key 3
  TorchBoolMask<5, 4> memory_bool{};
  memory_bool.masked[4 * 4 + 0] = memory_bool.masked[4 * 4 + 2] = 1;
  memory_float = {};
  memory_float.add[4 * 4 + 3] = ninf;
  refused({.src_key_padding_mask = &pad, .memory_mask = &memory_bool, .memory_float_mask = &memory_float},
          Status::invalid_mask);
  // lengths and tokens as the length API's
  refused({.src_valid_len = 0}, Status::invalid_length);
  refused({.src_valid_len = 5}, Status::invalid_length);
  const int bad[4] = {1, 7, 3, 4};
  CHECK(model.encode(bad, {.src_key_padding_mask = &pad}) == Status::token_out_of_range);
  CHECK(model.position() == position);
  CHECK(std::string(to_string(Status::invalid_mask)).find("mask") != std::string::npos);

  // what is accepted: the causal tgt_mask itself, and the masks above once they leave each row a key
  tgt.masked[3 * 5 + 1] = 0;
  CHECK(model.encode(src, {.tgt_mask = &tgt}) == Status::ok);
  memory_mask.masked[4 * 4 + 3] = 0;
  CHECK(model.encode(src, {.src_key_padding_mask = &pad, .memory_mask = &memory_mask}) == Status::ok);
  src_float.add[2 * 4 + 3] = -1e30f;  // finite: the key stays
  memory_float.add[4 * 4 + 3] = 5.0f;
  CHECK(model.encode(src, {.src_key_padding_mask = &pad,
                           .memory_mask = &memory_bool,
                           .src_float_mask = &src_float,
                           .memory_float_mask = &memory_float}) == Status::ok);
}

TEST_CASE("encoder-decoder masks: the length alone gives the length API's bits, masks reach the steps", "[mask]") {
  using M = Transformer<4, 5, 7, 7, 8, 2, 16, 1>;
  static M model;
  auto w = fill_params(model.params);
  const int src[4] = {1, 2, 3, 4};
  auto decode = [&](auto&& encode) {
    std::vector<float> lp(4 * 7);
    REQUIRE(encode() == Status::ok);
    for (index_t t = 0; t < 4; ++t) REQUIRE(model.step(static_cast<int>(t + 1), lp.data() + t * 7) == Status::ok);
    return lp;
  };
  const auto by_length = decode([&] { return model.encode(src, 3); });
  const auto by_masks = decode([&] { return model.encode(src, {.src_valid_len = 3}); });
  CHECK(std::memcmp(by_length.data(), by_masks.data(), by_length.size() * sizeof(float)) == 0);
  // the same padding as a key padding mask (the pad token embedded, never attended to)
  KeyPaddingMask<4> trailing{{0, 0, 0, 1}};
  const auto by_pad = decode([&] { return model.encode(src, {.src_key_padding_mask = &trailing}); });
  for (std::size_t i = 0; i < by_pad.size(); ++i) CHECK(by_pad[i] == Approx(by_length[i]).margin(1e-6));
  // a gap changes the result, and the memory key padding alone (only the decoder) changes it again
  KeyPaddingMask<4> gap{{0, 1, 0, 0}};
  const auto by_gap = decode([&] { return model.encode(src, {.src_key_padding_mask = &gap}); });
  const auto memory_gap = decode([&] { return model.encode(src, {.memory_key_padding_mask = &gap}); });
  const auto none = decode([&] { return model.encode(src, 4); });
  CHECK(std::memcmp(by_gap.data(), none.data(), none.size() * sizeof(float)) != 0);
  CHECK(std::memcmp(memory_gap.data(), none.data(), none.size() * sizeof(float)) != 0);
  CHECK(std::memcmp(memory_gap.data(), by_gap.data(), none.size() * sizeof(float)) != 0);
  // a length and a key padding mask that agree (key 3 padding by both): the same decoding as the
  // mask alone, whose pad token is embedded but never attended to
  KeyPaddingMask<4> gap_tail{{0, 1, 0, 1}};
  const auto both = decode([&] { return model.encode(src, {.src_key_padding_mask = &gap_tail, .src_valid_len = 3}); });
  const auto mask_only = decode([&] { return model.encode(src, {.src_key_padding_mask = &gap_tail}); });
  for (std::size_t i = 0; i < both.size(); ++i) CHECK(both[i] == Approx(mask_only[i]).margin(1e-6));
  CHECK(std::memcmp(both.data(), by_gap.data(), both.size() * sizeof(float)) != 0);
  // a later length-only encode drops the masks of the one before
  const auto again = decode([&] { return model.encode(src, 4); });
  CHECK(std::memcmp(again.data(), none.data(), none.size() * sizeof(float)) == 0);
}

TEST_CASE("encoder-decoder float masks: 0 / -inf is the bool mask's bits, finite values and rows reach the steps",
          "[mask]") {
  using M = Transformer<4, 5, 7, 7, 8, 2, 16, 1>;
  static M model;
  auto w = fill_params(model.params);
  const int src[4] = {1, 2, 3, 4};
  std::vector<float> memory(4 * 8);
  auto decode = [&](const M::Masks& masks) {
    std::vector<float> lp(4 * 7);
    REQUIRE(model.encode(src, masks) == Status::ok);
    std::memcpy(memory.data(), model.memory().data, memory.size() * sizeof(float));
    for (index_t t = 0; t < 4; ++t) REQUIRE(model.step(static_cast<int>(t + 1), lp.data() + t * 7) == Status::ok);
    return lp;
  };
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  KeyPaddingMask<4> gap{{0, 1, 0, 0}};
  // bool masks that leave every row a key, and the same as 0 / -inf float masks
  TorchBoolMask<4, 4> src_mask{};
  src_mask.masked[0 * 4 + 2] = src_mask.masked[1 * 4 + 0] = src_mask.masked[3 * 4 + 3] = 1;
  TorchBoolMask<5, 4> memory_mask{};
  memory_mask.masked[0 * 4 + 3] = memory_mask.masked[2 * 4 + 0] = memory_mask.masked[3 * 4 + 2] = 1;
  TorchFloatMask<4, 4> src_float{};
  for (index_t i = 0; i < 16; ++i) src_float.add[i] = src_mask.masked[i] ? ninf : 0.0f;
  TorchFloatMask<5, 4> memory_float{};
  for (index_t i = 0; i < 20; ++i) memory_float.add[i] = memory_mask.masked[i] ? ninf : 0.0f;

  const auto by_bool = decode({.src_mask = &src_mask, .src_key_padding_mask = &gap, .memory_mask = &memory_mask});
  const std::vector<float> bool_memory = memory;
  const auto by_float =
      decode({.src_key_padding_mask = &gap, .src_float_mask = &src_float, .memory_float_mask = &memory_float});
  CHECK(same(by_float, by_bool));
  CHECK(same(memory, bool_memory));
  // each mask on its own side: src_float_mask the encoder (the memory), memory_float_mask the steps
  const auto none = decode({.src_key_padding_mask = &gap});
  const std::vector<float> none_memory = memory;
  CHECK(!same(none, by_bool));
  const auto src_only = decode({.src_key_padding_mask = &gap, .src_float_mask = &src_float});
  CHECK(same(memory, bool_memory));
  CHECK(same(src_only, decode({.src_mask = &src_mask, .src_key_padding_mask = &gap})));
  const auto memory_only = decode({.src_key_padding_mask = &gap, .memory_float_mask = &memory_float});
  CHECK(same(memory, none_memory));
  CHECK(same(memory_only, decode({.src_key_padding_mask = &gap, .memory_mask = &memory_mask})));
  CHECK(!same(memory_only, none));

  // finite values change the result: an all-finite src_float_mask changes the memory, and a finite
  // memory_float_mask row p changes the steps from p on only (the step at p reads row p)
  TorchFloatMask<4, 4> src_finite{};
  for (index_t i = 0; i < 16; ++i) src_finite.add[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  const auto by_src_finite = decode({.src_key_padding_mask = &gap, .src_float_mask = &src_finite});
  CHECK(!same(memory, none_memory));
  CHECK(!same(by_src_finite, none));
  TorchFloatMask<5, 4> memory_finite{};
  for (index_t j = 0; j < 4; ++j) memory_finite.add[2 * 4 + j] = 0.5f * static_cast<float>(j) - 1.0f;
  const auto by_memory_finite = decode({.src_key_padding_mask = &gap, .memory_float_mask = &memory_finite});
  CHECK(same(memory, none_memory));
  CHECK(std::memcmp(by_memory_finite.data(), none.data(), 2 * 7 * sizeof(float)) == 0);              // steps 0, 1
  CHECK(std::memcmp(by_memory_finite.data() + 2 * 7, none.data() + 2 * 7, 7 * sizeof(float)) != 0);  // step 2
  // a later length-only encode drops the float masks of the one before
  auto by_length = [&] {
    std::vector<float> lp(4 * 7);
    REQUIRE(model.encode(src, 4) == Status::ok);
    for (index_t t = 0; t < 4; ++t) REQUIRE(model.step(static_cast<int>(t + 1), lp.data() + t * 7) == Status::ok);
    return lp;
  };
  const auto plain = by_length();
  (void)decode({.src_float_mask = &src_finite, .memory_float_mask = &memory_finite});
  CHECK(same(by_length(), plain));
}

TEST_CASE("a fully masked attention row is finite: zeros with -inf fill, uniform with -1e9", "[attention]") {
  constexpr index_t Sq = 2, Sk = 3, D = 2;
  const float q[Sq * D] = {1, 2, 3, 4}, k[Sk * D] = {1, 0, 0, 1, 1, 1}, v[Sk * D] = {1, 2, 3, 4, 5, 6};
  BoolMask<Sq, Sk> m{{1, 0, 1, 0, 0, 0}};  // row 1 fully masked
  Tensor<Sq, D> out{};
  Tensor<Sq, Sk> weights{};
  using A = ScaledDotProductAttention<Sq, Sk, D>;
  float scratch[A::scratch_floats];
  REQUIRE(A::forward(CMat<Sq, D>(q), CMat<Sk, D>(k), CMat<Sk, D>(v), out, A::mask(m, MaskFill::neg_inf), scratch,
                     weights.data) == Status::ok);
  CHECK(out.data[2] == 0.0f);
  CHECK(out.data[3] == 0.0f);
  CHECK(weights.data[3] == 0.0f);
  REQUIRE(A::forward(CMat<Sq, D>(q), CMat<Sk, D>(k), CMat<Sk, D>(v), out, A::mask(m, MaskFill::neg_1e9), scratch,
                     weights.data) == Status::ok);
  CHECK(weights.data[3] == Approx(1.0 / 3));
  CHECK(out.data[2] == Approx(3.0));  // mean of the values' first column
  CHECK(out.data[3] == Approx(4.0));
}

// What NaN and Inf inputs do, over whole outputs. A non-finite value in a row that others attend
// to reaches every row that attends to it: through its key (a NaN score, or +inf: exp(inf - inf))
// or its value (0 · inf), and within its own row through LayerNorm (inf - inf). A masked key is
// never read (kernels/reference.hpp): a NaN or Inf in a padded position, in a causally later
// target row or in a padded memory row reaches no row that does not attend to it. (PyTorch 1.13
// differs there: its nn.Transformer*Layer adds -inf to the masked scores and multiplies the zero
// weights by the values, so one NaN anywhere, masked or not, makes every output NaN; measured with
// torch 1.13.1: encoder layer with a NaN or Inf in a padded row, decoder with a NaN in a later
// target row or in a padded memory row: all outputs NaN.)
namespace {
/// Rows [0, rows) x cols of y: per row, whether every element is NaN (1), every one finite (0),
/// or a mix (2).
std::vector<int> row_states(const float* y, index_t rows, index_t cols) {
  std::vector<int> states(rows);
  for (index_t r = 0; r < rows; ++r) {
    index_t nan = 0, finite = 0;
    for (index_t c = 0; c < cols; ++c) {
      nan += std::isnan(y[r * cols + c]) ? 1 : 0;
      finite += std::isfinite(y[r * cols + c]) ? 1 : 0;
    }
    states[r] = nan == cols ? 1 : finite == cols ? 0 : 2;
  }
  return states;
}
bool same_bits(const float* a, const float* b, index_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }
}  // namespace

TEST_CASE("NaN and Inf inputs in attended rows make every output NaN", "[errors][nan]") {
  using L = EncoderLayer<6, 8, 2, 16>;
  L layer{};
  auto w = fill_params(layer.params);
  std::vector<float> scratch(L::scratch_floats);
  Tensor<6, 8> clean{};
  for (index_t i = 0; i < 48; ++i) clean.data[i] = 0.1f * static_cast<float>((i * 5) % 11) - 0.5f;
  // one NaN, +inf or -inf element in one row (every row attends to it), or all three in rows 0-2
  for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    for (const index_t at : {index_t{3}, index_t{2 * 8 + 5}, index_t{5 * 8}}) {
      Tensor<6, 8> x = clean, y{};
      x.data[at] = bad;
      REQUIRE(layer.forward(x, y, 6, scratch.data()) == Status::ok);
      INFO("x[" << at << "] = " << bad);
      CHECK(row_states(y.data, 6, 8) == std::vector<int>(6, 1));
    }
  }
  Tensor<6, 8> x = clean, y{};
  x.data[3] = std::nanf("");
  x.data[9] = INFINITY;
  x.data[17] = -INFINITY;
  REQUIRE(layer.forward(x, y, 6, scratch.data()) == Status::ok);
  CHECK(row_states(y.data, 6, 8) == std::vector<int>(6, 1));
  // the annotated layer (pre-norm, its LayerNorm, -1e9 fill) too
  EncoderLayer<6, 8, 2, 16, kAnnotated> annotated{};
  auto wa = fill_params(annotated.params);
  x = clean;
  x.data[20] = std::nanf("");
  REQUIRE(annotated.forward(x, y, 6, scratch.data()) == Status::ok);
  CHECK(row_states(y.data, 6, 8) == std::vector<int>(6, 1));
}

TEST_CASE("a NaN or Inf behind a mask reaches only its own row", "[errors][nan]") {
  Tensor<6, 8> clean{};
  for (index_t i = 0; i < 48; ++i) clean.data[i] = 0.1f * static_cast<float>((i * 5) % 11) - 0.5f;
  // encoder, 4 valid positions: a non-finite value in padded row 5 (both layer flavours, so
  // both fills): row 5's output is NaN (LayerNorm, or its own non-finite query), every other
  // row, padded row 4 included, has the bits of the clean input's
  auto encoder = [&](auto layer) {
    using L = decltype(layer);
    auto w = fill_params(layer.params);
    std::vector<float> scratch(L::scratch_floats);
    Tensor<6, 8> want{};
    REQUIRE(layer.forward(clean, want, 4, scratch.data()) == Status::ok);
    for (const float bad : {std::nanf(""), INFINITY, -INFINITY}) {
      Tensor<6, 8> x = clean, y{};
      x.data[5 * 8 + 2] = bad;
      REQUIRE(layer.forward(x, y, 4, scratch.data()) == Status::ok);
      INFO(L::name << (L::options.fill == MaskFill::neg_1e9 ? " (-1e9 fill)" : " (-inf fill)")
                   << ", padded x[5, 2] = " << bad);
      CHECK(row_states(y.data, 6, 8) == std::vector<int>{0, 0, 0, 0, 0, 1});
      CHECK(same_bits(y.data, want.data, 5 * 8));
    }
  };
  encoder(EncoderLayer<6, 8, 2, 16>{});
  encoder(EncoderLayer<6, 8, 2, 16, kAnnotated>{});

  // decoder: a NaN in target row 3 reaches rows 3-5 (causal), not rows 0-2; a NaN in memory row
  // 4 past mem_valid_len = 4 reaches no row
  using D = DecoderLayer<6, 5, 8, 2, 16>;
  D dec{};
  auto wd = fill_params(dec.params);
  std::vector<float> scratch(D::scratch_floats);
  Tensor<5, 8> memory{};
  for (index_t i = 0; i < 40; ++i) memory.data[i] = 0.07f * static_cast<float>((i * 3) % 13) - 0.4f;
  Tensor<6, 8> want{}, y{};
  REQUIRE(dec.forward(clean, memory, want, 4, scratch.data()) == Status::ok);
  for (const float bad : {std::nanf(""), INFINITY}) {
    INFO("decoder, target x[3, 1] = " << bad);
    Tensor<6, 8> x = clean;
    x.data[3 * 8 + 1] = bad;
    REQUIRE(dec.forward(x, memory, y, 4, scratch.data()) == Status::ok);
    CHECK(row_states(y.data, 6, 8) == std::vector<int>{0, 0, 0, 1, 1, 1});
    CHECK(same_bits(y.data, want.data, 3 * 8));
  }
  for (const float bad : {std::nanf(""), -INFINITY}) {
    INFO("decoder, padded memory[4, 0] = " << bad);
    Tensor<5, 8> m = memory;
    m.data[4 * 8] = bad;
    REQUIRE(dec.forward(clean, m, y, 4, scratch.data()) == Status::ok);
    CHECK(row_states(y.data, 6, 8) == std::vector<int>(6, 0));
    CHECK(same_bits(y.data, want.data, 6 * 8));
    // attended (mem_valid_len 5): every row
    REQUIRE(dec.forward(clean, m, y, 5, scratch.data()) == Status::ok);
    CHECK(row_states(y.data, 6, 8) == std::vector<int>(6, 1));
  }
}

TEST_CASE("binding from a weight table is all-or-nothing and names the offending tensor", "[bind]") {
  using L = LayerNorm<4>;
  L ln{};
  static const Tensor<4> g{{1, 1, 1, 1}}, b{{0, 0, 0, 0}}, g3{{1, 1, 1, 0}};
  const WeightEntry good[] = {{"weight", g.data, 4}, {"bias", b.data, 4}};
  REQUIRE(bind_table(ln.params, good).status == Status::ok);
  CHECK(ln.params.weight.data == g.data);

  const WeightEntry missing[] = {{"weight", g3.data, 4}};
  BindResult r = bind_table(ln.params, missing);
  CHECK(r.status == Status::missing_weight);
  CHECK(std::string(r.name.c_str()) == "bias");
  CHECK(ln.params.weight.data == g.data);  // unchanged

  const WeightEntry wrong_size[] = {{"weight", g3.data, 3}, {"bias", b.data, 4}};
  r = bind_table(ln.params, wrong_size);
  CHECK(r.status == Status::weight_shape_mismatch);
  CHECK(std::string(r.name.c_str()) == "weight");
  CHECK(r.expected == 4);
  CHECK(r.found == 3);

  const WeightEntry duplicate[] = {{"weight", g3.data, 4}, {"bias", b.data, 4}, {"bias", b.data, 4}};
  CHECK(bind_table(ln.params, duplicate).status == Status::duplicate_weight);
  const WeightEntry unexpected[] = {{"weight", g3.data, 4}, {"bias", b.data, 4}, {"gamma", b.data, 4}};
  r = bind_table(ln.params, unexpected);
  CHECK(r.status == Status::unexpected_weight);
  CHECK(std::string(r.name.c_str()) == "gamma");
  CHECK(ln.params.weight.data == g.data);
}

// (that no two buffers alive at the same step share bytes: unit_memory_plan)
TEST_CASE("the memory plan's byte counts: arena_bytes is the plan's arena, offsets aligned, reuse saves bytes",
          "[plan]") {
  using M = Transformer<10, 12, 13, 13, 32, 4, 64, 2>;
  const auto& plan = M::plan;
  CHECK(plan.arena_floats * sizeof(float) == M::arena_bytes);
  using S = Sequential<8, Embedding<20, 16>, PositionalEncoding<8, 16>, EncoderStack<EncoderLayer<8, 16, 2, 32>, 2>,
                       Classifier<16, 5>>;
  for (index_t i = 0; i < S::plan.offset.size(); ++i) CHECK(S::plan.offset[i] % 16 == 0);
  CHECK(S::arena_bytes <= S::arena_unplanned_bytes);
}

TEST_CASE("the profiler records each layer once per call, by its parameter prefix", "[profiler]") {
  using M = Transformer<4, 5, 7, 7, 8, 2, 16, 2>;
  static M model;
  auto w = fill_params(model.params);
  std::uint64_t ticks = 0;
  Profiler prof([&] { return ++ticks; });
  const int src[4] = {1, 2, 3, 4};
  int out[5];
  index_t n = 0;
  REQUIRE(model.greedy_decode(src, 4, 0, -1, out, n, prof) == Status::ok);
  bool saw_decoder_1 = false;
  for (index_t i = 0; i < prof.size(); ++i) {
    if (prof[i].path == LayerPath("decoder") / "layers" / index_t{1}) {
      saw_decoder_1 = true;
      CHECK(prof[i].calls == 4);  // 4 steps for 5 tokens
      CHECK(prof[i].ticks == 4);  // one tick per begin/end pair with this clock
    }
  }
  CHECK(saw_decoder_1);
  CHECK(prof.dropped() == 0);
}
