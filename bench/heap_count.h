// Counts the program's heap allocations (operator new), so a benchmark can
// show that a steady-state loop allocates nothing.
#pragma once

#include <cstdint>

namespace simcache::bench {
uint64_t heap_allocations();
}  // namespace simcache::bench
