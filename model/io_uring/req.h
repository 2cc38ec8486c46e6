// The request (struct io_kiocb) cache of one ring: allocation from the
// free list with bulk refill from req_cachep, deferred completion, flush
// back to the free list, and teardown (io_uring/io_uring.c).
#pragma once

#include <algorithm>

#include "model/io_uring/ctx.h"
#include "model/io_uring/io_kernel.h"

namespace simcache::iou {

// Mirrors __io_alloc_req_refill(), 6.18: one kmem_cache_alloc_bulk() of
// IO_REQ_ALLOC_BATCH (knob req_alloc_batch); if the bulk call gives nothing, one
// kmem_cache_alloc(). Requests are pushed so that reqs[0] ends on top
// ("refill request cache in memory order", 6.10).
// REQUIRES: the free list is empty (uring_lock held in the kernel).
template <IoAllocator A>
bool io_alloc_req_refill(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_alloc_req_refill);
  const gfp_t gfp = k.profile.req_refill_gfp;
  Ptr reqs[kMaxReqAllocBatch];
  const int batch = static_cast<int>(std::min(k.policy.req_alloc_batch, kMaxReqAllocBatch));
  ev(k.mm, Event::req_cache_refill);
  int n = k.mm.kmem_cache_alloc_bulk(k.req_cachep, gfp, batch, reqs, t);
  if (n <= 0) {
    reqs[0] = k.mm.kmem_cache_alloc(k.req_cachep, gfp, t);
    if (reqs[0] == kNull) return false;
    n = 1;
  }
  note_batch(k.mm, Batch::io_alloc_req_refill, static_cast<uint64_t>(n));
  ctx.nr_req_allocated += static_cast<uint32_t>(n);
  while (n--) ctx.req_free.push_back(reqs[n]);
  return true;
}

// The first request work against a freshly created ring (its first
// io_uring_enter(), or the first MSG_RING delivered into it): the work
// that touches its new ring pages, context and table arrays cold. Not a
// kernel function: a priced event, counted once per ring.
template <IoAllocator A>
void ring_first_use(IoKernel<A>& k, IoRingCtx& ctx) {
  if (ctx.first_use_done) return;
  ctx.first_use_done = true;
  ev(k.mm, Event::ring_first_use);
}

// Mirrors io_alloc_req() with io_alloc_req_refill(): pop the free list,
// refilling it when empty. Returns kNull when the refill fails (the
// kernel's io_submit_sqes() then stops and returns -EAGAIN).
template <IoAllocator A>
Ptr io_alloc_req(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  if (ctx.req_free.empty() && !io_alloc_req_refill(k, ctx, t)) return kNull;
  Ptr req = ctx.req_free.back();
  ctx.req_free.pop_back();
  ev(k.mm, Event::req_alloc);
  return req;
}

// Mirrors io_req_complete_defer(): the request joins compl_reqs and goes
// back to the free list at the next flush.
inline void io_req_complete_defer(IoRingCtx& ctx, Ptr req) {
  ctx.compl_reqs.push_back(req);
}

// Mirrors __io_submit_flush_completions() + io_free_batch_list(): every
// completed request returns to the free list (io_req_add_to_cache).
inline uint32_t io_submit_flush_completions(IoRingCtx& ctx) {
  const uint32_t n = static_cast<uint32_t>(ctx.compl_reqs.size());
  for (Ptr req : ctx.compl_reqs) ctx.req_free.push_back(req);
  ctx.compl_reqs.clear();
  return n;
}

// A flush with the allocator at hand: the async data completed requests
// did not recycle is kfree'd with them (io_free_batch_list() ->
// io_clean_op(), on `t`), then the requests go back to the free list.
template <IoAllocator A>
uint32_t io_flush_completions(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  for (Ptr p : ctx.compl_async) k.mm.kfree(p, t);
  ctx.compl_async.clear();
  return io_submit_flush_completions(ctx);
}

// Mirrors io_req_caches_free(), 6.16+: every cached request is
// kmem_cache_free'd (on the CPU tearing the ring down).
template <IoAllocator A>
void io_req_caches_free(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  io_flush_completions(k, ctx, t);
  for (Ptr req : ctx.req_free) {
    k.mm.kmem_cache_free(k.req_cachep, req, t);
    ev(k.mm, Event::req_cache_free);
  }
  ctx.nr_req_allocated -= static_cast<uint32_t>(ctx.req_free.size());
  ctx.req_free.clear();
}

}  // namespace simcache::iou
