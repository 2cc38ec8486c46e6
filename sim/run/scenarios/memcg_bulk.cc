// memcg bulk charging (docs/workloads.md §6, seed 002): the module benchmark
// on a SLAB_ACCOUNT kmem_cache, and the io_uring request refill under
// POLL_ADD that never completes.
#include <vector>

#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// kmem_cache_create("bench_memcg_cache", size, 0, SLAB_ACCOUNT); one
// warm-up bulk, then `iterations` x (alloc_bulk(bulk) + free_bulk).
void run_memcg_bulk(Env& e, const Params& p, Recorder& rec) {
  const int bulk = static_cast<int>(p.at("bulk"));
  const CacheId s = e.mm.kmem_cache_create("bench_memcg_cache",
                                           static_cast<uint32_t>(p.at("size")), 0,
                                           SLAB_ACCOUNT);
  std::vector<Ptr> objs(static_cast<size_t>(bulk));
  const Ptr arr = e.mm.kmalloc(static_cast<uint32_t>(bulk * 8), GFP_KERNEL, e.submitter);
  rec.begin_round(false);
  if (e.mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, bulk, objs.data(), e.submitter))
    e.mm.kmem_cache_free_bulk(s, bulk, objs.data(), e.submitter);
  rec.end_round(0);
  rec.begin_round(true);
  rec.timed_begin();
  for (int64_t i = 0; i < p.at("iterations"); ++i) {
    const int got = e.mm.kmem_cache_alloc_bulk(s, GFP_KERNEL, bulk, objs.data(), e.submitter);
    if (!got) break;
    e.mm.kmem_cache_free_bulk(s, got, objs.data(), e.submitter);
  }
  rec.timed_end();
  rec.end_round(static_cast<uint64_t>(p.at("iterations") * bulk));
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
         },
         run_memcg_bulk}, memcg_bulk_work);
  r.add({"memcg-single",
         "seed 002 single allocation: kmem_cache_alloc + free (or kmalloc), accounted",
         "object",
         "ns",
         {
             {"size", 256, 8, 8192, "object size (OBJ_SIZE)"},
             {"kmalloc", 0, 0, 1, "1: kmalloc(size, GFP_KERNEL_ACCOUNT) + kfree instead"},
             {"iterations", 100000, 1, 100000000, "timed alloc+free pairs"},
         },
         run_memcg_single}, memcg_single_work);
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
         run_poll_refill}, poll_refill_work);
}

}  // namespace simcache::sim
