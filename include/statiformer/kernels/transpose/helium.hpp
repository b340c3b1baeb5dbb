// statiformer — transpose on Cortex-M55 (Helium / MVE): panels of 4 source rows, one gather per
// column. See kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <cstdint>

#include <statiformer/config.hpp>

namespace stf::kernels_detail::helium {

/// The whole transpose (generic::Transpose::transpose calls it): a copy, the same bits.
struct Transpose {
  /// dst[c, r] = src[r, c] for 4 source rows at a time (panel).
  static void transpose(const float* src, index_t rows, index_t cols, index_t ld_src, float* dst, index_t ld_dst) {
    for (index_t r = 0; r < rows; r += 4)
      panel(src + r * ld_src, static_cast<uint32_t>(ld_src * 4), rows - r < 4 ? rows - r : 4, cols, dst + r,
            static_cast<uint32_t>(ld_dst * 4));
  }

 private:
  /// One panel of n <= 4 source rows: a vector of the rows' addresses, one gather per column that
  /// steps them by one float (vldrw [q0, #4]!: the addresses start one float before column 0) and
  /// one store of the n elements into dst's row c; 4 columns per loop iteration when n is 4, else
  /// every access predicated to the n rows (none past them).
  [[gnu::noinline]] static void panel(const float* src, uint32_t ld_src_bytes, index_t n, index_t cols, float* d,
                                      uint32_t ld_bytes) {
    alignas(16) uint32_t addr[4];
    for (uint32_t i = 0; i < 4; ++i) addr[i] = address(src) - 4u + i * ld_src_bytes;
    asm volatile(
        "vldrw.u32 q0, [%[addr]]\n"
        "cmp %[n], #4\n"
        "blt 5f\n"
        "lsr r12, %[cols], #2\n"
        "wls lr, r12, 2f\n"
        "1:\n"
        "vldrw.u32 q1, [q0, #4]!\n"
        "vldrw.u32 q2, [q0, #4]!\n"
        "vldrw.u32 q3, [q0, #4]!\n"
        "vstrw.32 q1, [%[d]]\n"
        "add %[d], %[d], %[ld]\n"
        "vldrw.u32 q1, [q0, #4]!\n"
        ".irp i, 2, 3, 1\n vstrw.32 q\\i, [%[d]]\n add %[d], %[d], %[ld]\n .endr\n"
        "le lr, 1b\n"
        "2:\n"
        "and r12, %[cols], #3\n"
        "wls lr, r12, 6f\n"
        "3:\n"
        "vldrw.u32 q1, [q0, #4]!\n"
        "vstrw.32 q1, [%[d]]\n"
        "add %[d], %[d], %[ld]\n"
        "le lr, 3b\n"
        "b 6f\n"
        "5:\n"
        "vctp.32 %[n]\n"
        "wls lr, %[cols], 6f\n"
        "4:\n"
        "vpstt\n"
        "vldrwt.u32 q1, [q0, #4]!\n"
        "vstrwt.32 q1, [%[d]]\n"
        "add %[d], %[d], %[ld]\n"
        "le lr, 4b\n"
        "6:\n"
        : [d] "+r"(d)
        : [addr] "r"(addr), [n] "r"(n), [cols] "r"(cols), [ld] "r"(ld_bytes), "m"(addr)
        : "r12", "lr", "q0", "q1", "q2", "q3", "cc", "memory");
  }
  static uint32_t address(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
};

}  // namespace stf::kernels_detail::helium
#endif
