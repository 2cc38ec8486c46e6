// IORING_OP_READ of a fixed file (io_uring/rw.c), as the F0 program's
// untimed verification runs it: one byte from each installed slot of a
// memfd.
#pragma once

#include "model/io_uring/alloc_cache.h"
#include "model/io_uring/req.h"
#include "model/io_uring/tctx.h"

namespace simcache::iou {

// read_fixed()'s slot for "the lowest installed slot" (a replayed READ,
// whose trace names no slot).
inline constexpr uint32_t kFirstInstalledSlot = 0xffffffffu;

// Mirrors io_wq_enqueue() -> io_wq_create_worker() for a task whose io-wq
// has no worker yet: create_io_worker() kzalloc's a struct io_worker
// (GFP_KERNEL) and starts its thread. One worker serves the model's
// punts: the programs queue one batch at a time and wait for it (a live
// 6.18 trace of F0 shows one create_io_worker() for 1,536 punted reads).
template <IoAllocator A>
bool io_wq_ensure_worker(IoKernel<A>& k, const Task& t) {
  IoUringTask* u = io_task_ctx(k, t);
  if (u == nullptr) return false;
  if (u->io_worker != kNull) return true;
  SiteScope scope(k.mm, CallSite::create_io_worker);
  u->io_worker = k.mm.kmalloc(kIoWorkerSize, GFP_KERNEL | __GFP_ZERO, at_site(t, kSiteIoWorker));
  if (u->io_worker == kNull) return false;
  ev(k.mm, Event::io_worker_create);
  return true;
}

// Mirrors io_read() of a fixed file that cannot read without blocking
// (a memfd: shmem sets no FMODE_NOWAIT), submitted on `ctx` by its
// submitter. Replay models every fixed-file READ so: a read the kernel
// completes inline, whose async data io_rw_recycle() keeps, is not told
// apart.
//   io_prep_rw() -> io_rw_alloc_async() -> io_uring_alloc_async_data():
//     the async data from ctx->rw_cache, or io_cache_alloc_new()
//     (kmalloc(sizeof(struct io_async_rw)), init_clear bytes zeroed);
//   the nonblocking attempt returns -EAGAIN: io_queue_iowq() punts the
//     request to io-wq, whose worker reads and completes it;
//   the request carries REQ_F_REFCOUNT from io-wq, so io_rw_recycle()
//     keeps nothing: the async data is kfree'd when the request is freed
//     (__io_submit_flush_completions() on the task, as the live 6.18
//     trace shows), and the request returns to the ring's cache.
// Every read therefore misses rw_cache: one kmalloc and one kfree per
// read, cold or warm. Returns 0, or kEAGAIN / kENOMEM / kEBADF.
template <IoAllocator A>
int io_read_fixed(IoKernel<A>& k, IoRingCtx& ctx, uint32_t slot) {
  const Task& t = ctx.submitter;
  const IoFileTable& ft = ctx.files;
  const Ptr req = io_alloc_req(k, ctx, t);
  if (req == kNull) return kEAGAIN;
  ev(k.mm, Event::sqe_submit);
  ev(k.mm, Event::read_fixed);
  // io_init_req() runs the prep before io_issue_sqe() looks the file up:
  // a READ of an empty slot has its async data too, and fails with
  // -EBADF after it (io_clean_op() frees the data with the request).
  int ret = 0;
  const Ptr async = io_cache_alloc(k.mm, ctx.rw_cache, GFP_KERNEL, t);
  if (async == kNull) {
    ret = kENOMEM;
  } else if (!ft.registered || slot >= ft.nr || !ft.test_bit(slot)) {
    ret = kEBADF;
  } else {
    ev(k.mm, Event::iowq_punt);
    // No worker and none can be made: io_wq_enqueue() cancels the work
    // (its CQE says -ECANCELED); reported as the allocation failure it is.
    if (!io_wq_ensure_worker(k, t)) ret = kENOMEM;
  }
  if (async != kNull) ctx.compl_async.push_back(async);
  io_post_cqe(k, ctx);
  io_req_complete_defer(ctx, req);
  return ret;
}

}  // namespace simcache::iou
