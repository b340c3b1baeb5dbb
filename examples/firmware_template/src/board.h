/* The board support a firmware needs to run the model and say what happened: console and exit
 * through Arm semihosting (a debugger or qemu prints it; on a board without one, replace
 * board_write with your UART), a cycle counter, and the linker script's region symbols.
 * Plain C, no newlib stdio (it needs the heap), no interrupts. */
#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Console (buffered, flushed at each newline and at exit). */
void board_puts(const char* s);
void board_put_u(uint64_t v);
/* v with `decimals` digits after the point (fixed point, no printf). */
void board_put_f(double v, int decimals);
/* Flushes the console and ends the program with `status` (qemu exits with it). */
void board_exit(int status) __attribute__((noreturn));

/* A free-running cycle count: DWT CYCCNT where the core counts cycles, else SysTick (processor
 * clock, extended to 64 bits in software: call at least every 2^24 ticks). */
void board_cycles_start(void);
uint64_t board_cycles(void);
/* "DWT CYCCNT" or "SysTick": which counter board_cycles reads. */
const char* board_cycle_counter(void);

/* Bytes of stack used since reset (the reset handler paints the free stack). */
uint32_t board_stack_used(void);

/* Linker script symbols (ld/sections.ld): their addresses are the region boundaries. */
extern const char __flash_start[], __flash_end[]; /* everything the image puts in flash */
extern const char __data_start[], __bss_end[];    /* static RAM: .data then .bss */
extern const char __stack_limit[], __stack_top[];

#ifdef __cplusplus
}
#endif

#endif
