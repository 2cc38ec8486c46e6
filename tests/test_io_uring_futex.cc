// Futex paths against the counting fake: the seed 001 arm-fail counts and
// the seed 000 WAITV allocation per request. Counts are derived by hand in
// the comments.
#include <catch2/catch.hpp>

#include "test_io_uring_util.h"

using namespace simcache;
using namespace simcache::iou;
using namespace simcache::testing;

namespace {
// io_futex_data is 144 B, allocated GFP_NOWAIT (kmalloc-192, never charged).
uint64_t futex_kmallocs(const Sim& s) {
  return s.mm.count_if([](const Call& c) {
    return c.op == Op::kmalloc && c.size == 144 && c.gfp == GFP_NOWAIT;
  });
}
uint64_t kfrees_of(const Sim& s, uint32_t size) { return s.mm.count(Op::kfree, size); }
}  // namespace

TEST_CASE("futex: 100,000 failing FUTEX_WAITs with futex-return-to-cache do one kmalloc",
          "[io_uring][futex][seed001]") {
  Sim s("v6.18", "futex-return-to-cache");
  const int r = s.io->ring_create(kApp);
  s.mm.clear_calls();
  // First wait: futex_cache empty -> kmalloc(144); arm fails -> io_cache_free
  // puts it back. Every later wait gets it from the cache and puts it back.
  for (int i = 0; i < 100000; i++) REQUIRE(s.io->futex_wait(r, false) == kEAGAIN);
  CHECK(s.mm.count(Op::kmalloc) == 1);
  CHECK(futex_kmallocs(s) == 1);
  CHECK(s.mm.count(Op::kfree) == 0);
  CHECK(s.ev(Event::io_cache_get) == 99999);
  CHECK(s.ev(Event::futex_wait_arm_fail) == 100000);
  CHECK(s.ev(Event::futex_arm_fail_kfree) == 0);
  // Requests: each wait is its own io_uring_enter, completions flush at
  // once, so the first refill's 8 requests are reused: one bulk call.
  CHECK(s.mm.count(Op::kmem_cache_alloc_bulk) == 1);
  // Teardown on the kworker frees the one cached object and 8 requests.
  s.io->ring_exit(r, kKworker);
  CHECK(kfrees_of(s, 144) == 1);
  CHECK(s.mm.calls().back().cpu == kKworker.cpu);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}

TEST_CASE("futex: unpatched, 100,000 failing FUTEX_WAITs do 100,000 kmalloc + kfree",
          "[io_uring][futex][seed001]") {
  Sim s("v6.18", "unpatched");
  const int r = s.io->ring_create(kApp);
  s.mm.clear_calls();
  for (int i = 0; i < 100000; i++) REQUIRE(s.io->futex_wait(r, false) == kEAGAIN);
  CHECK(futex_kmallocs(s) == 100000);
  CHECK(kfrees_of(s, 144) == 100000);
  CHECK(s.mm.count_if([](const Call& c) { return c.op == Op::kfree && c.cpu != kApp.cpu; }) == 0);
  CHECK(s.ev(Event::io_cache_get) == 0);
  CHECK(s.ev(Event::futex_arm_fail_kfree) == 100000);
  s.io->ring_exit(r, kKworker);
  CHECK(kfrees_of(s, 144) == 100000);  // nothing was cached
  CHECK(s.live_after_task_exit() == 0);
}

TEST_CASE("futex: event loop with 39% failed arms does 0.39 kmalloc+kfree per message",
          "[io_uring][futex][seed001]") {
  // One FUTEX_WAIT re-armed per message; messages i with i % 100 < 39 fail
  // to arm, the others arm and are woken by a FUTEX_WAKE (completion puts
  // the data back into futex_cache). At most one wait is outstanding, so
  // the cache holds 0 or 1 object: 1 after a success, 0 after a failure.
  // Unpatched, a message allocates iff the cache is empty before it: the
  // first message, and every message that follows a failure. Failures are
  // messages 0..38 of each block of 100, so per block the messages
  // following a failure are 1..39 (39 of them); the first block adds
  // message 0. kmalloc = 1 + 1000 * 39 = 39,001; kfree = the 39,000
  // failures (a success's put always finds room). 0.39 per message.
  // With futex-return-to-cache a failure puts the object back too, so only
  // message 0 allocates.
  auto run = [](std::string_view spec) {
    auto s = std::make_unique<Sim>("v6.18", spec);
    const int r = s->io->ring_create(kApp);
    s->mm.clear_calls();
    for (int i = 0; i < 100000; i++) {
      const bool fails = i % 100 < 39;
      REQUIRE(s->io->futex_wait(r, !fails) == (fails ? kEAGAIN : 0));
      if (!fails) REQUIRE(s->io->futex_wake(r, 1) == 1);
    }
    return std::make_pair(std::move(s), r);
  };
  SECTION("unpatched") {
    auto [s, r] = run("unpatched");
    CHECK(futex_kmallocs(*s) == 39001);
    CHECK(kfrees_of(*s, 144) == 39000);
    CHECK(s->ev(Event::futex_complete) == 61000);
    // Priced apart: the armed waits, and the failed ones alone.
    CHECK(s->ev(Event::futex_wait) == 61000);
    CHECK(s->ev(Event::futex_wait_arm_fail) == 39000);
    s->io->ring_exit(r, kKworker);
    CHECK(kfrees_of(*s, 144) == 39001);  // the last message was a success
    CHECK(s->live_after_task_exit() == 0);
  }
  SECTION("futex-return-to-cache") {
    auto [s, r] = run("futex-return-to-cache");
    CHECK(futex_kmallocs(*s) == 1);
    CHECK(kfrees_of(*s, 144) == 0);
    s->io->ring_exit(r, kKworker);
    CHECK(kfrees_of(*s, 144) == 1);
    CHECK(s->live_after_task_exit() == 0);
  }
}

TEST_CASE("futex: WAITV is one allocation and one free per request",
          "[io_uring][futex][seed000]") {
  // Workload v0: per cycle 8 FUTEX_WAITV of 8 entries in one enter, then 8
  // FUTEX_WAKE each waking one waiter; 512 cycles = 4,096 WAITV.
  struct Case {
    const char* profile;
    const char* spec;
    uint32_t size;
    gfp_t gfp;
  };
  const Case cases[] = {
      {"v6.18", "unpatched", 8 * 160, GFP_KERNEL | __GFP_ZERO},
      {"v6.18", "waitv-account", 8 * 160, GFP_KERNEL_ACCOUNT | __GFP_ZERO},
      {"v7.1", "unpatched", 8 + 8 * 160, GFP_KERNEL_ACCOUNT | __GFP_ZERO},
      {"v7.2", "unpatched", 8 + 8 * 160, GFP_KERNEL_ACCOUNT | __GFP_ZERO},
      {"v7.2", "waitv-noaccount", 8 + 8 * 160, GFP_KERNEL | __GFP_ZERO},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.profile << " " << c.spec) {
      Sim s(c.profile, c.spec);
      const int r = s.io->ring_create(kApp, RingParams{64, 128, false});
      s.mm.clear_calls();
      for (int cycle = 0; cycle < 512; cycle++) {
        s.io->enter_begin(r);
        for (int v = 0; v < 8; v++) REQUIRE(s.io->futex_waitv(r, 8) == 0);
        s.io->enter_end(r);
        s.io->enter_begin(r);
        for (int v = 0; v < 8; v++) REQUIRE(s.io->futex_wake(r, 1) == 1);
        s.io->enter_end(r);
      }
      CHECK(s.mm.count(Op::kmalloc) == 4096);
      CHECK(s.mm.count_if([&](const Call& x) {
        return x.op == Op::kmalloc && x.size == c.size && x.gfp == c.gfp;
      }) == 4096);
      CHECK(s.mm.count(Op::kfree, c.size) == 4096);
      CHECK(s.ev(Event::futexv_alloc_account) == ((c.gfp & __GFP_ACCOUNT) ? 4096u : 0u));
      CHECK(s.ev(Event::futexv_entries) == 4096 * 8);
      // 16 requests in flight per enter: two bulk refills, once.
      CHECK(s.mm.count(Op::kmem_cache_alloc_bulk) == 2);
      s.io->ring_exit(r, kKworker);
      CHECK(s.live_after_task_exit() == 0);
      CHECK(s.mm.reports().empty());
    }
  }
}

TEST_CASE("futex: WAITV sizes, limits, arm failure", "[io_uring][futex][seed000]") {
  Sim s("v7.1");
  const int r = s.io->ring_create(kApp);
  s.mm.clear_calls();
  CHECK(s.io->futex_waitv(r, 0) == kEINVAL);
  CHECK(s.io->futex_waitv(r, FUTEX_WAITV_MAX + 1) == kEINVAL);
  CHECK(s.mm.count(Op::kmalloc) == 0);
  // 128 entries: 8 + 128 * 160 = 20,488 B > 8 KiB: a large kmalloc.
  CHECK(s.io->futex_waitv(r, 128) == 0);
  CHECK(s.mm.count(Op::kmalloc, 20488) == 1);
  CHECK(s.ev(Event::kmalloc_large) == 1);
  // A mismatching word fails the request and frees the vector at once.
  CHECK(s.io->futex_waitv(r, 4, false) == kEAGAIN);
  CHECK(s.mm.count(Op::kfree, 8 + 4 * 160) == 1);
  // The armed 128-entry WAITV is cancelled at exit by the kworker and
  // freed by its task_work completion, on the submitter's CPU.
  s.io->ring_exit(r, kKworker);
  CHECK(s.ev(Event::futex_cancel) == 1);
  CHECK(s.mm.count_if([](const Call& c) {
    return c.op == Op::kfree && c.size == 20488 && c.cpu == kApp.cpu;
  }) == 1);
  CHECK(s.live_after_task_exit() == 0);
}

TEST_CASE("futex: armed waits cancelled at ring exit return to the cache",
          "[io_uring][futex]") {
  Sim s("v6.18");
  const int r = s.io->ring_create(kApp);
  // 40 armed waits: all miss (kmalloc), nothing freed yet.
  for (int i = 0; i < 40; i++) REQUIRE(s.io->futex_wait(r, true) == 0);
  CHECK(futex_kmallocs(s) == 40);
  s.mm.clear_calls();
  // Exit: the kworker cancels the 40 (__io_futex_cancel()), and each
  // completes with -ECANCELED in task_work on the submitter's task, as a
  // cancelled poll does (io_req_task_work_add()): io_cache_free keeps 32
  // and kfrees 8 (cache full) there. The teardown then kfrees the 32 on
  // the kworker; the task drops the ring's io_tctx_node itself.
  s.io->ring_exit(r, kKworker);
  CHECK(s.ev(Event::futex_cancel) == 40);
  CHECK(s.ev(Event::task_work_run) == 40);  // an item per cancelled wait
  CHECK(s.ev(Event::io_cache_put_full) == 8);
  CHECK(kfrees_of(s, 144) == 40);
  CHECK(s.mm.count_if([](const Call& c) {
    return c.op == Op::kfree && c.cpu == kApp.cpu && c.size == 144;
  }) == 8);
  CHECK(s.mm.count_if([](const Call& c) {
    return c.op == Op::kfree && c.cpu == kKworker.cpu && c.size == 144;
  }) == 32);
  CHECK(s.mm.count_if([](const Call& c) {
    return c.op == Op::kfree && c.cpu == kApp.cpu && c.size == kIoTctxNodeSize;
  }) == 1);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}

TEST_CASE("futex: allocation failures complete the request with an error",
          "[io_uring][futex]") {
  Sim s("v6.18");
  const int r = s.io->ring_create(kApp);
  s.mm.fail_if = [](const Call& c) { return c.op == Op::kmalloc && c.size == 144; };
  CHECK(s.io->futex_wait(r, true) == kENOMEM);
  // No futex_wait_setup() ran: neither arm event is counted.
  CHECK(s.ev(Event::futex_wait) == 0);
  CHECK(s.ev(Event::futex_wait_arm_fail) == 0);
  s.mm.fail_if = [](const Call& c) { return c.op == Op::kmalloc; };
  CHECK(s.io->futex_waitv(r, 8) == kENOMEM);
  s.mm.fail_if = [](const Call& c) {
    return c.op == Op::kmem_cache_alloc_bulk || c.op == Op::kmem_cache_alloc;
  };
  // The request cache is warm (8 requests): still fine ...
  CHECK(s.io->futex_wait(r, true) == 0);
  s.mm.fail_if = nullptr;
  CHECK(s.ev(Event::cqe_post) == 2);  // the two failed requests
  s.io->ring_exit(r, kKworker);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}

TEST_CASE("futex: a wake's completions run as task_work when the enter returns",
          "[io_uring][futex]") {
  // io_futex_wake_fn() only queues the woken wait's completion
  // (io_req_task_work_add()); it runs when the io_uring_enter() returns.
  // Enter 1 arms 32 waits (futex_cache empty: 32 kmalloc(144)). Enter 2
  // wakes them and arms 32 more: the new waits find futex_cache still
  // empty (32 more kmallocs); the 32 woken return to the cache at the
  // enter's end. The ring's exit cancels the 32 armed: the cache (max 32)
  // is full, so they are kfree'd, and so are the 32 cached at teardown:
  // 64 and 64.
  Sim s("v6.18", "unpatched");
  const int r = s.io->ring_create(kApp);
  s.mm.clear_calls();
  s.io->enter_begin(r);
  for (int i = 0; i < 32; i++) REQUIRE(s.io->futex_wait(r, true) == 0);
  s.io->enter_end(r);
  CHECK(futex_kmallocs(s) == 32);
  s.io->enter_begin(r);
  for (int i = 0; i < 32; i++) REQUIRE(s.io->futex_wake(r, 1) == 1);
  CHECK(s.ev(Event::futex_complete) == 0);  // queued, not run
  CHECK(s.ev(Event::task_work_run) == 0);
  for (int i = 0; i < 32; i++) REQUIRE(s.io->futex_wait(r, true) == 0);
  CHECK(futex_kmallocs(s) == 64);
  CHECK(s.ev(Event::io_cache_get) == 0);
  s.io->enter_end(r);
  CHECK(s.ev(Event::futex_complete) == 32);
  CHECK(s.ev(Event::task_work_run) == 32);
  CHECK(s.ev(Event::io_cache_put) == 32);  // the woken waits' data, into the cache
  CHECK(kfrees_of(s, 144) == 0);
  s.io->ring_exit(r, kKworker);
  CHECK(kfrees_of(s, 144) == 64);
  CHECK(s.live_after_task_exit() == 0);
  CHECK(s.mm.reports().empty());
}
