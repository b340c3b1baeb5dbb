// statiformer — Kernels<isa::dispatch>: what layers call on x86-64 when their translation unit has
// no AVX2 + FMA or AVX-512F flags. The first call picks AVX-512, AVX2 or scalar from the CPU (or
// STF_ISA; simd/dispatch.hpp has the rule) into a table of function pointers; every entry point
// then jumps through it (one load of the table pointer, no call of its own). No heap, and
// nothing from libstdc++. Built with the build's plain flags; the variants it calls are compiled
// with their own (variant_<isa>.cpp). Empty except on x86-64.
#if defined(__x86_64__)
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/simd/dispatch.hpp>

namespace stf {
namespace {

/// One variant's entry points (their types are those of every variant's).
struct Table {
  decltype(&Kernels<isa::scalar>::linear) linear;
  decltype(&Kernels<isa::scalar>::linear_block) linear_block;
  decltype(&Kernels<isa::scalar>::linears) linears;
  decltype(&Kernels<isa::scalar>::linear_w8a8) linear_w8a8;
  decltype(&Kernels<isa::scalar>::linears_w8a8) linears_w8a8;
  decltype(&Kernels<isa::scalar>::linear_w8a32) linear_w8a32;
  decltype(&Kernels<isa::scalar>::quantize_rows) quantize_rows;
  decltype(&Kernels<isa::scalar>::attention_rows_w8a8) attention_rows_w8a8;
  decltype(&Kernels<isa::scalar>::attention_row) attention_row;
  decltype(&Kernels<isa::scalar>::attention_heads) attention_heads;
  decltype(&Kernels<isa::scalar>::attention_rows) attention_rows;
  decltype(&Kernels<isa::scalar>::attention_rows_heads) attention_rows_heads;
  decltype(&Kernels<isa::scalar>::attention_lane_rows_heads) attention_lane_rows_heads;
  decltype(&Kernels<isa::scalar>::attention_rows_weights) attention_rows_weights;
  decltype(&Kernels<isa::scalar>::layer_norm_row) layer_norm_row;
  decltype(&Kernels<isa::scalar>::layer_norm_rows) layer_norm_rows;
  decltype(&Kernels<isa::scalar>::add_layer_norm_rows) add_layer_norm_rows;
  decltype(&Kernels<isa::scalar>::log_softmax_row) log_softmax_row;
  decltype(&Kernels<isa::scalar>::activation) activation;
  decltype(&Kernels<isa::scalar>::add) add;
  decltype(&Kernels<isa::scalar>::transpose) transpose;
  decltype(&Kernels<isa::scalar>::dot) dot;
  decltype(&Kernels<isa::scalar>::sum) sum;
  decltype(&Kernels<isa::scalar>::exp) exp;
  decltype(&Kernels<isa::scalar>::log) log;
  decltype(&Kernels<isa::scalar>::gelu) gelu;
  const char* name;
};

template <class Tag>
Table table_of() noexcept {
  using K = Kernels<Tag>;
  return {.linear = &K::linear,
          .linear_block = &K::linear_block,
          .linears = &K::linears,
          .linear_w8a8 = &K::linear_w8a8,
          .linears_w8a8 = &K::linears_w8a8,
          .linear_w8a32 = &K::linear_w8a32,
          .quantize_rows = &K::quantize_rows,
          .attention_rows_w8a8 = &K::attention_rows_w8a8,
          .attention_row = &K::attention_row,
          .attention_heads = &K::attention_heads,
          .attention_rows = &K::attention_rows,
          .attention_rows_heads = &K::attention_rows_heads,
          .attention_lane_rows_heads = &K::attention_lane_rows_heads,
          .attention_rows_weights = &K::attention_rows_weights,
          .layer_norm_row = &K::layer_norm_row,
          .layer_norm_rows = &K::layer_norm_rows,
          .add_layer_norm_rows = &K::add_layer_norm_rows,
          .log_softmax_row = &K::log_softmax_row,
          .activation = &K::activation,
          .add = &K::add,
          .transpose = &K::transpose,
          .dot = &K::dot,
          .sum = &K::sum,
          .exp = &K::exp,
          .log = &K::log,
          .gelu = &K::gelu,
          .name = K::name()};
}

/// The process's choice.
struct Chosen {
  Table table;
  isa::DispatchChoice choice;
};

char g_why[192];  // the reason, written once by choose()

Chosen choose() noexcept {
  const isa::DispatchChoice c = isa::decide_dispatch(std::getenv("STF_ISA"), isa::x86_can_run(false),
                                                     isa::x86_can_run(true), g_why, sizeof g_why);
  if (c.ignored_request) {
    std::fputs("statiformer: ", stderr);
    std::fputs(c.why, stderr);
    std::fputs("\n", stderr);
  }
  const Table t = std::strcmp(c.name, "avx512") == 0 ? table_of<isa::avx512>()
                  : std::strcmp(c.name, "avx2") == 0 ? table_of<isa::avx2>()
                                                     : table_of<isa::scalar>();
  return {t, c};
}

// Made once, by the first caller; callers meanwhile wait the microseconds it takes. Not a
// function-local static: its guard (__cxa_guard_acquire) is libstdc++'s, which programs linked by
// the C driver (firmware style, tests/consumer_weights) do not link; a lock-free std::atomic<int>
// needs nothing. Zero-initialized, so usable from other static initializers too.
Chosen g_chosen;
std::atomic<int> g_state{0};  // 0: not chosen, 1: being chosen, 2: chosen (g_chosen is written)

const Chosen& chosen() noexcept;

/// The entry point `Field` until the choice is made: chooses, then calls the chosen variant's.
template <auto Field, class R, class... A>
constexpr auto first_call(R (*Table::*)(A...) noexcept) -> R (*)(A...) noexcept {
  return [](A... a) noexcept -> R { return (chosen().table.*Field)(a...); };
}

/// What the entry points call before the choice: each entry chooses first (its name is unused:
/// name() goes through chosen()).
constexpr Table kFirstCall = {
    .linear = first_call<&Table::linear>(&Table::linear),
    .linear_block = first_call<&Table::linear_block>(&Table::linear_block),
    .linears = first_call<&Table::linears>(&Table::linears),
    .linear_w8a8 = first_call<&Table::linear_w8a8>(&Table::linear_w8a8),
    .linears_w8a8 = first_call<&Table::linears_w8a8>(&Table::linears_w8a8),
    .linear_w8a32 = first_call<&Table::linear_w8a32>(&Table::linear_w8a32),
    .quantize_rows = first_call<&Table::quantize_rows>(&Table::quantize_rows),
    .attention_rows_w8a8 = first_call<&Table::attention_rows_w8a8>(&Table::attention_rows_w8a8),
    .attention_row = first_call<&Table::attention_row>(&Table::attention_row),
    .attention_heads = first_call<&Table::attention_heads>(&Table::attention_heads),
    .attention_rows = first_call<&Table::attention_rows>(&Table::attention_rows),
    .attention_rows_heads = first_call<&Table::attention_rows_heads>(&Table::attention_rows_heads),
    .attention_lane_rows_heads = first_call<&Table::attention_lane_rows_heads>(&Table::attention_lane_rows_heads),
    .attention_rows_weights = first_call<&Table::attention_rows_weights>(&Table::attention_rows_weights),
    .layer_norm_row = first_call<&Table::layer_norm_row>(&Table::layer_norm_row),
    .layer_norm_rows = first_call<&Table::layer_norm_rows>(&Table::layer_norm_rows),
    .add_layer_norm_rows = first_call<&Table::add_layer_norm_rows>(&Table::add_layer_norm_rows),
    .log_softmax_row = first_call<&Table::log_softmax_row>(&Table::log_softmax_row),
    .activation = first_call<&Table::activation>(&Table::activation),
    .add = first_call<&Table::add>(&Table::add),
    .transpose = first_call<&Table::transpose>(&Table::transpose),
    .dot = first_call<&Table::dot>(&Table::dot),
    .sum = first_call<&Table::sum>(&Table::sum),
    .exp = first_call<&Table::exp>(&Table::exp),
    .log = first_call<&Table::log>(&Table::log),
    .gelu = first_call<&Table::gelu>(&Table::gelu),
    .name = "(not chosen yet)"};

/// The table the entry points call through: kFirstCall, then (from chosen_first's store on) the
/// chosen variant's. An entry point is then a load of this pointer and a jump through the table,
/// no call of its own: with a check of g_state and a call of chosen_first() in each, GCC saved and
/// reloaded their arguments around it (39 instructions per call in callgrind, 12 calls per 10x16
/// encoder layer, against 3 now).
std::atomic<const Table*> g_table{&kFirstCall};

/// The first calls: choose, or wait for the caller that chooses.
[[gnu::noinline, gnu::cold]] const Chosen& chosen_first() noexcept {
  int expected = 0;
  if (g_state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
    g_chosen = choose();
    g_state.store(2, std::memory_order_release);
    g_table.store(&g_chosen.table, std::memory_order_release);
  } else {
    while (g_state.load(std::memory_order_acquire) != 2) __builtin_ia32_pause();
  }
  return g_chosen;
}

const Chosen& chosen() noexcept {
  if (g_state.load(std::memory_order_acquire) == 2) return g_chosen;
  return chosen_first();
}

const Table& table() noexcept { return *g_table.load(std::memory_order_acquire); }

}  // namespace

namespace kernels_detail::x86 {
bool int8_allow_vnni = true;  // (kernels/product/select.hpp)
}  // namespace kernels_detail::x86

namespace isa {

DispatchChoice dispatch_choice() noexcept { return chosen().choice; }

DispatchChoice decide_dispatch(const char* requested, CpuVerdict avx2, CpuVerdict avx512, char* buffer,
                               std::size_t size) noexcept {
  const char* best = avx512.can_run ? "avx512" : avx2.can_run ? "avx2" : "scalar";
  if (requested && *requested && std::strcmp(requested, "auto") != 0) {
    const bool known = std::strcmp(requested, "scalar") == 0 || std::strcmp(requested, "avx2") == 0 ||
                       std::strcmp(requested, "avx512") == 0;
    if (!known) {
      std::snprintf(buffer, size, "STF_ISA=%.40s is not one of scalar, avx2, avx512, auto; running %s", requested,
                    best);
      return {best, buffer, true};
    }
    const CpuVerdict cpu = std::strcmp(requested, "avx512") == 0 ? avx512
                           : std::strcmp(requested, "avx2") == 0 ? avx2
                                                                 : CpuVerdict{true, "portable C++"};
    const char* name = std::strcmp(requested, "avx512") == 0 ? "avx512"
                       : std::strcmp(requested, "avx2") == 0 ? "avx2"
                                                             : "scalar";
    if (!cpu.can_run) {
      std::snprintf(buffer, size, "STF_ISA=%s: this CPU cannot run it (%s); running %s", name, cpu.why, best);
      return {best, buffer, true};
    }
    std::snprintf(buffer, size, "STF_ISA=%s", name);
    return {name, buffer, false};
  }
  if (avx2.can_run)
    std::snprintf(buffer, size, "the best this CPU runs: %s", avx512.can_run ? avx512.why : avx2.why);
  else
    std::snprintf(buffer, size, "the best this CPU runs: no AVX2 + FMA (%s)", avx2.why);
  return {best, buffer, false};
}

}  // namespace isa

template <>
void Kernels<isa::dispatch>::linear(const float* x, index_t rows, index_t in, const float* w, const float* bias,
                                    index_t out, float* y, Fuse act) noexcept {
  table().linear(x, rows, in, w, bias, out, y, act);
}
template <>
void Kernels<isa::dispatch>::linear_block(const float* x, index_t ldx, index_t rows, index_t in, WeightBlock w,
                                          index_t out, float* y, index_t ldy, const float* bias, bool accumulate,
                                          Fuse act) noexcept {
  table().linear_block(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act);
}
template <>
void Kernels<isa::dispatch>::linears(const float* x, index_t rows, index_t in, const F32Linear* linears,
                                     index_t count) noexcept {
  table().linears(x, rows, in, linears, count);
}
template <>
void Kernels<isa::dispatch>::linear_w8a8(const float* x, index_t rows, index_t in, const std::int8_t* qw,
                                         const float* s_w, const float* bias, index_t out, float* y,
                                         std::int8_t* scratch, Fuse act) noexcept {
  table().linear_w8a8(x, rows, in, qw, s_w, bias, out, y, scratch, act);
}
template <>
void Kernels<isa::dispatch>::linears_w8a8(const float* x, index_t rows, index_t in, const W8a8Linear* linears,
                                          index_t count, std::int8_t* scratch) noexcept {
  table().linears_w8a8(x, rows, in, linears, count, scratch);
}
template <>
void Kernels<isa::dispatch>::linear_w8a32(const float* x, index_t rows, index_t in, const std::int8_t* qw,
                                          const float* s_w, const float* bias, index_t out, float* y, float* scratch,
                                          Fuse act) noexcept {
  table().linear_w8a32(x, rows, in, qw, s_w, bias, out, y, scratch, act);
}
template <>
void Kernels<isa::dispatch>::quantize_rows(const float* x, index_t ldx, index_t rows, index_t k, std::int8_t* q,
                                           index_t ldq, float* s) noexcept {
  table().quantize_rows(x, ldx, rows, k, q, ldq, s);
}
template <>
void Kernels<isa::dispatch>::attention_rows_w8a8(const std::int8_t* q, index_t q_stride, const float* s_q,
                                                 index_t n_rows, const std::int8_t* k, index_t k_stride,
                                                 const float* s_k, const std::int8_t* v, index_t v_stride,
                                                 const float* s_v, index_t head_dim, index_t n_keys,
                                                 const ref::RowMask* masks, MaskFill fill, float* p, float* out,
                                                 index_t out_stride) noexcept {
  table().attention_rows_w8a8(q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks,
                              fill, p, out, out_stride);
}
template <>
void Kernels<isa::dispatch>::attention_row(const float* q, const float* kt, index_t kt_stride, const float* v,
                                           index_t v_stride, index_t head_dim, index_t n_keys, ref::RowMask mask,
                                           MaskFill fill, float* p, float* out) noexcept {
  table().attention_row(q, kt, kt_stride, v, v_stride, head_dim, n_keys, mask, fill, p, out);
}
template <>
void Kernels<isa::dispatch>::attention_heads(const float* q, index_t n_heads, const float* kt, index_t kt_stride,
                                             const float* v, index_t v_stride, index_t head_dim, index_t n_keys,
                                             ref::RowMask mask, MaskFill fill, float* p, float* out) noexcept {
  table().attention_heads(q, n_heads, kt, kt_stride, v, v_stride, head_dim, n_keys, mask, fill, p, out);
}
template <>
void Kernels<isa::dispatch>::attention_rows(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                            index_t kt_stride, const float* v, index_t v_stride, index_t head_dim,
                                            index_t n_keys, const ref::RowMask* masks, MaskFill fill, float* p,
                                            float* out, index_t out_stride) noexcept {
  table().attention_rows(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, fill, p, out,
                         out_stride);
}
template <>
void Kernels<isa::dispatch>::attention_rows_heads(const float* q, index_t q_stride, index_t n_rows, index_t n_heads,
                                                  const float* kt, index_t kt_stride, const float* v, index_t v_stride,
                                                  index_t head_dim, index_t n_keys, const ref::RowMask* masks,
                                                  MaskFill fill, float* p, float* out, index_t out_stride) noexcept {
  table().attention_rows_heads(q, q_stride, n_rows, n_heads, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, fill,
                               p, out, out_stride);
}
template <>
bool Kernels<isa::dispatch>::attention_lane_rows_heads(const float* q, index_t q_stride, index_t n_rows,
                                                       index_t n_heads, const float* k, index_t k_stride,
                                                       const float* v, index_t v_stride, index_t head_dim,
                                                       index_t n_keys, const ref::RowMask* masks, bool one_mask,
                                                       float* out, index_t out_stride) noexcept {
  return table().attention_lane_rows_heads(q, q_stride, n_rows, n_heads, k, k_stride, v, v_stride, head_dim, n_keys,
                                           masks, one_mask, out, out_stride);
}
template <>
void Kernels<isa::dispatch>::attention_rows_weights(const float* q, index_t q_stride, index_t n_rows, const float* kt,
                                                    index_t kt_stride, const float* v, index_t v_stride,
                                                    index_t head_dim, index_t n_keys, const ref::RowMask* masks,
                                                    MaskFill fill, float* weights, float* out,
                                                    index_t out_stride) noexcept {
  table().attention_rows_weights(q, q_stride, n_rows, kt, kt_stride, v, v_stride, head_dim, n_keys, masks, fill,
                                 weights, out, out_stride);
}
template <>
void Kernels<isa::dispatch>::layer_norm_row(const float* x, const float* gain, const float* bias, index_t n,
                                            LayerNormKind kind, float eps, float* y) noexcept {
  table().layer_norm_row(x, gain, bias, n, kind, eps, y);
}
template <>
void Kernels<isa::dispatch>::layer_norm_rows(const float* x, index_t rows, const float* gain, const float* bias,
                                             index_t n, LayerNormKind kind, float eps, float* y) noexcept {
  table().layer_norm_rows(x, rows, gain, bias, n, kind, eps, y);
}
template <>
void Kernels<isa::dispatch>::add_layer_norm_rows(float* a, const float* x, index_t rows, const float* gain,
                                                 const float* bias, index_t n, LayerNormKind kind, float eps,
                                                 float* y) noexcept {
  table().add_layer_norm_rows(a, x, rows, gain, bias, n, kind, eps, y);
}
template <>
void Kernels<isa::dispatch>::log_softmax_row(float* x, index_t n) noexcept {
  table().log_softmax_row(x, n);
}
template <>
void Kernels<isa::dispatch>::activation(Activation a, float* x, index_t n) noexcept {
  table().activation(a, x, n);
}
template <>
void Kernels<isa::dispatch>::add(float* y, const float* x, index_t n) noexcept {
  table().add(y, x, n);
}
template <>
void Kernels<isa::dispatch>::transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst,
                                       index_t ld_dst) noexcept {
  table().transpose(src, rows, cols, ld_src, dst, ld_dst);
}
template <>
float Kernels<isa::dispatch>::dot(const float* a, const float* b, index_t n) noexcept {
  return table().dot(a, b, n);
}
template <>
float Kernels<isa::dispatch>::sum(const float* x, index_t n) noexcept {
  return table().sum(x, n);
}
template <>
void Kernels<isa::dispatch>::exp(const float* x, float* y, index_t n) noexcept {
  table().exp(x, y, n);
}
template <>
void Kernels<isa::dispatch>::log(const float* x, float* y, index_t n) noexcept {
  table().log(x, y, n);
}
template <>
void Kernels<isa::dispatch>::gelu(const float* x, float* y, index_t n) noexcept {
  table().gelu(x, y, n);
}
template <>
bool Kernels<isa::dispatch>::supported() noexcept {
  return true;
}
template <>
const char* Kernels<isa::dispatch>::name() noexcept {
  return chosen().table.name;
}

}  // namespace stf
#endif
