// statiformer — instruction-set tags, and the one place where the active one is chosen.
//
// Kernels exist once, as templates over a SIMD vocabulary (simd/<isa>.hpp), and are compiled once
// per instruction set in src/kernels/variant_<isa>.cpp with that ISA's flags. `isa::active` is the
// variant the layers call: chosen statically from the compile flags of the including translation
// unit, so layers never see an #ifdef. On x86-64 without AVX2 + FMA or AVX-512F in those flags (a
// build without -march), it is `dispatch`: the variant that picks AVX-512, AVX2 or scalar once per
// process from the CPU (src/kernels/variant_dispatch.cpp; simd/dispatch.hpp says how, and how to
// force one with STF_ISA). Define STF_NO_DISPATCH (in every translation unit) to call the scalar
// variant directly instead.
#pragma once

// The namespace of what a kernel variant instantiates (ATen's CPU_CAPABILITY): the vocabularies,
// simd/math.hpp and simd/fma_double.hpp are in the inline namespace STF_VARIANT_NAMESPACE, which each
// src/kernels/variant_<isa>.cpp names (variant_<isa>) before its first include; every other
// translation unit gets `build`. Inline functions and templates are emitted as weak symbols in each
// object that uses them, and the linker keeps any one copy: without this, simd_math::exp of the
// scalar vocabulary, which every x86 variant and the reference use, would be one symbol in objects
// compiled with and without -mavx512f. The names differ per variant now, so each object calls its
// own copy (ctest "isa: no weak symbol ...": tools/check_variant_symbols.py). Kernels<Tag> and
// kernels_detail::generic::<Op><Tag> are distinct per tag already; the tags stay outside.
#ifndef STF_VARIANT_NAMESPACE
#define STF_VARIANT_NAMESPACE build
#endif

namespace stf::isa {

struct scalar {};  ///< portable C++: riscv64, Cortex-M4/M7, and any target without a vector unit
struct avx2 {};    ///< x86-64 AVX2 + FMA
struct avx512 {};  ///< x86-64 AVX-512F
struct neon {};    ///< aarch64 NEON, or armv7 NEON with VFPv4 fused multiply-add
struct mve {};     ///< Armv8.1-M Helium (MVE) with floating point: Cortex-M55
/// x86-64 built without -march: forwards every kernel to avx512, avx2 or scalar, whichever the CPU
/// runs best (or STF_ISA names), chosen at the first call; not a vocabulary of its own.
struct dispatch {};

#if defined(__AVX512F__)
using active = avx512;
#elif defined(__AVX2__) && defined(__FMA__)
using active = avx2;
#elif defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
using active = mve;
#elif defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
using active = neon;
#elif defined(__x86_64__) && !defined(STF_NO_DISPATCH)
using active = dispatch;
#else
using active = scalar;
#endif

inline namespace STF_VARIANT_NAMESPACE {

template <class Tag>
struct Vocabulary;  ///< specialized by each simd/<isa>.hpp

}  // namespace STF_VARIANT_NAMESPACE
}  // namespace stf::isa
