// IORING_OP_FUTEX_WAIT / WAITV / WAKE and their completion and cancel
// paths (io_uring/futex.c). The futex hash itself is not modelled: a wait
// either arms (the word holds the expected value) or fails with -EAGAIN,
// and a WAKE wakes armed waiters of the ring in arming order.
#pragma once

#include <algorithm>

#include "model/io_uring/req.h"

namespace simcache::iou {

// Mirrors io_futex_cache_init(): futex_cache of IO_FUTEX_ALLOC_CACHE_MAX
// (knob futex_cache_max) entries of sizeof(struct io_futex_data); with
// waitv-cache (seed 000), also a waitv_cache of io_futexv_data sized for
// waitv_cache_nr entries.
template <IoAllocator A>
int io_futex_cache_init(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  const uint32_t max = k.policy.futex_cache_max == kFromKernel ? k.profile.futex_cache_max
                                                               : k.policy.futex_cache_max;
  int ret = io_alloc_cache_init(k.mm, ctx.futex_cache, max, k.profile.futex_data_size, 0, t);
  if (k.policy.waitv_cache_max != 0)
    ret |= io_alloc_cache_init(k.mm, ctx.waitv_cache, k.policy.waitv_cache_max,
                               waitv_alloc_size(k.profile, k.policy.waitv_cache_nr), 0, t);
  return ret;
}

// The WAITV data's way back (waitv-cache): io_cache_free() into waitv_cache
// if it came from there, else kfree.
template <IoAllocator A>
void io_futexv_data_free(IoKernel<A>& k, IoRingCtx& ctx, Ptr data, bool cached, const Task& t) {
  if (cached)
    io_cache_free(k.mm, ctx.waitv_cache, data, t);
  else
    k.mm.kfree(data, t);
}

// Mirrors io_futex_complete(): the data goes back with io_cache_free()
// (put if the cache has room, else kfree) on the CPU running the ring's
// task_work; the request completes.
template <IoAllocator A>
void io_futex_complete(IoKernel<A>& k, IoRingCtx& ctx, const ArmedFutex& w, const Task& t) {
  io_cache_free(k.mm, ctx.futex_cache, w.data, t);
  ev(k.mm, Event::futex_complete);
  io_post_cqe(k, ctx, t);
  io_req_complete_defer(ctx, w.req);
}

// Mirrors io_futexv_complete(): the vector is kfree'd (waitv-cache:
// recycled into waitv_cache).
template <IoAllocator A>
void io_futexv_complete(IoKernel<A>& k, IoRingCtx& ctx, const ArmedFutex& w, const Task& t) {
  io_futexv_data_free(k, ctx, w.data, w.cached, t);
  ev(k.mm, Event::futex_complete);
  io_post_cqe(k, ctx, t);
  io_req_complete_defer(ctx, w.req);
}

// Completes `req` with an error without arming (issue or prep failure).
template <IoAllocator A>
int io_req_fail(IoKernel<A>& k, IoRingCtx& ctx, Ptr req, int err) {
  io_post_cqe(k, ctx);
  io_req_complete_defer(ctx, req);
  return err;
}

// Mirrors io_futex_wait(), 6.16+: io_cache_alloc(&futex_cache, GFP_NOWAIT)
// (kmalloc-192 on a miss), then arm. Arm failure (-EAGAIN: the word no
// longer holds the expected value) kfree()s the data (io_req_async_data_free)
// -- or, with futex-return-to-cache (seed 001), io_cache_free()s it.
// Returns 0 when armed.
template <IoAllocator A>
int io_futex_wait(IoKernel<A>& k, IoRingCtx& ctx, bool word_matches) {
  SiteScope scope(k.mm, CallSite::io_futex_wait);
  const Task& t = ctx.submitter;
  const Ptr req = io_alloc_req(k, ctx, t);
  if (req == kNull) return kEAGAIN;
  ev(k.mm, Event::sqe_submit);
  const Ptr ifd = io_cache_alloc(k.mm, ctx.futex_cache, k.profile.futex_gfp, t);
  if (ifd == kNull) return io_req_fail(k, ctx, req, kENOMEM);
  k.mm.kasan_check_access(ifd, "io_futex_wait");  // futex_q copied from the template
  if (!word_matches) {
    ev(k.mm, Event::futex_wait_arm_fail);
    if (k.policy.futex_return_to_cache) {
      io_cache_free(k.mm, ctx.futex_cache, ifd, t);
    } else {
      k.mm.kfree(ifd, t);
      ev(k.mm, Event::futex_arm_fail_kfree);
    }
    return io_req_fail(k, ctx, req, kEAGAIN);
  }
  ev(k.mm, Event::futex_wait);
  ctx.futex_list.push_back(ArmedFutex{req, ifd, FutexKind::wait, 0});
  return 0;
}

// The gfp of a WAITV allocation: the profile's (v6.18: GFP_KERNEL, v7.x:
// GFP_KERNEL_ACCOUNT) unless waitv-account / waitv-noaccount override it;
// always zeroed (kcalloc / kzalloc).
template <IoAllocator A>
gfp_t io_futexv_gfp(const IoKernel<A>& k) {
  gfp_t g = k.profile.waitv_gfp;
  if (k.policy.waitv_account == WaitvAccount::account) g = GFP_KERNEL_ACCOUNT;
  if (k.policy.waitv_account == WaitvAccount::noaccount) g = GFP_KERNEL;
  return g | __GFP_ZERO;
}

// Mirrors io_futexv_prep() + io_futexv_wait(): one allocation per request
// sized by the profile (v6.18-rc4: nr * 160 bare array; rc5+: 8 + nr * 160
// io_futexv_data; > 8 KiB goes to the page allocator as large kmalloc),
// then arm every entry. A mismatch on any entry fails the request and
// kfree()s the vector. Returns 0 when armed.
template <IoAllocator A>
int io_futex_waitv(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr, bool words_match) {
  SiteScope scope(k.mm, CallSite::io_futexv_prep);
  const Task& t = ctx.submitter;
  const Ptr req = io_alloc_req(k, ctx, t);
  if (req == kNull) return kEAGAIN;
  ev(k.mm, Event::sqe_submit);
  ev(k.mm, Event::futex_waitv);
  if (nr == 0 || nr > FUTEX_WAITV_MAX) return io_req_fail(k, ctx, req, kEINVAL);
  const gfp_t gfp = io_futexv_gfp(k);
  // waitv-cache: a vector that fits a cached element comes from waitv_cache;
  // a hit needs no zeroing, as futex_parse_waitv() initialises every entry,
  // unless waitv_cache_zero asks for the kcalloc() zeroing on reuse too
  // (what is left of the gain is then the allocator's half alone).
  const bool cached = k.policy.waitv_cache_max != 0 && nr <= k.policy.waitv_cache_nr;
  Ptr data = cached ? io_alloc_cache_get(k.mm, ctx.waitv_cache, t) : kNull;
  if (data != kNull && k.policy.waitv_cache_zero)
    ev(k.mm, Event::zero_bytes, waitv_alloc_size(k.profile, nr)), ev(k.mm, Event::zero_call);
  if (data == kNull) {
    const uint32_t size = cached ? ctx.waitv_cache.elem_size : waitv_alloc_size(k.profile, nr);
    data = k.mm.kmalloc(size, gfp, at_site(t, kSiteWaitv));
    if (data == kNull) return io_req_fail(k, ctx, req, kENOMEM);
    if (gfp & __GFP_ACCOUNT) ev(k.mm, Event::futexv_alloc_account);
  }
  k.mm.kasan_check_access(data, "io_futexv_prep");  // futex_parse_waitv fills it
  ev(k.mm, Event::futexv_entries, nr);
  if (!words_match) {
    io_futexv_data_free(k, ctx, data, cached, t);
    return io_req_fail(k, ctx, req, kEAGAIN);
  }
  ctx.futex_list.push_back(ArmedFutex{req, data, FutexKind::waitv, nr, cached});
  return 0;
}

// Mirrors io_futex_wake() (IORING_OP_FUTEX_WAKE) and the wake callbacks
// io_futex_wake_fn()/io_futexv_wake_fn(): wakes up to `n` armed waiters of
// this ring, oldest first. A callback only unqueues its waiter and queues
// the completion as task_work (io_req_task_work_add()): the waiters move
// to ctx.futex_woken and complete when the enter returns
// (io_futex_run_woken()). Returns the number woken (the WAKE's CQE result).
template <IoAllocator A>
int io_futex_wake(IoKernel<A>& k, IoRingCtx& ctx, uint32_t n) {
  const Task& t = ctx.submitter;
  const Ptr req = io_alloc_req(k, ctx, t);
  if (req == kNull) return kEAGAIN;
  ev(k.mm, Event::sqe_submit);
  ev(k.mm, Event::futex_wake);
  const size_t woken = std::min<size_t>(n, ctx.futex_list.size());
  const auto end = ctx.futex_list.begin() + static_cast<ptrdiff_t>(woken);
  ctx.futex_woken.insert(ctx.futex_woken.end(), ctx.futex_list.begin(), end);
  ctx.futex_list.erase(ctx.futex_list.begin(), end);
  io_post_cqe(k, ctx);
  io_req_complete_defer(ctx, req);
  return static_cast<int>(woken);
}

// The task_work a FUTEX_WAKE queued, run on the ring's submitter task as
// the enter returns to user space (tctx_task_work(): one item per woken
// request, in the order they were woken): io_futex_complete() or
// io_futexv_complete() each. (A DEFER_TASKRUN ring would run them at its
// next wait for events; the model runs them at the enter's end either way.)
template <IoAllocator A>
void io_futex_run_woken(IoKernel<A>& k, IoRingCtx& ctx) {
  const Task& t = ctx.submitter;
  for (const ArmedFutex& w : ctx.futex_woken) {
    ev(k.mm, Event::task_work_run);
    if (w.kind == FutexKind::wait)
      io_futex_complete(k, ctx, w, t);
    else
      io_futexv_complete(k, ctx, w, t);
  }
  ctx.futex_woken.clear();
}

// Mirrors io_futex_remove_all() at ring exit: every armed wait is
// cancelled (__io_futex_cancel()) and completes with -ECANCELED in its
// task_work, run on `t` (io_ring_exit_cancel() says where); WAIT data
// returns to futex_cache, WAITV data is freed (or, waitv-cache, returns to
// waitv_cache).
template <IoAllocator A>
void io_futex_remove_all(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  for (const ArmedFutex& w : ctx.futex_list) {
    ev(k.mm, Event::futex_cancel);
    if (w.kind == FutexKind::wait)
      io_futex_complete(k, ctx, w, t);
    else
      io_futexv_complete(k, ctx, w, t);
  }
  ctx.futex_list.clear();
}

}  // namespace simcache::iou
