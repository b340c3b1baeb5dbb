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

template <class Tag>
struct Vocabulary;  ///< specialized by each simd/<isa>.hpp

}  // namespace stf::isa
