// Direct tests of SLUB v6.18 over the fake backend: every stat item the
// 6.18 model counts, on hand-derived sequences. Geometry of the test cache
// (order 2, 16 objects, min_partial 5, cpu_partial_slabs 3): see
// slub_test_util.h. "S1" is the first slab created, and so on.
#include "tests/slub_test_util.h"

using namespace simcache;
using namespace simcache::testing;
using S = SlubStat;

TEST_CASE("6.18: fast path, slow path, new slabs, bypass, CPU partial alloc",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  std::vector<Ptr> v = r.alloc(17, 0);
  // #1: no CPU slab, no partial slab anywhere: ___slab_alloc() takes a new
  // slab S1 (alloc_slowpath, alloc_slab). #2..#16 pop c->freelist (15
  // fast). #17: c->freelist and S1's own freelist are empty: S1 is
  // dropped (deactivate_bypass) and S2 is new.
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 15}, {S::ALLOC_SLOWPATH, 2},
                          {S::ALLOC_SLAB, 2}, {S::DEACTIVATE_BYPASS, 1}});
  CHECK(r.fake.allocs_by_order[2] == 2);
  CHECK(r.lock() == 0);

  r.free(v[16], 0);  // S2 is CPU 0's slab: onto c->freelist
  // v[1]: S1 is full and on no list: __slab_free() (free_slowpath) sees
  // no prior freelist, and with CPU partials takes no lock: S1 goes onto
  // CPU 0's (empty) partial list (cpu_partial_free).
  r.free(v[1], 0);
  CHECK(r.lock() == 0);
  // v[2..15]: S1 neither full nor becoming empty: lockless. v[0] empties
  // it: list_lock is taken, S1 is found on a CPU partial list, unlock.
  for (int i = 2; i < 16; ++i) r.free(v[i], 0);
  r.free(v[0], 0);
  CHECK(r.lock() == 1);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 15}, {S::ALLOC_SLOWPATH, 2},
                          {S::ALLOC_SLAB, 2}, {S::DEACTIVATE_BYPASS, 1},
                          {S::FREE_FASTPATH, 1}, {S::FREE_SLOWPATH, 16},
                          {S::CPU_PARTIAL_FREE, 1}});

  // 16 more pops from S2 (its 15 never handed out + v[16]); the 17th
  // finds S2 exhausted (bypass) and takes S1 off the CPU partial list
  // (cpu_partial_alloc), no new slab.
  std::vector<Ptr> w = r.alloc(17, 0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 31}, {S::ALLOC_SLOWPATH, 3},
                          {S::ALLOC_SLAB, 2}, {S::DEACTIVATE_BYPASS, 2},
                          {S::FREE_FASTPATH, 1}, {S::FREE_SLOWPATH, 16},
                          {S::CPU_PARTIAL_FREE, 1}, {S::CPU_PARTIAL_ALLOC, 1}});
  CHECK(r.mm.events()[Event::cpu_partial_refill] == 1);
  CHECK(r.mm.slub().check_invariants().empty());
  for (Ptr p : w) r.free(p, 0);
  r.mm.shrink_all();
  CHECK(r.fake.live_pages() == 0);
  CHECK(r.mm.check_leaks() == 0);
}

TEST_CASE("6.18: remote frees into a frozen slab, then alloc_refill",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  std::vector<Ptr> v = r.alloc(16, 0);  // S1: 1 slow + 15 fast, now full
  // CPU 1 frees two objects of CPU 0's frozen slab: __slab_free() without
  // a lock (free_frozen), the objects go onto S1's own freelist.
  r.free(v[0], 1);
  r.free(v[1], 1);
  // CPU 0: c->freelist is empty, S1's freelist holds 2: get_freelist()
  // (alloc_refill) in the slow path, then one more fast pop.
  r.alloc(2, 0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 16}, {S::ALLOC_SLOWPATH, 2},
                          {S::ALLOC_SLAB, 1}, {S::FREE_SLOWPATH, 2},
                          {S::FREE_FROZEN, 2}, {S::ALLOC_REFILL, 1}});
  CHECK(r.lock() == 0);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("6.18: CPU partial drain to the node, get_partial_node",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  std::vector<Ptr> v = r.alloc(80, 0);
  // S1..S5, each taken by a slow path; 4 bypasses (at #17, #33, #49, #65).
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 75}, {S::ALLOC_SLOWPATH, 5},
                          {S::ALLOC_SLAB, 5}, {S::DEACTIVATE_BYPASS, 4}});
  // CPU 1 frees the first object of S1, S2, S3, S4: each is a full slab
  // going onto CPU 1's partial list (cpu_partial_free). At S4 the list
  // already holds 3 = cpu_partial_slabs: it is drained first
  // (cpu_partial_drain) by __put_partials(): one list_lock, S3, S2, S1 to
  // the node tail (3 x free_add_partial; 15 in use each, none discarded).
  for (int k = 0; k < 4; ++k) r.free(v[16 * k], 1);
  CHECK(r.lock() == 1);
  CHECK(r.mm.info(r.s).partial == 3);
  // CPU 1 allocates: no CPU slab, its partial list holds S4 with one free
  // object (cpu_partial_alloc). The next one: S4 exhausted (bypass), no
  // CPU partial, so get_partial() locks the node (2nd list_lock): the
  // head S3 becomes the CPU slab (alloc_from_partial) and more slabs go to
  // the CPU partial list until more than cpu_partial_slabs / 2 = 1 moved:
  // S2, S1 (2 x cpu_partial_node).
  r.alloc(2, 1);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 75}, {S::ALLOC_SLOWPATH, 7},
                          {S::ALLOC_SLAB, 5}, {S::DEACTIVATE_BYPASS, 5},
                          {S::FREE_SLOWPATH, 4}, {S::CPU_PARTIAL_FREE, 4},
                          {S::CPU_PARTIAL_DRAIN, 1}, {S::FREE_ADD_PARTIAL, 3},
                          {S::CPU_PARTIAL_ALLOC, 1}, {S::ALLOC_FROM_PARTIAL, 1},
                          {S::CPU_PARTIAL_NODE, 2}});
  CHECK(r.lock() == 2);
  CHECK(r.mm.info(r.s).partial == 0);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("6.18: emptied slabs beyond min_partial are discarded",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  std::vector<Ptr> v = r.alloc(16 * 9, 0);  // S1..S9, S9 is CPU 0's slab
  SECTION("deactivate_empty through __put_partials and deactivate_slab") {
    // CPU 1 frees all of S1..S8 in order. The first free into each slab
    // puts it on CPU 1's partial list; its last free takes list_lock and
    // finds it there (8 locks). Pushing S4 drains S3, S2, S1 (all empty,
    // node list 0, 1, 2 < 5: kept, free_add_partial); pushing S7 drains
    // S6, S5 (kept: 3, 4) and S4 (node holds 5 = min_partial: discarded,
    // deactivate_empty + free_slab). 2 drains, 2 more locks.
    for (int i = 0; i < 16 * 8; ++i) r.free(v[i], 1);
    check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 135}, {S::ALLOC_SLOWPATH, 9},
                            {S::ALLOC_SLAB, 9}, {S::DEACTIVATE_BYPASS, 8},
                            {S::FREE_SLOWPATH, 128}, {S::CPU_PARTIAL_FREE, 8},
                            {S::CPU_PARTIAL_DRAIN, 2}, {S::FREE_ADD_PARTIAL, 5},
                            {S::DEACTIVATE_EMPTY, 1}, {S::FREE_SLAB, 1}});
    CHECK(r.lock() == 10);
    CHECK(r.fake.frees_by_order[2] == 1);
    CHECK(r.mm.info(r.s).partial == 5);
    // CPU 0 frees S9 onto its c->freelist (16 fast), then a flush: S9 is
    // deactivated empty with 5 node partials (cpuslab_flush,
    // deactivate_empty, free_slab); CPU 1's partial list S8, S7 (empty)
    // is put back: both discarded (2 x deactivate_empty + free_slab).
    // The shrink then discards the 5 empty node slabs (no stat items).
    for (int i = 16 * 8; i < 16 * 9; ++i) r.free(v[i], 0);
    r.mm.shrink_all();
    check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 135}, {S::ALLOC_SLOWPATH, 9},
                            {S::ALLOC_SLAB, 9}, {S::DEACTIVATE_BYPASS, 8},
                            {S::FREE_FASTPATH, 16}, {S::FREE_SLOWPATH, 128},
                            {S::CPU_PARTIAL_FREE, 8}, {S::CPU_PARTIAL_DRAIN, 2},
                            {S::FREE_ADD_PARTIAL, 5}, {S::CPUSLAB_FLUSH, 1},
                            {S::DEACTIVATE_EMPTY, 4}, {S::FREE_SLAB, 4}});
    CHECK(r.fake.frees_by_order[2] == 9);
    CHECK(r.fake.live_pages() == 0);
  }
  SECTION("free_remove_partial: a node partial slab emptied") {
    // CPU 1 frees the first object of S1..S8: drains at S4 (S3, S2, S1)
    // and S7 (S6, S5, S4), 6 x free_add_partial, CPU 1 keeps S8, S7. Then
    // the other 15 objects of S1 (on the node list): the last one empties
    // it with 6 node partials >= 5: removed (free_remove_partial) and
    // discarded (free_slab).
    for (int k = 0; k < 8; ++k) r.free(v[16 * k], 1);
    for (int i = 1; i < 16; ++i) r.free(v[i], 1);
    check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 135}, {S::ALLOC_SLOWPATH, 9},
                            {S::ALLOC_SLAB, 9}, {S::DEACTIVATE_BYPASS, 8},
                            {S::FREE_SLOWPATH, 23}, {S::CPU_PARTIAL_FREE, 8},
                            {S::CPU_PARTIAL_DRAIN, 2}, {S::FREE_ADD_PARTIAL, 6},
                            {S::FREE_REMOVE_PARTIAL, 1}, {S::FREE_SLAB, 1}});
    CHECK(r.lock() == 3);
    CHECK(r.mm.info(r.s).partial == 5);
  }
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("6.18: flushing a CPU slab, each deactivate_slab() outcome",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  SECTION("full") {
    r.alloc(16, 0);  // S1 fully handed out
    r.mm.shrink_all();  // no remote frees, nothing on c->freelist
    check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 15}, {S::ALLOC_SLOWPATH, 1},
                            {S::ALLOC_SLAB, 1}, {S::CPUSLAB_FLUSH, 1},
                            {S::DEACTIVATE_FULL, 1}});
  }
  SECTION("to head") {
    r.alloc(1, 0);  // 15 objects on c->freelist go back; S1 to the head
    r.mm.shrink_all();
    check_stats(r.mm, r.s, {{S::ALLOC_SLOWPATH, 1}, {S::ALLOC_SLAB, 1},
                            {S::CPUSLAB_FLUSH, 1}, {S::DEACTIVATE_TO_HEAD, 1}});
    CHECK(r.mm.info(r.s).partial == 1);
  }
  SECTION("to tail, with remote frees") {
    std::vector<Ptr> v = r.alloc(2, 0);
    r.free(v[1], 1);  // into CPU 0's frozen slab: free_frozen
    r.mm.shrink_all();  // S1's own freelist is non-empty: tail
    check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 1}, {S::ALLOC_SLOWPATH, 1},
                            {S::ALLOC_SLAB, 1}, {S::FREE_SLOWPATH, 1},
                            {S::FREE_FROZEN, 1}, {S::CPUSLAB_FLUSH, 1},
                            {S::DEACTIVATE_REMOTE_FREES, 1},
                            {S::DEACTIVATE_TO_TAIL, 1}});
    CHECK(r.mm.info(r.s).partial == 1);
  }
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("6.18: order fallback when the preferred order is refused",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  r.fake.refuse_order_above = 1;
  // allocate_slab(): order 2 refused, s->min = order 0 (4 objects) taken
  // (order_fallback). 5 objects: S1 (1 slow + 3 fast), then S1 is
  // exhausted (bypass) and S2 is again a fallback slab.
  r.alloc(5, 0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 3}, {S::ALLOC_SLOWPATH, 2},
                          {S::ALLOC_SLAB, 2}, {S::ORDER_FALLBACK, 2},
                          {S::DEACTIVATE_BYPASS, 1}});
  CHECK(r.fake.page_calls == 4);
  CHECK(r.fake.refused == 2);
  CHECK(r.fake.allocs_by_order[0] == 2);
  CHECK(r.mm.info(r.s).slabs == 2);
  SECTION("and nothing at all") {
    r.fake.fail_from_call = 5;
    r.alloc(3, 0);  // S2's last 3 objects
    CHECK(r.mm.kmem_cache_alloc(r.s, GFP_KERNEL, Task{}) == kNull);
    CHECK(r.mm.events()[Event::alloc_failed] == 1);
    CHECK(r.mm.stat(r.s, S::ALLOC_SLOWPATH) == 3);
    CHECK(r.mm.stat(r.s, S::ALLOC_SLAB) == 2);
  }
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("6.18: bulk allocation and detached-freelist bulk free",
          "[slub][v6.18][direct]") {
  SlubRig r(SlubGen::v6_18);
  Ptr p[20];
  const Task t{0, kRootMemcg, 0};
  REQUIRE(r.mm.kmem_cache_alloc_bulk(r.s, GFP_KERNEL, 20, p, t) == 20);
  // __kmem_cache_alloc_bulk(): #1 through ___slab_alloc (S1), 15 pops,
  // #17 through ___slab_alloc (bypass, S2), 3 pops.
  // kmem_cache_free_bulk(): the last entry (S2) gathers p[18..16] (same
  // slab) and stops after 3 misses: one do_slab_free() of 4 onto CPU 0's
  // c->freelist (free_fastpath 4). Then S1's 16 in one __slab_free()
  // (free_slowpath 1): S1 was full, so it goes to CPU 0's partial list
  // (cpu_partial_free) even though it is now empty.
  r.mm.kmem_cache_free_bulk(r.s, 20, p, t);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 18}, {S::ALLOC_SLOWPATH, 2},
                          {S::ALLOC_SLAB, 2}, {S::DEACTIVATE_BYPASS, 1},
                          {S::FREE_FASTPATH, 4}, {S::FREE_SLOWPATH, 1},
                          {S::CPU_PARTIAL_FREE, 1}});
  CHECK(r.lock() == 0);
  CHECK(r.mm.slub().check_invariants().empty());
  CHECK(r.mm.check_leaks() == 0);
}
