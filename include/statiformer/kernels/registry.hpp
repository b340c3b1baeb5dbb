// statiformer — the one list of kernel variants in this build. Tests and benchmarks iterate over
// it, so no variant exists untested or unbenchmarked; each reports at run time whether the CPU can
// run it (Kernels<Tag>::supported()).
#pragma once

#include <boost/hana/tuple.hpp>
#include <boost/hana/type.hpp>

#include <statiformer/kernels/api.hpp>

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

}  // namespace stf::kernel_registry
