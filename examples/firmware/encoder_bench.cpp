// Encoder-layer benchmark firmware: stf::EncoderLayer (post-norm, float32, full-length input) at
// the firmware plan's shapes (bench_layer.hpp: (SeqLen, DModel, NHeads, DFf) = (10,16,2,32),
// (32,64,4,128), (64,64,4,256)), as exact instruction counts per forward under qemu -icount shift=0
// (SysTick readings summed over every phase offset, see cycles.hpp), next to the plan's reference
// counts: issue 5's CMSIS-DSP layer, and issue 23's CMSIS-NN int8 layer for the int8 formats.
// Weights and inputs are pseudo-random (the counts do not depend on the values' magnitudes).
#include <cmath>
#include <cstdint>

#include <statiformer/statiformer.hpp>

#include "bench_layer.hpp"
#include "cycles.hpp"
#include "firmware.h"

namespace {
using namespace stf;

void put_grouped(std::uint64_t v, int width) {  // 1,234,567
  char text[32];
  int n = 0, digits = 0;
  do {
    if (digits && digits % 3 == 0) text[n++] = ',';
    text[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
    ++digits;
  } while (v);
  for (int i = n; i < width; ++i) fw_putc(' ');
  while (n) fw_putc(text[--n]);
}

void put_shape(index_t s, index_t d, index_t h, index_t f) {  // "  (32, 64, 4, 128)"
  fw_puts("  (");
  fw_put_u(s, 2);
  fw_puts(", ");
  fw_put_u(d, 2);
  fw_puts(", ");
  fw_put_u(h, 1);
  fw_puts(", ");
  fw_put_u(f, 3);
  fw_puts(")");
}

std::uint64_t measurement_overhead = 0;  // instructions inside an empty pair of readings
bool exact = true;

/// Exact instructions of f() (deterministic), over every SysTick phase.
template <class F>
std::uint64_t count(F&& f) {
  std::uint64_t ticks = 0, insns = 0;
  fw::for_each_phase([&] {
    const std::uint64_t t0 = fw::systick_now();
    f();
    ticks += fw::systick_now() - t0;
  });
  exact = fw::exact_instructions(ticks, insns) && exact;
  return insns - measurement_overhead;
}

template <fw::FirmwareShape Sh>
std::uint64_t bench() {
  constexpr index_t S = Sh.seq_len, D = Sh.d_model, H = Sh.n_heads, F = Sh.d_ff;
  using Bench = fw::BenchLayer<S, D, H, F>;
  using Layer = typename Bench::Layer;
  Bench::setup();
  auto& layer = Bench::layer;
  auto& x = Bench::x;
  auto& y = Bench::y;
  float* scratch = Bench::scratch;

  if (layer.forward(x, y, S, scratch) != Status::ok) {  // warm-up, and the arguments are valid
    fw_puts("forward failed\n");
    fw_exit(1);
  }
  std::uint64_t ticks = 0;
  fw::for_each_phase([&] {
    const std::uint64_t t0 = fw::systick_now();
    (void)layer.forward(x, y, S, scratch);
    ticks += fw::systick_now() - t0;
  });
  std::uint64_t insns = 0;
  exact = fw::exact_instructions(ticks, insns) && exact;
  insns -= measurement_overhead;

  const float y0 = y.data[0];
  // Where they go: the layer's phases measured one by one, with the same arguments as inside.
  const typename Layer::SelfAttention attn{layer.params.self_attn};
  const typename Layer::FF ff{layer.params.ff};
  const typename Layer::Norm norm1{layer.params.norm1};
  float* t = scratch;
  float* inner = scratch + S * D;
  const AttentionMask mask = AttentionMask::padding(S);
  const std::uint64_t phase[3] = {
      count([&] { attn.run(x.data, x.data, mask, inner, t); }),
      count([&] { ff.run(y.data, S, t, inner); }),
      count([&] { norm1.add_run(y.data, t, S); }),
  };

  put_shape(S, D, H, F);
  put_grouped(insns, 14);
  put_grouped(Sh.m4_plain_c, 14);
  put_grouped(Sh.m4_cmsis_dsp, 14);
  put_grouped(Sh.m55_helium, 14);
  // the fair comparison: M55 against Helium CMSIS-DSP, M4/M7 against plain C on the M4
  const std::uint64_t base = fw::kSysTickHz == 32000000u ? Sh.m55_helium : Sh.m4_plain_c;
  fw_put_f(static_cast<double>(insns) / static_cast<double>(base), 2, 8);
  fw_puts("x   (y[0] = ");
  fw_put_f(static_cast<double>(y0), 4, 0);
  fw_puts(")\n      attention ");
  put_grouped(phase[0], 0);
  fw_puts(", feed-forward ");
  put_grouped(phase[1], 0);
  fw_puts(", add + LayerNorm ");
  put_grouped(phase[2], 0);
  fw_puts(" (x2)\n");
  if (!std::isfinite(y0)) exact = false;
  return insns;
}

/// Instructions of one forward of the layer in an int8 format (its own weights and input).
template <index_t S, index_t D, index_t H, index_t F, NumberFormat Format, bool Int8Attention = false>
std::uint64_t bench_int8() {
  using Bench = fw::BenchLayer<S, D, H, F, Format, Int8Attention>;
  Bench::setup();
  if (Bench::layer.forward(Bench::x, Bench::y, S, Bench::scratch) != Status::ok) {
    fw_puts("int8 forward failed\n");
    fw_exit(1);
  }
  if (!std::isfinite(Bench::y.data[0])) exact = false;
  return count([&] { (void)Bench::layer.forward(Bench::x, Bench::y, S, Bench::scratch); });
}

/// One row of the int8 table: float32 (measured above), w8a32, w8a8, w8a8 with the int8 attention
/// (LayerOptions::int8_attention), CMSIS-NN's int8 layer (issue
/// 23's anchor for this core), and float32 / w8a8.
template <fw::FirmwareShape Sh>
void bench_formats(std::uint64_t f32) {
  constexpr index_t S = Sh.seq_len, D = Sh.d_model, H = Sh.n_heads, F = Sh.d_ff;
  const std::uint64_t w8a32 = bench_int8<S, D, H, F, NumberFormat::w8a32>();
  const std::uint64_t w8a8 = bench_int8<S, D, H, F, NumberFormat::w8a8>();
  const std::uint64_t a8 = bench_int8<S, D, H, F, NumberFormat::w8a8, true>();
  put_shape(S, D, H, F);
  put_grouped(f32, 12);
  put_grouped(w8a32, 12);
  put_grouped(w8a8, 12);
  put_grouped(a8, 14);
  put_grouped(fw::kSysTickHz == 32000000u ? Sh.cmsis_nn_m55 : Sh.cmsis_nn_m4f, 14);
  fw_put_f(static_cast<double>(f32) / static_cast<double>(w8a8), 2, 9);
  fw_puts("x\n");
}
}  // namespace

int main() {
  fw::systick_start();
  std::uint64_t ticks = 0;
  fw::for_each_phase([&] {
    const std::uint64_t t0 = fw::systick_now();
    ticks += fw::systick_now() - t0;
  });
  exact = fw::exact_instructions(ticks, measurement_overhead);

  fw_puts("stf::EncoderLayer, post-norm, float32: instructions per forward on " STF_FW_CORE
          " (qemu-system-arm -M " STF_FW_MACHINE " -icount shift=0; SysTick readings summed over ");
  fw_put_u(fw::kPeriodInsns, 0);
  // (one call, as before the selection was named: the counts of the speed-first firmware stay put)
  fw_puts(stf::kKernelsSizeFirst ? " phase offsets); kernels: size-first\n"  // (kernels/api.hpp)
                                 : " phase offsets); kernels: speed-first\n");
  fw_puts("  (S,  D,  H,   F)   statiformer   M4 plain C   M4 CMSIS-DSP   M55 Helium   ratio\n");
  fw_puts("                     (this core)   -O2 (ref)    (ref)          CMSIS (ref)  (vs ");
  fw_puts(fw::kSysTickHz == 32000000u ? "M55 Helium)\n" : "M4 plain C)\n");
  std::uint64_t f32[fw::kFirmwareShapes.size()];
  fw::for_each_shape([&]<std::size_t I, fw::FirmwareShape Sh>() { f32[I] = bench<Sh>(); });
  // the int8 formats (kernels/QUANTIZATION.md; the linears int8, the attention float), next to the
  // float layer above and issue 23's anchor: a CMSIS-NN int8 post-norm layer (GCC 12.2 -O2)
  fw_puts("stf::EncoderLayer in the int8 formats (issue 23): instructions per forward\n");
  fw_puts("  (S,  D,  H,   F)     float32       w8a32        w8a8   +int8 attn.   CMSIS-NN int8   float32/w8a8\n");
  fw::for_each_shape([&]<std::size_t I, fw::FirmwareShape Sh>() { bench_formats<Sh>(f32[I]); });
  // per-kernel costs, the building blocks of the table above
  {
    using K = ActiveKernels;
    alignas(kTensorAlign) static float a[64 * 64], b[64 * 64], c[64 * 64], p[64 * 4];
    for (index_t i = 0; i < 64 * 64; ++i) a[i] = fw::bench_uniform(1.0f), b[i] = fw::bench_uniform(1.0f);
    fw_puts("kernels (" STF_FW_CORE "):\n  linear 64x64 -> 64:   ");
    put_grouped(count([&] { K::linear(a, 64, 64, b, b, 64, c); }), 0);
    fw_puts("  (262,144 multiply-adds)\n  exp x 64:             ");
    put_grouped(count([&] { K::exp(a, c, 64); }), 0);
    fw_puts("\n  layer_norm_row 64:    ");
    put_grouped(count([&] { K::layer_norm_row(a, b, b, 64, LayerNormKind::torch, 1e-5f, c); }), 0);
    ref::RowMask masks[4] = {{64, nullptr}, {64, nullptr}, {64, nullptr}, {64, nullptr}};
    fw_puts("\n  attention 4 rows x 64 keys, head_dim 16: ");
    put_grouped(count([&] { K::attention_rows(a, 64, 4, b, 64, b, 64, 16, 64, masks, MaskFill::neg_inf, p, c, 64); }),
                0);
    fw_puts("  (8,192 multiply-adds, 256 exp)\n");
    // the int8 formats' linears at the same shape (kernels/QUANTIZATION.md), and a decoding step's row
    static std::int8_t qw[64 * 64], q_scratch[linear_w8a8_scratch_bytes(64, 64)];
    alignas(kTensorAlign) static float w32_scratch[linear_w8a32_scratch_floats(64)];
    for (index_t i = 0; i < 64 * 64; ++i) qw[i] = static_cast<std::int8_t>(static_cast<int>(i * 37 % 255) - 127);
    fw_puts("  linear_w8a8 64x64 -> 64:  ");
    put_grouped(count([&] { K::linear_w8a8(a, 64, 64, qw, b, b, 64, c, q_scratch); }), 0);
    fw_puts("\n  linear_w8a32 64x64 -> 64: ");
    put_grouped(count([&] { K::linear_w8a32(a, 64, 64, qw, b, b, 64, c, w32_scratch); }), 0);
    fw_puts("\n  one row, 1x64 -> 64: linear ");
    put_grouped(count([&] { K::linear(a, 1, 64, b, b, 64, c); }), 0);
    fw_puts(", linear_w8a8 ");
    put_grouped(count([&] { K::linear_w8a8(a, 1, 64, qw, b, b, 64, c, q_scratch); }), 0);
    fw_puts(", linear_w8a32 ");
    put_grouped(count([&] { K::linear_w8a32(a, 1, 64, qw, b, b, 64, c, w32_scratch); }), 0);
    fw_puts("\n");
  }
  fw_puts(exact ? "counts exact: every phase sum was a whole number of instructions\n"
                : "WARNING: a phase sum was not a whole number of instructions, or an output was not finite\n");
  fw_puts("stack high-water: ");
  fw_put_u(fw_stack_high_water(), 0);
  fw_puts(" B\n");
  return exact ? 0 : 1;
}
