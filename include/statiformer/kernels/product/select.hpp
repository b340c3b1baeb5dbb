// statiformer — matrix products: which variant each target runs, readable in one place (the generic
// tile and linear_block ask it). The same shape as kernels/norm/select.hpp.
#pragma once

#include <statiformer/kernels/product/cortex_m4f.hpp>
#include <statiformer/kernels/product/cortex_m4f_int8.hpp>
#include <statiformer/kernels/product/helium.hpp>
#include <statiformer/kernels/product/helium_int8.hpp>
#include <statiformer/kernels/product/neon_int8.hpp>
#include <statiformer/simd/isa.hpp>

namespace stf::kernels_detail {

/// Matrix products (tiles, linear over weight panels) on target `Tag`:
///   generic     every target: the generic register tiles on the vocabulary;
///   cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU):
///               tile4 (1..6 rows × 4 outputs, assembly; not GELU, not partial),
///               linear_panels (every linear: outputs short of a group of 4 one column at a
///               time, one row by row16, 16 outputs wide; a GELU as a pass) and
///               gemm_plain (the attention's products: tile4, row16 for one row of 16+ outputs,
///               and a scalar column);
///   helium      Cortex-M55 (mve): row_tile (2..4 rows, vectors across the rows),
///               linear_panels (every linear: one row by row_outputs, vectors across the
///               outputs; a GELU as a pass) and
///               gemm_plain (the attention's products: row_tile, one row across outputs).
/// Each alias is the struct (kernels/product/<variant>.hpp) that provides that entry point, void
/// where the generic code (kernels/product/generic.hpp) runs; `load4` says whether the generic
/// tiles take the vocabulary's load4.
template <class Tag>
struct ProductSelect {
  static constexpr const char* variant = "generic";
  using Tile4 = void;    ///< tile4(x, ldx, rows, k0, k1, w, ldw, y, ldy, first, bias, relu)
  using RowTile = void;  ///< row_tile(x, ldx, rows, k0, k1, w, ldw, y, ldy, width, first, bias, epilogue)
  /// linear_panels(x, ldx, rows, in, w, out, y, ldy, bias, accumulate, act, none, relu): every linear
  /// but a GELU's activation, which linear_block applies as a pass over the stored outputs; where it is
  /// named, no generic product is linked for linears.
  using Panels = void;
  using PlainWalk = void;  ///< gemm_plain(x, ldx, rows, in, w, ldw, out, y, ldy, accumulate)
  /// The vocabulary's load4 (four weights by one instruction) in the tiles of 5+ rows × 4 vectors.
  static constexpr bool load4 = false;
};

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
template <>
struct ProductSelect<isa::scalar> {
  static constexpr const char* variant = "cortex_m4f";
  using Tile4 = cortex_m4f::Product;
  using RowTile = void;
  using Panels = cortex_m4f::Product;  // (the generic product it replaces: 23 KB of the firmware)
  using PlainWalk = cortex_m4f::Product;
  static constexpr bool load4 = true;  // (simd/scalar.hpp: vldmia)
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
template <>
struct ProductSelect<isa::mve> {
  static constexpr const char* variant = "helium";
  using Tile4 = void;
  using RowTile = helium::Product;
  using Panels = helium::Product;
  using PlainWalk = helium::Product;
  static constexpr bool load4 = false;
};
#endif

// ---- int8 products (kernels/QUANTIZATION.md), a second number format of the operation ----------

#if defined(__x86_64__)
namespace x86 {
/// The x86 int8 products (kernels/product/x86_int8.hpp; defined only where AVX2 + FMA are enabled:
/// the avx2 and avx512 variants' translation units). Declared here so that every translation unit
/// can read the selection.
template <class Tag>
struct ProductInt8;
/// Whether the x86 int8 kernels run VNNI (vpdpbusd: AVX512-VNNI, AVX-VNNI) where the CPU has it:
/// true, except where the kernel tests set it false to run the vpmaddwd code of CPUs without VNNI
/// on a CPU with it (tests/unit/test_kernels.cpp); the bits are the same. Defined in
/// src/kernels/variant_dispatch.cpp; change it only while no kernel runs.
extern bool int8_allow_vnni;
}  // namespace x86
#endif

/// int8 products (w8a8 linear) on target `Tag`:
///   int8_generic  every target: plain integer loops (kernels/product/int8.hpp), the compiler's
///                 own vectorization;
///   int8_x86      avx2: vpdpbusd on ymm (AVX-VNNI) where the CPU has it, else vpmaddwd on
///                 sign-extended int16; avx512: vpdpbusd on zmm (AVX512-VNNI) where the CPU has
///                 it, else the vpmaddwd code; checked at run time in the kernel
///                 (kernels/product/x86_int8.hpp);
///   int8_cortex_m4f  Cortex-M4F/M7 (the scalar vocabulary on Arm M-profile with an FPU and the DSP
///                 extension; the M55's too): int16 pairs by sxtb16 + smlad, tiles of 2 rows × 2
///                 outputs (kernels/product/cortex_m4f_int8.hpp);
///   int8_helium   Cortex-M55 (mve, with the DSP extension): vmladava.s8 of 16 k of a row against
///                 16 k of an output (a gather of 4 quads' words), tiles of 2 rows × 3 outputs
///                 (a single row: 1 × 6), tail-predicated loops (kernels/product/helium_int8.hpp).
///   int8_neon     neon (aarch64; armv7 with NEON and VFPv4): `sdot` by lane, tiles of 4 rows × 16
///                 outputs, where the build has the dot product extension (__ARM_FEATURE_DOTPROD,
///                 e.g. -march=armv8.2-a+dotprod), else int16 pairs by smull + smlal widened by
///                 sadalp, tiles of 4 rows × 8 outputs (armv7: 2 × 8); chosen at compile time
///                 (kernels/product/neon_int8.hpp).
/// `Linear` is the struct that provides linears_w8a8 (Kernels::linear_w8a8 is its call with one
/// linear), void where the generic code runs; `QuantizeRows` its quantize_rows; `W8a32` the w8a32
/// linear's steps around the float product (generic::ProductInt8::linear_w8a32): convert_w8a32, a
/// chunk's whole k-quads to float (Helium: a gather, a vcvt and a store per 4 weights; Cortex-M4F/M7:
/// per 4 outputs and k 4 sxtb, 2 vmov, 4 vcvt and a vstmia; x86: per 8 outputs (avx512: 16) and
/// k-quad one load, two shifts, a vcvtdq2ps and a store per k), and epilogue_w8a32, fma(acc, s_w, b)
/// over a row (vfma, vfmadd); `W8a32Row` its product_w8a32_row, one row's product (a decoding step)
/// with each weight converted where it is used (Helium: per k and 4 outputs a gather, a vcvt and a
/// vfma by x[k]; Cortex-M4F/M7: per k and 4 outputs 4 sxtb, 2 vmov, 4 vcvt and 4 vfma; x86: per quad
/// a load of 8 outputs' bytes (avx512: 16), per k two shifts, a vcvtdq2ps and a vfmadd by x[k]); void
/// where generic::ProductInt8's loops run.
template <class Tag>
struct ProductInt8Select {
  static constexpr const char* variant = "int8_generic";
  using Linear = void;        ///< linears_w8a8(x, rows, in, linears, count, scratch)
  using QuantizeRows = void;  ///< quantize_rows(x, ldx, rows, k, q, ldq, s) (the w8a8 attention's rows)
  using W8a32 = void;         ///< convert_w8a32(w, width, cw, quads, sq), epilogue_w8a32(y, s_w, bias, out)
  using W8a32Row = void;      ///< product_w8a32_row(x, in, qw, out, y)
};

#if defined(__x86_64__)
template <>
struct ProductInt8Select<isa::avx2> {
  static constexpr const char* variant = "int8_x86";
  using Linear = x86::ProductInt8<isa::avx2>;
  using QuantizeRows = x86::ProductInt8<isa::avx2>;
  using W8a32 = x86::ProductInt8<isa::avx2>;
  using W8a32Row = x86::ProductInt8<isa::avx2>;
};
template <>
struct ProductInt8Select<isa::avx512> {
  static constexpr const char* variant = "int8_x86";
  using Linear = x86::ProductInt8<isa::avx512>;
  using QuantizeRows = x86::ProductInt8<isa::avx512>;
  using W8a32 = x86::ProductInt8<isa::avx512>;
  using W8a32Row = x86::ProductInt8<isa::avx512>;
};
#endif

#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
template <>
struct ProductInt8Select<isa::neon> {
  static constexpr const char* variant = "int8_neon";
#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
  using Linear = neon::ProductInt8<isa::neon, neon::Int8Sdot<isa::neon>>;
#else
  using Linear = neon::ProductInt8<isa::neon, neon::Int8Smull<isa::neon>>;
#endif
  using QuantizeRows = void;
  using W8a32 = void;
  using W8a32Row = void;
};
#endif

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP) && defined(__ARM_FEATURE_DSP)
template <>
struct ProductInt8Select<isa::scalar> {
  static constexpr const char* variant = "int8_cortex_m4f";
  using Linear = cortex_m4f::ProductInt8<isa::scalar>;
  using QuantizeRows = cortex_m4f::ProductInt8<isa::scalar>;
  using W8a32 = cortex_m4f::ProductInt8<isa::scalar>;
  using W8a32Row = cortex_m4f::ProductInt8<isa::scalar>;
};
#endif

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2) && defined(__ARM_FEATURE_DSP)
template <>
struct ProductInt8Select<isa::mve> {
  static constexpr const char* variant = "int8_helium";
  using Linear = helium::ProductInt8<isa::mve>;
  using QuantizeRows = helium::ProductInt8<isa::mve>;
  using W8a32 = helium::ProductInt8<isa::mve>;
  using W8a32Row = helium::ProductInt8<isa::mve>;
};
#endif

}  // namespace stf::kernels_detail
