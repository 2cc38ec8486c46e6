// Ring set-up, request cache and teardown against the counting fake:
// everything allocated is freed (every profile x policy), every
// allocation failure leaves the model consistent, and the model's KASAN
// catches the seeded bugs.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "test_io_uring_util.h"
#include "test_policy_util.h"

using namespace simcache;
using namespace simcache::iou;
using namespace simcache::testing;

namespace {

// A scenario touching every operation. Errors are tolerated (the fault
// sweep makes any allocation fail); it must never corrupt the model.
void mixed_scenario(Sim& s) {
  const int src = s.io->ring_create(kApp);
  const int dst = s.io->ring_create(kOtherCpu, RingParams{64, 0, true});
  s.io->files_register(src, 2);
  s.io->files_register_sparse(dst, 300, true);
  send_fill(s, src, dst, 150);
  s.io->files_update_remove(dst, 0, 100);
  send_fill(s, src, dst, 40, true);
  s.io->files_update_set(dst, 200, 20);
  s.io->fixed_fd_install(dst, 7);
  for (int i = 0; i < 50; i++) s.io->futex_wait(src, i % 3 != 0);
  s.io->futex_wake(src, 20);
  s.io->futex_waitv(src, 8);
  s.io->futex_waitv(src, 60);
  s.io->futex_waitv(src, 3, false);
  s.io->futex_wake(src, 1);
  s.io->poll_add(dst);
  s.io->io_uring_enter(dst, 20);
  s.io->files_unregister(dst);
  s.io->files_register_sparse(dst, 5000);
  send_fill(s, src, dst, 10);
  s.io->ring_exit(src, kKworker);
  s.io->ring_exit(dst, kKworker);
  s.io->task_exit_all();
}

uint64_t kmallocs_of(const Sim& s, uint64_t size, gfp_t gfp) {
  return s.mm.count_if(
      [&](const Call& c) { return c.op == Op::kmalloc && c.size == size && c.gfp == gfp; });
}

}  // namespace

TEST_CASE("ring: create allocates ctx, cancel table and cache arrays, exit frees all",
          "[io_uring][ring]") {
  SECTION("v6.18") {
    Sim s("v6.18");
    const int r = s.io->ring_create(kApp);  // 256 SQ, 512 CQ entries
    REQUIRE(r == 0);
    // ctx: kzalloc(1472) (kmalloc-2k); percpu_ref data kzalloc(56); cancel
    // table: ilog2(512) - 5 = 4 bits -> 16 * 64 B; entries arrays: apoll 32,
    // futex 32 (256 B each), netmsg, rw, cmd, node, imu 128 (1024 B each;
    // no msg_cache on 6.18); region page arrays: rings 192 + 512 * 16 +
    // 256 * 4 B = 3 pages (24 B), SQEs 256 * 64 B = 4 pages (32 B). The
    // task's first ring: io_uring_task (320), io_wq_hash (40), io_wq (808),
    // and the ring's io_tctx_node (32). The live kernel's 6.18 trace makes
    // the same 12 + 4 (docs/measure.md).
    CHECK(kmallocs_of(s, 1472, GFP_KERNEL | __GFP_ZERO) == 1);
    CHECK(kmallocs_of(s, 56, GFP_KERNEL | __GFP_ZERO) == 1);
    CHECK(kmallocs_of(s, 320, GFP_KERNEL | __GFP_ZERO) == 1);
    CHECK(kmallocs_of(s, 40, GFP_KERNEL | __GFP_ZERO) == 1);
    CHECK(kmallocs_of(s, 808, GFP_KERNEL | __GFP_ZERO) == 1);
    CHECK(kmallocs_of(s, 32, GFP_KERNEL) == 1);
    CHECK(s.mm.count(Op::kmalloc) == 6);
    CHECK(s.mm.count(Op::kvmalloc) == 10);
    CHECK(s.mm.count(Op::kvmalloc, 256) == 2);
    CHECK(s.mm.count(Op::kvmalloc, 1024) == 6);  // 5 arrays + the cancel table
    CHECK(s.mm.count(Op::kvmalloc, 24) == 1);
    CHECK(s.mm.count(Op::kvmalloc, 32) == 1);
    CHECK(s.mm.count_if([](const Call& c) {
      return c.op == Op::kvmalloc && c.gfp == GFP_KERNEL_ACCOUNT;
    }) == 1);
    CHECK(s.mm.count_if([](const Call& c) {
      return c.op == Op::kvmalloc && c.gfp == (GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
    }) == 2);
    // The regions' pages, with the arrays' gfp (Mm::alloc_page_region()
    // makes each one compound), then mapped by the program.
    CHECK(s.mm.count(Op::alloc_page_region) == 2);
    CHECK(s.mm.count(Op::alloc_page_region, 3 * 4096) == 1);
    CHECK(s.mm.count(Op::alloc_page_region, 4 * 4096) == 1);
    CHECK(s.mm.count_if([](const Call& c) {
      return c.op == Op::alloc_page_region &&
             c.gfp == (GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN);
    }) == 2);
    CHECK(s.ev(Event::ring_pages_mapped) == 7);
    CHECK(s.io->task_contexts() == 1);
    s.mm.clear_calls();
    REQUIRE(s.io->ring_exit(r, kKworker) == 0);
    CHECK(s.mm.count(Op::free_page_region) == 2);
    CHECK(s.mm.count(Op::kvfree) == 10);
    // ctx, percpu_ref data, the node (on the task); the hash stays: the
    // task's io_wq holds it.
    CHECK(s.mm.count(Op::kfree) == 3);
    CHECK(s.mm.count_if([](const Call& c) { return c.op == Op::kfree && c.cpu == kApp.cpu; }) == 1);
    CHECK(s.mm.live_objects() == 3);
    s.mm.clear_calls();
    s.io->task_exit_all();  // io_wq, its hash reference (the last), the io_uring_task
    CHECK(s.mm.count(Op::kfree) == 3);
    CHECK(s.mm.live_objects() == 0);
    CHECK(s.io->task_contexts() == 0);
    CHECK(s.io->ring_exit(r, kKworker) == kEBADF);
    CHECK(s.io->futex_wait(r, true) == kEBADF);
  }
  SECTION("v6.13 has no node/imu cache arrays, and a msg_cache") {
    Sim s("v6.13");
    s.io->ring_create(kApp, RingParams{8, 0, false});  // 16 CQ: hash bits clamp to 1
    CHECK(s.mm.count(Op::kvmalloc) == 9);           // 6 arrays, cancel table, 2 regions
    CHECK(s.mm.count(Op::kvmalloc, 2 * 64) == 1);
    CHECK(s.mm.count(Op::kvmalloc, 8) == 2);        // one page each
    CHECK(s.io->ring(0).msg_cache.max_cached == IO_ALLOC_CACHE_MAX);
  }
  SECTION("v6.12 and v6.13 have msg_cache; v6.18 and v7.x do not") {
    for (const char* k : {"v6.12", "v6.13", "v6.18", "v7.1"}) {
      Sim s(k);
      s.io->ring_create(kApp);
      CHECK(s.io->ring(0).msg_cache.max_cached ==
            (std::string(k) < "v6.14" ? IO_ALLOC_CACHE_MAX : 0u));
    }
  }
  SECTION("a CQ size that is not a power of two is rounded up first") {
    Sim s("v6.18");
    s.io->ring_create(kApp, RingParams{100, 300, false});  // 128 SQ, 512 CQ
    CHECK(s.mm.count(Op::kvmalloc, 16 * 64) == 6);  // cancel table 4 bits, as for 512
    // rings: 192 + 512 * 16 + 128 * 4 = 8896 B -> 3 pages; SQEs 8 KiB -> 2.
    CHECK(s.mm.count(Op::kvmalloc, 24) == 1);
    CHECK(s.mm.count(Op::kvmalloc, 16) == 1);
    CHECK(s.ev(Event::ring_pages_mapped) == 5);
  }
  SECTION("a failed region tears the new ring down and leaves nothing") {
    Sim s("v6.18");
    s.mm.fail_if = [](const Call& c) { return c.op == Op::alloc_page_region && c.size == 4 * 4096; };
    CHECK(s.io->ring_create(kApp) == kENOMEM);  // the SQEs' region, the second
    CHECK(s.ev(Event::ring_pages_mapped) == 0);
    CHECK(s.mm.count(Op::free_page_region) == 1);  // the rings' region, given back
    CHECK(s.live_after_task_exit() == 0);
    CHECK(s.mm.reports().empty());
  }
  SECTION("a ring that fails after its regions maps none of their pages") {
    Sim s("v6.18");
    // The ring's io_tctx_node (32 B, GFP_KERNEL), after both regions.
    s.mm.fail_if = [](const Call& c) {
      return c.op == Op::kmalloc && c.size == 32 && c.gfp == GFP_KERNEL;
    };
    CHECK(s.io->ring_create(kApp) == kENOMEM);
    CHECK(s.mm.count(Op::alloc_page_region) == 2);
    CHECK(s.mm.count(Op::free_page_region) == 2);
    CHECK(s.ev(Event::ring_pages_mapped) == 0);
    CHECK(s.ev(Event::ring_create) == 0);
    CHECK(s.live_after_task_exit() == 0);
    CHECK(s.mm.reports().empty());
  }
  SECTION("the kernel instance creates io_kiocb (and io_rsrc_node with node-slab)") {
    Sim s("v6.18", "node-slab");
    const auto& req = s.mm.cache(s.io->req_cachep());
    CHECK(req.name == "io_kiocb");
    CHECK(req.object_size == 248);
    CHECK(req.flags == (SLAB_HWCACHE_ALIGN | SLAB_PANIC | SLAB_ACCOUNT | SLAB_TYPESAFE_BY_RCU));
    CHECK(s.mm.cache(s.io->rsrc_node_cachep()).object_size == 24);
    Sim u("v6.18");
    CHECK(u.io->rsrc_node_cachep() == kNoCache);
  }
}

TEST_CASE("ring: one io_uring context per task, one tctx node per ring, freed at task exit",
          "[io_uring][ring][tctx]") {
  Sim s("v6.18");
  const int a = s.io->ring_create(kApp);
  const int b = s.io->ring_create(kApp);
  const int c = s.io->ring_create(kOtherCpu);
  // Per task: io_uring_task + io_wq, and a hash_map on its first ring;
  // per ring: one io_tctx_node.
  CHECK(kmallocs_of(s, 320, GFP_KERNEL | __GFP_ZERO) == 2);
  CHECK(kmallocs_of(s, 808, GFP_KERNEL | __GFP_ZERO) == 2);
  CHECK(kmallocs_of(s, 40, GFP_KERNEL | __GFP_ZERO) == 2);
  CHECK(kmallocs_of(s, 32, GFP_KERNEL) == 3);
  CHECK(s.io->ring(a).hash_map != kNull);
  CHECK(s.io->ring(b).hash_map == kNull);
  CHECK(s.io->ring(c).hash_map != kNull);
  CHECK(s.io->task_contexts() == 2);
  // The tasks exit before the rings' teardown: their nodes go with them
  // (on their CPUs), and a ring's teardown drops the last hash reference.
  s.mm.clear_calls();
  s.io->task_exit_all();
  CHECK(s.mm.count(Op::kfree) == 3 + 2 * 2);  // 3 nodes, 2 x (io_wq, tctx)
  CHECK(s.io->task_contexts() == 0);
  s.mm.clear_calls();
  s.io->ring_exit(a, kKworker);
  CHECK(s.mm.count(Op::kfree) == 3);  // ctx, percpu_ref data, hash_map (last reference)
  s.io->ring_exit(b, kKworker);
  s.io->ring_exit(c, kKworker);
  CHECK(s.mm.live_objects() == 0);
  // A new ring after the exit: a fresh task context.
  s.mm.clear_calls();
  s.io->ring_create(kApp);
  CHECK(kmallocs_of(s, 320, GFP_KERNEL | __GFP_ZERO) == 1);
  CHECK(s.live_after_task_exit() > 0);  // the ring is still open
}

TEST_CASE("ring: a failed task context fails the ring set-up and frees what it built",
          "[io_uring][ring][tctx][faults]") {
  for (uint32_t size : {320u, 40u, 808u, 32u}) {
    Sim s("v6.18");
    s.mm.fail_if = [size](const Call& c) { return c.op == Op::kmalloc && c.size == size; };
    CHECK(s.io->ring_create(kApp) == kENOMEM);
    CHECK(s.io->task_contexts() == (size == 32 ? 1u : 0u));
    s.mm.fail_if = nullptr;
    CHECK(s.live_after_task_exit() == 0);
  }
}

TEST_CASE("ring: request cache refills in bulks of 8 and returns requests on completion",
          "[io_uring][ring][req]") {
  Sim s("v6.18");
  const int r = s.io->ring_create(kApp);
  const CacheId rc = s.io->req_cachep();
  s.mm.clear_calls();
  // 20 NOPs in one enter: completions are flushed only at the end, so the
  // free list runs dry after 8 and 16: 3 bulk refills, 24 requests.
  CHECK(s.io->io_uring_enter(r, 20) == 20);
  CHECK(s.bulk_calls(rc) == 3);
  CHECK(s.bulk_objs(rc) == 24);
  REQUIRE(s.mm.calls().back().op == Op::kmem_cache_alloc_bulk);
  CHECK(s.mm.calls().back().gfp == (GFP_KERNEL | __GFP_NOWARN | __GFP_ZERO));
  CHECK(s.io->ring(r).req_free.size() == 24);
  CHECK(s.io->ring(r).nr_req_allocated == 24);
  CHECK(s.io->io_uring_enter(r, 24) == 24);
  CHECK(s.bulk_calls(rc) == 3);  // all from the free list
  CHECK(s.ev(Event::cqe_reap) == 44);
  // Bulk failure: one kmem_cache_alloc per refill instead.
  s.mm.fail_if = [rc](const Call& c) { return c.op == Op::kmem_cache_alloc_bulk && c.cache == rc; };
  CHECK(s.io->io_uring_enter(r, 27) == 27);
  CHECK(s.cache_calls(Op::kmem_cache_alloc, rc) == 3);
  // Nothing at all: the enter submits what it could.
  s.mm.fail_if = [rc](const Call& c) { return c.cache == rc; };
  CHECK(s.io->io_uring_enter(r, 30) == 27);
  s.mm.fail_if = nullptr;
  s.mm.clear_calls();
  s.io->ring_exit(r, kKworker);
  CHECK(s.cache_calls(Op::kmem_cache_free, rc) == 27);
  CHECK(s.ev(Event::req_cache_free) == 27);
  CHECK(s.live_after_task_exit() == 0);
}

TEST_CASE("ring: teardown frees everything under every profile and policy",
          "[io_uring][ring][teardown]") {
  // Every table entry (with a prerequisite where it needs one) and two
  // maximal combinations per profile: 59 runs for the 12 policies of today.
  size_t runs = 0;
  for (const KernelProfile& p : kernel_profiles()) runs += policy_specs(p).size();
  CHECK(runs >= 59);
  for (const KernelProfile& p : kernel_profiles()) {
    for (const std::string& spec : policy_specs(p)) {
      DYNAMIC_SECTION(p.name << " " << spec) {
        Sim s(p.name, spec);
        mixed_scenario(s);
        CHECK(s.live_after_task_exit() == 0);
        CHECK(s.mm.reports().empty());
        CHECK(s.ev(Event::ring_teardown) == 2);
      }
    }
  }
}

TEST_CASE("ring: every allocation failure leaves the model consistent",
          "[slow][io_uring][ring][faults]") {
  const KernelProfile& v618 = *profile_by_name("v6.18", nullptr);
  for (const std::string& spec : {std::string("unpatched"), maximal_policy(v618, false)}) {
    // Count the allocation calls of a clean run, then fail each in turn.
    Sim clean("v6.18", spec);
    mixed_scenario(clean);
    const uint64_t n = clean.mm.count(Op::kmalloc) + clean.mm.count(Op::kvmalloc) +
                       clean.mm.count(Op::kmem_cache_alloc) +
                       clean.mm.count(Op::kmem_cache_alloc_bulk);
    REQUIRE(n > 100);
    uint64_t bad = 0;
    for (uint64_t k = 1; k <= n; k++) {
      Sim s("v6.18", spec);
      s.mm.fail_nth_alloc(k);
      mixed_scenario(s);
      if (s.mm.live_objects() != 0 || !s.mm.reports().empty()) {
        if (bad++ < 3) {
          UNSCOPED_INFO(spec << ": failing allocation " << k << " leaves "
                             << s.mm.live_objects() << " live, " << s.mm.reports().size()
                             << " reports");
        }
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("ring: the model's KASAN catches the seeded bugs", "[io_uring][ring][kasan]") {
  auto run = [](DebugBug bug, uint32_t installs) {
    auto s = std::make_unique<Sim>("v6.18", "unpatched", bug);
    const int src = make_source(*s);
    const int dst = s->io->ring_create(kApp);
    s->io->files_register_sparse(dst, 256);
    send_fill(*s, src, dst, installs);
    s->io->files_update_remove(dst, 0, installs);
    s->io->exit_all(kKworker);
    return s;
  };
  SECTION("control: no bug, no report, no leak") {
    auto s = run(DebugBug::none, 200);
    CHECK(s->mm.reports().empty());
    CHECK(s->mm.check_leaks() == 0);
  }
  SECTION("double put while the cache has room: the second poison is refused") {
    auto s = run(DebugBug::double_put_node, 4);
    CHECK(s->mm.has_report("double-put"));
  }
  SECTION("double put with the cache full: the second free is a double free") {
    auto s = run(DebugBug::double_put_node, 200);
    CHECK(s->mm.has_report("double-free"));
  }
  SECTION("leaked node: found at teardown") {
    auto s = run(DebugBug::leak_node, 10);
    CHECK(s->mm.reports().empty());
    CHECK(s->mm.check_leaks() == 10);
    CHECK(s->mm.has_report("leak"));
  }
  SECTION("use after put") {
    auto s = run(DebugBug::use_after_put_node, 4);
    CHECK(s->mm.has_report("use-after-put"));
  }
}

TEST_CASE("ring: CQEs past a full CQ ring overflow into kzalloc'ed entries that a flush frees",
          "[io_uring][ring]") {
  // A ring of 4 SQ entries holds 8 CQEs. 12 polls cancelled at its exit
  // post 12: 8 fill the ring, 4 overflow, each an io_overflow_cqe of 32
  // bytes kzalloc'ed GFP_NOWAIT | __GFP_ACCOUNT in the submitter's
  // task_work (its CPU), and dropped with the ring on the kworker. The
  // live 6.18 trace shows the same (tests/count_oracle.sh, pollov).
  const gfp_t ocqe = GFP_NOWAIT | __GFP_ACCOUNT | __GFP_ZERO;
  // 12 polls parked on a 4-entry ring, then its exit; returns where the
  // exit's calls begin.
  const auto park_and_exit = [](Sim& s, bool defer_taskrun) {
    const int r = s.io->ring_create(kApp, {4, 0, defer_taskrun});
    REQUIRE(r >= 0);
    s.io->enter_begin(r);
    for (int i = 0; i < 12; ++i) REQUIRE(s.io->poll_add(r) == 0);
    s.io->enter_end(r);
    const size_t before = s.mm.calls().size();
    s.io->ring_exit(r, kKworker);
    return before;
  };
  SECTION("dropped at teardown") {
    Sim s("v6.18");
    const size_t before = park_and_exit(s, false);
    CHECK(s.mm.events()[Event::cqe_overflow] == 4);
    CHECK(s.mm.events()[Event::cqe_post] == 12);
    CHECK(s.mm.events()[Event::task_work_run] == 12);  // an item per cancelled poll
    size_t allocs = 0, frees = 0;
    std::vector<Ptr> got;
    for (size_t i = before; i < s.mm.calls().size(); ++i) {
      const Call& c = s.mm.calls()[i];
      if (c.op == Op::kmalloc && c.size == 32 && c.gfp == ocqe) {
        ++allocs;
        CHECK(c.cpu == kApp.cpu);
        got.push_back(c.p);
      }
      if (c.op == Op::kfree && std::find(got.begin(), got.end(), c.p) != got.end()) {
        ++frees;
        CHECK(c.cpu == kKworker.cpu);
      }
    }
    CHECK(allocs == 4);
    CHECK(frees == 4);
    s.io->task_exit_all();
    CHECK(s.mm.live_objects() == 0);
  }
  SECTION("a DEFER_TASKRUN ring: the cancels run from the fallback work, on the kworker") {
    // The same 12 polls on a SINGLE_ISSUER|DEFER_TASKRUN ring: the exit
    // moves their task_work to the ring's fallback work, which runs on the
    // kworker. The 4 overflow entries are allocated there (GFP_KERNEL:
    // the lockless CQ, zeroed and accounted) and the 12 requests go back
    // from there too.
    Sim s("v6.18");
    const size_t before = park_and_exit(s, true);
    CHECK(s.mm.events()[Event::cqe_overflow] == 4);
    CHECK(s.mm.events()[Event::task_work_run] == 12);
    size_t allocs = 0, on_app = 0;
    for (size_t i = before; i < s.mm.calls().size(); ++i) {
      const Call& c = s.mm.calls()[i];
      on_app += c.cpu == kApp.cpu;
      if (c.op == Op::kmalloc && c.size == 32 && c.gfp == (GFP_KERNEL | __GFP_ACCOUNT | __GFP_ZERO)) {
        ++allocs;
        CHECK(c.cpu == kKworker.cpu);
      }
    }
    CHECK(allocs == 4);
    // The submitter's task drops its tctx node; nothing else of the exit
    // runs on its CPU.
    CHECK(on_app <= 1);
    s.io->task_exit_all();
    CHECK(s.mm.live_objects() == 0);
  }
  SECTION("flushed into the ring by the next enter") {
    // 12 SEND_FDs into a 4-entry target in one enter: its 12 CQEs are 8 in
    // the ring and 4 overflowed. Reaping from userspace takes the 8; the
    // next io_uring_enter() on the target flushes the 4 into the ring
    // (each entry kfree'd on the target's task) and they are reaped.
    Sim s("v6.18");
    const int src = make_source(s);
    const int dst = s.io->ring_create(kApp, {4, 0, false});
    REQUIRE(dst >= 0);
    s.io->files_register_sparse(dst, 64);
    s.io->enter_begin(src);
    for (int i = 0; i < 12; ++i)
      REQUIRE(s.io->msg_ring_send_fd(src, dst, 0, IORING_FILE_INDEX_ALLOC) >= 0);
    s.io->enter_end(src);
    CHECK(s.mm.events()[Event::cqe_overflow] == 4);
    const size_t before = s.mm.calls().size();
    CHECK(s.io->reap_cq(dst) == 8);
    CHECK(s.mm.calls().size() == before);  // no syscall, no flush
    const uint64_t reaped = s.mm.events()[Event::cqe_reap];
    s.io->enter_begin(dst);
    s.io->enter_end(dst);
    CHECK(s.mm.events()[Event::cqe_reap] == reaped + 4);
    size_t frees = 0;
    for (size_t i = before; i < s.mm.calls().size(); ++i)
      if (s.mm.calls()[i].op == Op::kfree) {
        ++frees;
        CHECK(s.mm.calls()[i].cpu == kApp.cpu);
      }
    CHECK(frees == 4);
    CHECK(s.io->reap_cq(dst) == 0);
    // The previous (v6.12) kernels kmalloc them GFP_ATOMIC, unzeroed.
    Sim old("v6.12");
    const int r = old.io->ring_create(kApp, {4, 0, false});
    old.io->enter_begin(r);
    for (int i = 0; i < 9; ++i) old.io->poll_add(r);
    old.io->enter_end(r);
    old.io->ring_exit(r, kKworker);
    CHECK(kmallocs_of(old, 32, GFP_ATOMIC | __GFP_ACCOUNT) == 1);
  }
  SECTION("a DEFER_TASKRUN ring's lockless CQ allocates GFP_KERNEL; a CQ below the SQ is refused") {
    Sim s("v6.18");
    const int r = s.io->ring_create(kApp, {4, 0, true});
    REQUIRE(r >= 0);
    s.io->enter_begin(r);
    for (int i = 0; i < 9; ++i) s.io->poll_add(r);
    s.io->enter_end(r);
    s.io->ring_exit(r, kKworker);
    CHECK(kmallocs_of(s, 32, GFP_KERNEL | __GFP_ACCOUNT | __GFP_ZERO) == 1);
    CHECK(s.io->ring_create(kApp, {8, 4, false}) == kEINVAL);
    CHECK(s.io->ring_create(kApp, {5, 4, false}) == kEINVAL);  // 8 SQ entries, 4 CQ
    CHECK(s.io->ring_create(kApp, {6, 5, false}) >= 0);        // both round up to 8
  }
}

TEST_CASE("ring: a closed ring's record is freed, its id stays taken and reads as dead",
          "[io_uring][ring]") {
  Sim s("v6.18");
  const int src = s.io->ring_create(kApp);
  REQUIRE(src == 0);
  int last = -1;
  for (int i = 0; i < 1000; ++i) {
    const int r = s.io->ring_create(kApp);
    REQUIRE(r == i + 1);  // ids are never reused
    CHECK(s.io->rings_held() == 2);
    REQUIRE(s.io->ring_exit(r, kApp) == 0);
    last = r;
  }
  CHECK(s.io->rings_held() == 1);  // the source only: not one record per ring made
  // A closed ring: not live, its table and caches empty; exit again is EBADF,
  // and a MSG_RING into it EBADFD, as before the record was freed.
  CHECK_FALSE(s.io->ring(last).live);
  CHECK(s.io->ring(last).files.nr == 0);
  CHECK(s.io->ring_exit(last, kApp) == kEBADF);
  CHECK_THROWS_AS(s.io->ring(last + 1), std::out_of_range);
  CHECK(s.io->ring_exit(last + 1, kApp) == kEBADF);
  s.io->files_register(src, 1);
  CHECK(s.io->msg_ring_send_fd(src, last, 0, IORING_FILE_INDEX_ALLOC) == kEBADFD);
  s.io->exit_all(kApp);
  CHECK(s.io->rings_held() == 0);
}

TEST_CASE("ring: polls armed beyond the last-level cache's share are cancelled cold",
          "[io_uring][ring]") {
  // A 64 KiB share holds 256 io_kiocbs of 256 bytes (248 rounded up to
  // whole cache lines by SLAB_HWCACHE_ALIGN): of 300 polls armed on one
  // ring, the 44 armed first are cold at its exit; on a second ring of
  // 200 none is. Without a share (0) nothing is counted cold.
  const auto run = [](uint32_t llc_kib) {
    auto s = std::make_unique<Sim>("v6.18");
    s->io->set_llc_kib(llc_kib);
    for (const int polls : {300, 200}) {
      const int r = s->io->ring_create(kApp, {512, 0, false});
      REQUIRE(r >= 0);
      s->io->enter_begin(r);
      for (int i = 0; i < polls; ++i) REQUIRE(s->io->poll_add(r) == 0);
      s->io->enter_end(r);
      s->io->ring_exit(r, kKworker);
    }
    return s;
  };
  const auto small = run(64);
  CHECK(small->ev(Event::req_cancel) == 500);
  CHECK(small->ev(Event::req_cold) == 44);
  CHECK(small->live_after_task_exit() == 0);
  CHECK(run(80)->ev(Event::req_cold) == 0);  // 320 fit
  CHECK(run(0)->ev(Event::req_cold) == 0);
}

TEST_CASE("ring: the program's first reads of a fresh ring's CQ array, page by page",
          "[io_uring][ring]") {
  // A 256-entry ring: 512 CQEs after the 192-byte header, the SQ index
  // array from byte 8,384 (page 2). CQEs 0 to 243 share page 0 with the
  // header (ring_first_use's), 244 to 499 are page 1, 500 on share page 2
  // with the SQ array the program wrote at set-up: one page to count.
  CHECK(cq_entry_page(243) == 0);
  CHECK(cq_entry_page(244) == 1);
  CHECK(cq_entry_page(499) == 1);
  CHECK(cq_entry_page(500) == 2);
  CHECK(sq_array_page(RingParams{256, 512, false}) == 2);
  // A source whose own first lap is behind it (a fill of 300 into a
  // scratch ring), then a fresh target: its pages alone are counted.
  const auto fresh_target = [](Sim& s, uint32_t slots, RingParams p) {
    const int src = s.io->ring_create(kApp);
    s.io->files_register(src, 1);
    const int scratch = s.io->ring_create(kApp);
    s.io->files_register_sparse(scratch, 512);
    REQUIRE(send_fill(s, src, scratch, 300) == 300);
    CHECK(s.mm.events()[Event::ring_cq_page] == 2);  // the source's page 1, the scratch's
    const int dst = s.io->ring_create(kApp, p);
    s.io->files_register_sparse(dst, slots);
    return std::pair{src, dst};
  };
  for (const auto& [installs, pages] : std::vector<std::pair<uint32_t, uint64_t>>{
           {64, 0}, {244, 0}, {245, 1}, {256, 1}, {1024, 1}}) {
    INFO(installs << " installs");
    Sim s("v6.18");
    const auto [src, dst] = fresh_target(s, 1024, RingParams{256, 0, false});
    REQUIRE(send_fill(s, src, dst, installs) == installs);
    CHECK(s.mm.events()[Event::ring_cq_page] - 2 == pages);
    s.io->task_exit_all();
  }
  SECTION("a replayed trace's ring (reaped in time) reads no page") {
    Sim s("v6.18");
    const auto [src, dst] = fresh_target(s, 1024, RingParams{256, 0, false, true});
    REQUIRE(send_fill(s, src, dst, 1024) == 1024);
    CHECK(s.mm.events()[Event::ring_cq_page] - 2 == 0);
    s.io->task_exit_all();
  }
  SECTION("a second lap reads no page for the first time; a 4,096-entry ring has 31") {
    // 8,192 CQEs: bytes 192 to 131,263; the SQ array from byte 131,264,
    // page 32: pages 1 to 31 are read first while reaping.
    CHECK(sq_array_page(RingParams{4096, 8192, false}) == 32);
    Sim s("v6.18");
    const auto [src, dst] = fresh_target(s, 8192, RingParams{4096, 0, false});
    REQUIRE(send_fill(s, src, dst, 8192) == 8192);
    CHECK(s.mm.events()[Event::ring_cq_page] - 2 == 31);
    s.io->files_update_remove(dst, 0, 8192);
    REQUIRE(send_fill(s, src, dst, 8192) == 8192);
    CHECK(s.mm.events()[Event::ring_cq_page] - 2 == 31);
    s.io->task_exit_all();
  }
}

TEST_CASE("ring: while overflowed CQEs wait, every new CQE overflows too, and a MSG_RING "
          "target's overflows with the profile's atomic gfp",
          "[io_uring][ring]") {
  // io_cqe_cache_refill() refuses the ring while IO_CHECK_CQ_OVERFLOW_BIT
  // is set: CQEs stay in order. 12 SEND_FDs into a 4-entry target (CQ of
  // 8): 8 in the ring, 4 overflowed. Reaping from userspace empties the
  // ring but not the list (no syscall): 2 more SEND_FDs overflow as well,
  // 6 in all; the target's next enter flushes the 6, which are reaped.
  const bool defer = GENERATE(false, true);
  INFO("target DEFER_TASKRUN " << defer);
  Sim s("v6.18");
  const int src = make_source(s);
  const int dst = s.io->ring_create(kApp, {4, 0, defer});
  REQUIRE(dst >= 0);
  s.io->files_register_sparse(dst, 64);
  s.io->enter_begin(src);
  for (int i = 0; i < 12; ++i)
    REQUIRE(s.io->msg_ring_send_fd(src, dst, 0, IORING_FILE_INDEX_ALLOC) >= 0);
  s.io->enter_end(src);
  CHECK(s.mm.events()[Event::cqe_overflow] == 4);
  CHECK(s.io->reap_cq(dst) == 8);
  s.io->enter_begin(src);
  for (int i = 0; i < 2; ++i)
    REQUIRE(s.io->msg_ring_send_fd(src, dst, 0, IORING_FILE_INDEX_ALLOC) >= 0);
  s.io->enter_end(src);
  CHECK(s.mm.events()[Event::cqe_overflow] == 6);
  CHECK(s.io->reap_cq(dst) == 0);
  const uint64_t reaped = s.mm.events()[Event::cqe_reap];
  s.io->enter_begin(dst);
  s.io->enter_end(dst);
  CHECK(s.mm.events()[Event::cqe_reap] == reaped + 6);
  // The target's CQEs are io_post_aux_cqe()'s: under the CQ lock, the
  // profile's atomic gfp even on a DEFER_TASKRUN (lockless CQ) target.
  const uint64_t entries = s.mm.count_if([&](const Call& c) {
    return c.op == Op::kmalloc && c.size == 32 && c.gfp == s.profile.ocqe_gfp;
  });
  CHECK(entries == 6);
}
