// statiformer — the one list of kernel variants in this build. Two lists:
//  - `variants`: the instruction sets (isa:: tags) compiled here, each a Kernels<Tag>. Tests and
//    benchmarks iterate over it, so no variant exists untested or unbenchmarked; each reports at
//    run time whether the CPU can run it (Kernels<Tag>::supported());
//  - `operation_variants`: every variant of every operation (kernels/<op>/...), assembly
//    included, with the files that hold it and the targets that run it; `selected<Tag>()` says,
//    from each operation's selection (kernels/<op>/select.hpp), which of them Kernels<Tag> runs.
//    tests/unit/test_kernel_select.cpp checks the two against each other and against the files.
#pragma once

#include <array>
#include <string_view>

#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <statiformer/kernels/api.hpp>
#include <statiformer/kernels/attention/select.hpp>
#include <statiformer/kernels/elementwise/select.hpp>
#include <statiformer/kernels/norm/select.hpp>
#include <statiformer/kernels/product/select.hpp>
#include <statiformer/kernels/softmax/select.hpp>
#include <statiformer/kernels/transpose/select.hpp>

namespace stf::kernel_registry {

inline constexpr auto variants = boost::hana::tuple_t<isa::scalar
#if defined(__x86_64__)
                                                      ,
                                                      isa::avx2, isa::avx512
#endif
#if defined(__ARM_NEON) && (defined(__aarch64__) || defined(__ARM_FEATURE_FMA))
                                                      ,
                                                      isa::neon
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
                                                      ,
                                                      isa::mve
#endif
                                                      >;

/// One variant of one operation.
struct OperationVariant {
  std::string_view op;       ///< the folder kernels/<op>/
  std::string_view variant;  ///< the name its selection reports (<Op>Select<Tag>::variant)
  std::string_view files;    ///< its files in kernels/<op>/, space-separated
  std::string_view runs_on;  ///< the targets whose selection names it
};

/// Every variant of every operation. A new variant file goes here, into its operation's select.hpp
/// and, for a new target, into the firmware or cross check that runs it.
inline constexpr std::array<OperationVariant, 26> operation_variants = {{
    {"product", "generic", "generic.hpp register_tiles.hpp", "every target without one of its own"},
    {"product", "cortex_m4f", "cortex_m4f.hpp cortex_m4f_tiles.hpp generic.hpp register_tiles.hpp",
     "scalar on Arm M-profile with an FPU (Cortex-M4F, M7, M55)"},
    {"product", "helium", "helium.hpp generic.hpp register_tiles.hpp", "mve (Cortex-M55)"},
    // the int8 number format of the products (kernels/QUANTIZATION.md): its own selection, ProductInt8Select
    {"product", "int8_generic", "int8.hpp",
     "every target without one of its own (int8; w8a32 on every target, through the float product)"},
    {"product", "int8_x86", "x86_int8.hpp int8.hpp", "avx2, avx512 (int8; VNNI where the CPU has it)"},
    {"product", "int8_cortex_m4f", "cortex_m4f_int8.hpp int8.hpp",
     "scalar on Arm M-profile with an FPU and DSP (Cortex-M4F, M7, M55; int8: sxtb16 + smlad)"},
    {"product", "int8_helium", "helium_int8.hpp cortex_m4f_int8.hpp int8.hpp",
     "mve (Cortex-M55; int8: vmladava.s8 on gathered weights)"},
    {"product", "int8_neon", "neon_int8.hpp int8.hpp",
     "neon (aarch64, armv7 with VFPv4; int8: sdot with +dotprod, else smull + smlal + sadalp)"},
    {"attention", "generic", "generic.hpp streaming.hpp", "every target without one of its own"},
    // the int8 number format of the attention (w8a8; kernels/QUANTIZATION.md): AttentionInt8Select
    {"attention", "int8_generic", "int8.hpp", "every target (int8: the w8a8 attention)"},
    {"attention", "int8_x86", "x86_int8.hpp int8.hpp", "avx2, avx512 (int8; VNNI where the CPU has it)"},
    {"attention", "int8_cortex_m4f", "cortex_m4f_int8.hpp int8.hpp",
     "scalar on Arm M-profile with an FPU and DSP (Cortex-M4F, M7, M55; int8: sxtb16 + smlad)"},
    {"attention", "int8_helium", "helium_int8.hpp int8.hpp", "mve (Cortex-M55; int8: vmladav.s8, transposed values)"},
    {"attention", "int8_neon", "neon_int8.hpp int8.hpp",
     "neon (aarch64, armv7 with VFPv4; int8: sdot with +dotprod, else smull + smlal + sadalp)"},
    {"attention", "x86",
     "generic.hpp streaming.hpp wide_spans.hpp register_block.hpp x86_lanes.hpp x86_lane_blocks.hpp",
     "avx2, avx512 (avx512: rows in lanes, and the softmax steps in lanes over key blocks)"},
    {"attention", "cortex_m4f", "cortex_m4f.hpp generic.hpp streaming.hpp",
     "scalar on Arm M-profile with an FPU (Cortex-M4F, M7, M55)"},
    {"attention", "helium", "helium.hpp helium_scores.hpp helium_values.hpp generic.hpp streaming.hpp",
     "mve (Cortex-M55)"},
    {"elementwise", "generic", "generic.hpp", "every target without one of its own"},
    {"elementwise", "cortex_m4f", "cortex_m4f.hpp generic.hpp",
     "scalar on Arm M-profile with an FPU (Cortex-M4F, M7, M55)"},
    {"elementwise", "helium", "helium.hpp generic.hpp", "mve (Cortex-M55)"},
    {"norm", "generic", "generic.hpp", "every target without one of its own"},
    {"norm", "cortex_m4f", "cortex_m4f.hpp generic.hpp", "scalar on Arm M-profile with an FPU (Cortex-M4F, M7, M55)"},
    {"norm", "helium", "helium.hpp generic.hpp", "mve (Cortex-M55)"},
    {"softmax", "generic", "generic.hpp", "every target"},
    {"transpose", "generic", "generic.hpp", "every target (x86: register tiles of the vocabulary)"},
    {"transpose", "helium", "helium.hpp generic.hpp", "mve (Cortex-M55: a gather per column of 4 rows)"},
}};

/// The variant of one operation a Kernels<Tag> runs, as its selection names it.
struct Selected {
  std::string_view op, variant;
};

/// Which variant of each operation Kernels<Tag> runs (kernels/<op>/select.hpp), in the order of
/// the operations' folders; the attention and the products twice: float, then int8
/// (AttentionInt8Select, ProductInt8Select, variants named int8_*).
template <class Tag>
constexpr std::array<Selected, 8> selected() {
  using namespace kernels_detail;
  return {{{"attention", AttentionSelect<Tag>::variant},
           {"attention", AttentionInt8Select<Tag>::variant},
           {"elementwise", ElementwiseSelect<Tag>::variant},
           {"norm", NormSelect<Tag>::variant},
           {"product", ProductSelect<Tag>::variant},
           {"product", ProductInt8Select<Tag>::variant},
           {"softmax", SoftmaxSelect<Tag>::variant},
           {"transpose", TransposeSelect<Tag>::variant}}};
}

/// The entry of operation_variants for (op, variant), or null.
constexpr const OperationVariant* find(std::string_view op, std::string_view variant) {
  for (const OperationVariant& v : operation_variants)
    if (v.op == op && v.variant == variant) return &v;
  return nullptr;
}

}  // namespace stf::kernel_registry
