// Randomised operation sequences over the whole mm model, both SLUB
// generations, with and without injected failures: after every step the
// structures agree with each other; after freeing everything, no leaks,
// no KASAN reports and memcg back to zero.
#include <catch2/catch.hpp>
#include <random>

#include "model/mm/lock_hook.h"
#include "model/mm/mm.h"
#include "model/mm/page_alloc.h"
#include "model/mm/slub.h"
#include "model/mm/state_sig.h"

using namespace simcache;

namespace {
struct Live {
  Ptr p;
  CacheId cache;  // kNoCache: kmalloc/kvmalloc/page region
  bool kv;
  bool region = false;
};

void free_live(Mm& mm, const Live& l, const Task& t) {
  if (l.region) mm.free_page_region(l.p, t);
  else if (l.kv) mm.kvfree(l.p, t);
  else if (l.cache != kNoCache) mm.kmem_cache_free(l.cache, l.p, t);
  else mm.kfree(l.p, t);
}

void run_sequence(SlubGen gen, bool faults, uint64_t seed, bool batch) {
  MmConfig cfg;
  cfg.gen = gen;
  cfg.nr_cpus = 4;
  cfg.nr_nodes = (seed & 1) ? 2 : 1;
  cfg.memcg_batch_charge = batch;
  Mm mm(cfg);
  const MemcgId m1 = mm.memcg().create(kRootMemcg);
  const MemcgId m2 = mm.memcg().create(m1);
  const CacheId dedicated = mm.kmem_cache_create("node", 24, 0, SLAB_HWCACHE_ALIGN);
  const CacheId accounted = mm.kmem_cache_create("acct", 256, 0, SLAB_ACCOUNT);
  if (faults) {
    mm.faults().fail_random(FaultPoint::page_alloc, 0.02, seed);
    mm.faults().fail_random(FaultPoint::bulk_short, 0.05, seed + 1);
    mm.faults().fail_random(FaultPoint::memcg_charge, 0.02, seed + 2);
    mm.faults().fail_random(FaultPoint::kvmalloc, 0.05, seed + 3);
  }
  std::mt19937_64 rng(seed);
  std::vector<Live> live;
  const uint32_t sizes[] = {8, 24, 96, 144, 192, 512, 1288, 2048, 9000, 40000};
  for (int step = 0; step < 6000; ++step) {
    Task t{static_cast<CpuId>(rng() % cfg.nr_cpus),
           static_cast<MemcgId>(rng() % 3 == 0 ? kRootMemcg : (rng() & 1 ? m1 : m2)),
           static_cast<SiteId>(rng() % 7)};
    const unsigned op = rng() % 10;
    if (op < 4 || live.empty()) {
      const uint32_t size = sizes[rng() % 10];
      const gfp_t gfp = (rng() & 1) ? GFP_KERNEL_ACCOUNT : GFP_KERNEL;
      Ptr p = mm.kmalloc(size, gfp, t);
      if (p) live.push_back({p, kNoCache, false});
    } else if (op == 4 && (rng() & 1)) {
      Ptr p = mm.kvmalloc(1 + rng() % 40000, GFP_KERNEL_ACCOUNT, t);
      if (p) live.push_back({p, kNoCache, true});
    } else if (op == 4) {
      const gfp_t gfp = (rng() & 1) ? GFP_KERNEL_ACCOUNT | __GFP_ZERO : GFP_KERNEL | __GFP_ZERO;
      Ptr p = mm.alloc_page_region(1 + rng() % 100, gfp, t);
      if (p) live.push_back({p, kNoCache, false, true});
    } else if (op == 5) {
      const CacheId s = (rng() & 1) ? dedicated : accounted;
      Ptr p[40];
      const int n = 1 + rng() % 40;
      const int got = mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, n, p, t);
      REQUIRE((got == 0 || got == n));
      for (int i = 0; i < got; ++i) live.push_back({p[i], s, false});
    } else if (op == 6 && live.size() > 8) {
      // bulk free of up to 16 objects of one dedicated cache
      const CacheId s = (rng() & 1) ? dedicated : accounted;
      Ptr p[16];
      int n = 0;
      for (size_t i = 0; i < live.size() && n < 16;) {
        if (live[i].cache == s) {
          p[n++] = live[i].p;
          live[i] = live.back();
          live.pop_back();
        } else {
          ++i;
        }
      }
      mm.kmem_cache_free_bulk(s, n, p, t);
    } else {
      const size_t i = rng() % live.size();
      const Live l = live[i];
      live[i] = live.back();
      live.pop_back();
      free_live(mm, l, t);
    }
    if (step % 500 == 0) {
      INFO("step " << step);
      REQUIRE(mm.slub().check_invariants() == "");
    }
  }
  mm.faults().clear();
  Task t{0, kRootMemcg, 0};
  for (const Live& l : live) free_live(mm, l, t);
  REQUIRE(mm.slub().check_invariants() == "");
  CHECK(mm.kasan_reports().empty());
  mm.shrink_all();
  CHECK(mm.check_leaks() == 0);
  CHECK(mm.memcg().usage_pages(m1) == 0);
  CHECK(mm.memcg().usage_pages(m2) == 0);
  CHECK(mm.memcg().kmem_pages(m1) == 0);
  CHECK(mm.memcg().live_obj_bytes(m1) == 0);
  // Shrinking discards every empty slab. What remains holds only the
  // allocator's own objects (7.x main sheaves are kmalloc'ed and stay).
  uint64_t remaining = 0;
  for (CacheId s : mm.caches()) remaining += mm.info(s).live_objects;
  CHECK(remaining == mm.slub().internal_objects().size());
  if (gen == SlubGen::v6_18) CHECK(mm.slab_bytes_total() == 0);
  CHECK(mm.large_bytes_total() == 0);
  CHECK(mm.region_bytes_total() == 0);
}
}  // namespace

TEST_CASE("a large kmalloc or vmalloc area with __GFP_ZERO clears whole pages, one call each",
          "[mm][region]") {
  MmConfig cfg;
  cfg.nr_cpus = 2;
  Mm mm(cfg);
  const Task t{1, kRootMemcg, 0};
  const auto ev = [&](Event e) { return mm.events()[e]; };
  // 40,000 bytes: kmalloc_large() of an order-4 compound, all 16 pages
  // cleared (not only the bytes asked for), a clear_page() each.
  const Ptr big = mm.kvmalloc(40000, GFP_KERNEL | __GFP_ZERO, t);
  REQUIRE(big != kNull);
  CHECK(ev(Event::kmalloc_large) == 1);
  CHECK(ev(Event::zero_bytes) == 16 * 4096);
  CHECK(ev(Event::zero_call) == 16);
  // The compound refused: the vmalloc fallback's 10 order-0 pages, each
  // cleared whole as it is allocated.
  mm.faults().fail_nth(FaultPoint::page_alloc, 1);
  const Ptr v = mm.kvmalloc(40000, GFP_KERNEL | __GFP_ZERO, t);
  REQUIRE(v != kNull);
  mm.faults().clear();
  CHECK(ev(Event::vmalloc_fallback) == 1);
  CHECK(ev(Event::vmalloc_pages) == 10);
  CHECK(ev(Event::zero_bytes) == (16 + 10) * 4096);
  CHECK(ev(Event::zero_call) == 16 + 10);
  // Without __GFP_ZERO nothing is cleared.
  const Ptr plain = mm.kvmalloc(40000, GFP_KERNEL, t);
  REQUIRE(plain != kNull);
  CHECK(ev(Event::zero_bytes) == (16 + 10) * 4096);
  CHECK(ev(Event::zero_call) == 16 + 10);
  // Pages are cleared as the page allocator hands them out, before the
  // charge: the compound whose charge is refused was cleared (16 pages)
  // before the vmalloc fallback's 10; a vmalloc area whose fourth page is
  // refused gives back 3 cleared ones.
  const MemcgId m = mm.memcg().create(kRootMemcg);
  const Task in_cg{1, m, 0};
  mm.faults().fail_nth(FaultPoint::memcg_charge, 1);
  const Ptr charged = mm.kvmalloc(40000, GFP_KERNEL_ACCOUNT | __GFP_ZERO, in_cg);
  mm.faults().clear();
  REQUIRE(charged != kNull);
  CHECK(ev(Event::vmalloc_fallback) == 2);
  CHECK(ev(Event::zero_call) == 16 + 10 + 16 + 10);
  mm.kvfree(charged, in_cg);
  mm.faults().fail_nth(FaultPoint::page_alloc, 1, 4);  // the compound, then the 4th page
  CHECK(mm.kvmalloc(40000, GFP_KERNEL | __GFP_ZERO, t) == kNull);
  mm.faults().clear();
  CHECK(ev(Event::zero_call) == 16 + 10 + 16 + 10 + 3);
  CHECK(ev(Event::zero_bytes) == uint64_t{16 + 10 + 16 + 10 + 3} * 4096);
  for (Ptr p : {big, v, plain}) mm.kvfree(p, t);
  CHECK(mm.large_bytes_total() == 0);
  CHECK(mm.kasan_reports().empty());
}

TEST_CASE("per-CPU page lists: a CPU gets back the block it freed hot, a refill's cold",
          "[mm][pages]") {
  MmConfig cfg;
  cfg.nr_cpus = 2;
  cfg.pcp_high_min = cfg.pcp_high_max = PCP_HIGH_FLOOR;  // 252 pages, untuned
  Mm mm(cfg);
  const Task cpu0{0, kRootMemcg, 0}, cpu1{1, kRootMemcg, 0};
  const auto ev = [&](Event e) { return mm.events()[e]; };
  const gfp_t z = GFP_KERNEL | __GFP_ZERO;
  // 16 KiB: an order-2 compound. CPU 1's list is empty: a refill of
  // 63 >> 2 = 15 blocks, and the first is cold.
  Ptr a = mm.kvmalloc(16384, z, cpu1);
  REQUIRE(a != kNull);
  CHECK(ev(Event::page_pcp_refill) == 1);
  CHECK(ev(Event::page_alloc_cold) == 1);
  CHECK(ev(Event::zero_bytes_cold) == 16384);
  CHECK(ev(Event::zero_bytes) == 16384);
  // Freed on CPU 1 and taken again there: the same block, hot.
  mm.kvfree(a, cpu1);
  a = mm.kvmalloc(16384, z, cpu1);
  CHECK(ev(Event::page_alloc_cold) == 1);
  CHECK(ev(Event::zero_bytes_cold) == 16384);
  CHECK(ev(Event::zero_bytes) == 2 * 16384);
  // Freed on CPU 0 it goes to CPU 0's list: CPU 1 takes a refill's block.
  mm.kvfree(a, cpu0);
  a = mm.kvmalloc(16384, z, cpu1);
  CHECK(ev(Event::page_alloc_cold) == 2);
  CHECK(ev(Event::zero_bytes_cold) == 2 * 16384);
  // ... and CPU 0 takes its own back hot.
  Ptr b = mm.kvmalloc(16384, z, cpu0);
  CHECK(ev(Event::page_alloc_cold) == 2);
  CHECK(ev(Event::page_pcp_refill) == 1);
  // The serial lifecycle of a 2,048-slot table: per operation three
  // order-2 blocks taken on CPU 1 (the ring's two regions, then the
  // table) and one freed there (the table, at unregister); the regions
  // are freed on CPU 0 (the kworker's teardown). The first region takes
  // the freed table's block; the second and the table are cold.
  mm.kvfree(a, cpu1);
  mm.kvfree(b, cpu0);
  const uint64_t cold0 = ev(Event::page_alloc_cold);
  for (int op = 0; op < 8; ++op) {
    const uint64_t before = ev(Event::page_alloc_cold);
    const Ptr rings = mm.alloc_page_region(3, z, cpu1);
    const bool rings_cold = ev(Event::page_alloc_cold) != before;
    const Ptr sqes = mm.alloc_page_region(4, z, cpu1);
    const uint64_t mid = ev(Event::zero_bytes_cold);
    const Ptr table = mm.kvmalloc(16384, z, cpu1);
    REQUIRE((rings != kNull && sqes != kNull && table != kNull));
    CHECK(ev(Event::zero_bytes_cold) - mid == 16384);  // the table: cold
    CHECK_FALSE(rings_cold);  // the block the last table (or `a`) left
    mm.kvfree(table, cpu1);   // unregister
    mm.free_page_region(rings, cpu0);  // teardown on the kworker
    mm.free_page_region(sqes, cpu0);
  }
  // 8 operations of two cold blocks each.
  CHECK(ev(Event::page_alloc_cold) - cold0 == 8 * 2);
  // CPU 0 now holds 17 order-2 blocks (68 pages: `b` and the 16
  // regions), under its high mark of 252 pages: nothing drained.
  CHECK(ev(Event::page_pcp_drain) == 0);
  // 300 order-0 pages freed there. CPU 0's run of frees (free_count) is
  // 70 pages before them: `a` (4), halved by `b`'s allocation (2), then
  // `b` and the 16 regions (68). At 68 + 184 = 252 pages it reaches its
  // mark with a run of 254 and gives back the run, at most the mark less
  // a batch: 189 pages, oldest first, from the order-0 list the page went
  // to (184 blocks), then round the orders: the two oldest order-2
  // blocks (8 pages). 60 pages are left, and the 116 frees after reach
  // 176: no second drain.
  std::vector<Ptr> small;
  for (int i = 0; i < 300; ++i) small.push_back(mm.alloc_page_region(1, z, cpu1));
  for (Ptr p : small) mm.free_page_region(p, cpu0);
  CHECK(ev(Event::page_pcp_drain) == 1);
  CHECK(ev(Event::page_pcp_drain_blocks) == 184 + 2);
  // 15 order-2 blocks are left: they come back hot, the 16th is a
  // refill's.
  const uint64_t cold1 = ev(Event::page_alloc_cold);
  std::vector<Ptr> regions;
  for (int i = 0; i < 15; ++i) regions.push_back(mm.alloc_page_region(4, z, cpu0));
  CHECK(ev(Event::page_alloc_cold) == cold1);
  regions.push_back(mm.alloc_page_region(4, z, cpu0));
  CHECK(ev(Event::page_alloc_cold) == cold1 + 1);
  for (Ptr p : regions) mm.free_page_region(p, cpu0);
  // Above order 3 there is no per-CPU list: never cold.
  const uint64_t cold_bytes = ev(Event::zero_bytes_cold);
  Ptr big = mm.kvmalloc(65536, z, cpu1);
  mm.kvfree(big, cpu0);
  big = mm.kvmalloc(65536, z, cpu1);
  CHECK(ev(Event::zero_bytes_cold) == cold_bytes);
  mm.kvfree(big, cpu1);
  CHECK(mm.large_bytes_total() == 0);
  CHECK(mm.region_bytes_total() == 0);
  CHECK(mm.kasan_reports().empty());
}

TEST_CASE("the state signature tells which CPU's page list holds a hot block",
          "[mm][pages][steady]") {
  // The same allocations and frees, the last free on another CPU: the
  // same pages allocated (none), but the next allocation on CPU 1 is hot
  // in one and cold in the other, so the states must differ.
  MmConfig cfg;
  cfg.nr_cpus = 2;
  const auto state = [&](CpuId free_cpu) {
    Mm mm(cfg);
    const Ptr a = mm.kvmalloc(16384, GFP_KERNEL | __GFP_ZERO, Task{1, kRootMemcg, 0});
    mm.kvfree(a, Task{free_cpu, kRootMemcg, 0});
    StateSig s;
    mm.signature(&s);
    return s;
  };
  CHECK(state(1) == state(1));
  CHECK_FALSE(state(1) == state(0));
}

TEST_CASE("a page region is one zeroed, charged compound, else order-0 pages",
          "[mm][region]") {
  MmConfig cfg;
  cfg.nr_cpus = 4;
  Mm mm(cfg);
  const MemcgId m = mm.memcg().create(kRootMemcg);
  const Task t{1, m, 0};
  const gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
  const auto ev = [&](Event e) { return mm.events()[e]; };
  // 37 pages (a ring of 4,096 entries' SQ/CQ rings): one order-6
  // compound, all 64 pages zeroed and charged.
  const Ptr big = mm.alloc_page_region(37, gfp, t);
  REQUIRE(big != kNull);
  CHECK(ev(Event::page_alloc_order3) == 1);  // order 3 and above
  CHECK(ev(Event::zero_bytes) == 64 * 4096);
  CHECK(ev(Event::zero_call) == 64);  // kernel_init_pages(): a clear_page() each
  CHECK(mm.region_bytes_total() == 64 * 4096);
  CHECK(mm.large_bytes_total() == 0);
  CHECK(mm.memcg().kmem_pages(m) == 64);
  // The compound refused, with __GFP_ACCOUNT and kmem accounting on: the
  // bulk allocator takes one page through the single-page allocator
  // (charged) and stops, so a region of 3 pages fails, its page and
  // charge given back. A one-page region gets by on that page.
  mm.faults().fail_nth(FaultPoint::page_alloc, 1);
  CHECK(mm.alloc_page_region(3, gfp, t) == kNull);
  CHECK(ev(Event::page_alloc_order2) == 0);  // the refused order-2 compound is not counted
  CHECK(ev(Event::page_alloc_order0) == 1);
  CHECK(ev(Event::page_free) == 1);
  CHECK(mm.memcg().kmem_pages(m) == 64);
  mm.faults().fail_nth(FaultPoint::page_alloc, 1);
  const Ptr one = mm.alloc_page_region(1, gfp, t);
  REQUIRE(one != kNull);
  CHECK(ev(Event::page_alloc_order0) == 2);
  CHECK(mm.memcg().kmem_pages(m) == 65);
  // A compound whose charge is refused is freed as one the page allocator
  // refused: the bulk allocator's page, charged, serves a one-page region.
  mm.faults().fail_nth(FaultPoint::memcg_charge, 1);
  const Ptr recharged = mm.alloc_page_region(1, gfp, t);
  REQUIRE(recharged != kNull);
  CHECK(ev(Event::page_alloc_order0) == 4);  // the refused compound's page, then the bulk one
  CHECK(mm.memcg().kmem_pages(m) == 66);
  mm.free_page_region(recharged, t);
  CHECK(mm.memcg().kmem_pages(m) == 65);
  // Without __GFP_ACCOUNT the bulk allocator gives every page: 3 order-0
  // pages, each zeroed; one refused, none is kept.
  mm.faults().fail_nth(FaultPoint::page_alloc, 1);
  const Ptr small = mm.alloc_page_region(3, GFP_KERNEL | __GFP_ZERO, t);
  REQUIRE(small != kNull);
  CHECK(ev(Event::page_alloc_order0) == 7);
  // Zeroed as the page allocator hands each out: the failed region's one
  // page and the refused compound too.
  CHECK(ev(Event::zero_bytes) == (64 + 1 + 1 + 2 + 3) * 4096);
  CHECK(mm.region_bytes_total() == 68 * 4096);
  CHECK(mm.memcg().kmem_pages(m) == 65);  // not charged
  mm.faults().fail_nth(FaultPoint::page_alloc, 1, 2);  // the compound, then the 2nd page
  CHECK(mm.alloc_page_region(4, GFP_KERNEL | __GFP_ZERO, t) == kNull);
  mm.faults().clear();
  CHECK(mm.region_bytes_total() == 68 * 4096);
  // kfree() and kvfree() of a region are invalid frees and free nothing,
  // nor does freeing a large kmalloc as a region; the region's own free
  // gives the pages and the charge back.
  const Ptr large = mm.kmalloc(20000, GFP_KERNEL, t);
  REQUIRE(large != kNull);
  mm.kfree(big, t);
  mm.kvfree(small, t);
  mm.free_page_region(large, t);
  REQUIRE(mm.kasan_reports().size() == 3);
  for (const KasanReport& r : mm.kasan_reports()) CHECK(r.kind == "invalid-free");
  CHECK(mm.kasan_reports()[2].detail == "free of a large kmalloc as a page region");
  CHECK(mm.region_bytes_total() == 68 * 4096);
  mm.kfree(large, t);
  const uint64_t freed_before = ev(Event::page_free);
  mm.free_page_region(big, t);
  mm.free_page_region(one, t);
  mm.free_page_region(small, t);
  CHECK(mm.region_bytes_total() == 0);
  CHECK(mm.memcg().kmem_pages(m) == 0);
  CHECK(ev(Event::page_free) - freed_before == 1 + 1 + 3);  // the compound, a page, 3 pages
  mm.free_page_region(big, t);  // twice
  REQUIRE(mm.kasan_reports().size() == 4);
  CHECK(mm.kasan_reports()[3].kind == "double-free");
  // A region nobody frees is a leak at teardown, named as one (its charge
  // then has no live object: a memcg imbalance beside it).
  REQUIRE(mm.alloc_page_region(1, gfp, t) != kNull);
  CHECK(mm.check_leaks() == 2);
  size_t leaks = 0;
  for (const KasanReport& r : mm.kasan_reports())
    leaks += r.kind == "leak" && r.detail.find("page region of 4096 bytes") != std::string::npos;
  CHECK(leaks == 1);
}

TEST_CASE("mm invariants over random sequences", "[mm][invariants]") {
  for (SlubGen gen : {SlubGen::v6_18, SlubGen::v7}) {
    for (bool faults : {false, true}) {
      for (uint64_t seed : {1ull, 2ull, 3ull}) {
        INFO("gen " << int(gen) << " faults " << faults << " seed " << seed);
        run_sequence(gen, faults, seed, seed == 3);
      }
    }
  }
}

TEST_CASE("a slab slot reused 70000 times keeps handing out slab pointers",
          "[mm][invariants]") {
  // Each cycle empties the cache's only slab and shrinks it away, so the
  // next allocation builds a new slab in the same slot with the next epoch.
  // The epoch must stay out of kVmallocBit/kLargeBit (bit 62 after 32,768
  // reuses with a 16-bit epoch) and never wrap to 0, which would make slab
  // 0's first object kNull.
  for (SlubGen gen : {SlubGen::v6_18, SlubGen::v7}) {
    INFO("gen " << int(gen));
    MmConfig cfg;
    cfg.gen = gen;
    cfg.nr_cpus = 1;
    Mm mm(cfg);
    const CacheId s = mm.kmem_cache_create("reuse", 2048, 0, 0);
    const Task t{0, kRootMemcg, 0};
    Ptr prev = kNull;
    uint64_t odd = 0, reused = 0;
    for (int i = 0; i < 70000; ++i) {
      const Ptr p = mm.kmem_cache_alloc(s, GFP_KERNEL, t);
      REQUIRE(p != kNull);
      if (p & (kLargeBit | kVmallocBit)) ++odd;
      // From the third cycle on (7.x's first cycle also builds its sheaf).
      if (i >= 2 && (p & slub_ptr::kIdxMask) == (prev & slub_ptr::kIdxMask) &&
          ((p >> slub_ptr::kIdxBits) & slub_ptr::kSlotMask) ==
              ((prev >> slub_ptr::kIdxBits) & slub_ptr::kSlotMask))
        ++reused;
      CHECK(p != prev);  // a new epoch every cycle: a stale pointer stays stale
      mm.kmem_cache_free(s, p, t);
      mm.shrink_all();
      prev = p;
    }
    CHECK(odd == 0);
    CHECK(reused == 69998);  // the test exercises one slot, as it means to
    CHECK(mm.kasan_reports().empty());
    CHECK(mm.check_leaks() == 0);
  }
}

TEST_CASE("page allocator: zone->lock only around the buddy work (refill, drain, high orders)",
          "[mm][pages]") {
  // A lock hook that counts zone->lock acquisitions and what was priced
  // while it was held: the blocks moved, and calls' own prices.
  struct Hook : LockHook {
    EventSink* sink = nullptr;
    uint64_t taken = 0, held = 0, blocks_inside = 0, calls_inside = 0, at = 0, calls_at = 0;
    uint64_t blocks() const {
      return (*sink)[Event::page_pcp_refill_blocks] + (*sink)[Event::page_pcp_drain_blocks];
    }
    uint64_t calls() const {
      uint64_t n = (*sink)[Event::page_free];
      for (Event e : {Event::page_alloc_order0, Event::page_alloc_order1,
                      Event::page_alloc_order2, Event::page_alloc_order3})
        n += (*sink)[e];
      return n;
    }
    void acquire(LockClass c, uint32_t) override {
      REQUIRE(c == LockClass::zone_lock);
      REQUIRE(held == 0);
      ++taken, held = 1;
      at = blocks(), calls_at = calls();
    }
    void release(LockClass, uint32_t) override {
      REQUIRE(held == 1);
      held = 0;
      blocks_inside += blocks() - at;
      calls_inside += calls() - calls_at;
    }
  };
  EventSink sink;
  FaultInjector faults;
  Hook hook;
  hook.sink = &sink;
  sink.locks = &hook;
  PageAllocator pa(&sink, &faults, PCP_HIGH_FLOOR, PCP_HIGH_FLOOR);  // 252 pages, untuned
  // The first order-0 page refills CPU 0's list: 63 blocks, one lock
  // (a mark of 252 leaves room for 252 - 63 = 189 pages).
  std::vector<uint32_t> pages;
  pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  CHECK(hook.taken == 1);
  CHECK(sink[Event::page_pcp_refill_blocks] == 63);
  // The next 62 come from the list: no lock.
  for (int i = 0; i < 62; ++i) pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  CHECK(hook.taken == 1);
  CHECK(sink[Event::page_alloc_order0] == 63);
  // The 64th refills again, a batch doubled (no free since the first:
  // pcp->alloc_factor).
  pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  CHECK(hook.taken == 2);
  CHECK(sink[Event::page_pcp_refill] == 2);
  CHECK(sink[Event::page_pcp_refill_blocks] == 63 + 126);
  // An order-3 block: a refill of 63 >> 3 = 7 blocks.
  const uint32_t big3 = pa.alloc_pages(3, 0, GFP_KERNEL, 0);
  CHECK(hook.taken == 3);
  CHECK(sink[Event::page_pcp_refill_blocks] == 63 + 126 + 7);
  // Above PAGE_ALLOC_COSTLY_ORDER: straight from the free blocks, locked,
  // no refill; its free too.
  const uint32_t big4 = pa.alloc_pages(4, 0, GFP_KERNEL, 0);
  CHECK(hook.taken == 4);
  CHECK(sink[Event::page_pcp_refill] == 3);
  pa.free_pages(big4, 4, 0);
  CHECK(hook.taken == 5);
  // 136 more order-0 pages: the 125 left on the list, then one refill.
  // Doubled again it would be 252 blocks, but the room below the mark is
  // 252 less the 6 order-3 blocks held (48 pages) less a batch: 141.
  for (int i = 0; i < 136; ++i) pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  CHECK(hook.taken == 6);
  CHECK(sink[Event::page_pcp_refill] == 4);
  CHECK(sink[Event::page_pcp_refill_blocks] == 63 + 126 + 7 + 141);
  // Frees to the CPU's list take no lock until it reaches its high mark
  // of 252 pages. The list holds 130 order-0 and 6 order-3 blocks (178
  // pages); the order-3 block makes 186, and the 66th order-0 free 252:
  // the run of frees since the last allocation (8 + 66 pages, between a
  // batch and the mark less a batch) given back, oldest first, in one
  // lock: the 74 oldest order-0 blocks.
  pa.free_pages(big3, 3, 0);
  CHECK(hook.taken == 6);
  size_t freed = 0;
  while (hook.taken == 6 && freed < pages.size()) pa.free_pages(pages[freed++], 0, 0);
  CHECK(freed == 66);
  CHECK(hook.taken == 7);
  CHECK(sink[Event::page_pcp_drain] == 1);
  CHECK(sink[Event::page_pcp_drain_blocks] == 74);
  // Every block moved was moved under the lock, and the only calls
  // priced inside it are the two above order 3 (their hold): a refill's
  // allocation prepares its block after the lock.
  CHECK(hook.blocks_inside == 63 + 126 + 7 + 141 + 74);
  CHECK(hook.calls_inside == 2);
  CHECK(sink[Event::page_free] == 2 + 66);
  CHECK(hook.held == 0);
}

TEST_CASE("page allocator: the high mark starts at the machine's least and is tuned up to its most",
          "[mm][pages]") {
  // nr_pcp_alloc(), nr_pcp_high() and nr_pcp_free() of 6.18, on a zone
  // above its high watermark: high_min 300, high_max 700 pages.
  EventSink sink;
  FaultInjector faults;
  PageAllocator pa(&sink, &faults, 300, 700);
  // CPU 1 only frees (a kworker's teardown): the pages come from CPU 0,
  // in refills that double while no page is freed there (63, 126, 252,
  // 504), each raising CPU 0's mark by its batch (to the most, 700),
  // until the room below the mark less a batch caps the fifth (637).
  std::vector<uint32_t> pages;
  for (int i = 0; i < 1200; ++i) pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  CHECK(sink[Event::page_pcp_refill] == 5);
  CHECK(sink[Event::page_pcp_refill_blocks] == 63 + 126 + 252 + 504 + 637);
  size_t next = 0;
  const auto free_until_drain = [&] {
    const uint64_t d = sink[Event::page_pcp_drain];
    size_t n = 0;
    while (sink[Event::page_pcp_drain] == d && next < pages.size()) pa.free_pages(pages[next++], 0, 1), ++n;
    return n;
  };
  // CPU 1's mark is its least, 300: the 300th free reaches it with a run
  // of 300 pages, so it gives back at most the mark less a batch (237)
  // and raises its mark to hold the run and a batch (363).
  CHECK(free_until_drain() == 300);
  CHECK(sink[Event::page_pcp_drain_blocks] == 237);
  // 63 pages left: 300 more frees reach 363 with a run of 600; it gives
  // back 363 - 63 = 300 and the mark goes to 663.
  CHECK(free_until_drain() == 300);
  CHECK(sink[Event::page_pcp_drain_blocks] == 237 + 300);
  // 63 left: the next drain is at 663 (600 frees), the run 1,200; the
  // mark stops at the most, 700.
  CHECK(free_until_drain() == 600);
  CHECK(sink[Event::page_pcp_drain_blocks] == 237 + 300 + 600);
  // Frees after an allocation: CPU 1 holds 63 pages, its mark 700; one
  // allocation there halves the run of 1,200 to 600 (and takes a page: 62
  // left); at the mark the run (1,238) is above the mark less a batch,
  // which the drain gives back.
  pages.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 1));
  std::vector<uint32_t> more;
  for (int i = 0; i < 700; ++i) more.push_back(pa.alloc_pages(0, 0, GFP_KERNEL, 0));
  for (size_t i = 0; i < 637; ++i) pa.free_pages(more[i], 0, 1);
  CHECK(sink[Event::page_pcp_drain] == 3);  // 62 + 637 = 699 pages: under the mark
  pa.free_pages(more[637], 0, 1);           // 700: the run 600 + 638 = 1,238
  CHECK(sink[Event::page_pcp_drain] == 4);
  CHECK(sink[Event::page_pcp_drain_blocks] == 237 + 300 + 600 + 637);  // the mark less a batch
  for (size_t i = 638; i < more.size(); ++i) pa.free_pages(more[i], 0, 1);
  for (size_t i = next; i < pages.size(); ++i) pa.free_pages(pages[i], 0, 1);
  CHECK(sink[Event::page_pcp_drain] == 4);
  // An allocation halves the run of frees, and a drain gives back the run
  // when it is below the mark less a batch: CPU 1 takes 64 pages (refills
  // of 63 and 126, its mark 489), frees 100 (a run of 100), takes 1 (50),
  // and its 265th free after reaches 489 pages with a run of 315, which
  // it gives back (365 without the halving).
  {
    EventSink s4;
    PageAllocator c(&s4, &faults, 300, 700);
    std::vector<uint32_t> got;
    for (int i = 0; i < 64; ++i) got.push_back(c.alloc_pages(0, 0, GFP_KERNEL, 1));
    std::vector<uint32_t> from0;
    for (int i = 0; i < 400; ++i) from0.push_back(c.alloc_pages(0, 0, GFP_KERNEL, 0));
    for (int i = 0; i < 100; ++i) c.free_pages(from0[i], 0, 1);
    got.push_back(c.alloc_pages(0, 0, GFP_KERNEL, 1));
    int n = 0;
    while (s4[Event::page_pcp_drain] == 0 && n < 300) c.free_pages(from0[100 + n++], 0, 1);
    CHECK(n == 265);
    CHECK(s4[Event::page_pcp_drain_blocks] == 315);
  }
  // A free halves the doubling of order-0 refills: CPU 0 takes 1,200
  // pages (refills of 63 to 637, pcp->alloc_factor 4), frees 2 (4 -> 1),
  // and its next refill, after the 382 left, is 126 pages (637 without).
  {
    EventSink s5;
    PageAllocator d(&s5, &faults, 300, 700);
    std::vector<uint32_t> t;
    for (int i = 0; i < 1200; ++i) t.push_back(d.alloc_pages(0, 0, GFP_KERNEL, 0));
    d.free_pages(t[0], 0, 0);
    d.free_pages(t[1], 0, 0);
    const uint64_t before = s5[Event::page_pcp_refill_blocks];
    for (int i = 0; i < 385; ++i) d.alloc_pages(0, 0, GFP_KERNEL, 0);
    CHECK(s5[Event::page_pcp_refill] == 6);
    CHECK(s5[Event::page_pcp_refill_blocks] - before == 126);
  }
  // A refill raises the allocating CPU's mark by its batch: 315 pages
  // taken in refills of 63, 126 and 252 put it at 300 + 441, held to the
  // most (700), so all 315 freed back on that CPU stay there (441 pages).
  // A machine whose least and most are equal never tunes it: its third
  // refill fits the room below 300 (237), and the 189th free back drains.
  for (const uint32_t most : {700u, 300u}) {
    EventSink s2;
    PageAllocator pb(&s2, &faults, 300, most);
    std::vector<uint32_t> own;
    for (int i = 0; i < 315; ++i) own.push_back(pb.alloc_pages(0, 0, GFP_KERNEL, 0));
    CHECK(s2[Event::page_pcp_refill] == 3);
    CHECK(s2[Event::page_pcp_refill_blocks] == (most == 300 ? 63 + 126 + 237 : 63 + 126 + 252));
    size_t n = 0;
    while (n < own.size() && s2[Event::page_pcp_drain] == 0) pb.free_pages(own[n++], 0, 0);
    CHECK(n == (most == 300 ? 189 : own.size()));
    CHECK(s2[Event::page_pcp_drain] == (most == 300 ? 1 : 0));
    for (; n < own.size(); ++n) pb.free_pages(own[n], 0, 0);
  }
  // The state signature tells two allocators apart by a CPU's mark alone
  // (steady rounds are folded only when it repeats): the same refill of
  // 63 blocks, the mark raised to 363 on one and held at 300 on the other.
  {
    EventSink s3;
    PageAllocator a(&s3, &faults, 300, 700), b(&s3, &faults, 300, 700), c(&s3, &faults, 300, 300);
    for (PageAllocator* x : {&a, &b, &c}) CHECK(x->alloc_pages(0, 0, GFP_KERNEL, 0) != 0);
    const auto sig = [](const PageAllocator& x) {
      StateSig s;
      x.signature(&s);
      return s;
    };
    CHECK(sig(a) == sig(b));
    CHECK_FALSE(sig(a) == sig(c));
  }
}

TEST_CASE("memcg: a vmalloc area is charged a page at a time, a large kmalloc at once with its "
          "slab stat",
          "[mm][memcg]") {
  MmConfig cfg;
  cfg.nr_cpus = 2;
  Mm mm(cfg);
  const MemcgId m = mm.memcg().create(kRootMemcg);
  const Task t{1, m, 0};
  const auto ev = [&](Event e) { return mm.events()[e]; };
  // 40,000 bytes as a large kmalloc: one order-4 compound, one
  // __memcg_kmem_charge_page() of its 16 pages (a batch of 64 from the
  // page_counter, 48 to the CPU's stock), and NR_SLAB_UNRECLAIMABLE_B on
  // its memcg lruvec: one update (memcg_vmstat_flush), 65,536 slab bytes.
  const Ptr big = mm.kvmalloc(40000, GFP_KERNEL_ACCOUNT, t);
  REQUIRE(big != kNull);
  CHECK(ev(Event::memcg_charge) == 1);
  CHECK(ev(Event::memcg_vmstat_flush) == 1);
  CHECK(mm.memcg().slab_bytes(m) == 65536);
  // Freed: the stat back (a second update), then one uncharge of 16.
  mm.kvfree(big, t);
  CHECK(ev(Event::memcg_vmstat_flush) == 2);
  CHECK(ev(Event::memcg_uncharge_pages) == 1);
  CHECK(mm.memcg().slab_bytes(m) == 0);
  // The compound refused: the vmalloc fallback's 10 order-0 pages, each
  // charged as the page allocator hands it out (the bulk allocator
  // refuses __GFP_ACCOUNT): 10 charges, each served by the CPU stock the
  // first charge and the free left; no slab stat (vmalloc is no slab).
  const uint64_t hits = ev(Event::memcg_stock_hit);
  mm.faults().fail_nth(FaultPoint::page_alloc, 1);
  const Ptr v = mm.kvmalloc(40000, GFP_KERNEL_ACCOUNT, t);
  mm.faults().clear();
  REQUIRE(v != kNull);
  CHECK(ev(Event::vmalloc_fallback) == 1);
  CHECK(ev(Event::memcg_charge) == 1 + 10);
  CHECK(ev(Event::memcg_stock_hit) == hits + 10);
  CHECK(ev(Event::memcg_vmstat_flush) == 2);
  // vfree(): one uncharge a page.
  mm.kvfree(v, t);
  CHECK(ev(Event::memcg_uncharge_pages) == 1 + 10);
  // A refused charge is one memcg_charge_fail, whether injected or the
  // memcg's own (memory.max of 1 page, the stock drained first).
  mm.faults().fail_nth(FaultPoint::memcg_charge, 1);
  CHECK(mm.kmalloc(40000, GFP_KERNEL_ACCOUNT, t) == kNull);
  mm.faults().clear();
  CHECK(ev(Event::memcg_charge_fail) == 1);
  const MemcgId tight = mm.memcg().create(kRootMemcg, 1);
  CHECK(mm.kmalloc(40000, GFP_KERNEL_ACCOUNT, Task{1, tight, 0}) == kNull);
  CHECK(ev(Event::memcg_charge_fail) == 2);
  CHECK(mm.check_leaks() == 0);
}

TEST_CASE("memcg: a refused object charge frees as memcg_alloc_abort_single() or one bulk free",
          "[mm][memcg]") {
  const SlubGen gen = GENERATE(SlubGen::v6_18, SlubGen::v7);
  MmConfig cfg;
  cfg.nr_cpus = 2;
  cfg.gen = gen;
  Mm mm(cfg);
  const CacheId s = mm.kmem_cache_create("acct", 256, 0, SLAB_ACCOUNT);
  const MemcgId m = mm.memcg().create(kRootMemcg);
  const Task t{1, m, 0};
  const auto ev = [&](Event e) { return mm.events()[e]; };
  // One object refused: memcg_alloc_abort_single() frees it without the
  // memcg free hook (it was never charged): no memcg_free_hook_empty;
  // 6.18's do_slab_free() takes its CPU slab's fast path, 7.x's
  // __slab_free() goes straight to the slab (no sheaf, and no
  // FREE_SLOWPATH: that is slab_free()'s stat).
  mm.faults().fail_nth(FaultPoint::memcg_charge, 1);
  CHECK(mm.kmem_cache_alloc(s, GFP_KERNEL, t) == kNull);
  mm.faults().clear();
  CHECK(ev(Event::memcg_charge_fail) == 1);
  CHECK(ev(Event::memcg_free_hook) == 0);
  CHECK(ev(Event::memcg_free_hook_empty) == 0);
  CHECK(mm.info(s).live_objects == 0);
  if (gen == SlubGen::v7) {
    CHECK(mm.stat(s, SlubStat::FREE_FASTPATH) == 0);
    CHECK(mm.stat(s, SlubStat::FREE_SLOWPATH) == 0);
  } else {
    CHECK(mm.stat(s, SlubStat::FREE_FASTPATH) == 1);
  }
  // A bulk of 4 whose third charge is refused: one kmem_cache_free_bulk()
  // of the 4, its hook uncharging the 2 charged and finding the other 2
  // empty.
  Ptr p[4];
  const uint64_t bulk_frees = ev(Event::kmem_cache_free_bulk);
  mm.faults().fail_nth(FaultPoint::memcg_charge, 3);
  CHECK(mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, 4, p, t) == 0);
  mm.faults().clear();
  CHECK(ev(Event::kmem_cache_free_bulk) == bulk_frees + 1);
  CHECK(ev(Event::bulk_free_objects) == 4);
  CHECK(ev(Event::memcg_charge_fail) == 2);
  CHECK(ev(Event::memcg_free_hook) == 2);
  CHECK(ev(Event::memcg_free_hook_empty) == 2);
  CHECK(mm.info(s).live_objects == 0);
  CHECK(mm.memcg().live_obj_bytes(m) == 0);
  CHECK(mm.kasan_reports().empty());
  CHECK(mm.check_leaks() == 0);
}
