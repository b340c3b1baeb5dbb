// Must NOT link: the firmware link wraps malloc to __wrap_malloc, which does not exist.
// (ctest "firmware: heap link trap: malloc" builds this and expects that link error.)
#include <cstdlib>

int main() {
  volatile std::size_t n = 16;
  void* p = std::malloc(n);
  return p == nullptr;
}
