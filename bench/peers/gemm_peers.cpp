// The encoder layer's matrix products alone, statiformer's kernel against OpenBLAS's sgemm (serial,
// the BLAS the PyTorch peer runs on), at the products of every benchmark-plan shape (S, D, F):
//   proj  [S, D] · [D, D]   each of Q, K, V and the output projection
//   ff1   [S, D] · [D, F]   the feed-forward's first product (whole, not in chunks)
//   ff2   [S, F] · [F, D]   its second
// Names: Gemm/<impl>/<M>x<K>x<N>, impl stf.<variant> (Kernels<isa::active>::linear, weights in its
// column panels, no bias) or openblas (cblas_sgemm, row-major, beta = 0). Counter FLOP/s = 2·M·K·N.
// Where the layer's percent of the FMA peak is read, this says how near the peak a product alone
// gets, with statiformer's kernel and with a BLAS built for the machine, in the same run.
#include <benchmark/benchmark.h>

#include <string>

#include <statiformer/statiformer.hpp>

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

std::string product_name(const char* impl, Product p) {
  return std::string("Gemm/") + impl + "/" + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" +
         std::to_string(p.n);
}

void set_flops(benchmark::State& state, Product p) {
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(p.m) * static_cast<double>(p.k) * static_cast<double>(p.n),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void register_product(Product p) {
  const std::string stf_impl = std::string("stf.") + stf::ActiveKernels::name();
  benchmark::RegisterBenchmark(product_name(stf_impl.c_str(), p).c_str(), [p](benchmark::State& state) {
    const auto x = random_input(p.m * p.k), w = random_input(p.k * p.n);
    AlignedFloats y(p.m * p.n);
    for (auto _ : state) {
      stf::ActiveKernels::linear(x.data(), p.m, p.k, w.data(), nullptr, p.n, y.data());
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    set_flops(state, p);
  });
#ifdef STF_BENCH_HAVE_OPENBLAS
  benchmark::RegisterBenchmark(product_name("openblas", p).c_str(), [p](benchmark::State& state) {
    const auto x = random_input(p.m * p.k), w = random_input(p.k * p.n);
    AlignedFloats y(p.m * p.n);
    const int m = static_cast<int>(p.m), k = static_cast<int>(p.k), n = static_cast<int>(p.n);
    for (auto _ : state) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, x.data(), k, w.data(), n, 0.0f, y.data(),
                  n);
      benchmark::DoNotOptimize(y.data());
      benchmark::ClobberMemory();
    }
    set_flops(state, p);
  });
#endif
}
}  // namespace

const char* register_gemm_benchmarks() {
  struct Shape {
    index_t s, d, f;
  };
  for (const Shape sh :
       {Shape{10, 16, 32}, Shape{32, 64, 256}, Shape{64, 128, 512}, Shape{128, 256, 1024}, Shape{128, 512, 2048}}) {
    register_product({sh.s, sh.d, sh.d});
    register_product({sh.s, sh.d, sh.f});
    register_product({sh.s, sh.f, sh.d});
  }
#ifdef STF_BENCH_HAVE_OPENBLAS
  return openblas_get_config();
#else
  return "not built (OpenBLAS serial not found: apt-get install libopenblas-serial-dev)";
#endif
}

}  // namespace stf_peers
