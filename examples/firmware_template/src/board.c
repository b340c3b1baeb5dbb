/* Startup, console, exit and cycle counter for the Arm MPS2/MPS3 boards qemu-system-arm emulates
 * (mps2-an386: Cortex-M4, mps3-an547: Cortex-M55); on your board, keep the startup and replace the
 * console. See board.h. */
#include "board.h"

#include <stddef.h>

#define REG32(addr) (*(volatile uint32_t*)(addr))

/* ---- startup --------------------------------------------------------------------------------- */
extern uint32_t __data_load[], __bss_start[];
extern void (*__init_array_start[])(void);
extern void (*__init_array_end[])(void);
int main(void);

#define STACK_PAINT 0xC0FFEE11u

/* Out of line and free of floating point: it runs before the FPU is on. */
static void __attribute__((noinline)) enable_fpu(void) {
  REG32(0xE000ED88u) |= 0xFu << 20; /* CPACR: CP10, CP11 full access (FPU, and MVE on Armv8.1-M) */
  __asm volatile("dsb\n\tisb" ::: "memory");
}

void __attribute__((noreturn, used)) Reset_Handler(void) {
  enable_fpu();
  uint32_t sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (volatile uint32_t* p = (volatile uint32_t*)__stack_limit; (uint32_t)p < sp - 64u; ++p) *p = STACK_PAINT;
  uint32_t* src = __data_load;
  for (uint32_t* dst = (uint32_t*)__data_start; dst < __bss_start;) *dst++ = *src++;
  for (uint32_t* dst = __bss_start; dst < (uint32_t*)__bss_end;) *dst++ = 0;
  for (void (**f)(void) = __init_array_start; f < __init_array_end; ++f) (*f)();
  board_exit(main());
}

/* Any exception is a bug here (no interrupt is enabled): say where, and stop with status 3. */
void __attribute__((used)) fault_report(const uint32_t* frame) {
  board_puts("\n*** fault at pc 0x");
  for (int i = 7; i >= 0; --i) {
    const char digit[2] = {"0123456789abcdef"[(frame[6] >> (4 * i)) & 0xFu], 0};
    board_puts(digit);
  }
  board_puts("\n");
  board_exit(3);
}
void __attribute__((naked)) Fault_Handler(void) {
  __asm volatile("tst lr, #4\n\tite eq\n\tmrseq r0, msp\n\tmrsne r0, psp\n\tb fault_report\n\t");
}

typedef void (*vector_t)(void);
__attribute__((section(".vectors"), used)) const vector_t vector_table[16] = {(vector_t)(uintptr_t)__stack_top,
                                                                              Reset_Handler,
                                                                              Fault_Handler,
                                                                              Fault_Handler,
                                                                              Fault_Handler,
                                                                              Fault_Handler,
                                                                              Fault_Handler,
                                                                              0,
                                                                              0,
                                                                              0,
                                                                              0,
                                                                              Fault_Handler,
                                                                              Fault_Handler,
                                                                              0,
                                                                              Fault_Handler,
                                                                              Fault_Handler};

uint32_t board_stack_used(void) {
  const uint32_t* p = (const uint32_t*)__stack_limit;
  while (p < (const uint32_t*)__stack_top && *p == STACK_PAINT) ++p;
  return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

/* ---- console and exit: Arm semihosting (bkpt 0xAB) --------------------------------------------- */
static int semihost(int op, const void* arg) {
  register int r0 __asm("r0") = op;
  register const void* r1 __asm("r1") = arg;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static char line[128];
static size_t used;

static void flush(void) {
  static int fd = -1;
  if (used == 0) return;
  if (fd < 0) {
    const uint32_t open_args[3] = {(uint32_t)(uintptr_t) ":tt", 4 /* "w" */, 3};
    fd = semihost(0x01 /* SYS_OPEN */, open_args);
  }
  const uint32_t write_args[3] = {(uint32_t)fd, (uint32_t)(uintptr_t)line, (uint32_t)used};
  (void)semihost(0x05 /* SYS_WRITE */, write_args);
  used = 0;
}

void board_puts(const char* s) {
  for (; *s; ++s) {
    line[used++] = *s;
    if (*s == '\n' || used == sizeof line) flush();
  }
}

void board_put_u(uint64_t v) {
  char digits[24];
  int n = 0;
  do digits[n++] = (char)('0' + v % 10);
  while (v /= 10);
  char text[25];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = 0;
  board_puts(text);
}

void board_put_f(double v, int decimals) {
  if (v < 0) {
    board_puts("-");
    v = -v;
  }
  uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  const uint64_t fixed = (uint64_t)(v * (double)scale + 0.5);
  board_put_u(fixed / scale);
  if (decimals == 0) return;
  board_puts(".");
  for (uint64_t s = scale / 10, frac = fixed % scale; s > 0; s /= 10) {
    const char digit[2] = {(char)('0' + frac / s % 10), 0};
    board_puts(digit);
  }
}

void board_exit(int status) {
  flush();
  const uint32_t args[2] = {0x20026 /* ADP_Stopped_ApplicationExit */, (uint32_t)status};
  (void)semihost(0x20 /* SYS_EXIT_EXTENDED: qemu exits with `status` */, args);
  for (;;) __asm volatile("wfi");
}

/* ---- cycle counter ----------------------------------------------------------------------------- */
#define DEMCR REG32(0xE000EDFCu)
#define DWT_CTRL REG32(0xE0001000u)
#define DWT_CYCCNT REG32(0xE0001004u)
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)

static int use_dwt;
static uint32_t last; /* the counter's previous reading, and the total it extends to 64 bits */
static uint64_t total;

void board_cycles_start(void) {
  DEMCR |= 1u << 24; /* TRCENA: DWT on */
  DWT_CYCCNT = 0;
  DWT_CTRL |= 1u; /* CYCCNTENA */
  const uint32_t before = DWT_CYCCNT;
  for (volatile int i = 0; i < 16; ++i) {
  }
  use_dwt = DWT_CYCCNT != before; /* qemu has no DWT cycle counter: it reads 0 */
  if (!use_dwt) {
    SYST_RVR = 0x00FFFFFFu;
    SYST_CVR = 0;
    SYST_CSR = 0x5u; /* enabled, processor clock, no interrupt */
  }
  last = use_dwt ? DWT_CYCCNT : SYST_CVR;
  total = 0;
}

uint64_t board_cycles(void) {
  if (use_dwt) {
    const uint32_t now = DWT_CYCCNT; /* counts up, 32 bits */
    total += now - last;
    last = now;
  } else {
    const uint32_t now = SYST_CVR; /* counts down, 24 bits */
    total += (last - now) & 0x00FFFFFFu;
    last = now;
  }
  return total;
}

const char* board_cycle_counter(void) { return use_dwt ? "DWT CYCCNT" : "SysTick"; }
