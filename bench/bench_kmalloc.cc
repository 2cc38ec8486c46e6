// Simulated kmalloc(32)+kfree pairs on both SLUB generations' fast paths,
// against real jemalloc mallocx(32)+dallocx pairs in the same binary.
// Goal (docs/performance.md): a simulated pair costs at most one jemalloc
// pair on both generations, with the default bookkeeping on.
#include <benchmark/benchmark.h>
#include <jemalloc/jemalloc.h>

#include "bench/heap_count.h"
#include "model/mm/mm.h"

namespace {
using namespace simcache;

// `history`: the per-object KASAN history (on by default; off shows what
// the bookkeeping costs).
void BM_SimKmallocPair(benchmark::State& state, SlubGen gen, bool history) {
  MmConfig cfg;
  cfg.gen = gen;
  cfg.track_history = history;
  Mm mm(cfg);
  Task t;
  t.cpu = 2;
  // Warm the per-CPU layer so the loop measures the fast path.
  mm.kfree(mm.kmalloc(32, GFP_KERNEL, t), t);
  const uint64_t heap0 = simcache::bench::heap_allocations();
  for (auto _ : state) {
    Ptr p = mm.kmalloc(32, GFP_KERNEL, t);
    benchmark::DoNotOptimize(p);
    mm.kfree(p, t);
  }
  state.counters["heap_allocs"] =
      static_cast<double>(simcache::bench::heap_allocations() - heap0);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(BM_SimKmallocPair, v6_18, SlubGen::v6_18, true);
BENCHMARK_CAPTURE(BM_SimKmallocPair, v7, SlubGen::v7, true);
BENCHMARK_CAPTURE(BM_SimKmallocPair, v6_18_no_history, SlubGen::v6_18, false);
BENCHMARK_CAPTURE(BM_SimKmallocPair, v7_no_history, SlubGen::v7, false);

void BM_JemallocPair(benchmark::State& state) {
  for (auto _ : state) {
    void* p = mallocx(32, 0);
    benchmark::DoNotOptimize(p);
    dallocx(p, 0);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_JemallocPair);

// The slow paths: a burst of 4,096 kmalloc(24) from a cold cache, freed
// from another CPU (the sparse-fill pattern). Includes Mm construction.
void BM_SimColdBurst(benchmark::State& state, SlubGen gen) {
  std::vector<Ptr> v(4096);
  for (auto _ : state) {
    MmConfig cfg;
    cfg.gen = gen;
    Mm mm(cfg);
    Task a, b;
    b.cpu = 5;
    for (auto& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
    for (auto p : v) mm.kfree(p, b);
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * 4096);
}
BENCHMARK_CAPTURE(BM_SimColdBurst, v6_18, SlubGen::v6_18);
BENCHMARK_CAPTURE(BM_SimColdBurst, v7, SlubGen::v7);

// The same burst on a warm Mm: steady state, where no operation may
// allocate heap memory (heap_allocs must read 0).
void BM_SimWarmBurst(benchmark::State& state, SlubGen gen) {
  MmConfig cfg;
  cfg.gen = gen;
  Mm mm(cfg);
  Task a, b;
  b.cpu = 5;
  std::vector<Ptr> v(4096);
  auto burst = [&] {
    for (auto& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
    for (auto p : v) mm.kfree(p, b);
  };
  for (int i = 0; i < 4; ++i) burst();  // tables reach their working size
  const uint64_t heap0 = simcache::bench::heap_allocations();
  for (auto _ : state) {
    burst();
    benchmark::DoNotOptimize(v.data());
  }
  state.counters["heap_allocs"] =
      static_cast<double>(simcache::bench::heap_allocations() - heap0);
  state.SetItemsProcessed(state.iterations() * 4096);
}
BENCHMARK_CAPTURE(BM_SimWarmBurst, v6_18, SlubGen::v6_18);
BENCHMARK_CAPTURE(BM_SimWarmBurst, v7, SlubGen::v7);

}  // namespace
