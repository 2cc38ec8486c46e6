// io_alloc_cache against the counting fake: the unpatched decision points
// and the seed 004 RFC additions (slab, bulk refill, prefill), exactly.
#include <catch2/catch.hpp>

#include "fake_mm.h"
#include "model/io_uring/alloc_cache.h"
#include "model/kernel/policy.h"

using namespace simcache;
using namespace simcache::iou;
using simcache::testing::FakeMm;
using simcache::testing::Op;

namespace {
constexpr Task kT{1, 1, 0};

struct CacheFixture {
  FakeMm mm;
  IoAllocCache c;
  CacheId slab = kNoCache;
  CacheFixture(uint32_t max, bool with_slab, uint32_t refill = 0) {
    REQUIRE(io_alloc_cache_init(mm, c, max, 24, 0, kT) == 0);
    if (with_slab) {
      slab = mm.kmem_cache_create("io_rsrc_node", 24, 0, SLAB_HWCACHE_ALIGN);
      c.slab = slab;
      c.refill = refill;
    }
  }
};
}  // namespace

TEST_CASE("io_alloc_cache: init allocates the entries array, teardown frees it",
          "[io_uring][alloc_cache]") {
  FakeMm mm;
  IoAllocCache c;
  REQUIRE(io_alloc_cache_init(mm, c, 128, 24, 0, kT) == 0);
  // kvmalloc_array(128, 8) = 1024 bytes, GFP_KERNEL.
  CHECK(mm.count(Op::kvmalloc, 1024) == 1);
  CHECK(c.max_cached == 128);
  io_alloc_cache_free(mm, c, kT);
  CHECK(mm.count(Op::kvfree) == 1);
  CHECK(mm.live_objects() == 0);
  io_alloc_cache_free(mm, c, kT);  // entries NULL: no-op
  CHECK(mm.count(Op::kvfree) == 1);

  IoAllocCache failed;
  mm.fail_nth_alloc(1);
  CHECK(io_alloc_cache_init(mm, failed, 128, 24, 0, kT) == kENOMEM);
  io_alloc_cache_free(mm, failed, kT);  // safe on a cache whose init failed
  CHECK(mm.reports().empty());
}

TEST_CASE("io_alloc_cache: LIFO, refuses puts when full, io_cache_free frees",
          "[io_uring][alloc_cache]") {
  CacheFixture f(2, false);
  FakeMm& mm = f.mm;
  const Ptr a = io_cache_alloc(mm, f.c, GFP_KERNEL, kT);  // miss: kmalloc(24)
  const Ptr b = io_cache_alloc(mm, f.c, GFP_KERNEL, kT);
  const Ptr d = io_cache_alloc(mm, f.c, GFP_KERNEL, kT);
  CHECK(mm.count(Op::kmalloc, 24) == 3);
  io_cache_free(mm, f.c, a, kT);
  io_cache_free(mm, f.c, b, kT);
  io_cache_free(mm, f.c, d, kT);  // full: kfree
  CHECK(f.c.nr_cached == 2);
  CHECK(mm.count(Op::kfree) == 1);
  CHECK(mm.state(d) == FakeMm::State::freed);
  CHECK(mm.state(a) == FakeMm::State::parked);
  // LIFO: b (put last) comes back first, unpoisoned.
  CHECK(io_alloc_cache_get(mm, f.c, kT) == b);
  CHECK(mm.state(b) == FakeMm::State::live);
  CHECK(io_alloc_cache_get(mm, f.c, kT) == a);
  CHECK(io_alloc_cache_get(mm, f.c, kT) == kNull);
  CHECK(mm.events()[Event::io_cache_put] == 2);
  CHECK(mm.events()[Event::io_cache_put_full] == 1);
  CHECK(mm.events()[Event::io_cache_alloc_new] == 3);
  mm.kfree(a, kT);
  mm.kfree(b, kT);
  io_alloc_cache_free(mm, f.c, kT);
  CHECK(mm.live_objects() == 0);
  CHECK(mm.reports().empty());
}

TEST_CASE("io_alloc_cache: KASAN catches double put, free while cached, use after put",
          "[io_uring][alloc_cache][kasan]") {
  CacheFixture f(8, false);
  FakeMm& mm = f.mm;
  const Ptr a = io_cache_alloc(mm, f.c, GFP_KERNEL, kT);
  io_cache_free(mm, f.c, a, kT);
  io_cache_free(mm, f.c, a, kT);  // double put: poison refused, not kept twice
  CHECK(mm.has_report("double-put"));
  CHECK(f.c.nr_cached == 1);
  CHECK(mm.events()[Event::io_cache_poison_refused] == 1);
  mm.kasan_check_access(a, "test");
  CHECK(mm.has_report("use-after-put"));
  mm.kfree(a, kT);  // freeing an object that sits in the cache
  CHECK(mm.has_report("free-of-parked"));
  io_alloc_cache_free(mm, f.c, kT);
  CHECK(mm.live_objects() == 0);
}

TEST_CASE("io_alloc_cache: node-slab without refill allocates one object per miss",
          "[io_uring][alloc_cache][rfc]") {
  CacheFixture f(128, true, 0);
  for (int i = 0; i < 5; i++) io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT);
  CHECK(f.mm.count(Op::kmem_cache_alloc) == 5);
  CHECK(f.mm.count(Op::kmalloc) == 0);
  CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 0);
}

TEST_CASE("io_alloc_cache: bulk refill follows RFC 2/3 exactly", "[io_uring][alloc_cache][rfc]") {
  SECTION("miss with room: bulk of min(32, room), return the last, stash the rest") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    const Ptr p = io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT);
    REQUIRE(f.mm.calls().back().op == Op::kmem_cache_alloc_bulk);
    CHECK(f.mm.calls().back().n == 32);
    CHECK(f.c.nr_cached == 31);
    CHECK(f.mm.state(p) == FakeMm::State::live);
    for (uint32_t i = 0; i < 31; i++) CHECK(f.mm.state(f.c.entries[i]) == FakeMm::State::parked);
    // The returned object is the last one the bulk call produced: it is not
    // among the stashed ones, and it was allocated after all of them.
    for (uint32_t i = 0; i < 31; i++) CHECK(f.c.entries[i] < p);
    CHECK(f.mm.events()[Event::io_cache_refill_stash] == 31);
    // 31 hits, then the next miss bulk-refills again.
    for (int i = 0; i < 31; i++) io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT);
    CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 1);
    io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT);
    CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 2);
  }
  SECTION("batch is bounded by the room left") {
    // A miss happens with the cache empty, so room = max_cached: a
    // 10-entry cache asks for 10, returns one and stashes 9.
    CacheFixture g(10, true, IO_ALLOC_CACHE_REFILL);
    io_cache_alloc(g.mm, g.c, GFP_KERNEL, kT);
    CHECK(g.mm.calls().back().n == 10);
    CHECK(g.c.nr_cached == 9);
  }
  SECTION("room 0: a single kmem_cache_alloc") {
    CacheFixture f(1, true, IO_ALLOC_CACHE_REFILL);
    io_cache_free(f.mm, f.c, f.mm.kmem_cache_alloc(f.slab, GFP_KERNEL, kT), kT);
    REQUIRE(f.c.nr_cached == 1);  // full: room = 0
    f.mm.clear_calls();
    const Ptr p = io_cache_alloc_new(f.mm, f.c, GFP_KERNEL, kT);
    CHECK(p != kNull);
    CHECK(f.mm.count(Op::kmem_cache_alloc) == 1);
    CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 0);
  }
  SECTION("bulk returns 0: NULL, nothing cached") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    f.mm.fail_nth_alloc(1);
    CHECK(io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT) == kNull);
    CHECK(f.c.nr_cached == 0);
  }
  SECTION("short bulk: return the last of what came, stash got - 1") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    f.mm.bulk_limit = 5;
    const Ptr p = io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT);
    CHECK(p != kNull);
    CHECK(f.c.nr_cached == 4);
    CacheFixture g(128, true, IO_ALLOC_CACHE_REFILL);
    g.mm.bulk_limit = 1;
    CHECK(io_cache_alloc(g.mm, g.c, GFP_KERNEL, kT) != kNull);
    CHECK(g.c.nr_cached == 0);
  }
}

TEST_CASE("io_alloc_cache: prefill follows RFC 3/3 exactly", "[io_uring][alloc_cache][rfc]") {
  SECTION("grows to min(N, 4096), keeps the grown array, one bulk of nr - nr_cached") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    f.mm.clear_calls();
    CHECK(io_alloc_cache_prefill(f.mm, f.c, 8192, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 4096);
    CHECK(f.c.max_cached == 4096);
    CHECK(f.c.nr_cached == 4096);
    CHECK(f.mm.count(Op::kvmalloc, 4096 * 8) == 1);
    CHECK(f.mm.count(Op::kvfree) == 1);  // the old 128-entry array
    REQUIRE(f.mm.count(Op::kmem_cache_alloc_bulk) == 1);
    CHECK(f.mm.calls().back().n == 4096);
    CHECK(f.mm.calls().back().gfp == (GFP_KERNEL | __GFP_NOWARN));
    // Already full enough: nothing more.
    CHECK(io_alloc_cache_prefill(f.mm, f.c, 4096, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 0);
    CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 1);
    io_alloc_cache_free(f.mm, f.c, kT);
    CHECK(f.mm.live_objects() == 0);
  }
  SECTION("N below max_cached: no new array, bulk of N - nr_cached") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    io_cache_free(f.mm, f.c, io_cache_alloc(f.mm, f.c, GFP_KERNEL, kT), kT);  // 32 cached
    REQUIRE(f.c.nr_cached == 32);
    f.mm.clear_calls();
    CHECK(io_alloc_cache_prefill(f.mm, f.c, 100, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 68);
    CHECK(f.mm.count(Op::kvmalloc) == 0);
    CHECK(f.mm.calls().back().n == 68);
    CHECK(f.c.max_cached == 128);
  }
  SECTION("no slab: one kmalloc per object; array allocation failure: cache unchanged") {
    CacheFixture f(128, false);
    f.mm.clear_calls();
    CHECK(io_alloc_cache_prefill(f.mm, f.c, 4096, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 4096);
    CHECK(f.mm.count(Op::kmalloc) == 4096);
    CHECK(f.mm.count(Op::kvmalloc) == 1);
    CHECK(f.mm.count(Op::kmem_cache_alloc_bulk) == 0);
    CHECK(f.c.nr_cached == 4096);
    CacheFixture g(128, true, IO_ALLOC_CACHE_REFILL);
    g.mm.fail_nth_alloc(1);
    CHECK(io_alloc_cache_prefill(g.mm, g.c, 4096, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 0);
    CHECK(g.c.max_cached == 128);
    CHECK(g.mm.count(Op::kvfree) == 0);
  }
  SECTION("bulk failure after growing: the grown array is kept, nothing cached") {
    CacheFixture f(128, true, IO_ALLOC_CACHE_REFILL);
    f.mm.fail_nth_alloc(2);  // 1 = kvmalloc of the array, 2 = the bulk
    CHECK(io_alloc_cache_prefill(f.mm, f.c, 4096, IO_ALLOC_CACHE_PREFILL_MAX, kT) == 0);
    CHECK(f.c.max_cached == 4096);
    CHECK(f.c.nr_cached == 0);
    io_alloc_cache_free(f.mm, f.c, kT);
    CHECK(f.mm.live_objects() == 0);
    CHECK(f.mm.reports().empty());
  }
}
