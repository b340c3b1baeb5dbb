// statiformer tests — the NEON w8a8 linear's sdot tiles (kernels/product/neon_int8.hpp) and the w8a8
// attention's sdot code (kernels/attention/neon_int8.hpp), compiled
// here with -march=armv8.2-a+dotprod (tests/CMakeLists.txt) so that they run whatever the build's
// flags: the aarch64 build without +dotprod selects the smull tiles, which unit_kernels' checks of
// the neon variant run. ProductInt8<neon, Int8Sdot<neon>> is a class of its own, defined only in
// translation units with +dotprod (see the header's comment); the activation pass it calls is the
// library's Kernels<neon>::activation, declared, not defined, here.
#include <statiformer/kernels/attention/neon_int8.hpp>
#include <statiformer/kernels/product/neon_int8.hpp>

#if defined(__aarch64__)
#if !defined(__ARM_FEATURE_DOTPROD)
#error "tests/unit/int8_neon_dotprod.cpp needs the dot product extension (-march=armv8.2-a+dotprod)"
#endif

namespace stf_test {
void int8_neon_sdot_linears_w8a8(const float* x, stf::index_t rows, stf::index_t in, const stf::W8a8Linear* linears,
                                 stf::index_t count, std::int8_t* scratch) {
  using namespace stf::kernels_detail::neon;
  ProductInt8<stf::isa::neon, Int8Sdot<stf::isa::neon>>::linears_w8a8(x, rows, in, linears, count, scratch);
}
// The w8a8 attention's sdot code (kernels/attention/neon_int8.hpp); false: declined (the caller
// then runs the generic code). Its float steps call the library's Kernels<neon> (declared only).
bool int8_neon_sdot_attention_rows_w8a8(const std::int8_t* q, stf::index_t q_stride, const float* s_q,
                                        stf::index_t n_rows, const std::int8_t* k, stf::index_t k_stride,
                                        const float* s_k, const std::int8_t* v, stf::index_t v_stride, const float* s_v,
                                        stf::index_t head_dim, stf::index_t n_keys, const stf::ref::RowMask* masks,
                                        stf::MaskFill fill, float* p, float* out, stf::index_t out_stride) {
  using namespace stf::kernels_detail::neon;
  return AttentionInt8<stf::isa::neon, true>::attention_rows_w8a8(
      q, q_stride, s_q, n_rows, k, k_stride, s_k, v, v_stride, s_v, head_dim, n_keys, masks, fill, p, out, out_stride);
}
}  // namespace stf_test
#endif
