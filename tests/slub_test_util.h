// Shared set-up of the direct SLUB tests (test_slub_618.cc,
// test_slub_7x.cc): a 2-CPU machine over the fake backend and one
// dedicated 1 KiB cache whose geometry the tests derive by hand.
#pragma once

#include <catch2/catch.hpp>

#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include "model/mm/mm.h"
#include "model/mm/slub.h"
#include "tests/fake_slab_backend.h"

namespace simcache::testing {

// kmem_cache_create("t1k", 1024, 0, 0) with 2 present CPUs:
//  - calculate_order(): min_objects = 4 * (fls(2) + 1) = 12; min_order =
//    get_order(12 * 1024) = 2; at order 2 the 16 KiB slab leaves 0 bytes
//    (<= 1/16), so order 2 with 16 objects; s->min = order 0, 4 objects.
//  - min_partial = clamp(ilog2(1024) / 2, 5, 10) = 5.
//  - 6.18 set_cpu_partial(): size >= 1024 -> 24 objects, so
//    cpu_partial_slabs = DIV_ROUND_UP(24 * 2, 16) = 3.
//  - 7.x calculate_sheaf_capacity(): size >= 1024 -> 12; a sheaf of
//    32 + 12 * 8 = 128 bytes fills kmalloc-128 exactly, so capacity 12.
struct SlubRig {
  FakeSlabBackend fake;
  Mm mm;
  CacheId s;
  explicit SlubRig(SlubGen gen, uint8_t nodes = 1, bool rt = false)
      : mm(config(gen, nodes, rt), &fake), s(mm.kmem_cache_create("t1k", 1024, 0, 0)) {
    const CacheInfo ci = mm.info(s);
    REQUIRE(ci.name == "t1k");
    REQUIRE(ci.order == 2);
    REQUIRE(ci.objs_per_slab == 16);
    REQUIRE(ci.min_partial == 5);
    REQUIRE(ci.cpu_partial_slabs == (gen == SlubGen::v6_18 ? 3u : 0u));
    REQUIRE(ci.sheaf_capacity == (gen == SlubGen::v7 ? 12u : 0u));
  }
  static MmConfig config(SlubGen gen, uint8_t nodes, bool rt) {
    MmConfig c;
    c.gen = gen;
    c.nr_cpus = 2;
    c.nr_nodes = nodes;
    c.preempt_rt = rt;
    return c;
  }
  std::vector<Ptr> alloc(int n, CpuId cpu, gfp_t gfp = GFP_KERNEL) {
    std::vector<Ptr> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(mm.kmem_cache_alloc(s, gfp, Task{cpu, kRootMemcg, 0}));
      REQUIRE(v.back() != kNull);
    }
    return v;
  }
  void free(Ptr p, CpuId cpu) { mm.kmem_cache_free(s, p, Task{cpu, kRootMemcg, 0}); }
  uint64_t lock() const { return mm.events()[Event::list_lock]; }
};

// Every stat item of cache `s`: the listed ones at their values, all
// others 0 (so a path counting something unexpected fails too).
inline void check_stats(const Mm& mm, CacheId s,
                        std::initializer_list<std::pair<SlubStat, uint64_t>> want) {
  std::map<SlubStat, uint64_t> w(want.begin(), want.end());
  for (size_t i = 0; i < kNumSlubStats; ++i) {
    const auto item = static_cast<SlubStat>(i);
    const uint64_t expect = w.count(item) ? w[item] : 0;
    INFO("stat " << kSlubStatInfo[i].sysfs);
    CHECK(mm.stat(s, item) == expect);
  }
}

}  // namespace simcache::testing
