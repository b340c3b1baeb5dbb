#include "cycles.hpp"

namespace fw {
namespace {
struct SysTickRegs {
  std::uint32_t csr, rvr, cvr, calib;
};
SysTickRegs& syst() { return *reinterpret_cast<SysTickRegs*>(0xE000E010u); }
constexpr std::uint32_t kMask = 0x00FFFFFFu;
volatile std::uint32_t last_cvr;
std::uint64_t elapsed;
}  // namespace

void systick_start() {
  auto& r = syst();
  *static_cast<volatile std::uint32_t*>(&r.rvr) = kMask;
  *static_cast<volatile std::uint32_t*>(&r.cvr) = 0;
  *static_cast<volatile std::uint32_t*>(&r.csr) = 0x5;  // CLKSOURCE = processor clock, ENABLE, no TICKINT
  last_cvr = *static_cast<volatile std::uint32_t*>(&r.cvr);
}

std::uint64_t systick_now() {
  const std::uint32_t now = *static_cast<volatile std::uint32_t*>(&syst().cvr);
  elapsed += (last_cvr - now) & kMask;  // counts down; one wrap at most between two calls
  last_cvr = now;
  return elapsed;
}

void systick_restart() {
  *static_cast<volatile std::uint32_t*>(&syst().cvr) = 0;  // clears the counter; it reloads from RVR
  last_cvr = *static_cast<volatile std::uint32_t*>(&syst().cvr);
}

void delay_3n(std::uint32_t n) {
  // n + 1 iterations of 3 instructions: nop, subs, bne (taken or not, one instruction each)
  __asm volatile(
      "adds %0, %0, #1\n"
      "1:\n\t"
      "nop\n\t"
      "subs %0, %0, #1\n\t"
      "bne 1b\n"
      : "+r"(n)
      :
      : "cc");
}

}  // namespace fw
