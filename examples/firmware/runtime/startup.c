/* Bare-metal startup for the Cortex-M firmware examples (no newlib crt0, no libc init):
 * the vector table, and a reset handler that enables the FPU (and so MVE on the M55), paints the
 * stack for the high-water mark, copies .data, zeroes .bss, runs the static constructors
 * (init_array) and calls main; main's return value leaves qemu through semihosting. Faults print
 * what happened and exit with status 3, so a crash fails the ctest instead of hanging it. */
#include <stdint.h>

#include "firmware.h"

extern uint32_t __stack_top[], __stack_limit[];
extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[];
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);
int main(void);

#define REG32(addr) (*(volatile uint32_t*)(addr))
#define SCB_CPACR REG32(0xE000ED88u)
#define SCB_CFSR REG32(0xE000ED28u)
#define SCB_HFSR REG32(0xE000ED2Cu)
#define SCB_BFAR REG32(0xE000ED38u)

/* Kept out of line and free of floating point: it runs before the FPU is on. */
static void __attribute__((noinline)) enable_fpu(void) {
  SCB_CPACR |= 0xFu << 20; /* CP10 and CP11: full access (the FPU, and MVE on Armv8.1-M) */
  __asm volatile("dsb\n\tisb" ::: "memory");
}

void __attribute__((noreturn, used)) Reset_Handler(void) {
  enable_fpu();
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
  /* Armv8-M has a stack limit register: an overflow faults (STKOF) instead of corrupting .bss. */
  __asm volatile("msr msplim, %0" ::"r"(__stack_limit));
#endif
  /* Paint the unused stack below this frame, for fw_stack_high_water(). */
  uint32_t sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (volatile uint32_t* p = __stack_limit; (uint32_t)p < sp - 64u; ++p) *p = FW_STACK_PAINT;
  for (uint32_t *src = __data_load, *dst = __data_start; dst < __data_end;) *dst++ = *src++;
  for (uint32_t* dst = __bss_start; dst < __bss_end;) *dst++ = 0;
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  fw_exit(main());
}

uint32_t fw_stack_size(void) { return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit); }

uint32_t fw_stack_high_water(void) {
  const uint32_t* p = __stack_limit;
  while (p < __stack_top && *p == FW_STACK_PAINT) ++p;
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

/* ---- faults ------------------------------------------------------------------------------------ */
void __attribute__((used, noreturn)) fw_fault_report(const uint32_t* frame, uint32_t exc_return) {
  uint32_t ipsr;
  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  fw_puts("\n*** fault: exception ");
  fw_put_u(ipsr & 0x1FFu, 0);
  fw_puts(" (3 HardFault, 4 MemManage, 5 BusFault, 6 UsageFault) at pc 0x");
  fw_put_hex(frame[6], 8);
  fw_puts(", lr 0x");
  fw_put_hex(frame[5], 8);
  fw_puts(", CFSR 0x");
  fw_put_hex(SCB_CFSR, 8);
  fw_puts(", HFSR 0x");
  fw_put_hex(SCB_HFSR, 8);
  fw_puts(", BFAR 0x");
  fw_put_hex(SCB_BFAR, 8);
  fw_puts(", EXC_RETURN 0x");
  fw_put_hex(exc_return, 8);
  fw_puts("\n");
  fw_exit(3);
}

/* Every exception lands here (none is expected: no interrupt is enabled). Finds the exception
 * frame (main or process stack) and reports it. */
void __attribute__((naked, used)) Fault_Handler(void) {
  __asm volatile(
      "tst lr, #4\n\t"
      "ite eq\n\t"
      "mrseq r0, msp\n\t"
      "mrsne r0, psp\n\t"
      "mov r1, lr\n\t"
      "b fw_fault_report\n\t");
}

typedef void (*vector_t)(void);
__attribute__((section(".vectors"), used)) const vector_t fw_vector_table[16] = {
    (vector_t)(uintptr_t)__stack_top, /* initial MSP */
    Reset_Handler,
    Fault_Handler, /* NMI */
    Fault_Handler, /* HardFault */
    Fault_Handler, /* MemManage */
    Fault_Handler, /* BusFault */
    Fault_Handler, /* UsageFault (and Armv8-M SecureFault slot below is reserved here) */
    0,
    0,
    0,
    0,
    Fault_Handler, /* SVCall */
    Fault_Handler, /* DebugMonitor */
    0,
    Fault_Handler, /* PendSV */
    Fault_Handler, /* SysTick: counted, its interrupt is never enabled */
};

/* ---- what the C/C++ runtime would otherwise pull from newlib ----------------------------------- */
/* Static destructors are never run: the firmware leaves through semihosting, not exit(). */
void* __dso_handle = 0;
int __cxa_atexit(void (*fn)(void*), void* arg, void* dso) {
  (void)fn;
  (void)arg;
  (void)dso;
  return 0;
}
int atexit(void (*fn)(void)) {
  (void)fn;
  return 0;
}
void __attribute__((noreturn)) abort(void) {
  fw_puts("\n*** abort()\n");
  fw_exit(134);
}
