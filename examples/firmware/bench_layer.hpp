// The encoder layer the benchmark firmware measures (fw_encoder_bench) and the profiling firmware
// traces (fw_profile<N>): post-norm, float32 (or an int8 format), its parameters bound to one static pool of xorshift32
// values in [-1/√D, 1/√D), its input in [-1, 1). One definition, so both look at the same layer
// on the same data; and the firmware plan, the shapes both take it at.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <statiformer/statiformer.hpp>

namespace fw {

/// One shape of the firmware plan (a post-norm encoder layer over seq_len valid tokens), with the
/// instruction counts other implementations of that layer took on the same qemu (7.2, -icount shift=0,
/// GCC 12.2 -O2), measured once and printed next to statiformer's: issue 5's float32 layer in plain C
/// and with CMSIS-DSP on the Cortex-M4F and with CMSIS-DSP's Helium kernels on the M55, and issue 23's
/// CMSIS-NN int8 layer on the M4F and the M55.
struct FirmwareShape {
  stf::index_t seq_len, d_model, n_heads, d_ff;
  std::uint64_t m4_plain_c, m4_cmsis_dsp, m55_helium;
  std::uint64_t cmsis_nn_m4f, cmsis_nn_m55;
};
/// The firmware plan: the shapes fw_encoder_bench measures, in this order, and fw_profile<N> traces
/// (N indexes it), written once. Issue 23's accuracy study (tools/quant_study.py) reads its shapes from here.
inline constexpr std::array kFirmwareShapes{
    FirmwareShape{10, 16, 2, 32, 155'921, 189'490, 43'962, 290'275, 188'939},
    FirmwareShape{32, 64, 4, 128, 6'533'033, 6'875'781, 1'014'280, 6'099'534, 3'502'820},
    FirmwareShape{64, 64, 4, 256, 20'543'458, 21'390'805, 3'089'951, 19'870'497, 12'503'678},
};
/// f.template operator()<I, kFirmwareShapes[I]>() for every shape of the plan, in order
/// (f: a lambda with a template head, []<std::size_t I, fw::FirmwareShape Sh>() { ... }).
template <class F, std::size_t... I>
void for_each_shape_at(F& f, std::index_sequence<I...>) {
  (f.template operator()<I, kFirmwareShapes[I]>(), ...);
}
template <class F>
void for_each_shape(F&& f) {
  for_each_shape_at(f, std::make_index_sequence<kFirmwareShapes.size()>{});
}

inline constexpr stf::index_t kMaxBenchParams = 50 * 1024;            // (64, 64, 4, 256): 49,984 floats
alignas(stf::kTensorAlign) inline float bench_pool[kMaxBenchParams];  // every shape binds from here
inline std::uint32_t bench_rng_state = 0x2545F491u;

inline float bench_uniform(float a) {  // xorshift32 → [-a, a)
  bench_rng_state ^= bench_rng_state << 13;
  bench_rng_state ^= bench_rng_state >> 17;
  bench_rng_state ^= bench_rng_state << 5;
  return a * (static_cast<float>(bench_rng_state >> 8) * (2.0f / 16777216.0f) - 1.0f);
}

/// The input, output and scratch of one shape, shared by its layers in every number format (a
/// microcontroller's RAM holds one set: the Cortex-M55's 512 KB would not hold three).
template <stf::index_t S, stf::index_t D, stf::index_t H, stf::index_t F>
struct BenchStorage {
  template <stf::NumberFormat Format, bool Int8Attention = false>
  using LayerOf =
      stf::EncoderLayer<S, D, H, F,
                        stf::LayerOptions{
                            .norm = stf::NormPlacement::post, .format = Format, .int8_attention = Int8Attention}>;
  static constexpr stf::index_t max3(stf::index_t a, stf::index_t b, stf::index_t c) {
    return a > b ? (a > c ? a : c) : (b > c ? b : c);
  }
  static constexpr stf::index_t scratch_floats =
      max3(LayerOf<stf::NumberFormat::f32>::scratch_floats, LayerOf<stf::NumberFormat::w8a32>::scratch_floats,
           max3(LayerOf<stf::NumberFormat::w8a8>::scratch_floats,
                LayerOf<stf::NumberFormat::w8a8, true>::scratch_floats, 0));
  static inline stf::Tensor<S, D> x, y;
  alignas(stf::kTensorAlign) static inline float scratch[scratch_floats];
};

template <stf::index_t S, stf::index_t D, stf::index_t H, stf::index_t F,
          stf::NumberFormat Format = stf::NumberFormat::f32, bool Int8Attention = false>
struct BenchLayer {
  using Storage = BenchStorage<S, D, H, F>;
  using Layer = typename Storage::template LayerOf<Format, Int8Attention>;
  static_assert(stf::param_bytes_of<typename Layer::Params>() <= kMaxBenchParams * stf::index_t(sizeof(float)));
  static inline Layer layer{};
  static constexpr auto& x = Storage::x;
  static constexpr auto& y = Storage::y;
  static constexpr float* scratch = Storage::scratch;

  /// Binds the parameters to the pool and fills them and the input. An int8 format's weights take
  /// the pool's bytes after its floats, values in [-127, 127], their scales a / 127 (the layer
  /// computes on the float layer's scale).
  static void setup() {
    stf::index_t used = 0, used_i8 = 0;
    layer.params.visit(
        [&](const stf::Name&, stf::ParamRef p) {
          if (!p.is_int8()) {
            *p.data = bench_pool + used;
            used += p.size();
          }
        },
        stf::Name{});
    auto* pool_i8 = reinterpret_cast<std::int8_t*>(bench_pool + used);
    layer.params.visit(
        [&](const stf::Name&, stf::ParamRef p) {
          if (p.is_int8()) {
            *p.data_i8 = pool_i8 + used_i8;
            used_i8 += p.size();
          }
        },
        stf::Name{});
    const float a = 1.0f / std::sqrt(static_cast<float>(D));
    for (stf::index_t i = 0; i < used; ++i) bench_pool[i] = bench_uniform(a);
    if constexpr (stf::is_int8(Format)) {
      for (stf::index_t i = 0; i < used_i8; ++i)
        pool_i8[i] = static_cast<std::int8_t>(static_cast<int>(bench_uniform(127.0f)));
      layer.params.visit(
          [&](const stf::Name&, stf::ParamRef p) {
            if (p.scale)
              for (stf::index_t i = 0; i < p.size(); ++i) const_cast<float*>(*p.data)[i] = a / 127.0f;
          },
          stf::Name{});
    }
    for (float& v : x.data) v = bench_uniform(1.0f);
  }
};

}  // namespace fw
