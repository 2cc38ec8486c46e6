// Exact counts of the SLUB model on hand-derived sequences, both
// generations. Derivations are in the comments.
#include <catch2/catch.hpp>

#include "model/mm/mm.h"
#include "model/mm/slub.h"

using namespace simcache;

namespace {
MmConfig cfg_for(SlubGen gen) {
  MmConfig c;
  c.gen = gen;
  return c;
}
uint64_t st(const Mm& mm, const char* cache, SlubStat s) {
  return mm.stat(mm.find_cache(cache), s);
}
}  // namespace

TEST_CASE("6.18: 4096 kmalloc(24) from a cold kmalloc-32 on one CPU", "[slub][v6.18]") {
  Mm mm(cfg_for(SlubGen::v6_18));
  Task a{0, kRootMemcg, 1};
  std::vector<Ptr> v(4096);
  for (auto& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
  // kmalloc-32 is order 0 with 128 objects: 4096 / 128 = 32 new slabs.
  // Each slab is installed by one slow path; its other 127 objects are
  // fast-path pops: 32 slow paths, 4096 - 32 fast paths. No partial
  // slab ever exists, so list_lock is never taken.
  CHECK(mm.events()[Event::allocate_slab] == 32);
  CHECK(mm.events()[Event::page_alloc_order0] == 32);
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_SLAB) == 32);
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_SLOWPATH) == 32);
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_FASTPATH) == 4064);
  CHECK(st(mm, "kmalloc-32", SlubStat::DEACTIVATE_BYPASS) == 31);
  CHECK(mm.events()[Event::list_lock] == 0);
  CHECK(mm.info(mm.find_cache("kmalloc-32")).slabs == 32);

  SECTION("freeing them all from another CPU") {
    Task b{1, kRootMemcg, 2};
    for (Ptr p : v) mm.kfree(p, b);
    // Slabs 1..31 are full and unfrozen; slab 32 is CPU 0's frozen slab.
    // The first free into each full slab puts it on CPU 1's partial list
    // (CPU_PARTIAL_FREE, no lock); with cpu_partial_slabs = 2 every third
    // push drains the two older (now empty) slabs to the node under one
    // list_lock: 15 drains (at slabs 3, 5, ..., 31). The first five
    // drained slabs stay on the node list (min_partial 5); the other 25
    // are discarded. The last free into each of slabs 1..31 empties it
    // and takes list_lock (31 more), finding it on a CPU partial list.
    // Slab 32's 128 frees are FREE_FROZEN without a lock.
    CHECK(st(mm, "kmalloc-32", SlubStat::CPU_PARTIAL_FREE) == 31);
    CHECK(st(mm, "kmalloc-32", SlubStat::CPU_PARTIAL_DRAIN) == 15);
    CHECK(st(mm, "kmalloc-32", SlubStat::FREE_ADD_PARTIAL) == 5);
    CHECK(st(mm, "kmalloc-32", SlubStat::FREE_SLAB) == 25);
    CHECK(st(mm, "kmalloc-32", SlubStat::DEACTIVATE_EMPTY) == 25);
    CHECK(st(mm, "kmalloc-32", SlubStat::FREE_FROZEN) == 128);
    CHECK(st(mm, "kmalloc-32", SlubStat::FREE_SLOWPATH) == 4096);
    CHECK(mm.events()[Event::list_lock] == 46);
    const CacheInfo ci = mm.info(mm.find_cache("kmalloc-32"));
    CHECK(ci.partial == 5);   // min_partial empty slabs on the node
    CHECK(ci.slabs == 7);     // + CPU 1's partial slab + CPU 0's slab
    CHECK(ci.live_objects == 0);
    CHECK(mm.slub().check_invariants().empty());
    mm.shrink_all();
    CHECK(mm.info(mm.find_cache("kmalloc-32")).slabs == 0);
    CHECK(mm.check_leaks() == 0);
  }
}

TEST_CASE("7.x: 4096 kmalloc(24) from a cold kmalloc-32 on one CPU", "[slub][v7]") {
  Mm mm(cfg_for(SlubGen::v7));
  Task a{0, kRootMemcg, 1};
  std::vector<Ptr> v(4096);
  for (auto& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
  // Sheaf capacity 60: every allocation is a sheaf pop (4096 fast), and
  // the main sheaf is refilled whole 69 times (68 x 60 = 4080 < 4096).
  // Each refill misses the barn. 69 x 60 = 4140 objects leave the slabs:
  // ceil(4140 / 128) = 33 slabs, one more than 6.18 needs, because the
  // last sheaf keeps 44 objects. Only the first refill allocates a
  // sheaf; later ones refill the empty spare.
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_FASTPATH) == 4096);
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_SLOWPATH) == 0);
  CHECK(st(mm, "kmalloc-32", SlubStat::BARN_GET_FAIL) == 69);
  CHECK(st(mm, "kmalloc-32", SlubStat::SHEAF_REFILL) == 4140);
  CHECK(st(mm, "kmalloc-32", SlubStat::SHEAF_ALLOC) == 1);
  CHECK(st(mm, "kmalloc-32", SlubStat::ALLOC_SLAB) == 33);
  // The one sheaf allocated is itself a kzalloc of 32 + 8 x 60 = 512
  // bytes: one kmalloc-512 slab more.
  CHECK(st(mm, "kmalloc-512", SlubStat::ALLOC_SLAB) == 1);
  CHECK(mm.events()[Event::allocate_slab] == 34);
  CHECK(mm.slub().cached_objects(mm.find_cache("kmalloc-32")) == 44);
  CHECK(mm.slub().check_invariants().empty());
  for (Ptr p : v) mm.kfree(p, a);
  CHECK(mm.slub().check_invariants().empty());
  mm.shrink_all();
  CHECK(mm.info(mm.find_cache("kmalloc-32")).slabs == 0);
  CHECK(mm.check_leaks() == 0);
}

TEMPLATE_TEST_CASE_SIG("a bulk allocation of 32 is one call and 32 objects",
                       "[slub][bulk]", ((SlubGen G), G), SlubGen::v6_18, SlubGen::v7) {
  Mm mm(cfg_for(G));
  const CacheId s = mm.kmem_cache_create("bulk32", 256, 0, 0);
  Task a;
  Ptr p[32];
  REQUIRE(mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, 32, p, a) == 32);
  CHECK(mm.events()[Event::kmem_cache_alloc_bulk] == 1);
  CHECK(mm.events()[Event::bulk_objects] == 32);
  for (Ptr x : p) CHECK(mm.obj_state(x) == ObjState::kAllocated);
  mm.kmem_cache_free_bulk(s, 32, p, a);
  CHECK(mm.events()[Event::kmem_cache_free_bulk] == 1);
  CHECK(mm.slub().check_invariants().empty());
  CHECK(mm.check_leaks() == 0);
}

TEMPLATE_TEST_CASE_SIG("KASAN: seeded bugs are reported with history",
                       "[slub][kasan]", ((SlubGen G), G), SlubGen::v6_18, SlubGen::v7) {
  Mm mm(cfg_for(G));
  Task a{3, kRootMemcg, 0x1234};
  SECTION("double free") {
    Ptr p = mm.kmalloc(64, GFP_KERNEL, a);
    mm.kfree(p, a);
    mm.kfree(p, a);
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "double-free");
    CHECK(mm.kasan_reports()[0].cache == "kmalloc-64");
    CHECK(mm.kasan_reports()[0].detail.find("allocated by site 0x1234 on cpu 3") !=
          std::string::npos);
    CHECK(mm.slub().check_invariants().empty());
  }
  SECTION("free to the wrong cache") {
    const CacheId x = mm.kmem_cache_create("x", 40, 0, 0);
    const CacheId y = mm.kmem_cache_create("y", 100, 0, 0);
    Ptr p = mm.kmem_cache_alloc(x, GFP_KERNEL, a);
    mm.kmem_cache_free(y, p, a);
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "wrong-cache-free");
    mm.kmem_cache_free(x, p, a);
    CHECK(mm.kasan_reports().size() == 1);
  }
  SECTION("use after put and leak") {
    Ptr p = mm.kmalloc(192, GFP_KERNEL, a);
    REQUIRE(mm.kasan_mempool_poison_object(p, a));
    mm.kasan_check_access(p, "test");
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "use-after-put");
    CHECK(mm.check_leaks() == 1);
    CHECK(mm.kasan_reports()[1].kind == "leak");
  }
  SECTION("foreign pointer") {
    mm.kfree(0xdead0000beefull, a);
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "invalid-free");
  }
  // The hooks past their fast path (an allocated or parked slab object):
  // every other pointer reports, with the object's history.
  SECTION("use after free, poison of a freed object, unpoison of one never parked") {
    const Ptr p = mm.kmalloc(96, GFP_KERNEL, a);
    mm.kasan_check_access(p, "reader");
    CHECK(mm.kasan_reports().empty());
    mm.kfree(p, a);
    mm.kasan_check_access(p, "reader");
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "use-after-free");
    CHECK(mm.kasan_reports()[0].detail.rfind("reader touched it: object ", 0) == 0);
    CHECK(mm.kasan_reports()[0].detail.find("freed by site 0x1234 on cpu 3") !=
          std::string::npos);
    CHECK_FALSE(mm.kasan_mempool_poison_object(p, a));
    REQUIRE(mm.kasan_reports().size() == 2);
    CHECK(mm.kasan_reports()[1].kind == "double-free");
    CHECK(mm.kasan_reports()[1].detail.rfind(
              "kasan_mempool_poison_object() of an object that is not allocated: ", 0) == 0);
    const Ptr q = mm.kmalloc(96, GFP_KERNEL, a);
    mm.kasan_mempool_unpoison_object(q, a);
    REQUIRE(mm.kasan_reports().size() == 3);
    CHECK(mm.kasan_reports()[2].kind == "use-after-free");
    CHECK(mm.kasan_reports()[2].detail.rfind(
              "unpoison of an object not parked in a mempool: ", 0) == 0);
    mm.kfree(q, a);
    CHECK(mm.kasan_reports().size() == 3);
  }
  SECTION("the hooks on a large object, on NULL and on ZERO_SIZE_PTR") {
    const Ptr big = mm.kmalloc(64 << 10, GFP_KERNEL, a);
    REQUIRE((big & kLargeBit) != 0);
    mm.kasan_check_access(big, "reader");
    REQUIRE(mm.kasan_mempool_poison_object(big, a));
    CHECK(mm.obj_state(big) == ObjState::kMempool);
    mm.kasan_check_access(big, "reader");
    REQUIRE(mm.kasan_reports().size() == 1);
    CHECK(mm.kasan_reports()[0].kind == "use-after-put");
    mm.kasan_mempool_unpoison_object(big, a);
    CHECK(mm.obj_state(big) == ObjState::kAllocated);
    mm.kfree(big, a);
    CHECK(mm.kasan_reports().size() == 1);
    for (const Ptr odd : {kNull, kZeroSizePtr}) {
      const size_t before = mm.kasan_reports().size();
      mm.kasan_check_access(odd, "reader");
      REQUIRE(mm.kasan_reports().size() == before + 1);
      CHECK(mm.kasan_reports().back().kind == "use-after-free");
    }
  }
}
