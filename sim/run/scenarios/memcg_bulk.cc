// memcg bulk charging (docs/workloads.md §6, seed 002): the module benchmark
// on a SLAB_ACCOUNT kmem_cache, and the io_uring request refill under
// POLL_ADD that never completes.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// kmem_cache_create("bench_memcg_cache", size, 0, SLAB_ACCOUNT); one
// warm-up bulk, then `iterations` x (alloc_bulk(bulk) + free). The free
// side (the thread's review, 002-d): `free` 0 is kmem_cache_free_bulk()
// per cache (the module's), 1 kfree_bulk() of the whole array, 2
// kfree_rcu() of each object with a grace period every `gp_every`
// iterations, its frees (kvfree_rcu batches through kfree_bulk(), or 7.x
// rcu_free sheaves) on the benchmark's CPU inside the timed loop. With
// `caches` > 1 the objects come from that many SLAB_ACCOUNT caches of
// sizes size, size + 64, ..., interleaved in the array the free gets.
void run_memcg_bulk(Env& e, const Params& p, Recorder& rec) {
  const int bulk = static_cast<int>(p.at("bulk"));
  const int ncaches = static_cast<int>(std::min<int64_t>(p.at("caches"), bulk));
  const int64_t free_mode = p.at("free"), gp_every = p.at("gp_every");
  std::vector<CacheId> caches;
  for (int c = 0; c < ncaches; ++c)
    caches.push_back(e.mm.kmem_cache_create(
        c ? fmt::format("bench_memcg_cache{}", c) : std::string("bench_memcg_cache"),
        static_cast<uint32_t>(p.at("size") + 64 * c), 0, SLAB_ACCOUNT));
  // Cache c's objects sit at c, c + ncaches, ...; share(c) of them.
  std::vector<Ptr> objs(static_cast<size_t>(bulk)), part(static_cast<size_t>(bulk));
  auto share = [&](int c) { return (bulk - c + ncaches - 1) / ncaches; };
  auto free_cache = [&](int c) {  // kmem_cache_free_bulk() of cache c's objects
    for (int i = 0; i < share(c); ++i) part[i] = objs[size_t(c + i * ncaches)];
    e.mm.kmem_cache_free_bulk(caches[c], share(c), part.data(), e.submitter);
  };
  auto alloc = [&] {
    for (int c = 0; c < ncaches; ++c) {
      const int k = share(c);
      if (!e.mm.kmem_cache_alloc_bulk(caches[c], GFP_KERNEL, k, part.data(), e.submitter)) {
        for (int d = 0; d < c; ++d) free_cache(d);  // give back the caches already filled
        return false;
      }
      for (int i = 0; i < k; ++i) objs[size_t(c + i * ncaches)] = part[i];
    }
    return true;
  };
  int64_t iter = 0;
  auto free_all = [&] {
    if (free_mode == 0) {
      for (int c = 0; c < ncaches; ++c) free_cache(c);
    } else if (free_mode == 1) {
      e.mm.kfree_bulk(bulk, objs.data(), e.submitter);
    } else {
      for (Ptr o : objs) e.mm.kfree_rcu(o, e.submitter);
      if (++iter % gp_every == 0) e.mm.rcu_grace_period();
    }
  };
  const Ptr arr = e.mm.kmalloc(static_cast<uint32_t>(bulk * 8), GFP_KERNEL, e.submitter);
  rec.begin_round(false);
  if (alloc()) free_all();
  if (free_mode == 2) e.mm.kvfree_rcu_barrier();
  iter = 0;
  rec.end_round(0);
  rec.begin_round(true);
  rec.timed_begin();
  int64_t done = 0;
  for (; done < p.at("iterations") && alloc(); ++done) free_all();
  // The last grace period's work belongs to the loop it follows.
  if (free_mode == 2 && iter % gp_every != 0) e.mm.rcu_grace_period();
  rec.timed_end();
  rec.end_round(static_cast<uint64_t>(done * bulk));
  if (free_mode == 2) rec.metric("rcu_pending_at_end", static_cast<int64_t>(e.mm.rcu_pending()));
  e.mm.kfree(arr, e.submitter);
}

// The single-object form of the same benchmark (the thread's "does the
// batched hook cost the single allocation?"): `iterations` x (one
// kmem_cache_alloc() + kmem_cache_free()) on the SLAB_ACCOUNT cache, or
// with `kmalloc` set, kmalloc(size, GFP_KERNEL_ACCOUNT) + kfree().
void run_memcg_single(Env& e, const Params& p, Recorder& rec) {
  const auto size = static_cast<uint32_t>(p.at("size"));
  const bool km = p.at("kmalloc") != 0;
  const CacheId s = km ? CacheId{} : e.mm.kmem_cache_create("bench_memcg_cache", size, 0,
                                                             SLAB_ACCOUNT);
  auto pair = [&] {
    const Ptr o = km ? e.mm.kmalloc(size, GFP_KERNEL | __GFP_ACCOUNT, e.submitter)
                     : e.mm.kmem_cache_alloc(s, GFP_KERNEL, e.submitter);
    if (!o) return false;
    km ? e.mm.kfree(o, e.submitter) : e.mm.kmem_cache_free(s, o, e.submitter);
    return true;
  };
  rec.begin_round(false);  // one warm-up pair: the slab and the stock exist
  pair();
  rec.end_round(0);
  rec.begin_round(true);
  rec.timed_begin();
  int64_t done = 0;
  while (done < p.at("iterations") && pair()) ++done;
  rec.timed_end();
  rec.end_round(static_cast<uint64_t>(done));
}

// Several memory cgroups charging on one CPU (the obj stock changes
// owner): `tasks` tasks pinned to CPU 0, each in a memcg of its own, take
// turns; a turn allocates `burst` objects from one SLAB_ACCOUNT cache.
// With `lag` 0 the task frees its own objects before the turn ends; with
// `lag` 1 they are freed in the next task's turn, after its allocations
// (deferred frees, as an RCU callback or a kworker on the same CPU does
// them), so each free is for another memcg than the stock's newest owner.
void run_memcg_multi(Env& e, const Params& p, Recorder& rec) {
  const int tasks = static_cast<int>(p.at("tasks"));
  const int burst = static_cast<int>(p.at("burst"));
  const bool lag = p.at("lag") != 0;
  const CacheId s = e.mm.kmem_cache_create("bench_memcg_cache",
                                           static_cast<uint32_t>(p.at("size")), 0,
                                           SLAB_ACCOUNT);
  std::vector<Task> task;
  for (int k = 0; k < tasks; ++k)
    task.push_back(Task{e.submitter.cpu, e.mm.memcg().create(kRootMemcg), 0});
  // This turn's objects and, with `lag`, the previous turn's (swapped).
  std::vector<Ptr> held(static_cast<size_t>(burst), kNull), mine(held);
  bool pending = false;
  int64_t done = 0;
  auto turn = [&](int k) {
    for (int i = 0; i < burst; ++i)
      if ((mine[size_t(i)] = e.mm.kmem_cache_alloc(s, GFP_KERNEL, task[size_t(k)])) != kNull)
        ++done;
    // The frees run on this CPU whoever owns the objects (the free hook
    // uncharges the object's own memcg).
    std::vector<Ptr>& to_free = lag ? held : mine;
    if (!lag || pending)
      for (Ptr o : to_free) e.mm.kmem_cache_free(s, o, task[size_t(k)]);
    if (lag) held.swap(mine), pending = true;
  };
  rec.begin_round(false);  // one warm-up round of turns: slabs and stocks exist
  for (int k = 0; k < tasks; ++k) turn(k);
  rec.end_round(0);
  done = 0;
  rec.begin_round(true);
  rec.timed_begin();
  for (int64_t i = 0; i < p.at("iterations"); ++i) turn(static_cast<int>(i % tasks));
  rec.timed_end();
  rec.end_round(static_cast<uint64_t>(done));
  if (pending)
    for (Ptr o : held) e.mm.kmem_cache_free(s, o, e.submitter);
}

// POLL_ADD on a pipe that never becomes readable: bursts of `burst` SQEs
// (one io_uring_enter each), requests from the io_kiocb cache in bulk
// refills of 8, the ring recycled every `recycle` bursts; `total` SQEs.
void run_poll_refill(Env& e, const Params& p, Recorder& rec) {
  const int64_t total = p.at("total"), burst = p.at("burst");
  rec.begin_round(true);
  rec.timed_begin();
  int64_t submitted = 0;
  while (submitted < total) {
    const RingId r = e.io.ring_create(
        e.submitter, {static_cast<uint32_t>(p.at("qd")), 0, false});
    if (r < 0) break;
    for (int64_t round = 0; round < p.at("recycle") && submitted < total; ++round) {
      e.io.enter_begin(r);
      const int64_t n = std::min(burst, total - submitted);
      for (int64_t i = 0; i < n; ++i) submitted += e.io.poll_add(r) == 0;
      e.io.enter_end(r);
    }
    e.io.ring_exit(r, e.kworker);  // io_uring_queue_exit(): async teardown
  }
  rec.timed_end();
  rec.end_round(static_cast<uint64_t>(submitted));
}

}  // namespace

// An alloc and a free of `bulk` objects per iteration.
static uint64_t memcg_bulk_work(const Params& p) {
  return work_product({p.at("iterations"), p.at("bulk"), 2});
}
// An alloc and a free per iteration.
static uint64_t memcg_single_work(const Params& p) {
  return work_product({p.at("iterations"), 2});
}
// An alloc and a free of `burst` objects per turn.
static uint64_t memcg_multi_work(const Params& p) {
  return work_product({p.at("iterations") + p.at("tasks"), p.at("burst"), 2});
}
// `total` SQEs, each a request allocated and freed.
static uint64_t poll_refill_work(const Params& p) { return work_product({p.at("total"), 2}); }

void register_memcg_bulk(ScenarioRegistry& r) {
  r.add({"memcg-bulk",
         "seed 002 module benchmark: kmem_cache_alloc_bulk + free_bulk, SLAB_ACCOUNT",
         "object",
         "ns",
         {
             {"size", 256, 8, 8192, "object size (OBJ_SIZE)"},
             {"bulk", 32, 1, 1024, "objects per bulk call"},
             {"iterations", 100000, 1, 100000000, "timed iterations"},
             {"free", 0, 0, 2,
              "0: kmem_cache_free_bulk() per cache; 1: kfree_bulk(); 2: kfree_rcu() each"},
             {"gp_every", 16, 1, 1000000, "free=2: iterations per grace period"},
             {"caches", 1, 1, 64, "SLAB_ACCOUNT caches the objects alternate between"},
         },
         program<run_memcg_bulk>}, memcg_bulk_work, always_one_task);
  r.add({"memcg-single",
         "seed 002 single allocation: kmem_cache_alloc + free (or kmalloc), accounted",
         "object",
         "ns",
         {
             {"size", 256, 8, 8192, "object size (OBJ_SIZE)"},
             {"kmalloc", 0, 0, 1, "1: kmalloc(size, GFP_KERNEL_ACCOUNT) + kfree instead"},
             {"iterations", 100000, 1, 100000000, "timed alloc+free pairs"},
         },
         program<run_memcg_single>}, memcg_single_work, always_one_task);
  r.add({"memcg-multi",
         "seed 002 follow-up: tasks of several memcgs take turns on one CPU (the obj stock changes owner)",
         "object",
         "ns",
         {
             {"size", 256, 8, 8192, "object size"},
             {"tasks", 8, 1, 64, "tasks, each in its own memory cgroup, all on CPU 0"},
             {"burst", 16, 1, 4096, "objects a task allocates per turn"},
             {"lag", 1, 0, 1, "1: a turn's objects are freed in the next task's turn (deferred frees)"},
             {"iterations", 10000, 1, 100000000, "timed turns"},
         },
         program<run_memcg_multi>}, memcg_multi_work, always_one_task);
  r.add({"poll-refill",
         "seed 002 io_uring test: POLL_ADD bursts force __io_alloc_req_refill",
         "sqe",
         "ns",
         {
             {"qd", 4096, 1, 32768, "SQ entries per ring"},
             {"burst", 2048, 1, 32768, "SQEs per io_uring_enter"},
             {"recycle", 32, 1, 100000, "bursts before the ring is recycled"},
             {"total", 1 << 18, 1, 1 << 26, "SQEs submitted in all (the seed uses 1 << 24)"},
         },
         program<run_poll_refill>}, poll_refill_work, always_one_task);
}

}  // namespace simcache::sim
