// Replaces the global operator new of the benchmark binary with a
// counting wrapper over malloc (jemalloc's, since the binary links it).
#include "bench/heap_count.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> g_allocs{0};
}

namespace simcache::bench {
uint64_t heap_allocations() { return g_allocs.load(std::memory_order_relaxed); }
}  // namespace simcache::bench

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
