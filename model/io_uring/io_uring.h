// Ring set-up and teardown (io_uring/io_uring.c): io_ring_ctx_alloc(),
// the cancellation io_ring_exit_work() does, and io_ring_ctx_free().
#pragma once

#include <algorithm>
#include <bit>

#include "model/io_uring/futex.h"
#include "model/io_uring/rsrc.h"
#include "model/io_uring/tctx.h"

namespace simcache::iou {

// Mirrors io_alloc_hash_table(): kvmalloc_array(1 << bits, 64,
// GFP_KERNEL_ACCOUNT) (struct io_hash_bucket is cacheline aligned),
// retrying with one bit less down to 1 bit.
template <IoAllocator A>
int io_alloc_hash_table(IoKernel<A>& k, IoRingCtx& ctx, uint32_t bits, const Task& t) {
  for (;; bits--) {
    ctx.cancel_hbs = k.mm.kvmalloc((uint64_t{1} << bits) * 64, GFP_KERNEL_ACCOUNT,
                                   at_site(t, kSiteCancelTable));
    if (ctx.cancel_hbs != kNull) return 0;
    if (bits == 1) return kENOMEM;
  }
}

// The size of an IO_ALLOC_CACHE_MAX cache: the io_alloc_cache_max knob,
// or the kernel's (`kernel_max`: the constant, or the profile's node cache).
template <IoAllocator A>
uint32_t io_cache_max(const IoKernel<A>& k, uint32_t kernel_max) {
  return k.policy.io_alloc_cache_max == kFromKernel ? kernel_max : k.policy.io_alloc_cache_max;
}

// Mirrors io_rsrc_cache_init(), 6.15+ (+ seed 004 patch 1/3: the node
// cache takes io_rsrc_node_cachep; patch 2/3: bulk refill batch).
template <IoAllocator A>
int io_rsrc_cache_init(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  if (!k.profile.has_node_cache) return 0;
  int ret = io_alloc_cache_init(k.mm, ctx.node_cache,
                                io_cache_max(k, k.profile.node_cache_max),
                                k.profile.rsrc_node_size, 0, t);
  ret |= io_alloc_cache_init(k.mm, ctx.imu_cache, io_cache_max(k, IO_ALLOC_CACHE_MAX),
                             kImuCacheElemSize, 0, t);
  if (ret == 0 && k.rsrc_node_cachep != kNoCache) {
    ctx.node_cache.slab = k.rsrc_node_cachep;
    ctx.node_cache.refill = k.policy.bulk_refill;
  }
  return ret;
}

// Mirrors io_free_alloc_caches(), 6.16+: apoll, netmsg, rw, cmd, msg,
// futex, rsrc. Every cached object goes to its destructor; the model never
// fills the first five, so only their entries arrays are freed.
template <IoAllocator A>
void io_free_alloc_caches(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  IoAllocCache* caches[] = {&ctx.apoll_cache, &ctx.netmsg_cache, &ctx.rw_cache,
                            &ctx.cmd_cache,   &ctx.msg_cache,    &ctx.futex_cache,
                            &ctx.waitv_cache, &ctx.node_cache,   &ctx.imu_cache};
  for (IoAllocCache* c : caches) {
    if (c != &ctx.node_cache) {
      io_alloc_cache_free(k.mm, *c, t);
      continue;
    }
    k.node_free_begin = io_clock(k.mm);
    // The seeded bug (PolicySet::debug_bug): the parked nodes are
    // forgotten, not destroyed, and only the entries array is freed.
    if (k.policy.debug_bug == DebugBug::leak_node_cache) c->nr_cached = 0;
    k.node_free_objects = c->nr_cached;
    io_alloc_cache_free(k.mm, *c, t);
    k.node_free_end = io_clock(k.mm);
  }
}

// Mirrors io_ring_ctx_alloc(), 6.16-6.18: kzalloc the ctx, the cancel hash
// table (clamp(ilog2(cq_entries) - 5, 1, 8) bits, of the CQ size rounded
// up to a power of two as io_uring_fill_params() leaves it), the
// percpu_ref's data (percpu_ref_init(): kzalloc of struct percpu_ref_data,
// GFP_KERNEL; the counters themselves are per-CPU memory), then every
// per-ring cache (all are attempted, as the kernel ORs the results): apoll,
// netmsg, rw, cmd, msg (profiles with has_msg_cache), futex, rsrc. Any
// failure frees what was built. Element sizes of apoll/netmsg/rw/cmd are
// not derived: the model issues no operation that allocates from them.
template <IoAllocator A>
int io_ring_ctx_alloc(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_ring_ctx_alloc);
  ctx.ctx_mem = k.mm.kmalloc(k.profile.io_ring_ctx_size, GFP_KERNEL | __GFP_ZERO,
                             at_site(t, kSiteCtx));
  if (ctx.ctx_mem == kNull) return kENOMEM;
  const uint32_t cq =
      std::bit_ceil(std::clamp<uint32_t>(ctx.params.cq_entries, 1, IORING_MAX_CQ_ENTRIES));
  const int bits = std::clamp(static_cast<int>(std::bit_width(cq)) - 1 - 5, 1, 8);
  int ret = io_alloc_hash_table(k, ctx, static_cast<uint32_t>(bits), t);
  if (ret == 0) {
    ctx.refs_data = k.mm.kmalloc(kPercpuRefDataSize, GFP_KERNEL | __GFP_ZERO,
                                 at_site(t, kSitePercpuRef));
    if (ctx.refs_data == kNull) ret = kENOMEM;
  }
  if (ret == 0) {
    ret |= io_alloc_cache_init(k.mm, ctx.apoll_cache, IO_POLL_ALLOC_CACHE_MAX, 0, 0, t);
    const uint32_t max = io_cache_max(k, IO_ALLOC_CACHE_MAX);
    ret |= io_alloc_cache_init(k.mm, ctx.netmsg_cache, max, 0, 0, t);
    ret |= io_alloc_cache_init(k.mm, ctx.rw_cache, max, k.profile.rw_async_size,
                               k.profile.rw_async_clear, t);
    ret |= io_alloc_cache_init(k.mm, ctx.cmd_cache, max, 0, 0, t);
    if (k.profile.has_msg_cache)
      ret |= io_alloc_cache_init(k.mm, ctx.msg_cache, max, k.profile.io_kiocb_size, 0, t);
    ret |= io_futex_cache_init(k, ctx, t);
    ret |= io_rsrc_cache_init(k, ctx, t);
  }
  if (ret == 0 && k.profile.per_ring_rsrc_node) ret = io_rsrc_ring_node_switch(k, ctx, t);
  if (ret != 0) {
    io_free_alloc_caches(k, ctx, t);
    if (ctx.refs_data != kNull) k.mm.kfree(ctx.refs_data, t);
    k.mm.kvfree(ctx.cancel_hbs, t);
    k.mm.kfree(ctx.ctx_mem, t);
    ctx.cancel_hbs = ctx.ctx_mem = ctx.refs_data = kNull;
    return kENOMEM;
  }
  ctx.live = true;
  return 0;
}

// The cancellation io_ring_exit_work() performs before freeing: armed
// futex waits (io_futex_remove_all) and armed polls (io_poll_remove_all)
// are cancelled there, each completed by task_work (an item per request:
// __io_futex_cancel() and the poll cancel both io_req_task_work_add() it),
// which frees the request's data, posts its CQE (overflowing a full CQ
// ring) and flushes the request to the free list. Where that task_work
// runs: on the submitter's task, except for a DEFER_TASKRUN ring, whose
// items go on the ring's local list; the exit work moves that list to the
// ring's fallback work (io_move_task_work_from_local()) and runs it from
// there (flush_delayed_work() in io_uring_try_cancel_requests()), on a
// kworker (a system_wq worker in the kernel; the model's kworker task):
// the posts, any overflow entry and the frees are then the kworker's.
template <IoAllocator A>
void io_ring_exit_cancel(IoKernel<A>& k, IoRingCtx& ctx, const Task& kworker) {
  // Woken waits' task_work ran when their enter returned; none is left
  // by then, but a ring torn down mid-enter completes them first.
  if (!ctx.futex_woken.empty()) io_futex_run_woken(k, ctx);
  // io_ring_exit_work() drops the overflowed CQEs (io_cqring_overflow_kill()
  // on the kworker) before it cancels: the cancels' CQEs then overflow
  // only if the CQ ring itself is full, not because older ones wait.
  io_cqring_overflow_flush(k, ctx, kworker);
  io_flush_completions(k, ctx, kworker);
  const size_t items = ctx.futex_list.size() + ctx.poll_list.size();
  if (items == 0) return;
  const Task& runner = ctx.params.defer_taskrun ? kworker : ctx.submitter;
  ev(k.mm, Event::task_work_run, items);  // one item per request
  io_futex_remove_all(k, ctx, runner);
  // The polls were armed one after another over the ring's life, each
  // writing its io_kiocb (a SLAB_HWCACHE_ALIGN object: whole cache lines)
  // and linking it into the pipe's wait queue and the cancel table. A
  // cache of llc_bytes holds about that many bytes of them; beyond it, a
  // poll's lines miss: when armed (the objects were freed on the kworker
  // at the last ring's exit), when io_poll_remove_all() walks the cancel
  // table bucket by bucket (old and new polls mixed), when its task_work
  // unlinks it from its wait-queue neighbours. req_cold counts those polls
  // once, at the exit, and its price is that whole extra; how the misses
  // grow with the excess is not modelled beyond its size.
  if (const size_t fit = k.llc_bytes / ((k.profile.io_kiocb_size + 63) / 64 * 64);
      k.llc_bytes != 0 && ctx.poll_list.size() > fit)
    ev(k.mm, Event::req_cold, ctx.poll_list.size() - fit);
  for (Ptr req : ctx.poll_list) {
    ev(k.mm, Event::req_cancel);
    io_post_cqe(k, ctx, runner);
    io_req_complete_defer(ctx, req);
  }
  ctx.poll_list.clear();
  io_flush_completions(k, ctx, runner);
}

// Mirrors io_ring_ctx_free(), 6.16-6.18, run on the kworker: files
// unregister (nodes -> node_cache up to its size, the rest freed), the
// overflowed CQEs dropped (io_cqring_overflow_kill()), every
// per-ring cache freed, the two regions' page arrays (io_rings_free()),
// the percpu_ref data (percpu_ref_exit()), cached requests
// kmem_cache_free'd, the ring's reference on its hash_map
// (io_wq_put_hash()), the cancel table and the ctx freed.
template <IoAllocator A>
void io_ring_ctx_free(IoKernel<A>& k, IoRingCtx& ctx, const Task& kworker) {
  SiteScope scope(k.mm, CallSite::io_ring_ctx_free);
  io_ring_exit_cancel(k, ctx, kworker);
  if (ctx.files.registered) io_sqe_files_unregister(k, ctx, kworker);
  if (ctx.ring_node != kNull) io_free_ring_node(k, ctx, kworker);
  io_cqring_overflow_flush(k, ctx, kworker);  // io_cqring_overflow_kill(): dropped
  io_free_alloc_caches(k, ctx, kworker);
  io_rings_free(k, ctx, kworker);
  if (ctx.refs_data != kNull) k.mm.kfree(ctx.refs_data, kworker);
  io_req_caches_free(k, ctx, kworker);
  if (ctx.hash_map != kNull) io_wq_put_hash(k, ctx.hash_map, kworker);
  k.mm.kvfree(ctx.cancel_hbs, kworker);
  k.mm.kfree(ctx.ctx_mem, kworker);
  ctx.cancel_hbs = ctx.ctx_mem = ctx.refs_data = ctx.hash_map = kNull;
  ctx.live = false;
  ev(k.mm, Event::ring_teardown);
}

}  // namespace simcache::iou
