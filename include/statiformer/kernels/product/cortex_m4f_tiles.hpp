// statiformer — matrix-product kernels on Cortex-M4F/M7, part: the register tiles in assembly
// (tile4_rows5, tile4_rows<R>), which cortex_m4f::Product::tile4 calls. See kernels/README.md
// (a target's parts: <target>_<part>.hpp).
#pragma once

#include <statiformer/config.hpp>
#include <statiformer/kernels/api.hpp>

#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FP)
namespace stf::kernels_detail::cortex_m4f {

/// The 1..6 × 4 tiles of the matrix products in assembly (cortex_m4f::Product::tile4 picks them).
struct ProductTiles {
 protected:
  /// tile4 for 5 rows, 2 steps at a time: accumulators s0-s19, the weights of 2 steps s20-s27, a
  /// row's x of 2 steps s28-s29; the epilogue's arguments from memory (general-purpose registers:
  /// 5 row pointers, w, ldw, a counter).
  static void tile4_rows5(const float* x, index_t ldx, index_t n, const float* w, index_t ldw, float* y, index_t ldy,
                          const float* bias, unsigned mode) {
    alignas(8) static constexpr float kZeros[20] = {};
    struct Args {  // (byte offsets in the assembly)
      float* y;    // 0
      unsigned ldy, mode;
      const float* bias;   // 12
      const float* zeros;  // 16
      unsigned n;          // 20
    } args{y, static_cast<unsigned>(ldy * 4), mode, bias, kZeros, static_cast<unsigned>(n)};
    const float* x1 = x + ldx;
    const float* x2 = x1 + ldx;
    const float* x3 = x2 + ldx;
    const float* x4 = x3 + ldx;
    unsigned count;
    asm volatile(
        "ldr %[count], [%[a], #8]\n"  // accumulators: +0, or y
        "tst %[count], #1\n"
        "beq 1f\n"
        "ldr %[count], [%[a], #16]\n"
        "vldmia %[count], {s0-s19}\n"
        "b 2f\n"
        "1:\n"
        "ldrd %[count], lr, [%[a]]\n"
        "vldmia %[count], {s0-s3}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s4-s7}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s8-s11}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s12-s15}\n"
        "add %[count], %[count], lr\n"
        "vldmia %[count], {s16-s19}\n"
        "2:\n"
        "ldr %[count], [%[a], #20]\n"
        "lsrs %[count], %[count], #1\n"
        "beq 4f\n"
        "3:\n"  // 2 steps
        "vldmia %[w], {s20-s23}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s24-s27}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28-s29}\n"
        "vfma.f32 s0, s28, s20\n"
        "vfma.f32 s1, s28, s21\n"
        "vfma.f32 s2, s28, s22\n"
        "vfma.f32 s3, s28, s23\n"
        "vfma.f32 s0, s29, s24\n"
        "vfma.f32 s1, s29, s25\n"
        "vfma.f32 s2, s29, s26\n"
        "vfma.f32 s3, s29, s27\n"
        "vldmia %[x1]!, {s28-s29}\n"
        "vfma.f32 s4, s28, s20\n"
        "vfma.f32 s5, s28, s21\n"
        "vfma.f32 s6, s28, s22\n"
        "vfma.f32 s7, s28, s23\n"
        "vfma.f32 s4, s29, s24\n"
        "vfma.f32 s5, s29, s25\n"
        "vfma.f32 s6, s29, s26\n"
        "vfma.f32 s7, s29, s27\n"
        "vldmia %[x2]!, {s28-s29}\n"
        "vfma.f32 s8, s28, s20\n"
        "vfma.f32 s9, s28, s21\n"
        "vfma.f32 s10, s28, s22\n"
        "vfma.f32 s11, s28, s23\n"
        "vfma.f32 s8, s29, s24\n"
        "vfma.f32 s9, s29, s25\n"
        "vfma.f32 s10, s29, s26\n"
        "vfma.f32 s11, s29, s27\n"
        "vldmia %[x3]!, {s28-s29}\n"
        "vfma.f32 s12, s28, s20\n"
        "vfma.f32 s13, s28, s21\n"
        "vfma.f32 s14, s28, s22\n"
        "vfma.f32 s15, s28, s23\n"
        "vfma.f32 s12, s29, s24\n"
        "vfma.f32 s13, s29, s25\n"
        "vfma.f32 s14, s29, s26\n"
        "vfma.f32 s15, s29, s27\n"
        "vldmia %[x4]!, {s28-s29}\n"
        "vfma.f32 s16, s28, s20\n"
        "vfma.f32 s17, s28, s21\n"
        "vfma.f32 s18, s28, s22\n"
        "vfma.f32 s19, s28, s23\n"
        "vfma.f32 s16, s29, s24\n"
        "vfma.f32 s17, s29, s25\n"
        "vfma.f32 s18, s29, s26\n"
        "vfma.f32 s19, s29, s27\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"  // an odd last step
        "ldr %[count], [%[a], #20]\n"
        "tst %[count], #1\n"
        "beq 5f\n"
        "vldmia %[w], {s20-s23}\n"
        "vldmia %[x0]!, {s28}\n"
        "vfma.f32 s0, s28, s20\n"
        "vfma.f32 s1, s28, s21\n"
        "vfma.f32 s2, s28, s22\n"
        "vfma.f32 s3, s28, s23\n"
        "vldmia %[x1]!, {s28}\n"
        "vfma.f32 s4, s28, s20\n"
        "vfma.f32 s5, s28, s21\n"
        "vfma.f32 s6, s28, s22\n"
        "vfma.f32 s7, s28, s23\n"
        "vldmia %[x2]!, {s28}\n"
        "vfma.f32 s8, s28, s20\n"
        "vfma.f32 s9, s28, s21\n"
        "vfma.f32 s10, s28, s22\n"
        "vfma.f32 s11, s28, s23\n"
        "vldmia %[x3]!, {s28}\n"
        "vfma.f32 s12, s28, s20\n"
        "vfma.f32 s13, s28, s21\n"
        "vfma.f32 s14, s28, s22\n"
        "vfma.f32 s15, s28, s23\n"
        "vldmia %[x4]!, {s28}\n"
        "vfma.f32 s16, s28, s20\n"
        "vfma.f32 s17, s28, s21\n"
        "vfma.f32 s18, s28, s22\n"
        "vfma.f32 s19, s28, s23\n"
        "5:\n"  // + bias
        "ldr %[count], [%[a], #12]\n"
        "cmp %[count], #0\n"
        "beq 6f\n"
        "vldmia %[count], {s20-s23}\n"
        "vadd.f32 s0, s0, s20\n"
        "vadd.f32 s1, s1, s21\n"
        "vadd.f32 s2, s2, s22\n"
        "vadd.f32 s3, s3, s23\n"
        "vadd.f32 s4, s4, s20\n"
        "vadd.f32 s5, s5, s21\n"
        "vadd.f32 s6, s6, s22\n"
        "vadd.f32 s7, s7, s23\n"
        "vadd.f32 s8, s8, s20\n"
        "vadd.f32 s9, s9, s21\n"
        "vadd.f32 s10, s10, s22\n"
        "vadd.f32 s11, s11, s23\n"
        "vadd.f32 s12, s12, s20\n"
        "vadd.f32 s13, s13, s21\n"
        "vadd.f32 s14, s14, s22\n"
        "vadd.f32 s15, s15, s23\n"
        "vadd.f32 s16, s16, s20\n"
        "vadd.f32 s17, s17, s21\n"
        "vadd.f32 s18, s18, s22\n"
        "vadd.f32 s19, s19, s23\n"
        "6:\n"  // ReLU: x > 0 ? x : +0 (le also holds for NaN)
        "ldr %[count], [%[a], #8]\n"
        "tst %[count], #2\n"
        "beq 7f\n"
        "ldr %[count], [%[a], #16]\n"
        "vldmia %[count], {s20}\n"
        "vcmp.f32 s0, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s0, s20\n"
        "vcmp.f32 s1, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s1, s20\n"
        "vcmp.f32 s2, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s2, s20\n"
        "vcmp.f32 s3, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s3, s20\n"
        "vcmp.f32 s4, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s4, s20\n"
        "vcmp.f32 s5, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s5, s20\n"
        "vcmp.f32 s6, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s6, s20\n"
        "vcmp.f32 s7, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s7, s20\n"
        "vcmp.f32 s8, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s8, s20\n"
        "vcmp.f32 s9, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s9, s20\n"
        "vcmp.f32 s10, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s10, s20\n"
        "vcmp.f32 s11, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s11, s20\n"
        "vcmp.f32 s12, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s12, s20\n"
        "vcmp.f32 s13, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s13, s20\n"
        "vcmp.f32 s14, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s14, s20\n"
        "vcmp.f32 s15, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s15, s20\n"
        "vcmp.f32 s16, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s16, s20\n"
        "vcmp.f32 s17, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s17, s20\n"
        "vcmp.f32 s18, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s18, s20\n"
        "vcmp.f32 s19, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s19, s20\n"
        "7:\n"  // store
        "ldrd %[count], lr, [%[a]]\n"
        "vstmia %[count], {s0-s3}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s4-s7}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s8-s11}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s12-s15}\n"
        "add %[count], %[count], lr\n"
        "vstmia %[count], {s16-s19}\n"
        : [x0] "+r"(x), [x1] "+r"(x1), [x2] "+r"(x2), [x3] "+r"(x3), [x4] "+r"(x4), [w] "+r"(w), [count] "=&r"(count)
        : [a] "r"(&args), [ldw] "r"(ldw * 4), "m"(args)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "lr", "cc",
          "memory");
  }

  /// One row × 16 outputs (a decoding step's linear; cortex_m4f::Product::row_panels and row_plain
  /// call it where 16 outputs lie in one panel): y[o] accumulated in sequence over k in [0, n) with fma
  /// from +0 (mode bit 0) or from y, + bias[o] (nullable), then ReLU (mode bit 1): tile4's operations
  /// on each output, so its bits. Accumulators s0-s15, one step's weights in two halves s16-s23
  /// (vldmia of 8, twice), x of 8 steps s24-s31 by one vldmia: per 8 steps 155
  /// instructions for 128 multiply-adds (1.21; tile4 one row at a time: 1.69 and a prologue per 4
  /// outputs). The epilogue's arguments from memory (general-purpose registers: x, w, the step, a counter).
  [[gnu::noinline]] static void row16(const float* x, index_t n, const float* w, index_t ld, float* y,
                                      const float* bias, unsigned mode) {
    alignas(8) static constexpr float kZeros[16] = {};
    struct Args {          // (byte offsets in the assembly)
      float* y;            // 0
      const float* bias;   // 4
      const float* zeros;  // 8
      unsigned n;          // 12
      unsigned mode;       // 16
    } args{y, bias, kZeros, static_cast<unsigned>(n), mode};
    unsigned count;
    asm volatile(
        ".macro stf_row16_step xr\n"  // y[0, 16) += x[k] · w[k, 0..16), then w to the next step
        " vldmia %[w]!, {s16-s23}\n"
        " vfma.f32 s0, \\xr, s16\n vfma.f32 s1, \\xr, s17\n vfma.f32 s2, \\xr, s18\n vfma.f32 s3, \\xr, s19\n"
        " vfma.f32 s4, \\xr, s20\n vfma.f32 s5, \\xr, s21\n vfma.f32 s6, \\xr, s22\n vfma.f32 s7, \\xr, s23\n"
        " vldmia %[w], {s16-s23}\n"
        " vfma.f32 s8, \\xr, s16\n vfma.f32 s9, \\xr, s17\n vfma.f32 s10, \\xr, s18\n vfma.f32 s11, \\xr, s19\n"
        " vfma.f32 s12, \\xr, s20\n vfma.f32 s13, \\xr, s21\n vfma.f32 s14, \\xr, s22\n vfma.f32 s15, \\xr, s23\n"
        " add %[w], %[w], %[ldm]\n"
        ".endm\n"
        "ldr %[count], [%[a], #16]\n"  // accumulators: +0, or y
        "tst %[count], #1\n"
        "ite ne\n"
        "ldrne %[count], [%[a], #8]\n"
        "ldreq %[count], [%[a]]\n"
        "vldmia %[count], {s0-s15}\n"
        "ldr %[count], [%[a], #12]\n"
        "lsrs %[count], %[count], #3\n"
        "beq 2f\n"
        "1:\n"  // 8 steps
        "vldmia %[x]!, {s24-s31}\n"
        "stf_row16_step s24\n stf_row16_step s25\n stf_row16_step s26\n stf_row16_step s27\n"
        "stf_row16_step s28\n stf_row16_step s29\n stf_row16_step s30\n stf_row16_step s31\n"
        "subs %[count], %[count], #1\n"
        "bne 1b\n"
        "2:\n"  // the remaining 0 to 7 steps
        "ldr %[count], [%[a], #12]\n"
        "ands %[count], %[count], #7\n"
        "beq 4f\n"
        "3:\n"
        "vldmia %[x]!, {s24}\n"
        "stf_row16_step s24\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"  // + bias
        "ldr %[count], [%[a], #4]\n"
        "cmp %[count], #0\n"
        "beq 5f\n"
        "vldmia %[count]!, {s16-s23}\n"
        "vadd.f32 s0, s0, s16\n vadd.f32 s1, s1, s17\n vadd.f32 s2, s2, s18\n vadd.f32 s3, s3, s19\n"
        "vadd.f32 s4, s4, s20\n vadd.f32 s5, s5, s21\n vadd.f32 s6, s6, s22\n vadd.f32 s7, s7, s23\n"
        "vldmia %[count], {s16-s23}\n"
        "vadd.f32 s8, s8, s16\n vadd.f32 s9, s9, s17\n vadd.f32 s10, s10, s18\n vadd.f32 s11, s11, s19\n"
        "vadd.f32 s12, s12, s20\n vadd.f32 s13, s13, s21\n vadd.f32 s14, s14, s22\n vadd.f32 s15, s15, s23\n"
        "5:\n"  // ReLU: x > 0 ? x : +0 (le also holds for NaN)
        "ldr %[count], [%[a], #16]\n"
        "tst %[count], #2\n"
        "beq 6f\n"
        "ldr %[count], [%[a], #8]\n"
        "vldmia %[count], {s16}\n"
        ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15\n"
        "vcmp.f32 s\\i, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s\\i, s16\n"
        ".endr\n"
        "6:\n"
        "ldr %[count], [%[a]]\n"
        "vstmia %[count], {s0-s15}\n"
        ".purgem stf_row16_step\n"
        : [x] "+r"(x), [w] "+r"(w), [count] "=&r"(count)
        : [a] "r"(&args), [ldm] "r"(ld * 4 - 32), "m"(args)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
  }

  /// tile4 for R (1 to 3) rows: accumulators s0..s(4R-1), weights of 4 steps s12-s27, a row's x of
  /// 4 steps s28-s31. mode: bit 0 start from +0, bit 1 ReLU.
  template <int R>
  static void tile4_rows(const float* x, index_t ldx, index_t n, const float* w, index_t ldw, float* y, index_t ldy,
                         const float* bias, unsigned mode) {
    alignas(8) static constexpr float kZeros[12] = {};
    const float* x1 = x + ldx;
    const float* x2 = x1 + ldx;
    index_t count;
    float* yr;
    asm volatile(
        // accumulators: +0, or y
        "tst %[mode], #1\n"
        "beq 1f\n"
        "vldmia %[zeros], {s0-s%c[last]}\n"
        "b 2f\n"
        "1:\n"
        "mov %[yr], %[y]\n"
        "vldmia %[yr], {s0-s3}\n"
        ".if %c[R] > 1\n add %[yr], %[yr], %[ldy]\n vldmia %[yr], {s4-s7}\n .endif\n"
        ".if %c[R] > 2\n add %[yr], %[yr], %[ldy]\n vldmia %[yr], {s8-s11}\n .endif\n"
        "2:\n"
        "lsrs %[count], %[n], #2\n"
        "beq 4f\n"
        "3:\n"  // 4 steps
        "vldmia %[w], {s12-s15}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s16-s19}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s20-s23}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[w], {s24-s27}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28-s31}\n"
        "vfma.f32 s0, s28, s12\n vfma.f32 s1, s28, s13\n vfma.f32 s2, s28, s14\n vfma.f32 s3, s28, s15\n"
        "vfma.f32 s0, s29, s16\n vfma.f32 s1, s29, s17\n vfma.f32 s2, s29, s18\n vfma.f32 s3, s29, s19\n"
        "vfma.f32 s0, s30, s20\n vfma.f32 s1, s30, s21\n vfma.f32 s2, s30, s22\n vfma.f32 s3, s30, s23\n"
        "vfma.f32 s0, s31, s24\n vfma.f32 s1, s31, s25\n vfma.f32 s2, s31, s26\n vfma.f32 s3, s31, s27\n"
        ".if %c[R] > 1\n"
        "vldmia %[x1]!, {s28-s31}\n"
        "vfma.f32 s4, s28, s12\n vfma.f32 s5, s28, s13\n vfma.f32 s6, s28, s14\n vfma.f32 s7, s28, s15\n"
        "vfma.f32 s4, s29, s16\n vfma.f32 s5, s29, s17\n vfma.f32 s6, s29, s18\n vfma.f32 s7, s29, s19\n"
        "vfma.f32 s4, s30, s20\n vfma.f32 s5, s30, s21\n vfma.f32 s6, s30, s22\n vfma.f32 s7, s30, s23\n"
        "vfma.f32 s4, s31, s24\n vfma.f32 s5, s31, s25\n vfma.f32 s6, s31, s26\n vfma.f32 s7, s31, s27\n"
        ".endif\n"
        ".if %c[R] > 2\n"
        "vldmia %[x2]!, {s28-s31}\n"
        "vfma.f32 s8, s28, s12\n vfma.f32 s9, s28, s13\n vfma.f32 s10, s28, s14\n vfma.f32 s11, s28, s15\n"
        "vfma.f32 s8, s29, s16\n vfma.f32 s9, s29, s17\n vfma.f32 s10, s29, s18\n vfma.f32 s11, s29, s19\n"
        "vfma.f32 s8, s30, s20\n vfma.f32 s9, s30, s21\n vfma.f32 s10, s30, s22\n vfma.f32 s11, s30, s23\n"
        "vfma.f32 s8, s31, s24\n vfma.f32 s9, s31, s25\n vfma.f32 s10, s31, s26\n vfma.f32 s11, s31, s27\n"
        ".endif\n"
        "subs %[count], %[count], #1\n"
        "bne 3b\n"
        "4:\n"  // the remaining 0 to 3 steps
        "ands %[count], %[n], #3\n"
        "beq 6f\n"
        "5:\n"
        "vldmia %[w], {s12-s15}\n"
        "add %[w], %[w], %[ldw]\n"
        "vldmia %[x0]!, {s28}\n"
        "vfma.f32 s0, s28, s12\n vfma.f32 s1, s28, s13\n vfma.f32 s2, s28, s14\n vfma.f32 s3, s28, s15\n"
        ".if %c[R] > 1\n"
        "vldmia %[x1]!, {s28}\n"
        "vfma.f32 s4, s28, s12\n vfma.f32 s5, s28, s13\n vfma.f32 s6, s28, s14\n vfma.f32 s7, s28, s15\n"
        ".endif\n"
        ".if %c[R] > 2\n"
        "vldmia %[x2]!, {s28}\n"
        "vfma.f32 s8, s28, s12\n vfma.f32 s9, s28, s13\n vfma.f32 s10, s28, s14\n vfma.f32 s11, s28, s15\n"
        ".endif\n"
        "subs %[count], %[count], #1\n"
        "bne 5b\n"
        "6:\n"  // + bias
        "cmp %[bias], #0\n"
        "beq 7f\n"
        "vldmia %[bias], {s12-s15}\n"
        "vadd.f32 s0, s0, s12\n vadd.f32 s1, s1, s13\n vadd.f32 s2, s2, s14\n vadd.f32 s3, s3, s15\n"
        ".if %c[R] > 1\n vadd.f32 s4, s4, s12\n vadd.f32 s5, s5, s13\n vadd.f32 s6, s6, s14\n vadd.f32 s7, s7, s15\n "
        ".endif\n"
        ".if %c[R] > 2\n vadd.f32 s8, s8, s12\n vadd.f32 s9, s9, s13\n vadd.f32 s10, s10, s14\n vadd.f32 s11, s11, "
        "s15\n .endif\n"
        "7:\n"  // ReLU: x > 0 ? x : +0 (le also holds for NaN)
        "tst %[mode], #2\n"
        "beq 8f\n"
        "vldmia %[zeros], {s12}\n"
        ".irp i, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11\n"
        ".if \\i < %c[R] * 4\n"
        "vcmp.f32 s\\i, #0\n"
        "vmrs APSR_nzcv, fpscr\n"
        "it le\n"
        "vmovle.f32 s\\i, s12\n"
        ".endif\n"
        ".endr\n"
        "8:\n"
        "mov %[yr], %[y]\n"
        "vstmia %[yr], {s0-s3}\n"
        ".if %c[R] > 1\n add %[yr], %[yr], %[ldy]\n vstmia %[yr], {s4-s7}\n .endif\n"
        ".if %c[R] > 2\n add %[yr], %[yr], %[ldy]\n vstmia %[yr], {s8-s11}\n .endif\n"
        : [x0] "+r"(x), [x1] "+r"(x1), [x2] "+r"(x2), [w] "+r"(w), [count] "=&r"(count), [yr] "=&r"(yr)
        : [n] "r"(n), [ldw] "r"(ldw * 4), [y] "r"(y), [ldy] "r"(ldy * 4), [bias] "r"(bias), [mode] "r"(mode),
          [zeros] "r"(kZeros), [R] "i"(R), [last] "i"(4 * R - 1)
        : "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15", "s16",
          "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28", "s29", "s30", "s31", "cc",
          "memory");
  }
};

}  // namespace stf::kernels_detail::cortex_m4f
#endif
