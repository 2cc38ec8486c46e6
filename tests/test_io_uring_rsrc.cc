// Fixed-file table and rsrc node cache against the counting fake: the
// seed 004 workloads (F0 first fill, bulk refill, prefill, same-ring
// remove+refill) with hand-derived counts.
#include <catch2/catch.hpp>

#include "test_io_uring_util.h"

using namespace simcache;
using namespace simcache::iou;
using namespace simcache::testing;

namespace {
uint64_t node_kmallocs(const Sim& s, uint32_t size = 24) {
  return s.mm.count_if([size](const Call& c) {
    return c.op == Op::kmalloc && c.size == size;
  });
}

// Workload F0 set-up: source ring with 1 real file, fresh target ring with
// an empty sparse table of `slots`. Clears the call log afterwards.
struct F0 {
  Sim s;
  int src, dst;
  F0(std::string_view prof, std::string_view spec, uint32_t slots, bool optin = false)
      : s(prof, spec) {
    src = make_source(s);
    dst = s.io->ring_create(kApp);
    REQUIRE(s.io->files_register_sparse(dst, slots, optin) == 0);
    s.mm.clear_calls();
    before = s.snap();
  }
  uint64_t d(Event e) { return s.since(before, e); }
  Counters before;
};
}  // namespace

TEST_CASE("rsrc: F0 first fill of 4,096 sparse slots, v6.18 unpatched",
          "[io_uring][rsrc][seed004]") {
  F0 f("v6.18", "unpatched", 4096);
  // Sparse registration allocated no node: node_cache is empty.
  CHECK(f.s.io->ring(f.dst).node_cache.nr_cached == 0);
  REQUIRE(send_fill(f.s, f.src, f.dst, 4096) == 4096);
  // Every install lands in a new slot; nothing is freed during a first
  // fill, so every node is a node_cache miss: kmalloc(24), GFP_KERNEL.
  CHECK(f.d(Event::io_rsrc_node_alloc) == 4096);
  CHECK(f.d(Event::node_cache_hit) == 0);
  CHECK(node_kmallocs(f.s) == 4096);
  CHECK(f.s.mm.count_if([](const Call& c) {
    return c.op == Op::kmalloc && c.size == 24 && c.gfp == GFP_KERNEL && c.cpu == kApp.cpu;
  }) == 4096);
  CHECK(f.s.mm.count(Op::kfree) == 0);
  CHECK(f.d(Event::fixed_file_install) == 4096);
  CHECK(f.d(Event::fget) == 4096);
  CHECK(f.d(Event::cqe_post) == 2 * 4096);  // source + target CQE per send
  // The 64 SQEs of the first enter need 8 request refills; later enters
  // reuse the 64 requests flushed back to the free list.
  CHECK(f.s.mm.count(Op::kmem_cache_alloc_bulk) == 8);
  CHECK(f.d(Event::io_uring_enter) == 64);
  // Slot ALLOC fills 0..4095 in order.
  const IoFileTable& ft = f.s.io->ring(f.dst).files;
  for (uint32_t i = 0; i < 4096; i++) REQUIRE(ft.nodes[i] != kNull);
  // Unregister: 4,096 puts, node_cache keeps 128, 3,968 kfree.
  f.s.mm.clear_calls();
  REQUIRE(f.s.io->files_unregister(f.dst) == 0);
  CHECK(f.s.mm.count(Op::kfree, 24) == 3968);
  CHECK(f.s.io->ring(f.dst).node_cache.nr_cached == 128);
  f.s.io->exit_all(kKworker);
  CHECK(f.s.mm.count(Op::kfree, 24) == 3968 + 128 + 1);  // + source's node
  CHECK(f.s.live_after_task_exit() == 0);
  CHECK(f.s.mm.reports().empty());
}

TEST_CASE("rsrc: F0 under older profiles", "[io_uring][rsrc][seed004]") {
  SECTION("v6.13: kzalloc(32) per node, kfree on put, no cache") {
    F0 f("v6.13", "unpatched", 4096);
    REQUIRE(send_fill(f.s, f.src, f.dst, 4096) == 4096);
    CHECK(f.d(Event::io_rsrc_node_alloc) == 4096);
    CHECK(f.s.mm.count_if([](const Call& c) {
      return c.op == Op::kmalloc && c.size == 32 && c.gfp == (GFP_KERNEL | __GFP_ZERO);
    }) == 4096);
    f.s.mm.clear_calls();
    f.s.io->files_unregister(f.dst);
    CHECK(f.s.mm.count(Op::kfree, 32) == 4096);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.live_after_task_exit() == 0);
  }
  SECTION("v6.12: installs allocate nothing") {
    F0 f("v6.12", "unpatched", 4096);
    REQUIRE(send_fill(f.s, f.src, f.dst, 4096) == 4096);
    CHECK(f.d(Event::io_rsrc_node_alloc) == 0);
    CHECK(f.s.mm.count(Op::kmalloc) == 0);
    CHECK(f.d(Event::fget) == 4096);
    f.s.io->files_unregister(f.dst);
    CHECK(f.d(Event::fput) == 4096);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.live_after_task_exit() == 0);
  }
}

TEST_CASE("rsrc: node-slab allocates from the dedicated cache, one object per miss",
          "[io_uring][rsrc][seed004]") {
  F0 f("v6.18", "node-slab", 4096);
  const CacheId nc = f.s.io->rsrc_node_cachep();
  REQUIRE(nc != kNoCache);
  CHECK(f.s.mm.cache(nc).name == "io_rsrc_node");
  CHECK(f.s.mm.cache(nc).flags == (SLAB_HWCACHE_ALIGN | SLAB_PANIC));
  REQUIRE(send_fill(f.s, f.src, f.dst, 4096) == 4096);
  CHECK(f.s.cache_calls(Op::kmem_cache_alloc, nc) == 4096);
  CHECK(f.s.bulk_calls(nc) == 0);
  CHECK(node_kmallocs(f.s) == 0);

  Sim acct("v6.18", "node-slab-account");
  CHECK(acct.mm.cache(acct.io->rsrc_node_cachep()).flags ==
        (SLAB_HWCACHE_ALIGN | SLAB_PANIC | SLAB_ACCOUNT));
}

TEST_CASE("rsrc: bulk refill is one kmem_cache_alloc_bulk per 32 misses",
          "[io_uring][rsrc][seed004]") {
  F0 f("v6.18", "node-slab+bulk-refill", 4096);
  const CacheId nc = f.s.io->rsrc_node_cachep();
  REQUIRE(send_fill(f.s, f.src, f.dst, 4096) == 4096);
  // Each miss (cache empty, room 128) bulk-allocates 32: returns 1, stashes
  // 31, which serve the next 31 installs. 4096 / 32 = 128 misses.
  CHECK(f.s.bulk_calls(nc) == 128);
  CHECK(f.s.bulk_objs(nc) == 4096);
  CHECK(f.s.cache_calls(Op::kmem_cache_alloc, nc) == 0);
  CHECK(node_kmallocs(f.s) == 0);
  CHECK(f.d(Event::io_cache_alloc_new) == 128);
  CHECK(f.d(Event::node_cache_hit) == 4096 - 128);
  f.s.io->exit_all(kKworker);
  CHECK(f.s.live_after_task_exit() == 0);
  CHECK(f.s.mm.reports().empty());
}

TEST_CASE("rsrc: prefill takes every allocation off the install path",
          "[io_uring][rsrc][seed004]") {
  SECTION("4,096 slots: one bulk of 4,096 at registration, 0 misses on install") {
    Sim s("v6.18", "node-slab+bulk-refill+prefill");
    const int src = make_source(s);
    const int dst = s.io->ring_create(kApp);
    const CacheId nc = s.io->rsrc_node_cachep();
    s.mm.clear_calls();
    REQUIRE(s.io->files_register_sparse(dst, 4096) == 0);
    // Registration: nodes array (32 KiB) + bitmap, grown entries array
    // (4096 * 8), the old 128-entry array kvfree'd, one bulk of 4096.
    CHECK(s.mm.count(Op::kvmalloc, 4096 * 8) == 2);
    CHECK(s.mm.count(Op::kvfree, 128 * 8) == 1);
    CHECK(s.bulk_calls(nc) == 1);
    CHECK(s.bulk_objs(nc) == 4096);
    CHECK(s.io->ring(dst).node_cache.max_cached == 4096);
    s.mm.clear_calls();
    const Counters before = s.snap();
    REQUIRE(send_fill(s, src, dst, 4096) == 4096);
    CHECK(s.since(before, Event::io_cache_alloc_new) == 0);
    CHECK(s.since(before, Event::node_cache_hit) == 4096);
    CHECK(s.bulk_calls(nc) == 0);
    CHECK(s.cache_calls(Op::kmem_cache_alloc, nc) == 0);
    s.io->exit_all(kKworker);
    CHECK(s.live_after_task_exit() == 0);
    CHECK(s.mm.reports().empty());
  }
  SECTION("8,192 slots: prefill 4,096, then bulk refill for the other 4,096") {
    F0 f("v6.18", "node-slab+bulk-refill+prefill", 8192);
    const CacheId nc = f.s.io->rsrc_node_cachep();
    CHECK(f.s.io->ring(f.dst).node_cache.nr_cached == 4096);
    REQUIRE(send_fill(f.s, f.src, f.dst, 8192) == 8192);
    // Installs 1..4096 hit the prefilled cache; from then on every miss has
    // room 4096 - 0 and bulk-allocates 32: 4096 / 32 = 128 calls of 32.
    CHECK(f.s.bulk_calls(nc) == 128);
    CHECK(f.s.bulk_objs(nc) == 4096);
    CHECK(f.s.mm.count_if([nc](const Call& c) {
      return c.op == Op::kmem_cache_alloc_bulk && c.cache == nc && c.n != 32;
    }) == 0);
    CHECK(f.d(Event::io_cache_alloc_new) == 128);
    CHECK(f.d(Event::node_cache_hit) == 4096 + 128 * 31);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.live_after_task_exit() == 0);
  }
  SECTION("prefill-optin only prefills registrations that opt in") {
    F0 no("v6.18", "node-slab+bulk-refill+prefill-optin", 4096, false);
    CHECK(no.s.io->ring(no.dst).node_cache.nr_cached == 0);
    CHECK(no.s.io->ring(no.dst).node_cache.max_cached == 128);
    F0 yes("v6.18", "node-slab+bulk-refill+prefill-optin", 4096, true);
    CHECK(yes.s.io->ring(yes.dst).node_cache.nr_cached == 4096);
    F0 always("v6.18", "node-slab+prefill", 64, false);
    CHECK(always.s.io->ring(always.dst).node_cache.nr_cached == 64);
    CHECK(always.s.io->ring(always.dst).node_cache.max_cached == 128);
  }
}

TEST_CASE("rsrc: same-ring remove + refill of 4,096 files", "[io_uring][rsrc][seed004]") {
  // Workload reuse-4096-4096: first fill untimed, then FILES_UPDATE(-1)
  // over all slots, then a SEND_FD refill of 4,096.
  auto setup = [](std::string_view spec) {
    auto f = std::make_unique<F0>("v6.18", spec, 4096);
    REQUIRE(send_fill(f->s, f->src, f->dst, 4096) == 4096);
    f->s.mm.clear_calls();
    f->before = f->s.snap();
    for (uint32_t off = 0; off < 4096; off += 64)
      REQUIRE(f->s.io->files_update_remove(f->dst, off, 64) == 64);
    return f;
  };
  SECTION("unpatched: the cache keeps 128, 3,968 kfree on remove, 3,968 misses on refill") {
    auto f = setup("unpatched");
    CHECK(f->d(Event::node_cache_put) == 128);
    CHECK(f->s.mm.count(Op::kfree, 24) == 3968);
    CHECK(f->d(Event::fput) == 4096);
    f->s.mm.clear_calls();
    f->before = f->s.snap();
    REQUIRE(send_fill(f->s, f->src, f->dst, 4096) == 4096);
    CHECK(f->d(Event::node_cache_hit) == 128);
    CHECK(f->d(Event::io_cache_alloc_new) == 3968);
    CHECK(node_kmallocs(f->s) == 3968);
    f->s.io->exit_all(kKworker);
    CHECK(f->s.live_after_task_exit() == 0);
  }
  SECTION("node-slab+bulk-refill: same 128 kept; 3,968 misses served by 124 bulks") {
    auto f = setup("node-slab+bulk-refill");
    const CacheId nc = f->s.io->rsrc_node_cachep();
    CHECK(f->s.cache_calls(Op::kmem_cache_free, nc) == 3968);
    f->s.mm.clear_calls();
    f->before = f->s.snap();
    REQUIRE(send_fill(f->s, f->src, f->dst, 4096) == 4096);
    // 128 hits on the kept nodes, then 3968 / 32 = 124 misses, each
    // stashing 31 more hits.
    CHECK(f->s.bulk_calls(nc) == 124);
    CHECK(f->d(Event::io_cache_alloc_new) == 124);
    CHECK(f->d(Event::node_cache_hit) == 128 + 124 * 31);
    f->s.io->exit_all(kKworker);
    CHECK(f->s.live_after_task_exit() == 0);
  }
  SECTION("prefill: the grown cache keeps all 4,096; 0 frees, 0 misses") {
    auto f = setup("node-slab+bulk-refill+prefill");
    const CacheId nc = f->s.io->rsrc_node_cachep();
    CHECK(f->d(Event::node_cache_put) == 4096);
    CHECK(f->s.cache_calls(Op::kmem_cache_free, nc) == 0);
    CHECK(f->s.mm.count(Op::kfree) == 0);
    f->s.mm.clear_calls();
    f->before = f->s.snap();
    REQUIRE(send_fill(f->s, f->src, f->dst, 4096) == 4096);
    CHECK(f->d(Event::io_cache_alloc_new) == 0);
    CHECK(f->d(Event::node_cache_hit) == 4096);
    CHECK(f->s.bulk_calls(nc) == 0);
    f->s.io->exit_all(kKworker);
    CHECK(f->s.live_after_task_exit() == 0);
  }
}

TEST_CASE("rsrc: install allocates the new node before resetting the old one",
          "[io_uring][rsrc]") {
  Sim s("v6.18");
  const int r = s.io->ring_create(kApp);
  REQUIRE(s.io->files_register_sparse(r, 16) == 0);
  s.mm.clear_calls();
  // 1st install into slot 5: miss. 2nd: the cache is still empty when the
  // new node is allocated (miss), then the old node is put (cached). 3rd:
  // hit on that node, the 2nd node is put.
  CHECK(s.io->fixed_fd_install(r, 5) == 0);
  CHECK(s.io->fixed_fd_install(r, 5) == 0);
  CHECK(s.io->fixed_fd_install(r, 5) == 0);
  CHECK(node_kmallocs(s) == 2);
  CHECK(s.ev(Event::node_cache_hit) == 1);
  CHECK(s.ev(Event::node_cache_put) == 2);
  CHECK(s.io->ring(r).node_cache.nr_cached == 1);
  CHECK(s.io->ring(r).files.test_bit(5));
  s.io->exit_all(kKworker);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}

TEST_CASE("rsrc: slot allocation, errors and the CPU doing the install",
          "[io_uring][rsrc]") {
  SECTION("ALLOC on a full table: -ENFILE before any allocation") {
    F0 f("v6.18", "unpatched", 4);
    REQUIRE(send_fill(f.s, f.src, f.dst, 4) == 4);
    f.s.mm.clear_calls();
    CHECK(f.s.io->msg_ring_send_fd(f.src, f.dst, 0, IORING_FILE_INDEX_ALLOC) == kENFILE);
    CHECK(node_kmallocs(f.s) == 0);
    CHECK(f.d(Event::fput) == 1);  // the grabbed file is dropped
    // Freeing a slot makes it the next candidate.
    REQUIRE(f.s.io->files_update_remove(f.dst, 2, 1) == 1);
    CHECK(f.s.io->msg_ring_send_fd(f.src, f.dst, 0, IORING_FILE_INDEX_ALLOC) == 2);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.live_after_task_exit() == 0);
  }
  SECTION("errors") {
    F0 f("v6.18", "unpatched", 4);
    CHECK(f.s.io->msg_ring_send_fd(f.src, f.src, 0, 0) == kEINVAL);
    CHECK(f.s.io->msg_ring_send_fd(f.src, f.dst, 3, 0) == kEBADF);  // empty source slot
    CHECK(f.s.io->msg_ring_send_fd(f.src, f.dst, 0, 4) == kEINVAL);  // past the table
    CHECK(f.s.io->files_register_sparse(f.dst, 4) == kEBUSY);
    CHECK(f.s.io->files_update_remove(f.dst, 3, 2) == kEINVAL);
    const int bare = f.s.io->ring_create(kApp);
    CHECK(f.s.io->msg_ring_send_fd(f.src, bare, 0, IORING_FILE_INDEX_ALLOC) == kENFILE);
    CHECK(f.s.io->msg_ring_send_fd(f.src, bare, 0, 0) == kENXIO);
    CHECK(f.s.io->files_unregister(bare) == kENXIO);
    CHECK(f.s.io->files_register_sparse(bare, 0) == kEINVAL);
    CHECK(f.s.io->files_register_sparse(bare, IORING_MAX_FIXED_FILES + 1) == kEMFILE);
    f.s.io->ring_exit(bare, kKworker);
    CHECK(f.s.io->msg_ring_send_fd(f.src, bare, 0, 0) == kEBADFD);
    CHECK(f.s.io->files_register_sparse(bare, 4) == kEBADF);
    CHECK(f.d(Event::io_rsrc_node_alloc) == 0);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.live_after_task_exit() == 0);
  }
  SECTION("inline install runs on the source CPU, DEFER_TASKRUN on the target's") {
    Sim s("v6.18");
    const int src = make_source(s, kApp);
    const int dst = s.io->ring_create(kOtherCpu);
    REQUIRE(s.io->files_register_sparse(dst, 8) == 0);
    s.mm.clear_calls();
    REQUIRE(send_fill(s, src, dst, 4, false) == 4);
    REQUIRE(send_fill(s, src, dst, 4, true) == 4);
    CHECK(s.mm.count_if([](const Call& c) {
      return c.op == Op::kmalloc && c.size == 24 && c.cpu == kApp.cpu;
    }) == 4);
    CHECK(s.mm.count_if([](const Call& c) {
      return c.op == Op::kmalloc && c.size == 24 && c.cpu == kOtherCpu.cpu;
    }) == 4);
    s.mm.clear_calls();
    s.io->exit_all(kKworker);
    // Ring teardown runs on the kworker; each task frees its own io_uring
    // context: 2 io_tctx_nodes, 2 x (io_wq, io_uring_task) and the 2
    // io_wq_hashes whose last reference the io_wqs held.
    CHECK(s.mm.count_if([](const Call& c) { return c.cpu != kKworker.cpu; }) == 8);
    CHECK(s.live_after_task_exit() == 0);
  }
}

TEST_CASE("rsrc: non-sparse register allocates a node per slot, update sets reset first",
          "[io_uring][rsrc]") {
  Sim s("v6.18");
  const int r = s.io->ring_create(kApp);
  s.mm.clear_calls();
  REQUIRE(s.io->files_register(r, 200) == 0);
  CHECK(node_kmallocs(s) == 200);
  CHECK(s.mm.count(Op::kvmalloc, 200 * 8) == 1);
  CHECK(s.mm.count_if([](const Call& c) {  // bitmap_zalloc: 4 longs, accounted
    return c.op == Op::kmalloc && c.size == 32 && c.gfp == (GFP_KERNEL_ACCOUNT | __GFP_ZERO);
  }) == 1);
  s.mm.clear_calls();
  // FILES_UPDATE with real fds resets first: each put finds room (the
  // cache is empty), and the following alloc takes that very node back.
  REQUIRE(s.io->files_update_set(r, 0, 100) == 100);
  CHECK(node_kmallocs(s) == 0);
  CHECK(s.ev(Event::node_cache_hit) == 100);
  s.io->exit_all(kKworker);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}

TEST_CASE("rsrc: slab-prime keeps one anchor per primed page until unregister",
          "[io_uring][rsrc][seed004]") {
  // kmalloc-32 / io_rsrc_node slots are 32 B: 4096 / 32 = 128 objects per
  // (order-0, fake, always fresh) page. Priming allocates until 4,096
  // objects can be freed back: 32 pages give back 127 each (4,064), a 33rd
  // page the last 32, so 4,129 allocations, 33 anchors (the RFC row's
  // "33 anchors kept") and 4,096 frees in reverse order.
  SECTION("unpatched node allocations (kmalloc-32)") {
    Sim s("v6.18", "slab-prime");
    const int r = s.io->ring_create(kApp);
    s.mm.clear_calls();
    REQUIRE(s.io->files_register_sparse(r, 4096) == 0);
    CHECK(node_kmallocs(s) == 4129);
    CHECK(s.mm.count(Op::kfree, 24) == 4096);
    CHECK(s.ev(Event::slab_prime_alloc) == 4129);
    CHECK(s.ev(Event::slab_prime_anchor) == 33);
    CHECK(s.ev(Event::io_rsrc_node_alloc) == 4129);  // each through io_rsrc_node_alloc()
    CHECK(s.ev(Event::node_cache_hit) == 0);
    CHECK(s.ev(Event::io_cache_alloc_new) == 0);
    CHECK(s.io->ring(r).files.anchors.size() == 33);
    s.mm.clear_calls();
    REQUIRE(s.io->files_unregister(r) == 0);
    CHECK(s.mm.count(Op::kfree, 24) == 33);
    s.io->exit_all(kKworker);
    CHECK(s.live_after_task_exit() == 0);
  }
  SECTION("node-slab, and a small table still primes one page") {
    // 10 slots: 10 objects back need 11 allocations on one page.
    Sim s("v6.18", "node-slab+slab-prime");
    const int r = s.io->ring_create(kApp);
    const CacheId nc = s.io->rsrc_node_cachep();
    s.mm.clear_calls();
    REQUIRE(s.io->files_register_sparse(r, 10) == 0);
    CHECK(s.cache_calls(Op::kmem_cache_alloc, nc) == 11);
    CHECK(s.cache_calls(Op::kmem_cache_free, nc) == 10);
    CHECK(s.io->ring(r).files.anchors.size() == 1);
    s.io->exit_all(kKworker);
    CHECK(s.live_after_task_exit() == 0);
    CHECK(s.mm.reports().empty());
  }
}

namespace {
// The F0 program's verification: a one-byte fixed-file READ of each of
// the first n slots, 64 per io_uring_enter on the target.
void verify(Sim& s, int dst, uint32_t n) {
  for (uint32_t done = 0; done < n; done += 64) {
    s.io->enter_begin(dst);
    for (uint32_t i = done; i < std::min(n, done + 64); ++i) REQUIRE(s.io->read_fixed(dst, i) == 0);
    s.io->enter_end(dst);
    s.io->reap_cq(dst);
  }
}
}  // namespace

TEST_CASE("rsrc: every verification READ misses rw_cache cold and warm (v7.1 evidence)",
          "[io_uring][rsrc][seed004]") {
  // The v7.1 evidence's node-cache trace counts, per 128-slot fill and its
  // verification, io_cache_alloc_new from io_rsrc_node_alloc (128 cold, 0
  // warm) and from elsewhere (128 cold and warm). The elsewhere is the
  // reads: each punts to io-wq, whose completion does not recycle the
  // async data, so each read kmallocs one io_async_rw and kfrees it.
  for (const char* prof : {"v6.18", "v7.1"}) {
    INFO(prof);
    F0 f(prof, "unpatched", 128);
    REQUIRE(send_fill(f.s, f.src, f.dst, 128) == 128);
    CHECK(f.d(Event::io_cache_alloc_new) == 128);  // cold: the nodes
    Counters at = f.s.snap();
    f.s.mm.clear_calls();
    verify(f.s, f.dst, 128);
    CHECK(f.s.since(at, Event::read_fixed) == 128);
    CHECK(f.s.since(at, Event::iowq_punt) == 128);
    CHECK(f.s.since(at, Event::io_cache_alloc_new) == 128);  // the reads, outside the node path
    CHECK(f.s.since(at, Event::io_rsrc_node_alloc) == 0);
    CHECK(f.s.since(at, Event::io_worker_create) == 1);  // the task's first punt
    CHECK(f.s.mm.count(Op::kmalloc, 200) == 128);        // struct io_async_rw
    CHECK(f.s.mm.count(Op::kmalloc, 240) == 1);          // struct io_worker
    CHECK(f.s.mm.count(Op::kfree) == 128);               // at each flush: nothing recycled
    CHECK(f.s.io->ring(f.dst).rw_cache.nr_cached == 0);
    // 64 reads per enter take 64 requests from the target's own cache:
    // 8 bulk refills of 8 on a fresh ring, reused by the second batch.
    CHECK(f.s.mm.count(Op::kmem_cache_alloc_bulk) == 8);
    // Warm: unregister (the nodes go to node_cache), register again, fill
    // (every node a cache hit), verify: the reads miss again.
    REQUIRE(f.s.io->files_unregister(f.dst) == 0);
    REQUIRE(f.s.io->files_register_sparse(f.dst, 128) == 0);
    at = f.s.snap();
    f.s.mm.clear_calls();
    REQUIRE(send_fill(f.s, f.src, f.dst, 128) == 128);
    CHECK(f.s.since(at, Event::io_cache_alloc_new) == 0);
    CHECK(f.s.since(at, Event::node_cache_hit) == 128);
    verify(f.s, f.dst, 128);
    CHECK(f.s.since(at, Event::io_cache_alloc_new) == 128);
    CHECK(f.s.since(at, Event::io_worker_create) == 0);  // the worker exists
    CHECK(f.s.mm.count(Op::kmalloc, 200) == 128);
    // A read of an empty slot is prepared first (io_init_req() runs the
    // prep before the file lookup): its async data is allocated, the
    // read fails with -EBADF, and the data is freed with the request.
    REQUIRE(f.s.io->files_unregister(f.dst) == 0);
    REQUIRE(f.s.io->files_register_sparse(f.dst, 128) == 0);
    at = f.s.snap();
    f.s.mm.clear_calls();
    CHECK(f.s.io->read_fixed(f.dst, 5) == iou::kEBADF);
    CHECK(f.s.since(at, Event::io_cache_alloc_new) == 1);
    CHECK(f.s.since(at, Event::iowq_punt) == 0);
    CHECK(f.s.mm.count(Op::kmalloc, 200) == 1);
    CHECK(f.s.mm.count(Op::kfree) == 1);
    f.s.io->exit_all(kKworker);
    CHECK(f.s.mm.live_objects() == 0);  // the worker goes with the task
  }
}

TEST_CASE("rsrc: v6.12 reads take a 160-byte io_async_rw", "[io_uring][rsrc]") {
  F0 f("v6.12", "unpatched", 64);
  REQUIRE(send_fill(f.s, f.src, f.dst, 64) == 64);
  f.s.mm.clear_calls();
  verify(f.s, f.dst, 64);
  CHECK(f.s.mm.count(Op::kmalloc, 160) == 64);
  f.s.io->exit_all(kKworker);
  CHECK(f.s.mm.live_objects() == 0);
}

TEST_CASE("rsrc: a READ whose io-wq worker cannot be made fails as ENOMEM and leaks nothing",
          "[io_uring][rsrc]") {
  F0 f("v6.18", "unpatched", 64);
  REQUIRE(send_fill(f.s, f.src, f.dst, 64) == 64);
  f.s.mm.fail_if = [](const Call& c) { return c.op == Op::kmalloc && c.size == iou::kIoWorkerSize; };
  CHECK(f.s.io->read_fixed(f.dst, 0) == iou::kENOMEM);
  CHECK(f.s.io->failures().at(iou::kENOMEM) == 1);
  CHECK(f.s.ev(Event::io_worker_create) == 0);
  f.s.mm.fail_if = nullptr;
  CHECK(f.s.io->read_fixed(f.dst, 0) == 0);  // the next punt makes it
  CHECK(f.s.ev(Event::io_worker_create) == 1);
  f.s.io->exit_all(kKworker);
  CHECK(f.s.mm.live_objects() == 0);
}
