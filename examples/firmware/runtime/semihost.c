/* Console and exit through raw Arm semihosting (bkpt 0xAB in Thumb state), without newlib's stdio:
 * SYS_OPEN(":tt", "w") gives the host's stdout, SYS_WRITE writes a buffer, SYS_EXIT_EXTENDED ends
 * qemu with the program's exit status. */
#include <stddef.h>
#include <stdint.h>

#include "firmware.h"

enum {
  SYS_OPEN = 0x01,
  SYS_WRITE = 0x05,
  SYS_EXIT = 0x18,
  SYS_EXIT_EXTENDED = 0x20,
  ADP_Stopped_ApplicationExit = 0x20026,
};

static int semihost(int op, const void* arg) {
  register int r0 __asm("r0") = op;
  register const void* r1 __asm("r1") = arg;
  __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static char buffer[256];
static size_t used;
static int out_fd = -1;

void fw_flush(void) {
  if (used == 0) return;
  if (out_fd < 0) {
    const uint32_t open_args[3] = {(uint32_t)(uintptr_t) ":tt", 4 /* "w" */, 3};
    out_fd = semihost(SYS_OPEN, open_args);
  }
  const uint32_t write_args[3] = {(uint32_t)out_fd, (uint32_t)(uintptr_t)buffer, (uint32_t)used};
  (void)semihost(SYS_WRITE, write_args);
  used = 0;
}

void fw_exit(int status) {
  fw_flush();
  const uint32_t args[2] = {ADP_Stopped_ApplicationExit, (uint32_t)status};
  (void)semihost(SYS_EXIT_EXTENDED, args);
  /* a debugger without SYS_EXIT_EXTENDED: plain SYS_EXIT (status lost), then stop here */
  (void)semihost(SYS_EXIT, (const void*)(uintptr_t)ADP_Stopped_ApplicationExit);
  for (;;) __asm volatile("wfi");
}

void fw_putc(char c) {
  buffer[used++] = c;
  if (c == '\n' || used == sizeof buffer) fw_flush();
}

void fw_puts(const char* s) {
  while (*s) fw_putc(*s++);
}

static void pad(int n) {
  while (n-- > 0) fw_putc(' ');
}

void fw_put_str(const char* s, int width) {
  int n = 0;
  while (s[n]) ++n;
  fw_puts(s);
  pad(width - n);
}

static void put_digits(const char* sign, uint64_t v, int width) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  int len = n;
  for (const char* s = sign; *s; ++s) ++len;
  pad(width - len);
  fw_puts(sign);
  while (n) fw_putc(digits[--n]);
}

void fw_put_u(uint64_t v, int width) { put_digits("", v, width); }

void fw_put_i(int64_t v, int width) {
  put_digits(v < 0 ? "-" : "", v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, width);
}

void fw_put_hex(uint64_t v, int digits) {
  for (int i = digits - 1; i >= 0; --i) fw_putc("0123456789abcdef"[(v >> (4 * i)) & 0xFu]);
}

void fw_put_f(double v, int decimals, int width) {
  if (v != v) {
    pad(width - 3);
    fw_puts("nan");
    return;
  }
  const int negative = v < 0;
  if (negative) v = -v;
  uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  if (v > 1e18 / (double)scale) {
    pad(width - 3 - negative);
    fw_puts(negative ? "-inf" : "inf");
    return;
  }
  const uint64_t fixed = (uint64_t)(v * (double)scale + 0.5);
  const uint64_t whole = fixed / scale, frac = fixed % scale;
  char text[48];
  int n = 0;
  if (decimals > 0) {
    uint64_t f = frac;
    for (int i = 0; i < decimals; ++i, f /= 10) text[n++] = (char)('0' + f % 10);
    text[n++] = '.';
  }
  uint64_t w = whole;
  do {
    text[n++] = (char)('0' + w % 10);
    w /= 10;
  } while (w);
  if (negative && fixed != 0) text[n++] = '-';
  pad(width - n);
  while (n) fw_putc(text[--n]);
}
