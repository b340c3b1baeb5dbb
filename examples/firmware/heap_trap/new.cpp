// Must NOT link: an escaping operator new has no definition in the firmware link (no libstdc++;
// and its malloc would be trapped by the wrap).
#include <cstddef>

int* volatile escape;

int main() {
  volatile std::size_t n = 16;
  escape = new int[n];
  return escape == nullptr;
}
