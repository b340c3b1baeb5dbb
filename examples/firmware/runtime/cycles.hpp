// Deterministic instruction counts on qemu-system-arm, from SysTick.
//
// Under `qemu -icount shift=0` the virtual clock advances exactly 1 ns per executed instruction,
// and SysTick (processor clock source) counts down at the board's clock: 25 MHz on mps2-an386 and
// mps2-an500, 32 MHz on mps3-an547. So one tick is 40 (or 31.25) instructions and one reading is
// good to one tick. Exact counts come from phases: the tick edges repeat every
// kPeriodInsns instructions (40, or 125 = 4 ticks); if a deterministic piece of code is run
// kPeriodInsns times, each time starting at a different instruction offset from a SysTick restart
// (covering every residue mod kPeriodInsns once), the sum of its tick deltas is exactly
// kTicksPerPeriod * (its instruction count) (Hermite's identity: the quantisation errors cancel).
#pragma once

#include <cstdint>

#ifndef STF_FW_SYSTICK_HZ
#error "STF_FW_SYSTICK_HZ (the SysTick processor clock of the qemu machine) must be defined"
#endif

namespace fw {

inline constexpr std::uint64_t kSysTickHz = STF_FW_SYSTICK_HZ;

constexpr std::uint64_t gcd(std::uint64_t a, std::uint64_t b) { return b ? gcd(b, a % b) : a; }
/// Instructions (ns at 1 instruction/ns) after which the SysTick edges repeat, and the ticks in it.
inline constexpr std::uint64_t kPeriodInsns = 1000000000u / gcd(1000000000u, kSysTickHz);
inline constexpr std::uint64_t kTicksPerPeriod = kSysTickHz * kPeriodInsns / 1000000000u;
static_assert(kPeriodInsns % 3 != 0, "the phase delay loop steps by 3 instructions: must be coprime");

/// Starts SysTick free-running from the processor clock (its interrupt stays off).
void systick_start();
/// A monotonically increasing tick count: the 24-bit down-counter, extended in software. Must be
/// called at least once every 2^24 ticks (0.5 s of virtual time), which the profiler's begin/end
/// pairs and the phase loops do. Branch-free: every call takes the same instructions.
std::uint64_t systick_now();
/// Restarts the counter now (a write to SYST_CVR): the phase reference of for_each_phase.
void systick_restart();
/// Spins for 3 * n + constant instructions (an exact count, in assembly).
void delay_3n(std::uint32_t n);

/// Runs f() kPeriodInsns times, the k-th run starting 3k instructions later (mod kPeriodInsns,
/// every residue once) after a SysTick restart. If f() executes the same instructions every time,
/// the tick deltas it measures inside, summed over the runs, are kTicksPerPeriod × instructions.
/// (The first tick after a restart is not on the regular lattice of edges with a fractional period
/// (32 MHz): every run first waits kSettle × 3 instructions, several ticks.)
template <class F>
void for_each_phase(F&& f) {
  constexpr std::uint32_t kSettle = 64;
  for (std::uint32_t k = 0; k < kPeriodInsns; ++k) {
    systick_restart();
    delay_3n(kSettle + k);
    f();
  }
}

/// Converts a sum over for_each_phase into the exact instruction count (0 if not divisible, which
/// would mean the runs were not identical).
inline bool exact_instructions(std::uint64_t tick_sum, std::uint64_t& instructions) {
  instructions = tick_sum / kTicksPerPeriod;
  return tick_sum % kTicksPerPeriod == 0;
}

}  // namespace fw
