// statiformer — helium::Attention's values part (Cortex-M55, Helium / MVE): for one block of keys
// and a group of 2, 3, 4 or 6 query rows, the outputs' products with the values P·V, the rescale
// of what came before and, with the last block, the division by the sums, in assembly. The entry
// point and the loop over key blocks are in kernels/attention/helium.hpp, the scores in
// helium_scores.hpp. See kernels/README.md.
#pragma once

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
#include <cstdint>

namespace stf::kernels_detail::helium {

/// The outputs of a group of R rows after one block of keys: P·V from the block's weights pT
/// [keys][R] (helium::Attention::attention_group calls it per block).
struct AttentionValues {
  struct ValueArgs {           // (byte offsets in the assembly)
    const float* pT;           // 0
    const float* v;            // 4: V at the block's first key
    std::uint32_t v_stride;    // 8: bytes
    std::uint32_t cnt;         // 12
    float* out;                // 16
    std::uint32_t out_stride;  // 20: bytes
    std::uint32_t hd;          // 24
    std::uint32_t flags;       // 28: bit 0 from +0 (else from out), bit 1 divide by l, bit 2 rescale by c
    const float* l;            // 32
    const float* c;            // 36
  };
  /// out[r, d] = fma(pT[j][r], v[j, d], out[r, d]) over the block's keys in order, 4 outputs at a
  /// time (the last vector predicated): accumulators q0..q(R-1), per key one ldm of pT[j], one
  /// load of v, a pointer step, R vfma. With the last block, then divided by l[r] lane by lane.
  template <int R>
  [[gnu::noinline]] static void attention_values(const ValueArgs& a) {
    asm volatile(
        ".macro stf_pv_step pred\n"
        ".if %c[R] == 1\n ldr r0, [r6], #4\n .else\n ldm r6!, {r0-r%c[last]}\n .endif\n"
        ".if \\pred\n vpst\n vldrwt.u32 q6, [r7]\n .else\n vldrw.u32 q6, [r7]\n .endif\n"
        "add r7, r7, r8\n"
        "vfma.f32 q0, q6, r0\n"
        ".if %c[R] > 1\n vfma.f32 q1, q6, r1\n .endif\n"
        ".if %c[R] > 2\n vfma.f32 q2, q6, r2\n .endif\n"
        ".if %c[R] > 3\n vfma.f32 q3, q6, r3\n .endif\n"
        ".if %c[R] > 4\n vfma.f32 q4, q6, r4\n .endif\n"
        ".if %c[R] > 5\n vfma.f32 q5, q6, r5\n .endif\n"
        ".endm\n"
        ".macro stf_pv_loop pred\n"  // cnt steps: cnt mod 4 single ones, then 4 per loop iteration
        "ldr r0, [%[a], #12]\n"
        "lsls lr, r0, #31\n"
        "bpl 21f\n"
        "stf_pv_step \\pred\n"
        "21:\n"
        "bcc 22f\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "22:\n"
        "ldr r0, [%[a], #12]\n"
        "lsr r0, r0, #2\n"
        "wls lr, r0, 24f\n"
        "23:\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "stf_pv_step \\pred\n"
        "le lr, 23b\n"
        "24:\n"
        ".endm\n"
        ".macro stf_pv_rows op, sfx, pred\n"  // load or store the accumulators at out rows from r12
        "mov r0, r12\n"
        "ldr r1, [%[a], #20]\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n"
        " .if \\i < %c[R]\n"
        "  .if \\pred\n vpst\n \\op\\()t.\\sfx q\\i, [r0]\n .else\n \\op\\().\\sfx q\\i, [r0]\n .endif\n"
        "  add r0, r0, r1\n"
        " .endif\n"
        ".endr\n"
        ".endm\n"
        "ldr r9, [%[a], #24]\n"   // outputs left
        "ldr r10, [%[a], #4]\n"   // V at the output vector
        "ldr r12, [%[a], #16]\n"  // out at the output vector
        "ldr r8, [%[a], #8]\n"
        "1:\n"
        "vctp.32 r9\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #1\n"
        "beq 2f\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmov.i32 q\\i, #0\n .endif\n .endr\n"
        "b 4f\n"
        "2:\n"
        "cmp r9, #4\n"
        "blt 3f\n"
        "stf_pv_rows vldrw, u32, 0\n"
        "b 10f\n"
        "3:\n"
        "stf_pv_rows vldrw, u32, 1\n"
        "10:\n"
        "ldr r0, [%[a], #28]\n"  // rescaled: out[r] · c[r]
        "tst r0, #4\n"
        "beq 4f\n"
        "ldr r0, [%[a], #36]\n"
        ".if %c[R] == 1\n ldr r0, [r0]\n .else\n ldm r0, {r0-r%c[last]}\n .endif\n"
        ".irp i, 0, 1, 2, 3, 4, 5\n .if \\i < %c[R]\n vmul.f32 q\\i, q\\i, r\\i\n .endif\n .endr\n"
        "4:\n"
        "ldr r6, [%[a]]\n"
        "mov r7, r10\n"
        "cmp r9, #4\n"
        "blt 5f\n"
        "stf_pv_loop 0\n"
        "b 6f\n"
        "5:\n"
        "vctp.32 r9\n"
        "stf_pv_loop 1\n"
        "6:\n"
        "ldr r0, [%[a], #28]\n"
        "tst r0, #2\n"
        "beq 7f\n"
        "ldr r0, [%[a], #32]\n"  // l[0..R) into s24..
        "vldrw.u32 q6, [r0]\n"
        ".if %c[R] > 4\n vldr s28, [r0, #16]\n vldr s29, [r0, #20]\n .endif\n"
        ".if %c[R] > 0\n vdiv.f32 s0, s0, s24\n vdiv.f32 s1, s1, s24\n vdiv.f32 s2, s2, s24\n vdiv.f32 s3, s3, s24\n "
        ".endif\n"
        ".if %c[R] > 1\n vdiv.f32 s4, s4, s25\n vdiv.f32 s5, s5, s25\n vdiv.f32 s6, s6, s25\n vdiv.f32 s7, s7, s25\n "
        ".endif\n"
        ".if %c[R] > 2\n vdiv.f32 s8, s8, s26\n vdiv.f32 s9, s9, s26\n vdiv.f32 s10, s10, s26\n vdiv.f32 s11, s11, "
        "s26\n .endif\n"
        ".if %c[R] > 3\n vdiv.f32 s12, s12, s27\n vdiv.f32 s13, s13, s27\n vdiv.f32 s14, s14, s27\n vdiv.f32 s15, "
        "s15, s27\n .endif\n"
        ".if %c[R] > 4\n vdiv.f32 s16, s16, s28\n vdiv.f32 s17, s17, s28\n vdiv.f32 s18, s18, s28\n vdiv.f32 s19, "
        "s19, s28\n .endif\n"
        ".if %c[R] > 5\n vdiv.f32 s20, s20, s29\n vdiv.f32 s21, s21, s29\n vdiv.f32 s22, s22, s29\n vdiv.f32 s23, "
        "s23, s29\n .endif\n"
        "7:\n"
        "cmp r9, #4\n"
        "blt 8f\n"
        "stf_pv_rows vstrw, 32, 0\n"
        "b 9f\n"
        "8:\n"
        "vctp.32 r9\n"
        "stf_pv_rows vstrw, 32, 1\n"
        "9:\n"
        "add r12, r12, #16\n"
        "add r10, r10, #16\n"
        "subs r9, r9, #4\n"
        "bgt 1b\n"
        ".purgem stf_pv_rows\n"
        ".purgem stf_pv_loop\n"
        ".purgem stf_pv_step\n"
        :
        : [a] "r"(&a), [R] "i"(R), [last] "i"(R - 1), "m"(a)
        : "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r12", "lr", "q0", "q1", "q2", "q3", "q4",
          "q5", "q6", "q7", "cc", "memory");
  }
};

}  // namespace stf::kernels_detail::helium
#endif
