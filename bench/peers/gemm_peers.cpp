// The encoder layer's matrix products alone, statiformer's kernel against OpenBLAS's sgemm (serial,
// the BLAS the PyTorch peer runs on), at the products of every shape (S, D, F) of the benchmark plan
// (bench/plan.hpp):
//   proj  [S, D] · [D, D]   each of Q, K, V and the output projection
//   ff1   [S, D] · [D, F]   the feed-forward's first product (whole, not in chunks)
//   ff2   [S, F] · [F, D]   its second
// Names: Gemm/<impl>/<M>x<K>x<N>, impl stf.<variant> (Kernels<isa::active>::linear, weights in its
// column panels, no bias) or openblas (cblas_sgemm, row-major, beta = 0). Counters: FLOP/s = 2·M·K·N,
// bytes = 4·(M·K + K·N + M·N).
//   tile  [6, 128] · [128, 64]: one AVX-512 register tile (6 rows × 4 vectors; on AVX2, four tiles
//         of 6 rows × 2 vectors) over one cache block of the reduction, every operand resident in L1
//         (35 KB) across calls: the product kernel's ceiling on the machine, with no cache misses and
//         the fewest calls per FMA it makes
// Where the layer's percent of the FMA peak is read, this says how near the peak a product alone
// gets, with statiformer's kernel and with a BLAS built for the machine, in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <string>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "bench_support.hpp"

#ifdef STF_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace stf_peers {
namespace {
using stf::index_t;

struct Product {
  index_t m, k, n;
};
/// One register tile of the AVX-512 product kernel (four of AVX2's) over one block of its reduction
/// (see above).
constexpr Product kTile{6, 128, 64};

/// Registers Gemm/<impl>/<M>x<K>x<N>, timing product(x, w, y) on x [M, K], w [K, N] and y [M, N];
/// counters as every peer benchmark's (set_counters): FLOP/s = 2·M·K·N, bytes = x and w read, y written.
template <class F>
void register_product(const std::string& impl, Product p, F product) {
  const std::string name =
      "Gemm/" + impl + "/" + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n);
  benchmark::RegisterBenchmark(name.c_str(), [p, product](benchmark::State& state) {
    const auto x = random_input(p.m * p.k), w = random_input(p.k * p.n);
    AlignedFloats y(p.m * p.n);
    for (auto _ : state) {
      product(x.data(), w.data(), y.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    const double m = static_cast<double>(p.m), k = static_cast<double>(p.k), n = static_cast<double>(p.n);
    set_counters(state, 2.0 * m * k * n, 4.0 * (m * k + k * n + m * n));
  });
}

void register_products(Product p) {
  register_product(std::string("stf.") + stf::ActiveKernels::name(), p, [p](const float* x, const float* w, float* y) {
    stf::ActiveKernels::linear(x, p.m, p.k, w, nullptr, p.n, y);
  });
#ifdef STF_BENCH_HAVE_OPENBLAS
  const int m = static_cast<int>(p.m), k = static_cast<int>(p.k), n = static_cast<int>(p.n);
  register_product("openblas", p, [m, k, n](const float* x, const float* w, float* y) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x, k, w, n, 0.0f, y, n);
  });
#endif
}
}  // namespace

const char* register_gemm_benchmarks() {
  std::vector<Product> seen;  // (two plan shapes may share a product)
  for (const stf_bench::plan::EncoderShape& sh : stf_bench::plan::kEncoderLayers) {
    for (const Product p : {Product{sh.seq_len, sh.d_model, sh.d_model}, Product{sh.seq_len, sh.d_model, sh.d_ff},
                            Product{sh.seq_len, sh.d_ff, sh.d_model}}) {
      if (std::find_if(seen.begin(), seen.end(), [p](Product o) { return o.m == p.m && o.k == p.k && o.n == p.n; }) !=
          seen.end())
        continue;
      seen.push_back(p);
      register_products(p);
    }
  }
  register_products({kTile.m, kTile.k, kTile.n});
#ifdef STF_BENCH_HAVE_OPENBLAS
  return openblas_get_config();
#else
  return "not built (OpenBLAS serial not found: apt-get install libopenblas-serial-dev)";
#endif
}

}  // namespace stf_peers
