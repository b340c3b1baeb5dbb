/* The firmware runtime's C interface: semihosting console and exit, stack measurement.
 * Output goes through raw semihosting calls (bkpt 0xAB), not newlib's stdio (which needs malloc). */
#ifndef STF_FIRMWARE_H
#define STF_FIRMWARE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Word painted over the free stack at reset; fw_stack_high_water() finds the deepest overwrite. */
#define FW_STACK_PAINT 0x5AFEC0DEu

/* Flushes the console and ends the program: qemu exits with `status` (SYS_EXIT_EXTENDED). */
void fw_exit(int status) __attribute__((noreturn));

/* Buffered console on the host's stdout (flushed at each newline and at exit). */
void fw_putc(char c);
void fw_puts(const char* s);
void fw_flush(void);
/* Right-aligned in `width` characters (0: as wide as needed). */
void fw_put_u(uint64_t v, int width);
void fw_put_i(int64_t v, int width);
void fw_put_hex(uint64_t v, int digits);
/* Fixed-point decimal with `decimals` digits after the point, rounded half away from zero. */
void fw_put_f(double v, int decimals, int width);
/* Left-aligned in `width` characters. */
void fw_put_str(const char* s, int width);

uint32_t fw_stack_size(void);
/* Bytes of stack ever used since reset (deepest word that is no longer FW_STACK_PAINT). */
uint32_t fw_stack_high_water(void);

#ifdef __cplusplus
}
#endif

#endif
