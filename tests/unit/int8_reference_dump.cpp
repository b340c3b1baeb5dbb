// Prints the int8 reference's results (stf::ref::quantize_row, product_i8, linear_w8a8, linear_w8a32,
// attention_row_w8a8) on a fixed plan of cases, for tools/check_int8_reference.py to recompute
// independently (NumPy float32, exact fractions and Python integers) and compare bit for bit. Floats
// are printed as their bit patterns.
//
// Output, the linear cases, then the attention cases:
//   case <name> <rows> <in> <out>
//   x <rows*in float bits>          the input, row-major
//   w <in*out int8>                 the weight, logical order Wᵀ[k, o], k-major
//   stored <quad_padded(in)*out int8>  the weight as product_i8 reads it (k-quads)
//   sw <out float bits>  b <out float bits>
//   q <rows*in int8>  s <rows float bits>   quantize_row per row
//   acc <rows*out int32>                     product_i8
//   y8 <rows*out float bits>  y32 <rows*out float bits>   linear_w8a8, linear_w8a32 (no activation)
//
//   attention <name> <rows> <head_dim> <keys> <fill: 0 -inf, 1 -1e9>
//   q <rows*head_dim int8>  sq <rows float bits>   query rows (quantize_row of random rows)
//   k <keys*head_dim int8>  sk <keys float bits>   key rows, likewise
//   v <keys*head_dim int8>  sv <keys float bits>   value rows, likewise
//   mask <row> <key_end> <allow: keys 0/1, or -> <add: keys float bits, or ->   one line per row
//   out <rows*head_dim float bits>                 ref::attention_rows_w8a8
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <statiformer/kernels/reference.hpp>

namespace {

using stf::index_t;

struct Rng {  // xorshift64*: the same values on every platform
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  std::uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
  std::int8_t i8() { return static_cast<std::int8_t>(static_cast<int>(next() % 255) - 127); }
};

void print_floats(const char* tag, const std::vector<float>& v) {
  std::printf("%s", tag);
  for (float f : v) std::printf(" %08" PRIx32, std::bit_cast<std::uint32_t>(f));
  std::printf("\n");
}

template <class T>
void print_ints(const char* tag, const std::vector<T>& v) {
  std::printf("%s", tag);
  for (T i : v) std::printf(" %ld", static_cast<long>(i));
  std::printf("\n");
}

enum class Fill { random, ties, zero_row, nan_row, inf_row, constant, tiny_rows };

void run_case(const std::string& name, index_t rows, index_t in, index_t out, Fill fill, Rng& rng) {
  std::vector<float> x(rows * in), sw(out), b(out);
  for (index_t r = 0; r < rows; ++r)
    for (index_t k = 0; k < in; ++k) {
      float v = rng.uniform(-3.0f, 3.0f);
      if (fill == Fill::ties) {
        // 127 at k = 0 sets the scale to exactly 1 (inv = 1), so the halves below are ties
        v = k == 0 ? 127.0f : static_cast<float>(static_cast<int>(rng.next() % 255) - 127) + 0.5f;
        if (v > 127.0f) v = 126.5f;
      }
      if (fill == Fill::constant) v = 2.5f;
      if (r == 1 && fill == Fill::zero_row) v = 0.0f;
      // row 1 below kMinQuantizedMax (zeros, scale 0; 127 / a would overflow), row 2 at it (kept,
      // with denormals among its values)
      if (r == 1 && fill == Fill::tiny_rows) v *= 1e-37f;
      if (r == 2 && fill == Fill::tiny_rows) v = k == 0 ? stf::kMinQuantizedMax : v * 1e-37f;
      if (r == 1 && k == in / 2 && fill == Fill::nan_row) v = std::numeric_limits<float>::quiet_NaN();
      if (r == 1 && k == in / 2 && fill == Fill::inf_row) v = -std::numeric_limits<float>::infinity();
      x[r * in + k] = v;
    }
  std::vector<std::int8_t> w(in * out), stored(stf::quad_padded(in) * out, 0);
  for (index_t k = 0; k < in; ++k)
    for (index_t o = 0; o < out; ++o) {
      const std::int8_t v = fill == Fill::constant ? std::int8_t{127} : rng.i8();
      w[k * out + o] = v;
      stored[stf::qweight_index(in, out, k, o)] = v;
    }
  for (index_t o = 0; o < out; ++o) {
    sw[o] = rng.uniform(1e-4f, 2e-2f);
    b[o] = rng.uniform(-0.5f, 0.5f);
  }
  std::vector<std::int8_t> q(rows * in), q_row(in);
  std::vector<float> s(rows), y8(rows * out), y32(rows * out);
  std::vector<std::int32_t> acc(rows * out);
  for (index_t r = 0; r < rows; ++r) s[r] = stf::ref::quantize_row(x.data() + r * in, in, q.data() + r * in);
  stf::ref::product_i8(q.data(), rows, in, stored.data(), out, acc.data());
  stf::ref::linear_w8a8(x.data(), rows, in, stored.data(), sw.data(), b.data(), out, y8.data(), q_row.data());
  stf::ref::linear_w8a32(x.data(), rows, in, stored.data(), sw.data(), b.data(), out, y32.data());

  std::printf("case %s %zu %zu %zu\n", name.c_str(), rows, in, out);
  print_floats("x", x);
  print_ints("w", w);
  print_ints("stored", stored);
  print_floats("sw", sw);
  print_floats("b", b);
  print_ints("q", q);
  print_floats("s", s);
  print_ints("acc", acc);
  print_floats("y8", y8);
  print_floats("y32", y32);
}

enum class Masks { prefix, causal, holes, additive, none_allowed };

/// One attention case: random float rows quantized by quantize_row (their scales as the layers get
/// them), the rows' masks of the kind asked, ref::attention_rows_w8a8.
void run_attention(const std::string& name, index_t rows, index_t hd, index_t keys, Masks kind, stf::MaskFill fill,
                   float amplitude, Rng& rng) {
  auto quantized = [&](index_t n, std::vector<std::int8_t>& q, std::vector<float>& s) {
    q.assign(n * hd, 0);
    s.assign(n, 0.0f);
    std::vector<float> x(hd);
    for (index_t r = 0; r < n; ++r) {
      for (float& v : x) v = rng.uniform(-amplitude, amplitude);
      if (r == n / 2 && kind == Masks::holes) x.assign(hd, 0.0f);  // a zero row: scale 0
      s[r] = stf::ref::quantize_row(x.data(), hd, q.data() + r * hd);
    }
  };
  std::vector<std::int8_t> q, k, v;
  std::vector<float> sq, sk, sv;
  quantized(rows, q, sq);
  quantized(keys, k, sk);
  quantized(keys, v, sv);
  std::vector<std::uint8_t> allow(rows * keys, 1);
  std::vector<float> add(rows * keys, 0.0f);
  std::vector<stf::ref::MaskArrays> arrays(rows);
  std::vector<stf::ref::RowMask> masks(rows);
  for (index_t r = 0; r < rows; ++r) {
    masks[r].key_end = kind == Masks::causal ? keys - rows + r + 1 : keys;  // (keys >= rows here)
    if (kind == Masks::holes || kind == Masks::none_allowed) {
      for (index_t j = 0; j < keys; ++j)
        allow[r * keys + j] =
            kind == Masks::none_allowed && r == 1 ? 0 : static_cast<std::uint8_t>(rng.next() % 3 != 0);
      arrays[r].allow = allow.data() + r * keys;
      masks[r].arrays = &arrays[r];
    }
    if (kind == Masks::additive) {
      for (index_t j = 0; j < keys; ++j)
        add[r * keys + j] = rng.next() % 7 == 0 ? -std::numeric_limits<float>::infinity() : rng.uniform(-2.0f, 2.0f);
      arrays[r].add = add.data() + r * keys;
      masks[r].arrays = &arrays[r];
    }
  }
  std::vector<float> p(stf::attention_w8a8_scratch_floats()), out(rows * hd);
  stf::ref::attention_rows_w8a8(q.data(), hd, sq.data(), rows, k.data(), hd, sk.data(), v.data(), hd, sv.data(), hd,
                                keys, masks.data(), fill, p.data(), out.data(), hd);

  std::printf("attention %s %zu %zu %zu %d\n", name.c_str(), rows, hd, keys, fill == stf::MaskFill::neg_1e9 ? 1 : 0);
  print_ints("q", q);
  print_floats("sq", sq);
  print_ints("k", k);
  print_floats("sk", sk);
  print_ints("v", v);
  print_floats("sv", sv);
  for (index_t r = 0; r < rows; ++r) {
    std::printf("mask %zu %zu", r, masks[r].key_end);
    if (arrays[r].allow) {
      std::printf(" ");
      for (index_t j = 0; j < keys; ++j) std::printf("%d", arrays[r].allow[j] ? 1 : 0);
    } else {
      std::printf(" -");
    }
    if (arrays[r].add) {
      std::printf(" ");
      for (index_t j = 0; j < keys; ++j)
        std::printf("%s%08" PRIx32, j ? "," : "", std::bit_cast<std::uint32_t>(arrays[r].add[j]));
    } else {
      std::printf(" -");
    }
    std::printf("\n");
  }
  print_floats("out", out);
}

}  // namespace

int main() {
  Rng rng;
  // sizes around the k-quads (in % 4) and the weight panels (out around kWeightPanel = 64)
  const index_t ins[] = {1, 3, 4, 5, 8, 17, 64};
  const index_t outs[] = {1, 2, 7, 64, 65, 130};
  for (index_t in : ins)
    for (index_t out : outs)
      run_case("random_" + std::to_string(in) + "x" + std::to_string(out), 3, in, out, Fill::random, rng);
  run_case("ties", 4, 33, 5, Fill::ties, rng);
  run_case("zero_row", 3, 9, 6, Fill::zero_row, rng);
  run_case("nan_row", 3, 9, 6, Fill::nan_row, rng);
  run_case("inf_row", 3, 9, 6, Fill::inf_row, rng);
  run_case("tiny_rows", 3, 9, 6, Fill::tiny_rows, rng);
  // the longest reduction that cannot overflow: every product 127 · 127 of one sign
  run_case("max_in", 1, stf::ref::kMaxQuantizedIn, 2, Fill::constant, rng);
  // the attention: head dims around the vector widths, key counts around the key block (32), every
  // kind of mask, both fills; amplitudes that give flat and peaked softmaxes
  const index_t head_dims[] = {1, 8, 17, 64};
  const index_t key_counts[] = {1, 31, 33, 70};
  for (index_t hd : head_dims)
    for (index_t keys : key_counts)
      run_attention("keys" + std::to_string(keys) + "_hd" + std::to_string(hd), 3, hd, keys, Masks::prefix,
                    stf::MaskFill::neg_inf, hd == 64 ? 4.0f : 1.5f, rng);
  run_attention("causal", 5, 16, 40, Masks::causal, stf::MaskFill::neg_inf, 3.0f, rng);
  run_attention("holes", 4, 16, 70, Masks::holes, stf::MaskFill::neg_inf, 3.0f, rng);
  run_attention("additive", 3, 24, 45, Masks::additive, stf::MaskFill::neg_inf, 2.0f, rng);
  run_attention("none_allowed_inf", 3, 8, 20, Masks::none_allowed, stf::MaskFill::neg_inf, 2.0f, rng);
  run_attention("none_allowed_1e9", 3, 8, 20, Masks::none_allowed, stf::MaskFill::neg_1e9, 2.0f, rng);
  run_attention("peaked", 2, 32, 66, Masks::prefix, stf::MaskFill::neg_inf, 40.0f, rng);
  return 0;
}
