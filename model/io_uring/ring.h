// IoUring<A>: one simulated kernel's io_uring, the public face of this
// layer. Holds the allocator, the kernel profile, the policies, the global
// kmem_caches and the open rings (by RingId; ids are never reused, and a
// closed ring's record is freed). Each operation names the kernel path it mirrors in the
// header that implements it:
//   ring_create / ring_exit       io_uring.h  (io_ring_ctx_alloc / _free)
//   files_*                       rsrc.h      (io_sqe_files_*, FILES_UPDATE)
//   fixed_fd_install              filetable.h (__io_fixed_fd_install)
//   msg_ring_send_fd              msg_ring.h  (io_msg_send_fd)
//   futex_*                       futex.h     (io_futex_wait/waitv/wake)
//   read_fixed                    rw.h        (io_read through io-wq)
//   io_uring_enter / enter_*      req.h       (request cache, flush)
//   cqring_wait                   cqwait.h    (io_cqring_wait_schedule, idle)
//
// SQE operations called outside enter_begin()/enter_end() count as one
// io_uring_enter() each and flush their completions at once. Results are
// ints: >= 0 on success, a negative errno (allocator.h) on failure.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "model/io_uring/cqwait.h"
#include "model/io_uring/io_uring.h"
#include "model/io_uring/msg_ring.h"
#include "model/io_uring/rw.h"

namespace simcache::iou {

// "ENOMEM" for kENOMEM: how reports name a failed operation's result.
inline const char* errno_name(int err) {
  switch (err) {
    case kENOMEM: return "ENOMEM";
    case kENFILE: return "ENFILE";
    case kEMFILE: return "EMFILE";
    case kEAGAIN: return "EAGAIN";
    default: return "EOTHER";
  }
}

template <IoAllocator A>
class IoUring {
 public:
  // Mirrors io_uring_init(). `policy` must pass validate_policies() for
  // `profile` (parse_policies() guarantees that).
  IoUring(A& mm, const KernelProfile& profile, const PolicySet& policy)
      : k_(mm, profile, policy) {}
  // The machine's cpuidle table for the wait model (nullptr: none).
  void set_idle_table(const IdleTable* t) { k_.idle = t; }
  // Whether the machine's cpufreq governor boosts on iowait wake-ups.
  void set_cpufreq_iowait_boost(bool on) { k_.cpufreq_iowait_boost = on; }
  void set_llc_kib(uint32_t kib) { k_.llc_bytes = uint64_t{kib} * 1024; }
  // Virtual ns the waiting CPU has spent idle in I/O-wait sleeps so far.
  double iowait_ns() const { return k_.iowait_ns; }
  // The last ring teardown's node-cache free: its interval on the running
  // CPU's clock (priced runs) and the nodes it freed.
  struct NodeFree {
    double begin = 0, end = 0;
    uint64_t objects = 0;
  };
  NodeFree last_node_free() const {
    return {k_.node_free_begin, k_.node_free_end, k_.node_free_objects};
  }

  // io_uring_setup(): returns the new RingId, or kENOMEM. As
  // io_uring_create(): io_ring_ctx_alloc(), io_allocate_scq_urings(), then
  // __io_uring_add_tctx_node() for the creating task (its io_uring context
  // on its first ring, tctx.h); a failure after the ctx exists tears the
  // ring down (io_ring_ctx_wait_and_kill()).
  int ring_create(const Task& submitter, const RingParams& params = {}) {
    IoRingCtx ctx;
    ctx.submitter = submitter;
    ctx.params = params;
    if (ctx.params.cq_entries == 0) ctx.params.cq_entries = 2 * params.sq_entries;
    // IORING_SETUP_CQSIZE below the SQ size: io_uring_create() refuses it,
    // comparing the two after rounding each up to a power of two.
    if (std::bit_ceil(ctx.params.cq_entries) < std::bit_ceil(ctx.params.sq_entries)) return kEINVAL;
    ctx.cq_capacity = params.reaped_in_time ? UINT64_MAX : cq_capacity(ctx);
    if (io_ring_ctx_alloc(k_, ctx, submitter) != 0) return failed(kENOMEM);
    if (io_allocate_scq_urings(k_, ctx, submitter) != 0 ||
        io_uring_add_tctx_node(k_, ctx, submitter) != 0) {
      io_uring_del_tctx_node(k_, ctx, submitter);
      io_ring_ctx_free(k_, ctx, submitter);
      return failed(kENOMEM);
    }
    ev(k_.mm, Event::ring_create);
    // The program maps both regions (io_allocate_scq_urings(), tctx.h).
    ev(k_.mm, Event::ring_pages_mapped,
       uint64_t{ring_region_pages(ctx.params)} + sq_region_pages(ctx.params));
    const RingId id = next_id_++;
    rings_.emplace(id, std::make_unique<IoRingCtx>(std::move(ctx)));
    forget_hot();
    return id;
  }

  // Last close of the ring: io_ring_exit_work() has the creating task drop
  // its io_tctx_node (task_work, on the task), then cancels and runs
  // io_ring_ctx_free() on `kworker`.
  int ring_exit(RingId r, const Task& kworker) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    io_uring_del_tctx_node(k_, *c, c->submitter);
    io_ring_ctx_free(k_, *c, kworker);
    rings_.erase(r);
    forget_hot();
    return 0;
  }

  // The program's tasks exit (do_exit(): io_uring_files_cancel() ->
  // io_uring_clean_tctx(), then __io_uring_free()): each task's nodes of
  // rings still open, its io_wq (and the io_wq's hash reference) and its
  // io_uring_task are freed, on the task. Rings stay open (their
  // teardown is the file's last close).
  void task_exit_all() {
    SiteScope scope(k_.mm, CallSite::io_uring_clean_tctx);
    while (!k_.tasks.empty()) {
      Task t;
      t.cpu = k_.tasks.front().cpu;
      t.memcg = k_.tasks.front().memcg;
      for (auto& [id, c] : rings_)
        if (c->live && same_task(k_.tasks.front(), c->submitter))
          io_uring_del_tctx_node(k_, *c, t);
      io_uring_free_task_context(k_, t);
    }
  }
  // Task contexts alive (tests).
  size_t task_contexts() const { return k_.tasks.size(); }

  // The state a steady-state check compares (model/mm/state_sig.h): the
  // task contexts, the waiting CPU's frequency boost and every open ring
  // in id order (not the ids themselves, which only grow), with its
  // caches, request lists, CQ and file table. The allocator below is the
  // mm's own signature.
  void signature(StateSig* s) const {
    tasks_signature(k_.tasks, k_.wq_hash_refs, k_.freq_boost, s);
    s->add(rings_.size());
    for (const auto& [id, c] : rings_) ring_signature(*c, s);
  }

  // Tears down every live ring, then the tasks' io_uring contexts
  // (end-of-run leak checks).
  void exit_all(const Task& kworker) {
    for (auto& [id, c] : rings_)
      if (c->live) {
        io_uring_del_tctx_node(k_, *c, c->submitter);
        io_ring_ctx_free(k_, *c, kworker);
      }
    rings_.clear();
    forget_hot();
    task_exit_all();
  }

  // One io_uring_enter(): the SQE operations between begin and end are its
  // submissions; end flushes completions to the free list and reaps CQEs.
  int enter_begin(RingId r) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    if (c->batch_depth++ == 0) ev(k_.mm, Event::io_uring_enter);
    ring_first_use(k_, *c);
    return 0;
  }
  int enter_end(RingId r) {
    IoRingCtx* c = live(r);
    if (c == nullptr || c->batch_depth == 0) return kEINVAL;
    if (--c->batch_depth == 0) finish_enter(*c);
    return 0;
  }
  // Inside enter_begin()/enter_end(): the enter waits (min_complete) and
  // sleeps `sleep_us` in io_cqring_wait before another task's wake arrives;
  // the idle governor predicts `predicted_us` (cqwait.h).
  int cqring_wait(RingId r, uint64_t sleep_us, uint64_t predicted_us) {
    CqWait w;
    w.sleep_us = sleep_us;
    w.predicted_us = predicted_us;
    return cqring_wait(r, w);
  }
  // The same with the waiter's state spelled out: its requests in flight
  // and whether it holds cached task refs (cqwait.h, CqWait).
  int cqring_wait(RingId r, const CqWait& w) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    if (c->batch_depth == 0) return kEINVAL;
    io_cqring_wait_sleep(k_, w);
    return 0;
  }
  // Convenience: one io_uring_enter() submitting `nr_nops` IORING_OP_NOPs.
  // Returns the number submitted (fewer if the request cache ran dry).
  // As io_submit_sqes() does, to_submit is clamped to the SQEs the ring
  // can hold: the SQ has sq_entries rounded up to a power of two (what
  // io_uring_setup() allocates), so a larger count is not an error and
  // never more work than one full SQ.
  int io_uring_enter(RingId r, uint32_t nr_nops) {
    return sqe(r, [&](IoRingCtx& c) {
      const uint32_t sq = std::clamp(c.params.sq_entries, 1u, IORING_MAX_ENTRIES);
      nr_nops = std::min(nr_nops, std::bit_ceil(sq));
      uint32_t i = 0;
      for (; i < nr_nops; i++) {
        const Ptr req = io_alloc_req(k_, c, c.submitter);
        if (req == kNull) break;
        ev(k_.mm, Event::sqe_submit);
        io_post_cqe(k_, c);
        io_req_complete_defer(c, req);
      }
      return i == 0 && nr_nops > 0 ? kEAGAIN : static_cast<int>(i);
    });
  }

  // io_uring_register(IORING_REGISTER_FILES2, IORING_RSRC_REGISTER_SPARSE):
  // `optin` is the registration flag the prefill-optin policy honours.
  int files_register_sparse(RingId r, uint32_t nr, bool optin = false) {
    return reg(r, [&](IoRingCtx& c) { return io_sqe_files_register(k_, c, nr, true, optin, c.submitter); });
  }
  // io_uring_register(IORING_REGISTER_FILES) with `nr` real files.
  int files_register(RingId r, uint32_t nr) {
    return reg(r, [&](IoRingCtx& c) { return io_sqe_files_register(k_, c, nr, false, false, c.submitter); });
  }
  int files_unregister(RingId r) {
    return reg(r, [&](IoRingCtx& c) { return io_sqe_files_unregister(k_, c, c.submitter); });
  }
  // IORING_REGISTER_FILES_UPDATE with fd -1 for [offset, offset+count).
  int files_update_remove(RingId r, uint32_t offset, uint32_t count) {
    return reg(r, [&](IoRingCtx& c) { return io_files_update_remove(k_, c, offset, count, c.submitter); });
  }
  // IORING_REGISTER_FILES_UPDATE with a real fd for [offset, offset+count).
  int files_update_set(RingId r, uint32_t offset, uint32_t count) {
    return reg(r, [&](IoRingCtx& c) { return io_files_update_set(k_, c, offset, count, c.submitter); });
  }

  // __io_fixed_fd_install() alone (a direct-descriptor install with a file
  // the caller already holds), on the ring's submitter. `slot` is 0-based
  // or IORING_FILE_INDEX_ALLOC. No request is accounted.
  int fixed_fd_install(RingId r, uint32_t slot) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    ev(k_.mm, Event::fget);
    const int ret = io_fixed_fd_install_locked(k_, *c, slot, c->submitter);
    if (ret < 0) ev(k_.mm, Event::fput);
    return failed(ret);
  }

  // IORING_OP_MSG_RING / IORING_MSG_SEND_FD on `src`: send src's fixed
  // file `src_slot` into `dst` at `dst_slot` (0-based, or
  // IORING_FILE_INDEX_ALLOC). `defer_taskrun`: the target has
  // task_complete, so the install runs on the target's submitter task.
  int msg_ring_send_fd(RingId src, RingId dst, uint32_t src_slot, uint32_t dst_slot,
                       bool defer_taskrun = false) {
    IoRingCtx* d = known(dst) ? ring_or_dead(dst) : nullptr;
    return sqe(src, [&](IoRingCtx& c) {
      return io_msg_send_fd(k_, c, d, src_slot, dst_slot, defer_taskrun);
    });
  }

  // IORING_OP_READ of one byte from fixed file `slot` of ring `r` (a
  // memfd, read through io-wq: rw.h), or from its lowest installed slot
  // (kFirstInstalledSlot). 0 = read, kEBADF = empty slot.
  int read_fixed(RingId r, uint32_t slot) {
    return sqe(r, [&](IoRingCtx& c) {
      if (slot == kFirstInstalledSlot) slot = c.files.first_set();
      return io_read_fixed(k_, c, slot);
    });
  }

  // IORING_OP_FUTEX_WAIT: 0 = armed, kEAGAIN = arm failed (word changed).
  int futex_wait(RingId r, bool word_matches) {
    return sqe(r, [&](IoRingCtx& c) { return io_futex_wait(k_, c, word_matches); });
  }
  // IORING_OP_FUTEX_WAITV with `nr` entries: 0 = armed.
  int futex_waitv(RingId r, uint32_t nr, bool words_match = true) {
    return sqe(r, [&](IoRingCtx& c) { return io_futex_waitv(k_, c, nr, words_match); });
  }
  // IORING_OP_FUTEX_WAKE waking up to `n` armed waiters (WAIT or WAITV) of
  // the ring, oldest first. Returns the number woken.
  int futex_wake(RingId r, uint32_t n) {
    return sqe(r, [&](IoRingCtx& c) { return io_futex_wake(k_, c, n); });
  }
  // IORING_OP_POLL_ADD on a file that never becomes ready: the request
  // stays armed until ring exit cancels it.
  int poll_add(RingId r) {
    return sqe(r, [&](IoRingCtx& c) {
      const Ptr req = io_alloc_req(k_, c, c.submitter);
      if (req == kNull) return kEAGAIN;
      ev(k_.mm, Event::sqe_submit);
      ev(k_.mm, Event::poll_add);
      c.poll_list.push_back(req);
      return 0;
    });
  }

  // The application consumes every CQE posted to ring `r` (no syscall).
  // Returns how many it reaped.
  uint64_t reap_cq(RingId r) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return 0;
    // Overflowed CQEs stay on the kernel's list until an io_uring_enter()
    // flushes them (finish_enter()).
    const uint64_t n = c->cq_pending;
    ev(k_.mm, Event::cqe_reap, n);
    c->cq_pending = 0;
    read_cq_pages(*c, n);
    return n;
  }

  // Introspection.
  // Ring records held: the open rings only (memory follows them, not the
  // rings a run has made).
  size_t rings_held() const { return rings_.size(); }
  // A ring closed since reads as dead (not live, every field empty);
  // an id never returned throws std::out_of_range.
  const IoRingCtx& ring(RingId r) const {
    if (!known(r)) throw std::out_of_range("no such ring");
    const auto it = rings_.find(r);
    return it == rings_.end() ? dead_ : *it->second;
  }
  const KernelProfile& profile() const { return k_.profile; }
  const PolicySet& policy() const { return k_.policy; }
  CacheId req_cachep() const { return k_.req_cachep; }
  CacheId rsrc_node_cachep() const { return k_.rsrc_node_cachep; }
  A& mm() { return k_.mm; }
  // Operations that failed for want of a resource, by errno (kENOMEM,
  // kENFILE, kEMFILE): what a report must show, since the counts of a run
  // with failed operations do not describe the workload it was asked for.
  const std::map<int, uint64_t>& failures() const { return failures_; }

 private:
  int failed(int ret) {
    if (ret == kENOMEM || ret == kENFILE || ret == kEMFILE) ++failures_[ret];
    return ret;
  }
  bool known(RingId r) const { return r >= 0 && r < next_id_; }
  // The open ring `r`, or nullptr. A program works two rings at a time
  // (a source and its target), so the last two found are kept at hand;
  // creating or closing a ring forgets them.
  IoRingCtx* find(RingId r) {
    for (const Hot& h : hot_)
      if (h.id == r) return h.ctx;
    const auto it = rings_.find(r);
    IoRingCtx* c = it == rings_.end() ? nullptr : it->second.get();
    hot_[hot_next_] = {r, c};
    hot_next_ ^= 1;
    return c;
  }
  void forget_hot() { hot_[0] = hot_[1] = Hot{}; }
  IoRingCtx* live(RingId r) {
    IoRingCtx* c = find(r);
    return c && c->live ? c : nullptr;
  }
  // A known ring, or (closed) the dead ring.
  IoRingCtx* ring_or_dead(RingId r) {
    IoRingCtx* c = find(r);
    return c ? c : &dead_;
  }
  void finish_enter(IoRingCtx& c) {
    io_flush_completions(k_, c, c.submitter);
    if (!c.futex_woken.empty()) [[unlikely]] run_woken(c);
    ev(k_.mm, Event::cqe_reap, drain_cq(c));
  }
  // The task_work the enter's wakes queued, then its flush (out of line:
  // only an enter with a FUTEX_WAKE that woke someone has any).
  [[gnu::noinline]] void run_woken(IoRingCtx& c) {
    io_futex_run_woken(k_, c);
    io_flush_completions(k_, c, c.submitter);
  }
  // At the end of an io_uring_enter() the application empties the CQ
  // ring; each time it is empty the enter's overflow flush (on the
  // submitter) moves overflowed CQEs in, and those are reaped too, until
  // the list is empty: every overflowed entry kfree'd in order. Returns
  // every CQE consumed.
  uint64_t drain_cq(IoRingCtx& c) {
    const uint64_t reaped = c.cq_pending + c.cq_overflow.size();
    c.cq_pending = 0;
    io_cqring_overflow_flush(k_, c, c.submitter);
    read_cq_pages(c, reaped);
    return reaped;
  }
  // The application reads the `n` CQEs it reaps. On the CQ array's first
  // lap each page its head reaches is read for the first time through the
  // program's fresh mapping of the ring (ring_cq_page): beyond page 0,
  // which the first CQEs share with the header (ring_first_use), and
  // short of the pages the SQ index array shares, which the program wrote
  // at set-up. A replayed trace (reaped_in_time) does not trace its
  // program's reaping, so neither its reads.
  void read_cq_pages(IoRingCtx& c, uint64_t n) {
    const uint64_t head = c.cq_head;
    c.cq_head += n;
    const uint64_t size = c.cq_capacity;  // set at creation
    if (c.params.reaped_in_time || n == 0 || head >= size) return;
    const uint32_t end =
        std::min(cq_entry_page(std::min(c.cq_head, size) - 1) + 1, sq_array_page(c.params));
    if (end <= c.cq_pages_read) return;
    ev(k_.mm, Event::ring_cq_page, end - c.cq_pages_read);
    c.cq_pages_read = end;
  }
  // An SQE-driven operation: its own io_uring_enter() unless inside one.
  template <class F>
  int sqe(RingId r, F&& f) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    const bool implicit = c->batch_depth == 0;
    if (implicit) ev(k_.mm, Event::io_uring_enter);
    const int ret = f(*c);
    if (implicit) finish_enter(*c);
    return failed(ret);
  }
  // An io_uring_register() operation (runs under uring_lock, no request).
  template <class F>
  int reg(RingId r, F&& f) {
    IoRingCtx* c = live(r);
    if (c == nullptr) return kEBADF;
    ev(k_.mm, Event::io_uring_register);
    return failed(f(*c));
  }

  IoKernel<A> k_;
  // The open rings by id (ids are never reused; teardown order is id
  // order), each on the heap: memory follows the rings open, not the
  // rings a run has made. A closed ring reads as `dead_`.
  std::map<RingId, std::unique_ptr<IoRingCtx>> rings_;
  RingId next_id_ = 0;
  IoRingCtx dead_;
  struct Hot {
    RingId id = -1;
    IoRingCtx* ctx = nullptr;
  };
  Hot hot_[2];
  unsigned hot_next_ = 0;
  std::map<int, uint64_t> failures_;
};

}  // namespace simcache::iou
