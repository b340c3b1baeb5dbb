// Attention against an independent oracle: softmax(Q·Kᵀ / √d + mask) · V computed in double with
// plain loops (no ref:: kernel, no AttentionMask), for 1 to 300 keys (across the 32-key blocks and
// the 128-key spans of the streaming kernels), head dims around the vector widths and query row
// counts around the row groups (6 and 12), with padding, causal and boolean masks and both fills,
// through every kernel variant of the registry and through the attention layers, streaming and
// with weights.
//
// The data makes the float scores exact where it can: queries are multiples of 1/4 in [-8, 8],
// keys multiples of 1/8 in [-1, 1], so every product is a multiple of 1/32 and every partial sum
// of at most 64 of them fits in float's 24 bits; dividing by √d is then exact when √d is a power
// of two (d = 16, 64) and one rounding otherwise. The scores spread over about ±10, so weights
// run from 1 down to about e⁻²⁰, all normal floats. Half of the value columns are "probes" (value
// 1 at one key, 0 elsewhere): their output is that key's attention weight, so the streaming mode's
// weights are checked relative to themselves too, not only against the largest value.
//
// Tolerances, in units of u = 2⁻²⁴ (half an ulp of 1), from the float operations (see the
// comments at kWeightUnits and kMixUnits); each test prints the measured maxima.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <boost/hana/for_each.hpp>

#include <statiformer/kernels/registry.hpp>
#include <statiformer/statiformer.hpp>

using namespace stf;

namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of float

/// A small LCG (the same numbers on every target).
struct Lcg {
  std::uint32_t s;
  std::uint32_t next() { return s = s * 1664525u + 1013904223u; }
  /// integer in [lo, hi]
  int in(int lo, int hi) { return lo + static_cast<int>((next() >> 8) % static_cast<std::uint32_t>(hi - lo + 1)); }
  float unit() { return (static_cast<float>(next() >> 8) / 16777216.0f - 0.5f) * 2.0f; }
};

enum class MaskKind { none, padding, causal, boolean, ragged };
const char* kind_name(MaskKind k) {
  switch (k) {
    case MaskKind::none:
      return "none";
    case MaskKind::padding:
      return "padding";
    case MaskKind::causal:
      return "causal";
    case MaskKind::boolean:
      return "bool";
    case MaskKind::ragged:
      return "ragged prefixes";
  }
  return "?";
}

/// One attention problem: Q [nq, d], K and V [nk, d] (row-major, unpadded) and which keys each
/// query may attend to, element by element.
struct Problem {
  index_t nq = 0, nk = 0, d = 0;
  MaskKind kind = MaskKind::none;
  index_t valid = 0, causal_offset = 0;  // padding / causal parameters
  MaskFill fill = MaskFill::neg_inf;
  std::vector<float> q, k, v;
  std::vector<std::uint8_t> allow;  // [nq, nk]: the mask as plain index arithmetic / a pattern
  std::vector<index_t> key_end;     // ragged prefixes: row r attends to keys [0, key_end[r])
  bool probes = true;               // V's even columns are one-hot (see probe_key)
  bool quantized = true;            // Q and K multiples of 1/4 and 1/8 (exact products and sums)

  bool allowed(index_t i, index_t j) const { return allow[i * nk + j] != 0; }
};

/// Column c of V is a probe (one-hot) when c is even: key probe_key(c) has value 1, the others 0.
index_t probe_key(index_t c, index_t nk) { return (c * 37 + nk / 3) % nk; }

Problem make_problem(index_t nq, index_t nk, index_t d, MaskKind kind, MaskFill fill, std::uint32_t seed,
                     bool quantized = true) {
  Problem p;
  p.nq = nq;
  p.nk = nk;
  p.d = d;
  p.kind = kind;
  p.fill = fill;
  Lcg g{seed * 2654435761u + static_cast<std::uint32_t>(nq * 131 + nk * 7 + d)};
  p.q.resize(nq * d);
  p.k.resize(nk * d);
  p.v.resize(nk * d);
  p.quantized = quantized;
  for (float& x : p.q) x = quantized ? static_cast<float>(g.in(-32, 32)) / 4.0f : 8.0f * g.unit();
  for (float& x : p.k) x = quantized ? static_cast<float>(g.in(-8, 8)) / 8.0f : g.unit();
  for (index_t j = 0; j < nk; ++j)
    for (index_t c = 0; c < d; ++c) p.v[j * d + c] = c % 2 == 0 ? (j == probe_key(c, nk) ? 1.0f : 0.0f) : g.unit();
  p.allow.assign(nq * nk, 0);
  p.valid = nk;
  switch (kind) {
    case MaskKind::none:
      std::fill(p.allow.begin(), p.allow.end(), std::uint8_t{1});
      break;
    case MaskKind::padding:
      // key k masked iff k >= valid: valid just past, on or before a block boundary
      p.valid = nk > 2 ? nk - static_cast<index_t>(g.in(0, 2)) : nk;
      if (nk > 33 && seed % 3 == 0) p.valid = 33;
      for (index_t i = 0; i < nq; ++i)
        for (index_t j = 0; j < nk; ++j) p.allow[i * nk + j] = j < p.valid;
      break;
    case MaskKind::causal:
      // key k masked for query q iff k > q + offset (or k >= valid); the offset puts the
      // diagonal past the block boundaries, as in a decoder step at a later position
      p.valid = nk;
      p.causal_offset = nk > nq ? static_cast<index_t>(g.in(0, static_cast<int>(nk - nq))) : 0;
      for (index_t i = 0; i < nq; ++i)
        for (index_t j = 0; j < nk; ++j) p.allow[i * nk + j] = j <= i + p.causal_offset;
      break;
    case MaskKind::boolean:
      // random elements, and rows that stress the streaming: fully masked (row 1), one key only
      // in the last block (row 2), keys only from the second block on (row 3), every key (row 4)
      for (index_t i = 0; i < nq; ++i)
        for (index_t j = 0; j < nk; ++j) p.allow[i * nk + j] = g.in(0, 9) < 7;
      if (nq > 1) std::fill_n(p.allow.begin() + static_cast<std::ptrdiff_t>(nk), nk, std::uint8_t{0});
      if (nq > 2) {
        std::fill_n(p.allow.begin() + static_cast<std::ptrdiff_t>(2 * nk), nk, std::uint8_t{0});
        p.allow[2 * nk + nk - 1] = 1;
      }
      if (nq > 3)
        for (index_t j = 0; j < nk && j < 32; ++j) p.allow[3 * nk + j] = 0;
      if (nq > 4) std::fill_n(p.allow.begin() + static_cast<std::ptrdiff_t>(4 * nk), nk, std::uint8_t{1});
      break;
    case MaskKind::ragged:
      // row r attends to a prefix of its own length: 0 (fully masked), 1, nk, and random ones
      p.key_end.resize(nq);
      for (index_t i = 0; i < nq; ++i) {
        index_t e = static_cast<index_t>(g.in(0, static_cast<int>(nk)));
        if (i == 0) e = nk;
        if (i == 1) e = 0;
        if (i == 2) e = 1;
        if (i == 3) e = nk > 33 ? 33 : nk;
        p.key_end[i] = e;
        for (index_t j = 0; j < nk; ++j) p.allow[i * nk + j] = j < e;
      }
      break;
  }
  return p;
}

/// The oracle's results: outputs [nq, d], weights [nq, nk], and per output the magnitude
/// Σ_j w_j·|v_j| the float error is relative to; per weight, the bound (in units of u) of the
/// float error of its exponent s_j - max when the scores are not exact: one rounding of each
/// score (|s_j| + |max|) and, with unquantized data, the d fma roundings of each dot product
/// (at most d·u·Σ_c |q_c·k_c| / σ each).
struct Oracle {
  std::vector<double> out, w, mag, expo;
  std::vector<bool> row_masked;  // every key masked
};

/// softmax(Q·Kᵀ / σ + mask) · V in double, σ = √d as the float32 nearest (what the library
/// divides by, and what PyTorch's q / math.sqrt(E) on a float32 tensor divides by). Masked keys
/// get -1e9 (MaskFill::neg_1e9, PyTorch's masked_fill(-1e9): a fully masked row is uniform over
/// every key) or -inf (a fully masked row: PyTorch gives NaN; the library documents weights 0
/// and output 0, kernels/reference.hpp).
Oracle oracle(const Problem& p) {
  const double sigma = static_cast<double>(std::sqrt(static_cast<float>(p.d)));
  Oracle o;
  o.out.assign(p.nq * p.d, 0.0);
  o.mag.assign(p.nq * p.d, 0.0);
  o.w.assign(p.nq * p.nk, 0.0);
  o.expo.assign(p.nq * p.nk, 0.0);
  o.row_masked.assign(p.nq, false);
  std::vector<double> s(p.nk), err(p.nk);
  for (index_t i = 0; i < p.nq; ++i) {
    bool any = false;
    for (index_t j = 0; j < p.nk; ++j) {
      double dot = 0.0, dot_abs = 0.0;
      for (index_t c = 0; c < p.d; ++c) {
        dot += static_cast<double>(p.q[i * p.d + c]) * static_cast<double>(p.k[j * p.d + c]);
        dot_abs += std::fabs(static_cast<double>(p.q[i * p.d + c]) * static_cast<double>(p.k[j * p.d + c]));
      }
      err[j] = std::fabs(dot) / sigma + (p.quantized ? 0.0 : static_cast<double>(p.d) * dot_abs / sigma);
      if (p.allowed(i, j)) {
        s[j] = dot / sigma;
        any = true;
      } else {
        s[j] = p.fill == MaskFill::neg_1e9 ? -1e9 : -INFINITY;
      }
    }
    if (!any && p.fill == MaskFill::neg_inf) {
      o.row_masked[i] = true;  // documented: weights 0, output 0
      continue;
    }
    o.row_masked[i] = !any;
    const auto at_max = std::max_element(s.begin(), s.end());
    const double m = *at_max, m_err = err[static_cast<index_t>(at_max - s.begin())];
    double total = 0.0;
    for (index_t j = 0; j < p.nk; ++j) total += std::exp(s[j] - m);
    for (index_t j = 0; j < p.nk; ++j) {
      const double wj = std::exp(s[j] - m) / total;
      o.w[i * p.nk + j] = wj;
      o.expo[i * p.nk + j] = err[j] + m_err;
      for (index_t c = 0; c < p.d; ++c) {
        o.out[i * p.d + c] += wj * static_cast<double>(p.v[j * p.d + c]);
        o.mag[i * p.d + c] += wj * std::fabs(static_cast<double>(p.v[j * p.d + c]));
      }
    }
  }
  return o;
}

// ---- tolerances ------------------------------------------------------------------------------
//
// A weight w_j = exp(s_j - m) / Σ_k exp(s_k - m) in float, with exact scores: exp within 2 ulp
// (simd/math.hpp: 4u), the sum of n terms in 16 lanes (at most n/16 + 4 roundings of at most u
// relative each, on terms that are themselves off by 4u: the sum's relative error is at most
// (n/16 + 8)u), the division u; in the streaming kernels each block boundary where the maximum
// moves multiplies the running sum and the outputs by the same c = exp(m - m') (its error cancels
// in out / l) with one rounding each (2u per block). So a weight's relative error is at most
// (4 + n/16 + 8 + 1 + 2·n/32)u; kWeightUnits takes 16 + n/8 (n/16 + 2·n/32 = n/8): for 300 keys,
// 53u = 3.2e-6 relative at most (the measured maximum is printed below). When σ is not a power of
// two each score is one rounding off (u·|s|), and so is the maximum: add 2u(|s_j| + |m|); with
// unquantized data (a few cases) also each dot product's d roundings (Oracle::expo).
//
// A 1-ulp change of σ (a relative change of u to 2u) moves log w_j by u·|s_j - s̄| to 2u·|s_j -
// s̄|: keys 10 to 20 below the mean move by 10u to 40u, which the (16 + n/8)u above does not
// absorb. Measured on AVX-512 (Zen 5), over every variant and layer: exact scores at most 6.0u
// (weights), 5.5u (probe outputs), 16.7u (value outputs), 0.22-0.31 of the tolerance; rounded
// scores 30.6u, 27.7u, 18.2u (0.52 of it; 48.5u with the unquantized cases' looser bound). With σ one ulp larger in the
// kernels the exact-score weights and probes are off by up to 64u (3.5 times the tolerance) and fail.
double weight_units(index_t nk, bool exact_scores, double expo) {
  return 16.0 + static_cast<double>(nk) / 8.0 + (exact_scores ? 0.0 : 2.0 * expo);
}
// An output of random values: Σ w_j v_j accumulated with fma over the allowed keys; each weight
// within weight_units relative, each fma one rounding of the running sum (at most n·u·Σ w|v| in
// the worst case, about √n·u in practice; we allow 2n/8 on top, the measured maximum is printed).
double mix_units(index_t nk, bool exact_scores, double max_expo) {
  return weight_units(nk, exact_scores, max_expo) + static_cast<double>(nk) / 4.0;
}

/// What one comparison found: the largest errors in units of u, relative to the tolerance, and
/// the elements beyond it.
struct Errors {
  double weight = 0, probe = 0, mix = 0;                    // max |err| / u
  double weight_ratio = 0, probe_ratio = 0, mix_ratio = 0;  // max |err| / tolerance
  long bad = 0;
  void merge(const Errors& e) {
    weight = std::max(weight, e.weight);
    probe = std::max(probe, e.probe);
    mix = std::max(mix, e.mix);
    weight_ratio = std::max(weight_ratio, e.weight_ratio);
    probe_ratio = std::max(probe_ratio, e.probe_ratio);
    mix_ratio = std::max(mix_ratio, e.mix_ratio);
    bad += e.bad;
  }
};

Errors g_exact, g_inexact;  // over every check, for the report

/// Compares float outputs (row stride out_stride) and optional weights with the oracle.
Errors compare(const Problem& p, const Oracle& o, const float* out, index_t out_stride, const float* weights,
               std::string& first_bad) {
  const bool exact = p.quantized && (p.d == 16 || p.d == 64 || p.d == 1 || p.d == 4);
  Errors e;
  auto fail = [&](const char* what, index_t i, index_t j, double got, double want, double units, double tol) {
    ++e.bad;
    if (first_bad.empty()) {
      char line[256];
      std::snprintf(line, sizeof line, "%s [%zu, %zu]: got %.9g, oracle %.9g (%.1f u, tolerance %.1f u)", what, i, j,
                    got, want, units, tol);
      first_bad = line;
    }
  };
  for (index_t i = 0; i < p.nq; ++i) {
    double max_expo = 0.0;
    for (index_t j = 0; j < p.nk; ++j) max_expo = std::max(max_expo, o.expo[i * p.nk + j]);
    if (weights) {
      for (index_t j = 0; j < p.nk; ++j) {
        const double got = weights[i * p.nk + j], want = o.w[i * p.nk + j];
        if (want == 0.0) {  // masked key (or a fully masked row with -inf): exactly 0
          if (got != 0.0) fail("weight", i, j, got, want, INFINITY, 0);
          continue;
        }
        const double units = std::fabs(got - want) / (want * kU);
        const double tol = weight_units(p.nk, exact, o.expo[i * p.nk + j]);
        e.weight = std::max(e.weight, units);
        e.weight_ratio = std::max(e.weight_ratio, units / tol);
        if (!(units <= tol)) fail("weight", i, j, got, want, units, tol);
      }
    }
    for (index_t c = 0; c < p.d; ++c) {
      const double got = out[i * out_stride + c], want = o.out[i * p.d + c], mag = o.mag[i * p.d + c];
      const bool probe = p.probes && c % 2 == 0;
      if (mag == 0.0) {  // every allowed value 0 (a probe's masked key), or a fully masked row
        if (got != 0.0) fail(probe ? "probe output" : "output", i, c, got, want, INFINITY, 0);
        continue;
      }
      const double units = std::fabs(got - want) / (mag * kU);
      if (probe) {
        const double tol = weight_units(p.nk, exact, o.expo[i * p.nk + probe_key(c, p.nk)]);
        e.probe = std::max(e.probe, units);
        e.probe_ratio = std::max(e.probe_ratio, units / tol);
        if (!(units <= tol)) fail("probe output", i, c, got, want, units, tol);
      } else {
        const double tol = mix_units(p.nk, exact, max_expo);
        e.mix = std::max(e.mix, units);
        e.mix_ratio = std::max(e.mix_ratio, units / tol);
        if (!(units <= tol)) fail("output", i, c, got, want, units, tol);
      }
    }
  }
  (exact ? g_exact : g_inexact).merge(e);
  return e;
}

/// Prints the largest errors of the checks since the last call (the test log keeps them).
void report(const char* what) {
  for (auto* e : {&g_exact, &g_inexact}) {
    std::printf(
        "%s, %s scores: max error weights %.1f u, probe outputs %.1f u, value outputs %.1f u (of the "
        "tolerance: %.2f, %.2f, %.2f)\n",
        what, e == &g_exact ? "exact" : "rounded", e->weight, e->probe, e->mix, e->weight_ratio, e->probe_ratio,
        e->mix_ratio);
    *e = Errors{};
  }
}

std::string describe(const Problem& p, const char* via, const char* mode) {
  char line[256];
  std::snprintf(line, sizeof line, "%s, %s: %zu queries, %zu keys, head dim %zu, %s mask (valid %zu, offset %zu), %s",
                via, mode, p.nq, p.nk, p.d, kind_name(p.kind), p.valid, p.causal_offset,
                p.fill == MaskFill::neg_inf ? "-inf fill" : "-1e9 fill");
  return line;
}

/// The kernels' RowMasks for a problem (what a layer would pass): prefixes for padding / causal
/// / ragged, the pattern with every key for bool (its rows' arrays in `arrays`).
std::vector<ref::RowMask> row_masks(const Problem& p, std::vector<ref::MaskArrays>& arrays) {
  std::vector<ref::RowMask> rows(p.nq);
  arrays.assign(p.nq, ref::MaskArrays{});
  for (index_t i = 0; i < p.nq; ++i) {
    switch (p.kind) {
      case MaskKind::none:
        rows[i] = {p.nk, nullptr};
        break;
      case MaskKind::padding:
        rows[i] = {p.valid, nullptr};
        break;
      case MaskKind::causal:
        rows[i] = {std::min(p.nk, i + p.causal_offset + 1), nullptr};
        break;
      case MaskKind::boolean:
        arrays[i].allow = p.allow.data() + i * p.nk;
        rows[i] = {p.nk, &arrays[i]};
        break;
      case MaskKind::ragged:
        rows[i] = {p.key_end[i], nullptr};
        break;
    }
  }
  return rows;
}

constexpr float kCanary = -12345.0f;

/// One problem through Kernels<Tag>'s attention_rows and attention_rows_weights, with strided
/// buffers (kt, v, out) whose gaps and the scratch's end must stay untouched.
template <class Tag>
void check_kernels(const Problem& p, const Oracle& o) {
  using K = Kernels<Tag>;
  const index_t kt_stride = p.nk + 3, v_stride = p.d + 5, out_stride = p.d + 1, q_stride = p.d + 2;
  std::vector<float> q(p.nq * q_stride, kCanary), kt(p.d * kt_stride, kCanary), v(p.nk * v_stride, kCanary);
  for (index_t i = 0; i < p.nq; ++i)
    for (index_t c = 0; c < p.d; ++c) q[i * q_stride + c] = p.q[i * p.d + c];
  for (index_t j = 0; j < p.nk; ++j)
    for (index_t c = 0; c < p.d; ++c) {
      kt[c * kt_stride + j] = p.k[j * p.d + c];
      v[j * v_stride + c] = p.v[j * p.d + c];
    }
  std::vector<ref::MaskArrays> arrays;
  const auto rows = row_masks(p, arrays);
  for (int mode = 0; mode < 2; ++mode) {
    const bool with_weights = mode == 1;
    std::vector<float> out(p.nq * out_stride + 16, kCanary);
    const index_t scratch = attention_scratch_floats(p.nq, p.nk, p.d);
    std::vector<float> scr(scratch + 64, kCanary), w(p.nq * p.nk + 16, kCanary);
    if (with_weights)
      K::attention_rows_weights(q.data(), q_stride, p.nq, kt.data(), kt_stride, v.data(), v_stride, p.d, p.nk,
                                rows.data(), p.fill, w.data(), out.data(), out_stride);
    else
      K::attention_rows(q.data(), q_stride, p.nq, kt.data(), kt_stride, v.data(), v_stride, p.d, p.nk, rows.data(),
                        p.fill, scr.data(), out.data(), out_stride);
    const std::string what = describe(p, K::name(), with_weights ? "with weights" : "streaming");
    INFO(what);
    std::string first_bad;
    const Errors e = compare(p, o, out.data(), out_stride, with_weights ? w.data() : nullptr, first_bad);
    INFO(first_bad);
    CHECK(e.bad == 0);
    bool untouched = true;  // gaps of the output rows, past the outputs, past the scratch
    for (index_t i = 0; i < p.nq; ++i)
      for (index_t c = p.d; c < out_stride; ++c) untouched = untouched && out[i * out_stride + c] == kCanary;
    for (index_t x = p.nq * out_stride; x < out.size(); ++x) untouched = untouched && out[x] == kCanary;
    for (index_t x = scratch; x < scr.size(); ++x) untouched = untouched && scr[x] == kCanary;
    for (index_t x = p.nq * p.nk; x < w.size(); ++x) untouched = untouched && w[x] == kCanary;
    CHECK(untouched);
  }
}

// Key counts: within one block, around each block boundary, around the 128-key span, past two
// spans, and odd ones; head dims around the 8- and 16-lane vectors; query rows around the
// groups of 6 (every variant) and 12 (AVX-512's tall groups).
constexpr index_t kKeyCounts[] = {1,  5,   16,  17,  31,  32,  33,  47,  63,  64, 65,
                                  97, 127, 128, 129, 161, 200, 255, 256, 257, 300};
constexpr index_t kHeadDims[] = {1, 7, 8, 9, 15, 16, 17, 33, 64};
constexpr index_t kRowCounts[] = {1, 5, 6, 7, 11, 12, 13, 19};
constexpr MaskKind kKinds[] = {MaskKind::none, MaskKind::padding, MaskKind::causal, MaskKind::boolean,
                               MaskKind::ragged};

}  // namespace

TEST_CASE("every kernel variant's attention equals a float64 softmax over 1 to 300 keys", "[attention][oracle]") {
  boost::hana::for_each(kernel_registry::variants, [](auto tag) {
    using Tag = typename decltype(tag)::type;
    if (!Kernels<Tag>::supported()) {
      WARN(Kernels<Tag>::name() << ": not supported by this CPU, skipped");
      return;
    }
    std::uint32_t seed = 1;
    for (index_t nk : kKeyCounts)
      for (index_t di = 0; di < std::size(kHeadDims); ++di) {
        const index_t d = kHeadDims[di];
        // two row counts per (keys, head dim), cycling through kRowCounts
        for (index_t ri = 0; ri < 2; ++ri) {
          const index_t nq = kRowCounts[(di * 2 + ri + nk) % std::size(kRowCounts)];
          for (MaskKind kind : kKinds)
            for (MaskFill fill : {MaskFill::neg_inf, MaskFill::neg_1e9}) {
              if ((kind == MaskKind::none || kind == MaskKind::padding) && fill == MaskFill::neg_1e9 && ri == 1)
                continue;  // (no fully masked row: the fill cannot matter)
              const Problem p = make_problem(nq, nk, d, kind, fill, ++seed);
              check_kernels<Tag>(p, oracle(p));
            }
        }
      }
    // full-precision queries and keys (inexact scores) for a few shapes
    for (index_t nk : kKeyCounts)
      for (index_t d : {index_t{16}, index_t{33}})
        for (MaskKind kind : {MaskKind::padding, MaskKind::boolean}) {
          const Problem p =
              make_problem(kRowCounts[(nk + d) % std::size(kRowCounts)], nk, d, kind, MaskFill::neg_inf, ++seed, false);
          check_kernels<Tag>(p, oracle(p));
        }
    report(Kernels<Tag>::name());
  });
}

namespace {

/// A problem through ScaledDotProductAttention<SeqQ, SeqK, HeadDim>::forward (the active
/// kernels), streaming and with weights, with the AttentionMask the layer's users build.
template <index_t SeqQ, index_t SeqK, index_t HeadDim>
void check_sdpa(MaskKind kind, MaskFill fill, std::uint32_t seed) {
  using A = ScaledDotProductAttention<SeqQ, SeqK, HeadDim>;
  const Problem p = make_problem(SeqQ, SeqK, HeadDim, kind == MaskKind::ragged ? MaskKind::boolean : kind, fill, seed);
  const Oracle o = oracle(p);
  auto bm = std::make_unique<BoolMask<SeqQ, SeqK>>();
  std::copy(p.allow.begin(), p.allow.end(), bm->allow);
  AttentionMask mask;
  switch (p.kind) {
    case MaskKind::none:
      mask = AttentionMask::padding(SeqK, fill);
      break;
    case MaskKind::padding:
      mask = AttentionMask::padding(p.valid, fill);
      break;
    case MaskKind::causal:
      mask = AttentionMask::causal_mask(SeqK, fill);
      mask.causal_offset = p.causal_offset;
      break;
    default:
      mask = A::mask(*bm, fill);
      break;
  }
  std::vector<float> scratch(A::scratch_floats), out(SeqQ * HeadDim), w(SeqQ * SeqK);
  for (int mode = 0; mode < 2; ++mode) {
    float* weights = mode == 1 ? w.data() : nullptr;
    REQUIRE(A::forward(CMat<SeqQ, HeadDim>(p.q.data()), CMat<SeqK, HeadDim>(p.k.data()),
                       CMat<SeqK, HeadDim>(p.v.data()), Mat<SeqQ, HeadDim>(out.data()), mask, scratch.data(),
                       weights) == Status::ok);
    INFO(describe(p, "ScaledDotProductAttention", weights ? "with weights" : "streaming"));
    std::string first_bad;
    const Errors e = compare(p, o, out.data(), HeadDim, weights, first_bad);
    INFO(first_bad);
    CHECK(e.bad == 0);
  }
}

template <index_t SeqQ, index_t SeqK, index_t HeadDim>
void check_sdpa_all(std::uint32_t seed) {
  for (MaskKind kind : {MaskKind::none, MaskKind::padding, MaskKind::causal, MaskKind::boolean})
    for (MaskFill fill : {MaskFill::neg_inf, MaskFill::neg_1e9}) check_sdpa<SeqQ, SeqK, HeadDim>(kind, fill, ++seed);
}

}  // namespace

TEST_CASE("ScaledDotProductAttention equals a float64 softmax past the block and span boundaries",
          "[attention][oracle]") {
  check_sdpa_all<6, 33, 16>(100);
  check_sdpa_all<12, 65, 8>(200);
  check_sdpa_all<13, 129, 17>(300);
  check_sdpa_all<7, 257, 64>(400);
  check_sdpa_all<11, 300, 9>(500);
  check_sdpa_all<5, 31, 33>(600);
  report("ScaledDotProductAttention");
}

namespace {

/// MultiHeadAttention whose projections are exact selections (weights 0 and 1, no bias): head h
/// reads its own slice [h·hd, (h+1)·hd) of the model dimension. In xkv the slice's first half
/// holds the keys and its second half one-hot probes; W_k keeps the keys (a head's keys are
/// zero in their second half), W_v interleaves them, V = [probe 0, key 0, probe 1, key 1, ...];
/// queries are zero in their second half too, and W_q and W_o are identities. So each head's
/// output is the oracle of a problem of head dim hd whose scores sum over hd/2 products.
template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
void check_mha(MaskKind kind, MaskFill fill, std::uint32_t seed) {
  constexpr index_t hd = DModel / NHeads, half = hd / 2;
  static_assert(hd % 2 == 0);
  using MHA = MultiHeadAttention<SeqQ, SeqK, DModel, NHeads, false>;
  // weights W[in, out] stored as the panels LinearParams expects
  std::vector<float> eye(DModel * DModel, 0.0f), wk(DModel * DModel, 0.0f), wv(DModel * DModel, 0.0f);
  for (index_t i = 0; i < DModel; ++i) eye[weight_index(DModel, DModel, i, i)] = 1.0f;
  for (index_t h = 0; h < NHeads; ++h)
    for (index_t c = 0; c < half; ++c) {
      const index_t key = h * hd + c, probe = h * hd + half + c;
      wk[weight_index(DModel, DModel, key, key)] = 1.0f;
      wv[weight_index(DModel, DModel, probe, h * hd + 2 * c)] = 1.0f;
      wv[weight_index(DModel, DModel, key, h * hd + 2 * c + 1)] = 1.0f;
    }
  auto mha = std::make_unique<MHA>();
  mha->params.q.weight = mha->params.o.weight = CMat<DModel, DModel>(eye.data());
  mha->params.k.weight = CMat<DModel, DModel>(wk.data());
  mha->params.v.weight = CMat<DModel, DModel>(wv.data());
  // one mask for every head (the same seed), each head its own queries and keys
  std::vector<Problem> heads;
  std::vector<Oracle> want;
  std::vector<float> xq(SeqQ * DModel), xkv(SeqK * DModel);
  for (index_t h = 0; h < NHeads; ++h) {
    Problem p = make_problem(SeqQ, SeqK, hd, kind, fill, seed);
    Lcg g{seed + 77 * static_cast<std::uint32_t>(h)};
    for (index_t i = 0; i < SeqQ; ++i)
      for (index_t c = 0; c < hd; ++c) p.q[i * hd + c] = c < half ? static_cast<float>(g.in(-32, 32)) / 4.0f : 0.0f;
    for (index_t j = 0; j < SeqK; ++j)
      for (index_t c = 0; c < hd; ++c) {
        p.k[j * hd + c] = c < half ? static_cast<float>(g.in(-8, 8)) / 8.0f : 0.0f;
        xkv[j * DModel + h * hd + c] =
            c < half ? p.k[j * hd + c] : (j == probe_key(2 * (c - half), SeqK) ? 1.0f : 0.0f);
      }
    for (index_t j = 0; j < SeqK; ++j)
      for (index_t c = 0; c < hd; ++c)
        p.v[j * hd + c] = c % 2 == 0 ? (j == probe_key(c, SeqK) ? 1.0f : 0.0f) : p.k[j * hd + c / 2];
    for (index_t i = 0; i < SeqQ; ++i)
      for (index_t c = 0; c < hd; ++c) xq[i * DModel + h * hd + c] = p.q[i * hd + c];
    want.push_back(oracle(p));
    heads.push_back(std::move(p));
  }
  const Problem& p0 = heads[0];
  auto bm = std::make_unique<BoolMask<SeqQ, SeqK>>();
  std::copy(p0.allow.begin(), p0.allow.end(), bm->allow);
  AttentionMask mask;
  switch (kind) {
    case MaskKind::padding:
      mask = AttentionMask::padding(p0.valid, fill);
      break;
    case MaskKind::causal:
      mask = AttentionMask::causal_mask(SeqK, fill);
      mask.causal_offset = p0.causal_offset;
      break;
    default:
      mask = MHA::mask(*bm, fill);
      break;
  }
  std::vector<float> scratch(MHA::scratch_floats), y(SeqQ * DModel), w(NHeads * SeqQ * SeqK);
  for (int mode = 0; mode < 2; ++mode) {
    float* weights = mode == 1 ? w.data() : nullptr;
    REQUIRE(mha->forward(CMat<SeqQ, DModel>(xq.data()), CMat<SeqK, DModel>(xkv.data()), Mat<SeqQ, DModel>(y.data()),
                         mask, scratch.data(), weights) == Status::ok);
    for (index_t h = 0; h < NHeads; ++h) {
      INFO(describe(heads[h], "MultiHeadAttention", weights ? "with weights" : "streaming") << ", head " << h);
      std::string first_bad;
      const Errors e = compare(heads[h], want[h], y.data() + h * hd, DModel,
                               weights ? weights + h * SeqQ * SeqK : nullptr, first_bad);
      INFO(first_bad);
      CHECK(e.bad == 0);
    }
  }
}

template <index_t SeqQ, index_t SeqK, index_t DModel, index_t NHeads>
void check_mha_all(std::uint32_t seed) {
  for (MaskKind kind : {MaskKind::padding, MaskKind::causal, MaskKind::boolean})
    for (MaskFill fill : {MaskFill::neg_inf, MaskFill::neg_1e9})
      check_mha<SeqQ, SeqK, DModel, NHeads>(kind, fill, ++seed);
}

}  // namespace

TEST_CASE("MultiHeadAttention equals a float64 softmax per head past the block and span boundaries",
          "[attention][oracle]") {
  check_mha_all<12, 65, 64, 4>(1000);    // head dim 16
  check_mha_all<13, 129, 128, 2>(2000);  // head dim 64, V rows padded (DModel a multiple of 128)
  check_mha_all<6, 257, 40, 4>(3000);    // head dim 10
  check_mha_all<7, 300, 32, 4>(4000);    // head dim 8
  report("MultiHeadAttention");
}
