// Direct tests of SLUB 7.x over the fake backend: every stat item the 7.x
// model counts, on hand-derived sequences. Geometry of the test cache
// (order 2, 16 objects, min_partial 5, sheaf capacity 12): see
// slub_test_util.h. A sheaf of t1k is a kmalloc-128 object; "Bt" is CPU
// 0's boot-time main sheaf (never counted), "S1" the first slab created.
#include <numeric>

#include "tests/slub_test_util.h"
#include "tests/test_run_util.h"

using namespace simcache;
using namespace simcache::testing;
using S = SlubStat;

TEST_CASE("7.x: sheaf refills, the spare, barn put and barn full, barn get",
          "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  std::vector<Ptr> v = r.alloc(24, 0);
  // #1: Bt is empty, no spare, no full barn sheaf (barn_get_fail); no
  // empty sheaf either, so a new one X (sheaf_alloc) is refilled with 12
  // from a new slab S1 (alloc_slab; 4 left, S1 to the partial head) and
  // installed: main X, spare Bt. #13: main and spare empty, barn empty
  // (barn_get_fail): the spare Bt is refilled: S1's 4 (isolated under
  // list_lock) + 8 of a new S2 (S2 to the partial head); main Bt, spare X.
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 24}, {S::BARN_GET_FAIL, 2},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 24},
                          {S::ALLOC_SLAB, 2}});
  // list_lock: t1k 3 (S1 added, S1 isolated, S2 added). The sheaf X is
  // kzalloc'ed from kmalloc-128, whose own first main sheaf is refilled
  // with 60 from two new order-0 slabs of 32 (the second, 4 left, to the
  // partial head: 1 lock); that sheaf is a kmalloc-512 object taken by
  // ___slab_alloc() (kmalloc-512 gets no sheaf: __GFP_NO_OBJ_EXT) from a
  // new slab, the rest to the partial head (1 lock). 5 in all.
  CHECK(r.lock() == 5);

  // 144 more: 12 refills in all... 14 refills of 12 for 168 objects, each
  // missing the barn and alternating X and Bt: 168 objects from 11 slabs
  // (refills drain the one partial slab before taking a new one).
  std::vector<Ptr> more = r.alloc(144, 0);
  v.insert(v.end(), more.begin(), more.end());
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 168}, {S::BARN_GET_FAIL, 14},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 168},
                          {S::ALLOC_SLAB, 11}});
  CHECK(r.fake.allocs_by_order[2] == 11);
  // Free all 168 on CPU 0 in allocation order. F1-12 fill the main (Bt),
  // F13 swaps in the empty spare X, F13-24 fill it. From F25 on, main and
  // spare are full and the barn has no empty sheaf (-ENOMEM): a new sheaf
  // (sheaf_alloc, GFP_NOWAIT) is installed and the full main goes to the
  // barn (barn_put); 10 times, F25..F133, until the barn holds
  // MAX_FULL_SHEAVES. F145 and F157 find it full (-E2BIG, barn_put_fail):
  // the full spare is flushed to slabs (sheaf_flush 12 each) and reused.
  // The flushed spares hold F1-12 (objects of S1) and F133-144 (S9): each
  // a full slab getting 12 back, so each goes to the node partial tail
  // (free_add_partial).
  for (Ptr p : v) r.free(p, 0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 168}, {S::BARN_GET_FAIL, 14},
                          {S::SHEAF_ALLOC, 11}, {S::SHEAF_REFILL, 168},
                          {S::ALLOC_SLAB, 11}, {S::FREE_FASTPATH, 168},
                          {S::BARN_PUT, 10}, {S::BARN_PUT_FAIL, 2},
                          {S::SHEAF_FLUSH, 24}, {S::FREE_ADD_PARTIAL, 2}});
  CHECK(r.mm.slub().cached_objects(r.s) == 144);

  // 36 allocations: main (12), the full spare swapped in (12), then both
  // empty: a full barn sheaf for the empty main (barn_get), 12 more.
  std::vector<Ptr> w = r.alloc(36, 0);
  CHECK(r.mm.stat(r.s, S::ALLOC_FASTPATH) == 204);
  CHECK(r.mm.stat(r.s, S::BARN_GET) == 1);
  CHECK(r.mm.stat(r.s, S::BARN_GET_FAIL) == 14);
  // Freed again: 12 into the main, swap with the empty spare, 12, then a
  // barn exchange that succeeds (9 full < 10, the empty sheaf barn_get
  // left there): barn_put.
  for (Ptr p : w) r.free(p, 0);
  CHECK(r.mm.stat(r.s, S::FREE_FASTPATH) == 204);
  CHECK(r.mm.stat(r.s, S::BARN_PUT) == 11);
  CHECK(r.mm.stat(r.s, S::BARN_PUT_FAIL) == 2);
  CHECK(r.mm.slub().check_invariants().empty());

  // Shrink: CPU 0's spare flushed (12) and freed, its main flushed (12)
  // and kept, the barn's 10 full sheaves flushed (120) and freed: 144
  // more flushed, 11 sheaves freed (every sheaf but the main).
  r.mm.shrink_all();
  CHECK(r.mm.stat(r.s, S::SHEAF_FLUSH) == 168);
  CHECK(r.mm.stat(r.s, S::SHEAF_FREE) == 11);
  CHECK(r.mm.info(r.s).slabs == 0);
  CHECK(r.mm.slub().check_invariants().empty());
  CHECK(r.mm.check_leaks() == 0);
}

TEST_CASE("7.x: single-object slow path, remote-node frees, node lists",
          "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7, /*nodes=*/2);  // CPU 0 on node 0, CPU 1 on node 1
  // A caller that may not spin (no reclaim bit, as kmalloc_nolock()
  // passes; GFP_NOWAIT may: it refills) does not refill a sheaf: every
  // allocation misses the barn (barn_get_fail) and takes one object in
  // ___slab_alloc() (alloc_slowpath): S1 new (alloc_slab), then 15 from
  // it while it is on the partial list, and so on: S1..S6 for 96
  // objects, all full.
  std::vector<Ptr> v = r.alloc(96, 0, gfp_t{0});
  check_stats(r.mm, r.s, {{S::ALLOC_SLOWPATH, 96}, {S::BARN_GET_FAIL, 96},
                          {S::ALLOC_SLAB, 6}});
  CHECK(r.mm.info(r.s).partial == 0);
  // CPU 1 is on node 1: its frees of node-0 objects go to __slab_free()
  // (free_slowpath). The first object of each full slab: to the node
  // partial tail (6 x free_add_partial). Then all of S1 and S2: the last
  // free of each empties a node partial slab with 6, then 5 >= 5
  // partials: removed (free_remove_partial) and discarded (free_slab).
  // Then all of S3: 4 partials < 5, S3 stays, empty.
  for (int k = 0; k < 6; ++k) r.free(v[16 * k], 1);
  for (int k = 0; k < 3; ++k)
    for (int i = 1; i < 16; ++i) r.free(v[16 * k + i], 1);
  check_stats(r.mm, r.s, {{S::ALLOC_SLOWPATH, 96}, {S::BARN_GET_FAIL, 96},
                          {S::ALLOC_SLAB, 6}, {S::FREE_SLOWPATH, 51},
                          {S::FREE_ADD_PARTIAL, 6}, {S::FREE_REMOVE_PARTIAL, 2},
                          {S::FREE_SLAB, 2}});
  CHECK(r.mm.info(r.s).partial == 4);
  CHECK(r.mm.info(r.s).slabs == 4);
  CHECK(r.fake.frees_by_order[2] == 2);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("7.x: a refill that cannot complete falls back and fails",
          "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  // Page calls before t1k's first slab: kmalloc-512 (1, for kmalloc-128's
  // sheaf) and kmalloc-128 (2, its 60-object refill). From the 4th on,
  // every page is refused: t1k's order 2 and order 0 attempts fail, the
  // refill gets 0 of 12, the sheaf is freed again (sheaf_free), and the
  // single-object path (alloc_slowpath) fails as well (calls 6 and 7).
  r.fake.fail_from_call = 4;
  CHECK(r.mm.kmem_cache_alloc(r.s, GFP_KERNEL, Task{}) == kNull);
  check_stats(r.mm, r.s, {{S::BARN_GET_FAIL, 1}, {S::SHEAF_ALLOC, 1},
                          {S::SHEAF_FREE, 1}, {S::ALLOC_SLOWPATH, 1}});
  CHECK(r.fake.page_calls == 7);
  CHECK(r.fake.refused == 4);
  CHECK(r.mm.events()[Event::alloc_failed] == 1);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("7.x: order fallback", "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  r.fake.refuse_order_above = 1;
  // The first refill of 12 takes three order-0 fallback slabs of 4
  // (order_fallback, alloc_slab), each used up (no partial add).
  r.alloc(1, 0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 1}, {S::BARN_GET_FAIL, 1},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 12},
                          {S::ALLOC_SLAB, 3}, {S::ORDER_FALLBACK, 3}});
  CHECK(r.mm.info(r.s).slabs == 3);
  CHECK(r.mm.info(r.s).partial == 0);
}

TEST_CASE("7.x: bulk allocation and bulk free", "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  Ptr p[20];
  const Task t{0, kRootMemcg, 0};
  REQUIRE(r.mm.kmem_cache_alloc_bulk(r.s, GFP_KERNEL, 20, p, t) == 20);
  // alloc_from_pcs_bulk(): main empty, no spare, no full barn sheaf
  // (barn_get_fail): stop, no refill. refill_objects(20, 20): S1 whole,
  // 4 of S2 (S2 to the partial head): alloc_slowpath 20.
  check_stats(r.mm, r.s, {{S::BARN_GET_FAIL, 1}, {S::ALLOC_SLAB, 2},
                          {S::ALLOC_SLOWPATH, 20}});
  // free_to_pcs_bulk(): 12 fill the main (free_fastpath), then no spare
  // and no empty barn sheaf: the other 8 (p[12..19]: 4 of S1, 4 of S2) go
  // to slabs (free_slowpath 8) as two detached freelists: S2's 4 empty
  // it, but it is one of only 1 < 5 node partials (kept); S1 was full and
  // goes to the partial tail (free_add_partial).
  r.mm.kmem_cache_free_bulk(r.s, 20, p, t);
  check_stats(r.mm, r.s, {{S::BARN_GET_FAIL, 1}, {S::ALLOC_SLAB, 2},
                          {S::ALLOC_SLOWPATH, 20}, {S::FREE_FASTPATH, 12},
                          {S::FREE_SLOWPATH, 8}, {S::FREE_ADD_PARTIAL, 1}});
  CHECK(r.mm.info(r.s).partial == 2);
  CHECK(r.mm.slub().check_invariants().empty());
  CHECK(r.mm.check_leaks() == 0);
}

TEST_CASE("7.x: a barn miss and a bulk free that swaps in a non-full spare take no barn lock",
          "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  const Task t{0, kRootMemcg, 0};
  // 24 single allocations leave main Bt and spare X both empty (the first
  // case above).
  std::vector<Ptr> v = r.alloc(24, 0);
  // Every barn step so far found the barn empty (no full sheaf to take,
  // no empty one to swap in: the test cache's at #1 and #13, kmalloc-128's
  // and kmalloc-512's for the sheaf X), and a barn helper reads its counts
  // before taking the lock: no barn lock yet.
  const uint64_t barn0 = r.mm.events()[Event::barn_lock];
  CHECK(barn0 == 0);
  // free_to_pcs_bulk() of 12: they fill the main. Of 12 more: the main is
  // full and the spare is not, so the two swap under the CPU's own lock
  // (the barn is not touched) and the 12 fill the new main.
  r.mm.kmem_cache_free_bulk(r.s, 12, v.data(), t);
  r.mm.kmem_cache_free_bulk(r.s, 12, v.data() + 12, t);
  CHECK(r.mm.events()[Event::barn_lock] == barn0);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 24}, {S::BARN_GET_FAIL, 2},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 24},
                          {S::ALLOC_SLAB, 2}, {S::FREE_FASTPATH, 24}});
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("7.x: a cache without sheaves goes to slabs every time",
          "[slub][v7][direct]") {
  SlubRig r(SlubGen::v7);
  // SLAB_NOLEAKTRACE: calculate_sheaf_capacity() gives 0.
  const CacheId s = r.mm.kmem_cache_create("nosheaf", 1024, 0, SLAB_NOLEAKTRACE);
  REQUIRE(r.mm.info(s).sheaf_capacity == 0);
  const Task t{0, kRootMemcg, 0};
  Ptr a = r.mm.kmem_cache_alloc(s, GFP_KERNEL, t);
  Ptr b = r.mm.kmem_cache_alloc(s, GFP_KERNEL, t);
  // Two ___slab_alloc(): a new slab (to the partial head), then one more
  // object from it. Two __slab_free(), the slab stays on the list.
  r.mm.kmem_cache_free(s, a, t);
  r.mm.kmem_cache_free(s, b, t);
  check_stats(r.mm, s, {{S::ALLOC_SLOWPATH, 2}, {S::ALLOC_SLAB, 1},
                        {S::FREE_SLOWPATH, 2}});
  Ptr p[3];
  REQUIRE(r.mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, 3, p, t) == 3);
  r.mm.kmem_cache_free_bulk(s, 3, p, t);  // free_slowpath += 3
  CHECK(r.mm.stat(s, S::FREE_SLOWPATH) == 5);
  CHECK(r.mm.stat(s, S::ALLOC_SLOWPATH) == 5);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("7.x: sheaf refill and flush batch sizes of 4096 kmalloc(24)",
          "[slub][v7][hist]") {
  MmConfig cfg;
  cfg.gen = SlubGen::v7;
  Mm mm(cfg);
  const Task a{0, kRootMemcg, 1};
  std::vector<Ptr> v(4096);
  for (Ptr& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
  // kmalloc-32's sheaf capacity is 60: its main sheaf is refilled whole
  // 69 times (68 x 60 = 4080 < 4096), 4140 objects, 44 left in the last.
  // The one sheaf allocated is a kmalloc-512 object, which has no sheaf
  // (__GFP_NO_OBJ_EXT): no other refill. Bucket 6 is [32, 64).
  const auto& refill = mm.batches().h[size_t(Batch::sheaf_refill)];
  CHECK(refill[6] == 69);
  CHECK(std::accumulate(refill.begin(), refill.end(), uint64_t{0}) == 69);
  CHECK(std::accumulate(mm.batches().h[size_t(Batch::sheaf_flush)].begin(),
                        mm.batches().h[size_t(Batch::sheaf_flush)].end(), uint64_t{0}) == 0);
  for (Ptr p : v) mm.kfree(p, a);
  // Frees: 16 fill the main to 60, the empty spare takes 60, then 10
  // times a new empty main (sheaf_alloc) and the full one to the barn
  // (barn_put) with 60 frees each: 676 frees. The other 3420 = 57 x 60
  // each start with a full barn (barn_put_fail): the full spare is
  // flushed whole (sheaf_flush_unused(), 60) and refilled by 60 frees.
  const auto& flush = mm.batches().h[size_t(Batch::sheaf_flush)];
  CHECK(flush[6] == 57);
  CHECK(mm.stat(mm.find_cache("kmalloc-32"), SlubStat::SHEAF_FLUSH) == 57 * 60);
  // shrink: the spare (sheaf_flush_unused()), the main (sheaf_flush_main(),
  // one flush of 60 in PCS_BATCH_MAX pieces) and the barn's 10 full
  // sheaves: 12 more flushes of 60, all 4140 objects back in 69 flushes.
  // 11 sheaves are freed (the spare and the barn's 10; the main stays).
  // One is CPU 0's boot-time sheaf, which is no kmalloc object; the other
  // 10 are kmalloc-512 objects and go into kmalloc-512's main sheaf,
  // flushed next in the same pass (kmalloc-512 comes after kmalloc-32):
  // one flush of 10, bucket 4 ([8, 16)).
  mm.shrink_all();
  CHECK(flush[6] == 69);
  CHECK(flush[4] == 1);
  CHECK(std::accumulate(flush.begin(), flush.end(), uint64_t{0}) == 70);
  CHECK(mm.stat(mm.find_cache("kmalloc-32"), SlubStat::SHEAF_FREE) == 11);
  CHECK(mm.stat(mm.find_cache("kmalloc-512"), SlubStat::SHEAF_FLUSH) == 10);
  CHECK(mm.stat(mm.find_cache("kmalloc-32"), SlubStat::SHEAF_FLUSH) == 4140);
  CHECK(mm.check_leaks() == 0);
}

// A cache whose sheaves hold one object: freeing a sheaf's own memory at
// the end-of-run shrink puts another sheaf on the barn being emptied. The
// shrink took the barn's last sheaf off after freeing it, so it freed one
// sheaf twice (SIGSEGV) and, taking the lists off first, looped; now it
// empties the lists it took and leaves the new one.
TEST_CASE("7.x: the end-of-run shrink of one-object sheaves frees each sheaf once",
          "[slub][7x][sheaf]") {
  for (const char* warm : {"0", "1"}) {
    INFO("warm=" << warm);
    const auto r = simcache::testing::run_ok(
        "node-cache-coldwarm", {"unpatched(slab_sheaf_capacity=1)", "prefill(slab_sheaf_capacity=1)"},
        {{"warm", warm}, {"slots", "8"}}, "v7.1");
    CHECK(r.workloads.at(0).policies.size() == 2);
  }
}


TEST_CASE("7.x: GFP_NOWAIT and GFP_ATOMIC refill a sheaf as GFP_KERNEL does, a caller that may "
          "not spin takes one object",
          "[slub][v7][direct]") {
  // __pcs_replace_empty_main() refills when gfpflags_allow_spinning():
  // any reclaim bit, kswapd's too. The 24 allocations of the first test
  // case count alike under all three. Without a reclaim bit (what
  // kmalloc_nolock() passes) every miss of the barn is one object from
  // ___slab_alloc(): 24 slow paths, no sheaf refilled or allocated.
  const gfp_t gfp = GENERATE(GFP_KERNEL, GFP_NOWAIT, GFP_ATOMIC);
  SlubRig r(SlubGen::v7);
  r.alloc(24, 0, gfp);
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 24}, {S::BARN_GET_FAIL, 2},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 24},
                          {S::ALLOC_SLAB, 2}});
  SlubRig nolock(SlubGen::v7);
  nolock.alloc(24, 0, gfp_t{0});
  check_stats(nolock.mm, nolock.s, {{S::ALLOC_SLOWPATH, 24}, {S::BARN_GET_FAIL, 24},
                                    {S::ALLOC_SLAB, 2}});
}

TEST_CASE("7.x on PREEMPT_RT: cpu_sheaves->lock at every sheaf operation and each retake",
          "[slub][v7][direct][rt]") {
  // The 24 allocations of the first test case: #1 takes the trylock,
  // finds Bt empty, drops it to refill a new sheaf X and retakes it (2);
  // #2-#12 once each; #13 again 2 (the spare Bt refilled), #14-#24 once:
  // 26 for t1k. X itself is a kzalloc from kmalloc-128, whose first main
  // sheaf is refilled the same way (2), and that sheaf is a kmalloc-512
  // object: the trylock, then no sheaf for a __GFP_NO_OBJ_EXT caller and
  // ___slab_alloc() (1). 29 in all. The 24 frees: F1-F12 into Bt, F13
  // finds it full and swaps in the empty spare X (no retake), F13-F24:
  // one each, 24. Without RT the lock only disables preemption: none.
  SlubRig r(SlubGen::v7, 1, /*rt=*/true);
  std::vector<Ptr> v = r.alloc(24, 0);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] == 29);
  for (Ptr p : v) r.free(p, 0);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] == 53);
  // The same sequence counts the same SLUB stats as without RT.
  check_stats(r.mm, r.s, {{S::ALLOC_FASTPATH, 24}, {S::BARN_GET_FAIL, 2},
                          {S::SHEAF_ALLOC, 1}, {S::SHEAF_REFILL, 24},
                          {S::ALLOC_SLAB, 2}, {S::FREE_FASTPATH, 24}});
  SlubRig plain(SlubGen::v7);
  for (Ptr p : plain.alloc(24, 0)) plain.free(p, 0);
  CHECK(plain.mm.events()[Event::cpu_slab_local_lock] == 0);
}

TEST_CASE("7.x: a sheaf is a plain kmalloc object whatever the caller's reclaimable, DMA or "
          "accounted bits",
          "[slub][v7][direct]") {
  // __alloc_empty_sheaf() clears OBJCGS_CLEAR_MASK (__GFP_DMA,
  // __GFP_RECLAIMABLE, __GFP_ACCOUNT, __GFP_NOFAIL) from the caller's gfp:
  // the first allocation's sheaf X comes from kmalloc-128, never from
  // kmalloc-rcl-128 or kmalloc-cg-128.
  const gfp_t extra =
      GENERATE(gfp_t{0}, __GFP_DMA, __GFP_RECLAIMABLE, __GFP_ACCOUNT, __GFP_NOFAIL);
  SlubRig r(SlubGen::v7);
  r.alloc(1, 0, GFP_KERNEL | extra);
  CHECK(r.mm.stat(r.s, S::SHEAF_ALLOC) == 1);
  const CacheId plain = r.mm.find_cache("kmalloc-128");
  REQUIRE(plain != kNoCache);
  CHECK(r.mm.info(plain).live_objects == 1);
  for (const char* other : {"kmalloc-rcl-128", "kmalloc-cg-128", "dma-kmalloc-128"}) {
    const CacheId c = r.mm.find_cache(other);
    INFO(other);
    if (c != kNoCache) CHECK(r.mm.info(c).live_objects == 0);
  }
}

TEST_CASE("7.x on PREEMPT_RT: the retakes of a full main's replacement, and a bulk call's "
          "batches",
          "[slub][v7][direct][rt]") {
  // The first test case's 168 allocations and frees with RT on. Allocs:
  // one trylock each (168), a retake after each of the 14 refills, and
  // the sheaf X: kmalloc-128's pop and its first refill's retake (2),
  // kmalloc-512's trylock before ___slab_alloc() (1): 185. Frees: one
  // trylock each (168); F25..F133 find main and spare full and no empty
  // barn sheaf, drop the lock to allocate one (GFP_NOWAIT, a kmalloc-128
  // pop: its own trylock) and retake it to install it: 10 x 2; F145 and
  // F157 find the barn full (-E2BIG), flush the spare unlocked and retake
  // it: 2. 185 + 168 + 20 + 2 = 375.
  SlubRig r(SlubGen::v7, 1, /*rt=*/true);
  std::vector<Ptr> v = r.alloc(168, 0);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] == 185);
  for (Ptr p : v) r.free(p, 0);
  CHECK(r.mm.stat(r.s, S::BARN_PUT) == 10);
  CHECK(r.mm.stat(r.s, S::BARN_PUT_FAIL) == 2);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] == 375);
  // Bulk: the main sheaf (12, the last 12 frees') serves a bulk of 30 in
  // batches: the main's 12, then a full barn sheaf's 12, then another's
  // 6 (alloc_from_pcs_bulk()'s trylock a batch: 3). A bulk free of those
  // 30: the empty main takes 12 (one batch), the spare... each batch of
  // free_to_pcs_bulk() one trylock.
  const uint64_t before = r.mm.events()[Event::cpu_slab_local_lock];
  Ptr b[30];
  REQUIRE(r.mm.kmem_cache_alloc_bulk(r.s, GFP_KERNEL, 30, b, Task{0, kRootMemcg, 0}) == 30);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] - before == 3);
  const uint64_t mid = r.mm.events()[Event::cpu_slab_local_lock];
  r.mm.kmem_cache_free_bulk(r.s, 30, b, Task{0, kRootMemcg, 0});
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] - mid == 3);
  CHECK(r.mm.slub().check_invariants().empty());
}

TEST_CASE("7.x on PREEMPT_RT: a cache without sheaves takes the lock before backing off",
          "[slub][v7][direct][rt]") {
  // Every cache has cpu_sheaves (one without sheaves its empty bootstrap
  // sheaf): alloc_from_pcs() takes the trylock before
  // __pcs_replace_empty_main() backs off, free_to_pcs() before
  // __pcs_replace_full_main() does (the main is "full", 0 of 0), and
  // alloc_from_pcs_bulk() runs for every cache; kmem_cache_free_bulk()
  // checks cache_has_sheaves() first and takes none. Two allocations and
  // two frees: 4; a bulk of 3 and its free: 1 more.
  SlubRig r(SlubGen::v7, 1, /*rt=*/true);
  const CacheId s = r.mm.kmem_cache_create("nosheaf", 1024, 0, SLAB_NOLEAKTRACE);
  REQUIRE(r.mm.info(s).sheaf_capacity == 0);
  const Task t{0, kRootMemcg, 0};
  const uint64_t before = r.mm.events()[Event::cpu_slab_local_lock];
  Ptr a = r.mm.kmem_cache_alloc(s, GFP_KERNEL, t);
  Ptr b = r.mm.kmem_cache_alloc(s, GFP_KERNEL, t);
  r.mm.kmem_cache_free(s, a, t);
  r.mm.kmem_cache_free(s, b, t);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] - before == 4);
  Ptr p[3];
  REQUIRE(r.mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, 3, p, t) == 3);
  r.mm.kmem_cache_free_bulk(s, 3, p, t);
  CHECK(r.mm.events()[Event::cpu_slab_local_lock] - before == 5);
}
