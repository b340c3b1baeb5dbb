// Test support: every allocation entry point (all operator new forms, malloc, calloc, realloc,
// aligned_alloc, posix_memalign) replaced by glibc's own allocator plus a counter (heap_counter.hpp).
// Linked into the zero-allocation tests only; not under the sanitizers (they own malloc).
#include "heap_counter.hpp"

#include <cstdlib>
#include <new>

extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
extern "C" void* __libc_memalign(std::size_t, std::size_t);
extern "C" void __libc_free(void*);

namespace {
void note() {
  if (stf::test::heap::counting) ++stf::test::heap::allocations;
}
}  // namespace

namespace stf::test::heap {
volatile bool counting = false;
std::size_t allocations = 0;
}  // namespace stf::test::heap

extern "C" {
void* malloc(std::size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(std::size_t n, std::size_t m) {
  note();
  return __libc_calloc(n, m);
}
void* realloc(void* p, std::size_t n) {
  note();
  return __libc_realloc(p, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** p, std::size_t a, std::size_t n) {
  note();
  *p = __libc_memalign(a, n);
  return *p ? 0 : 12;
}
void free(void* p) { __libc_free(p); }
}
void* operator new(std::size_t n) {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new[](std::size_t n) {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  note();
  return __libc_malloc(n ? n : 1);
}
void* operator new(std::size_t n, std::align_val_t a) {
  note();
  return __libc_memalign(static_cast<std::size_t>(a), n);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  note();
  return __libc_memalign(static_cast<std::size_t>(a), n);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
