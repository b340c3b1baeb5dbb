// Test support: counts heap allocations (tests/support/heap_counter.cpp replaces every allocation
// entry point). Set `counting`, run the code under test, read `allocations`.
#pragma once

#include <cstddef>

namespace stf::test::heap {
extern volatile bool counting;   ///< allocations are counted while true (volatile: the allocators read it)
extern std::size_t allocations;  ///< allocations counted so far
}  // namespace stf::test::heap
