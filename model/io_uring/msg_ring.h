// IORING_OP_MSG_RING with IORING_MSG_SEND_FD (io_uring/msg_ring.c).
#pragma once

#include "model/io_uring/req.h"
#include "model/io_uring/rsrc.h"

namespace simcache::iou {

inline constexpr int kEBADFD = -77;

// Mirrors io_msg_grab_file(): look the source slot up under the source
// ring's lock and take a file reference. No node is allocated on the
// source ring.
template <IoAllocator A>
int io_msg_grab_file(IoKernel<A>& k, IoRingCtx& src, uint32_t src_slot) {
  const IoFileTable& ft = src.files;
  if (!ft.registered || src_slot >= ft.nr || !ft.test_bit(src_slot)) return kEBADF;
  ev(k.mm, Event::fget);
  return 0;
}

// Mirrors io_msg_send_fd() -> io_msg_install_complete(), 6.16 shape. The
// source request is taken from the source ring's request cache; the
// install allocates one node from the TARGET ring's node_cache on the CPU
// executing the request: the source submitter when the request runs
// inline, or the target's submitter task when the target has
// task_complete (DEFER_TASKRUN: the install is queued as task_work).
// mutex_trylock contention (-EAGAIN -> io-wq) is not modelled.
// Returns the installed slot (ALLOC) or 0, or a negative errno.
template <IoAllocator A>
int io_msg_send_fd(IoKernel<A>& k, IoRingCtx& src, IoRingCtx* dst, uint32_t src_slot,
                   uint32_t dst_slot, bool task_complete) {
  SiteScope scope(k.mm, CallSite::io_msg_send_fd);
  const Ptr req = io_alloc_req(k, src, src.submitter);
  if (req == kNull) return kEAGAIN;
  ev(k.mm, Event::sqe_submit);
  ev(k.mm, Event::msg_ring_send_fd);
  int ret;
  if (dst == nullptr || dst == &src) {
    ret = kEINVAL;
  } else if (!dst->live) {
    ret = kEBADFD;
  } else if ((ret = io_msg_grab_file(k, src, src_slot)) == 0) {
    const bool remote = task_complete || dst->params.defer_taskrun;
    if (remote) ev(k.mm, Event::task_work_run);
    const Task& on = remote ? dst->submitter : src.submitter;
    ret = io_fixed_fd_install_locked(k, *dst, dst_slot, on);
    if (ret < 0) {
      ev(k.mm, Event::fput);  // REQ_F_NEED_CLEANUP: io_msg_ring_cleanup()
    } else {
      ring_first_use(k, *dst);
      io_post_aux_cqe(k, *dst, on);  // the target's CQE, posted where the install ran
    }
  }
  io_post_cqe(k, src);
  io_req_complete_defer(src, req);
  return ret;
}

}  // namespace simcache::iou
