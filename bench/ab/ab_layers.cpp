// One side of bench/ab/ab.sh's in-process A/B: the encoder layer and the decoder step (DecoderLayer::step
// through the K/V cache) at the benchmark plan's shapes (bench/plan.hpp), timed
// through the statiformer tree whose include/ this translation unit was compiled against. ab.sh compiles
// it twice into one executable: the baseline with -Dstf=stf_base (every namespace and symbol of that
// tree renamed, so that both trees link side by side) and STF_AB_SIDE=base, the working tree with
// STF_AB_SIDE=new. Only API both trees have in common is used (params.visit, EncoderLayer::run,
// DecoderLayer's prepare_memory and step, LayerOptions' int8 formats), so a baseline some commits back
// builds too; one from before LayerOptions::int8_attention builds with -DSTF_AB_NO_INT8 (ab.sh passes it),
// and its side then has no EncoderLayerInt8 cases (ab_main.cpp times the shapes both sides have).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <statiformer/statiformer.hpp>

#include "../plan.hpp"
#include "ab_case.hpp"

#ifndef STF_AB_SIDE
#error "compile with -DSTF_AB_SIDE=base or new (bench/ab/ab.sh)"
#endif
#define STF_AB_CAT2(a, b) a##b
#define STF_AB_CAT(a, b) STF_AB_CAT2(a, b)

namespace {
using stf::index_t;

/// n floats, 64-byte aligned, zeroed.
struct Floats {
  float* p = nullptr;
  explicit Floats(index_t n) : p(static_cast<float*>(::operator new[](n * sizeof(float) + 64, std::align_val_t{64}))) {
    for (index_t i = 0; i < n; ++i) p[i] = 0.0f;
  }
  ~Floats() { ::operator delete[](p, std::align_val_t{64}); }
  Floats(const Floats&) = delete;
  Floats& operator=(const Floats&) = delete;
};

std::uint32_t next(std::uint32_t& s) { return s = s * 1664525u + 1013904223u; }

/// Every parameter bound to pseudo-random values in [-0.1, 0.1) (the same values on both sides).
template <class Params>
std::unique_ptr<Floats> bind_random(Params& params) {
  index_t total = 0;
  params.visit([&](const stf::Name&, stf::ParamRef r) { total += (r.size() + 15) / 16 * 16; }, {});
  auto storage = std::make_unique<Floats>(total);
  std::uint32_t state = 12345;
  index_t offset = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        float* p = storage->p + offset;
        for (index_t i = 0; i < r.size(); ++i)
          p[i] = (static_cast<float>(next(state) >> 8) / 16777216.0f - 0.5f) * 0.2f;
        *r.data = p;
        offset += (r.size() + 15) / 16 * 16;
      },
      {});
  return storage;
}

void fill_input(float* x, index_t n) {
  std::uint32_t state = 777;
  for (index_t i = 0; i < n; ++i) x[i] = static_cast<float>(next(state) >> 8) / 8388608.0f - 1.0f;
}

/// "SxDxHxF" of a shape's dimensions.
std::string dims(std::initializer_list<index_t> d) {
  std::string s;
  for (const index_t v : d) s += (s.empty() ? "" : "x") + std::to_string(v);
  return s;
}

/// The case of an encoder layer that st holds (members layer, x, y, scratch: S rows of D): run(n)
/// times n forwards, checksum() weighs the last one's output.
template <index_t S, index_t D, class State>
AbCase layer_case(std::string shape, std::shared_ptr<State> st) {
  AbCase c;
  c.shape = std::move(shape);
  c.run = [st](long n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      st->layer.run(st->x.p, st->y.p, S, st->scratch.p);
      asm volatile("" : : "r"(st->y.p) : "memory");
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  c.checksum = [st] {
    double sum = 0;
    for (index_t i = 0; i < S * D; ++i) sum += static_cast<double>(st->y.p[i]) * static_cast<double>(i % 7 + 1);
    return sum;
  };
  return c;
}

template <index_t S, index_t D, index_t H, index_t F>
AbCase encoder_layer() {
  using Layer = stf::EncoderLayer<S, D, H, F>;
  struct State {
    Layer layer;
    std::unique_ptr<Floats> weights;
    Floats x{S * D}, y{S * D}, scratch{Layer::scratch_floats};
  };
  std::shared_ptr<State> st = std::make_shared<State>();
  st->weights = bind_random(st->layer.params);
  fill_input(st->x.p, S * D);
  return layer_case<S, D>("EncoderLayer/" + dims({S, D, H, F}), st);
}

#ifndef STF_AB_NO_INT8
/// Every parameter of an int8 layer bound (the same values on both sides): int8 weights in
/// [-127, 127] (in whatever layout the tree stores them: the timing does not depend on the values),
/// their per-output scales 1 / (127·√in), so that the activations stay in range as with PyTorch's
/// initialization, and the float parameters as bind_random's.
template <class Params>
std::unique_ptr<Floats> bind_random_int8(Params& params, std::unique_ptr<Floats>& bytes) {
  index_t total_i8 = 0, total_f = 0;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        if (r.is_int8())
          total_i8 += (r.size() + 63) / 64 * 64;
        else
          total_f += (r.size() + 15) / 16 * 16;
      },
      {});
  auto storage = std::make_unique<Floats>(total_f);
  bytes = std::make_unique<Floats>(total_i8 / 4);  // (64-byte aligned; the int8 weights live in it)
  std::uint32_t state = 12345;
  index_t off_i8 = 0, off_f = 0, last_in = 1;
  params.visit(
      [&](const stf::Name&, stf::ParamRef r) {
        if (r.is_int8()) {
          std::int8_t* q = reinterpret_cast<std::int8_t*>(bytes->p) + off_i8;
          for (index_t i = 0; i < r.size(); ++i) q[i] = static_cast<std::int8_t>(int(next(state) >> 8) % 255 - 127);
          *r.data_i8 = q;
          last_in = r.cols;  // (PyTorch's [out, in]: the scales that follow are this linear's)
          off_i8 += (r.size() + 63) / 64 * 64;
          return;
        }
        float* p = storage->p + off_f;
        const float scale = 1.0f / (127.0f * std::sqrt(static_cast<float>(last_in)));
        for (index_t i = 0; i < r.size(); ++i)
          p[i] = r.scale ? scale : (static_cast<float>(next(state) >> 8) / 16777216.0f - 0.5f) * 0.2f;
        *r.data = p;
        off_f += (r.size() + 15) / 16 * 16;
      },
      {});
  return storage;
}

/// The encoder layer with its six linears in an int8 format (and w8a8 with its attention in int8:
/// Int8Attention), as bench_stf_<isa>'s EncoderLayerInt8: EncoderLayerInt8/<format>/<S>x<D>x<H>x<F>.
template <index_t S, index_t D, index_t H, index_t F, stf::NumberFormat Format, bool Int8Attention = false>
AbCase encoder_layer_int8() {
  using Layer =
      stf::EncoderLayer<S, D, H, F,
                        stf::LayerOptions{
                            .norm = stf::NormPlacement::post, .format = Format, .int8_attention = Int8Attention}>;
  struct State {
    Layer layer;
    std::unique_ptr<Floats> bytes;
    std::unique_ptr<Floats> weights;
    Floats x{S * D}, y{S * D}, scratch{Layer::scratch_floats};
  };
  std::shared_ptr<State> st = std::make_shared<State>();
  st->weights = bind_random_int8(st->layer.params, st->bytes);
  fill_input(st->x.p, S * D);
  return layer_case<S, D>(std::string("EncoderLayerInt8/") + (Format == stf::NumberFormat::w8a8 ? "w8a8" : "w8a32") +
                              (Int8Attention ? "_int8attn/" : "/") + dims({S, D, H, F}),
                          st);
}
#endif

/// One decoding step at the last of T positions of a DecoderLayer<T, M, D, H, F>, the T - 1 earlier
/// positions and the M memory rows in its K/V cache (as bench_stf_<isa>'s DecoderStep): each call
/// rewrites position T - 1's key and value with the same values.
template <index_t T, index_t M, index_t D, index_t H, index_t F>
AbCase decoder_step() {
  using Layer = stf::DecoderLayer<T, M, D, H, F>;
  constexpr index_t pos = T - 1;
  struct State {
    Layer layer;
    typename Layer::Cache cache;
    std::unique_ptr<Floats> weights;
    Floats memory{M * D}, x{D}, y{D}, scratch{Layer::step_scratch_floats};
  };
  std::shared_ptr<State> st = std::make_shared<State>();
  st->weights = bind_random(st->layer.params);
  fill_input(st->memory.p, M * D);
  fill_input(st->x.p, D);
  st->layer.prepare_memory(st->memory.p, st->cache);
  for (index_t p = 0; p < pos; ++p) st->layer.step(st->x.p, p, M, st->cache, st->y.p, st->scratch.p);
  AbCase c;
  c.shape = "DecoderStep/" + dims({T, M, D, H, F});
  c.run = [st](long n) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      st->layer.step(st->x.p, pos, M, st->cache, st->y.p, st->scratch.p);
      asm volatile("" : : "r"(st->y.p) : "memory");
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  c.checksum = [st] {
    double sum = 0;
    for (index_t i = 0; i < D; ++i) sum += static_cast<double>(st->y.p[i]) * static_cast<double>(i % 7 + 1);
    return sum;
  };
  return c;
}
}  // namespace

/// Appends this side's cases (called from ab_main.cpp).
void STF_AB_CAT(register_ab_, STF_AB_SIDE)(std::vector<AbCase>& cases) {
  namespace plan = stf_bench::plan;
  plan::for_each<plan::kEncoderLayers>(
      [&]<plan::EncoderShape Sh>() { cases.push_back(encoder_layer<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff>()); });
  plan::for_each<plan::kDecoderSteps>([&]<plan::DecoderStepShape Sh>() {
    cases.push_back(decoder_step<Sh.positions, Sh.memory, Sh.d_model, Sh.n_heads, Sh.d_ff>());
  });
  cases.push_back(decoder_step<64, 64, 64, 4, 128>());  // (past a key block: positions and memory rows 33+)
#ifndef STF_AB_NO_INT8
  plan::for_each<plan::kEncoderLayers>([&]<plan::EncoderShape Sh>() {
    cases.push_back(encoder_layer_int8<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff, stf::NumberFormat::w8a8>());
    cases.push_back(encoder_layer_int8<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff, stf::NumberFormat::w8a32>());
    cases.push_back(encoder_layer_int8<Sh.seq_len, Sh.d_model, Sh.n_heads, Sh.d_ff, stf::NumberFormat::w8a8, true>());
  });
#endif
}
