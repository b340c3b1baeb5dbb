// Prints the int8 reference's results (stf::ref::quantize_row, product_i8, linear_w8a8, linear_w8a32)
// on a fixed plan of cases, for tools/check_int8_reference.py to recompute independently (NumPy
// float32 and Python integers) and compare bit for bit. Floats are printed as their bit patterns.
//
// Output, one case after another:
//   case <name> <rows> <in> <out>
//   x <rows*in float bits>          the input, row-major
//   w <in*out int8>                 the weight, logical order Wᵀ[k, o], k-major
//   stored <quad_padded(in)*out int8>  the weight as product_i8 reads it (k-quads)
//   sw <out float bits>  b <out float bits>
//   q <rows*in int8>  s <rows float bits>   quantize_row per row
//   acc <rows*out int32>                     product_i8
//   y8 <rows*out float bits>  y32 <rows*out float bits>   linear_w8a8, linear_w8a32 (no activation)
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

enum class Fill { random, ties, zero_row, nan_row, inf_row, constant };

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
  // the longest reduction that cannot overflow: every product 127 · 127 of one sign
  run_case("max_in", 1, stf::ref::kMaxQuantizedIn, 2, Fill::constant, rng);
  return 0;
}
