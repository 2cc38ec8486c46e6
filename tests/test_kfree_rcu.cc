// kfree_bulk() and kfree_rcu() (model/mm/kfree_rcu.cc): the bulk-free
// side of seed 002's review. Two SLAB_ACCOUNT caches of 256 and 320
// bytes on a 2-CPU machine, objects of both interleaved in one array, as
// a kfree_rcu batch mixes callers. The 7.x sheaf capacity is read from
// the caches' geometry (tests/test_slub_7x.cc derives it by hand).
#include <catch2/catch.hpp>

#include <vector>

#include "model/mm/mm.h"
#include "model/mm/slub.h"

using namespace simcache;

namespace {

struct RcuRig {
  Mm mm;
  CacheId a, b;
  MemcgId m;
  Task t;
  explicit RcuRig(SlubGen gen, bool sort = false, bool batch_free = false, bool rt = false)
      : mm(config(gen, sort, batch_free, rt)),
        a(mm.kmem_cache_create("ta", 256, 0, SLAB_ACCOUNT)),
        b(mm.kmem_cache_create("tb", 320, 0, SLAB_ACCOUNT)),
        m(mm.memcg().create(kRootMemcg)),
        t{0, m, 0} {}
  static MmConfig config(SlubGen gen, bool sort, bool batch_free, bool rt) {
    MmConfig c;
    c.gen = gen;
    c.nr_cpus = 2;
    c.kfree_bulk_sort = sort;
    c.memcg_batch_free = batch_free;
    c.preempt_rt = rt;
    return c;
  }
  // n objects of each cache, interleaved a b a b ...
  std::vector<Ptr> alloc(int n) {
    std::vector<Ptr> v;
    for (int i = 0; i < n; ++i) {
      v.push_back(mm.kmem_cache_alloc(a, GFP_KERNEL, t));
      v.push_back(mm.kmem_cache_alloc(b, GFP_KERNEL, t));
      REQUIRE(v[v.size() - 2] != kNull);
      REQUIRE(v.back() != kNull);
    }
    return v;
  }
  uint64_t ev(Event e) const { return mm.events()[e]; }
  uint64_t stat(CacheId s, SlubStat i) const { return mm.stat(s, i); }
  void all_free(const std::vector<Ptr>& v) {
    for (Ptr p : v) {
      const ObjState st = mm.obj_state(p);
      CHECK((st == ObjState::kFree || st == ObjState::kCpuFreelist || st == ObjState::kInSheaf));
    }
    CHECK(mm.slub().check_invariants().empty());
    CHECK(mm.kasan_reports().empty());
  }
};

}  // namespace

TEST_CASE("kfree_bulk: one detached freelist per slab, each group's cache from its slab",
          "[kfree_rcu][mm]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  INFO((gen == SlubGen::v7 ? "v7" : "v6.18"));
  RcuRig r(gen);
  std::vector<Ptr> v = r.alloc(8);
  const uint64_t cached_a = r.mm.slub().cached_objects(r.a);  // the refill's rest
  const Counters before = r.mm.events();
  r.mm.kfree_bulk(16, v.data(), r.t);
  const Counters d = r.mm.events() - before;
  CHECK(d[Event::kfree_bulk] == 1);
  CHECK(d[Event::kmem_cache_free_bulk] == 1);  // kfree_bulk() is that call
  CHECK(d[Event::bulk_free_objects] == 16);
  CHECK(d[Event::kfree_bulk_sort] == 0);
  CHECK(d[Event::memcg_free_hook] == 16);  // per object, unbatched
  CHECK(d[Event::memcg_batch_run] == 0);
  // Each cache's 8 objects sit on its first slab; with a b alternating the
  // 3-miss look-ahead gathers each slab's 8 into one group: 2 groups.
  if (gen == SlubGen::v7) {
    // No cache given, so no sheaves: every object to its slab.
    CHECK(r.stat(r.a, SlubStat::FREE_SLOWPATH) == 8);
    CHECK(r.stat(r.b, SlubStat::FREE_SLOWPATH) == 8);
    CHECK(r.stat(r.a, SlubStat::FREE_FASTPATH) == 0);
    CHECK(r.mm.slub().cached_objects(r.a) == cached_a);
  } else {
    // 6.18: both slabs are their caches' CPU slabs: one fast push each.
    CHECK(d[Event::slab_free_slow] == 0);
  }
  r.all_free(v);
  CHECK(r.mm.memcg().live_obj_bytes(r.m) == 0);
}

TEST_CASE("kfree-bulk-sort: one kmem_cache_free_bulk() per cache, 7.x into the sheaves",
          "[kfree_rcu][mm]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  const bool batch = GENERATE(false, true);
  INFO((gen == SlubGen::v7 ? "v7" : "v6.18") << " memcg-batch-free " << batch);
  RcuRig r(gen, /*sort=*/true, batch);
  std::vector<Ptr> v = r.alloc(8);
  const uint64_t cached_a = r.mm.slub().cached_objects(r.a);
  const uint64_t cached_b = r.mm.slub().cached_objects(r.b);
  const Counters before = r.mm.events();
  r.mm.kfree_bulk(16, v.data(), r.t);
  const Counters d = r.mm.events() - before;
  CHECK(d[Event::kfree_bulk] == 1);
  CHECK(d[Event::kmem_cache_free_bulk] == 2);  // one per cache
  CHECK(d[Event::kfree_bulk_sort] == 16);
  CHECK(d[Event::memcg_free_hook] == 16);
  // Batched: one memcg, one node, one objcg node: one run per cache.
  CHECK(d[Event::memcg_batch_run] == (batch ? 2u : 0u));
  if (gen == SlubGen::v7) {
    CHECK(r.stat(r.a, SlubStat::FREE_FASTPATH) == 8);  // free_to_pcs_bulk()
    CHECK(r.stat(r.a, SlubStat::FREE_SLOWPATH) == 0);
    CHECK(r.mm.slub().cached_objects(r.a) == cached_a + 8);
    CHECK(r.mm.slub().cached_objects(r.b) == cached_b + 8);
  }
  r.all_free(v);
  CHECK(r.mm.memcg().live_obj_bytes(r.m) == 0);
}

TEST_CASE("kfree_bulk and kmem_cache_free_bulk: a pointer twice in the array is a double free",
          "[kfree_rcu][mm][kasan]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  const bool sort = GENERATE(false, true);
  RcuRig r(gen, sort);
  std::vector<Ptr> v = r.alloc(2);
  std::vector<Ptr> twice = {v[0], v[2], v[0]};
  r.mm.kfree_bulk(3, twice.data(), r.t);
  REQUIRE(r.mm.kasan_reports().size() == 1);
  CHECK(r.mm.kasan_reports()[0].kind == "double-free");
  std::vector<Ptr> bulk = {v[1], v[3], v[1]};
  r.mm.kmem_cache_free_bulk(r.b, 3, bulk.data(), r.t);
  REQUIRE(r.mm.kasan_reports().size() == 2);
  CHECK(r.mm.kasan_reports()[1].kind == "double-free");
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("kfree_bulk: large kmalloc objects and NULL entries", "[kfree_rcu][mm]") {
  RcuRig r(SlubGen::v6_18);
  std::vector<Ptr> v = r.alloc(2);
  v.push_back(r.mm.kmalloc(64 * 1024, GFP_KERNEL, r.t));
  v.push_back(kNull);
  const Counters before = r.mm.events();
  r.mm.kfree_bulk(static_cast<int>(v.size()), v.data(), r.t);
  const Counters d = r.mm.events() - before;
  CHECK(d[Event::kfree_large] == 1);
  CHECK(d[Event::memcg_free_hook] == 4);
  CHECK(r.mm.large_bytes_total() == 0);
  CHECK(r.mm.kasan_reports().empty());
}

TEST_CASE("kfree_rcu, 6.18 and PREEMPT_RT: the kvfree_rcu batch, kfree_bulk per page",
          "[kfree_rcu][mm]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  const bool rt = gen == SlubGen::v7;  // 7.x takes this path only on RT
  RcuRig r(gen, false, false, rt);
  // 600 objects: more than one page of records (KVFREE_BULK_MAX_ENTR).
  STATIC_REQUIRE(KVFREE_BULK_MAX_ENTR == 507);
  std::vector<Ptr> v = r.alloc(300);
  for (Ptr p : v) r.mm.kfree_rcu(p, r.t);
  CHECK(r.ev(Event::kfree_rcu) == 600);
  CHECK(r.ev(Event::kfree_rcu_sheaf) == 0);
  CHECK(r.mm.rcu_pending() == 600);
  for (Ptr p : v) CHECK(r.mm.obj_state(p) == ObjState::kAllocated);  // until the grace period
  CHECK(r.mm.memcg().live_obj_bytes(r.m) > 0);
  r.mm.rcu_grace_period();
  CHECK(r.mm.rcu_pending() == 0);
  CHECK(r.ev(Event::kfree_bulk) == 2);  // 507 + 93
  CHECK(r.ev(Event::memcg_free_hook) == 600);
  r.all_free(v);
  CHECK(r.mm.memcg().live_obj_bytes(r.m) == 0);
}

TEST_CASE("kfree_rcu, 7.x: the rcu_free sheaf, submitted full, into the barn after the grace period",
          "[kfree_rcu][mm]") {
  RcuRig r(SlubGen::v7);
  const uint32_t cap = r.mm.info(r.a).sheaf_capacity;
  REQUIRE(cap > 0);
  REQUIRE(r.mm.info(r.b).sheaf_capacity == cap);
  // cap + 1 objects of each cache: one full sheaf each goes to call_rcu,
  // one object each waits in the next rcu_free sheaf.
  std::vector<Ptr> v = r.alloc(static_cast<int>(cap) + 1);
  const uint64_t cached_a = r.mm.slub().cached_objects(r.a);  // the refills' rest
  for (Ptr p : v) r.mm.kfree_rcu(p, r.t);
  CHECK(r.stat(r.a, SlubStat::FREE_RCU_SHEAF) == cap + 1);
  CHECK(r.ev(Event::kfree_rcu_sheaf) == 2 * (cap + 1));
  CHECK(r.mm.rcu_pending() == 2 * (cap + 1));
  r.mm.rcu_grace_period();  // the two full sheaves only
  CHECK(r.mm.rcu_pending() == 2);
  CHECK(r.stat(r.a, SlubStat::BARN_PUT) == 1);
  CHECK(r.ev(Event::memcg_free_hook) == 2 * cap);
  CHECK(r.ev(Event::kfree_bulk) == 0);
  CHECK(r.mm.slub().cached_objects(r.a) == cached_a + cap);  // the full sheaf in the barn
  CHECK(r.mm.slub().check_invariants().empty());
  // kvfree_rcu_barrier(): flush_rcu_sheaf() hands each partly filled
  // rcu_free sheaf to call_rcu(rcu_free_sheaf_nobarn): after the grace
  // period its one object goes back to its slab and the sheaf is freed,
  // never parked in the barn as a short "full" one.
  const uint64_t flush_a = r.stat(r.a, SlubStat::SHEAF_FLUSH);
  const uint64_t free_a = r.stat(r.a, SlubStat::SHEAF_FREE);
  r.mm.kvfree_rcu_barrier();
  CHECK(r.mm.rcu_pending() == 0);
  CHECK(r.stat(r.a, SlubStat::BARN_PUT) == 1);
  CHECK(r.stat(r.a, SlubStat::SHEAF_FLUSH) == flush_a + 1);
  CHECK(r.stat(r.a, SlubStat::SHEAF_FREE) == free_a + 1);
  CHECK(r.mm.slub().cached_objects(r.a) == cached_a + cap);  // not the flushed one
  r.all_free(v);
  CHECK(r.mm.memcg().live_obj_bytes(r.m) == 0);
}

TEST_CASE("kfree_rcu: KASAN sees a double kfree_rcu at the grace period and reports no leak",
          "[kfree_rcu][mm][kasan]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  RcuRig r(gen);
  std::vector<Ptr> v = r.alloc(1);
  r.mm.kfree_rcu(v[0], r.t);
  r.mm.kfree_rcu(v[0], r.t);
  r.mm.kvfree_rcu_barrier();
  REQUIRE(r.mm.kasan_reports().size() == 1);
  CHECK(r.mm.kasan_reports()[0].kind == "double-free");
  // Objects queued but never through a grace period are not leaks: the
  // teardown waits for them, as kmem_cache_destroy() does.
  r.mm.kfree_rcu(v[1], r.t);
  CHECK(r.mm.check_leaks() == 0);
  CHECK(r.mm.rcu_pending() == 0);
}
