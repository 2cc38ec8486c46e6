// Per-ring state: the parts of struct io_ring_ctx the model needs. Plain
// data (not a template); the operations live in req.h, rsrc.h,
// filetable.h, msg_ring.h, futex.h and io_uring.h.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "model/io_uring/alloc_cache.h"
#include "model/mm/state_sig.h"
#include "model/types.h"

namespace simcache::iou {

using RingId = int32_t;

inline constexpr uint32_t IORING_FILE_INDEX_ALLOC = 0xffffffffu;  // ~0U
inline constexpr uint32_t IORING_MAX_FIXED_FILES = 1u << 20;
inline constexpr uint32_t IORING_MAX_ENTRIES = 32768;     // SQ entries io_uring_setup() takes
inline constexpr uint32_t IORING_MAX_CQ_ENTRIES = 65536;  // 2 * IORING_MAX_ENTRIES
inline constexpr uint32_t FUTEX_WAITV_MAX = 128;

struct RingParams {
  uint32_t sq_entries = 256;
  uint32_t cq_entries = 0;     // 0: 2 * sq_entries, as io_uring_setup() defaults
  bool defer_taskrun = false;  // SINGLE_ISSUER|DEFER_TASKRUN: ctx->task_complete
  // The application reaps every CQE in time: the CQ ring never overflows
  // (a replayed kernel trace, whose reaping is not traced: the kernel's
  // overflow entries, if any, are its io_alloc_ocqe lines).
  bool reaped_in_time = false;
};

// struct io_file_table + struct io_rsrc_data (6.16+ layout) and the
// allocation range (ctx->file_alloc_start/end).
struct IoFileTable {
  bool registered = false;
  uint32_t nr = 0;
  Ptr nodes_mem = kNull;        // kvmalloc_array(nr, 8): data.nodes
  Ptr bitmap_mem = kNull;       // bitmap_zalloc(nr)
  std::vector<Ptr> nodes;       // model copy of data.nodes
  std::vector<uint64_t> bitmap; // model copy of the bitmap; bit set = slot used
  uint32_t alloc_hint = 0;
  uint32_t alloc_start = 0;
  uint32_t alloc_end = 0;
  std::vector<Ptr> anchors;     // slab-prime anchor objects, freed at unregister
  std::vector<Ptr> prefilled;   // kmalloc-prefill: kzalloc'd nodes not yet handed out

  bool test_bit(uint32_t i) const { return (bitmap[i >> 6] >> (i & 63)) & 1; }
  // The lowest set slot, or nr when none is.
  uint32_t first_set() const {
    for (size_t w = 0; w < bitmap.size(); ++w)
      if (bitmap[w]) return std::min(nr, static_cast<uint32_t>(w * 64 + std::countr_zero(bitmap[w])));
    return nr;
  }
};

enum class FutexKind : uint8_t { wait, waitv };

// A request parked on ctx->futex_list: FUTEX_WAIT (data = io_futex_data)
// or FUTEX_WAITV (data = the vector allocation).
struct ArmedFutex {
  Ptr req = kNull;
  Ptr data = kNull;
  FutexKind kind = FutexKind::wait;
  uint32_t nr = 0;
  bool cached = false;  // waitv-cache: the data came from (and returns to) waitv_cache
};

struct IoRingCtx {
  bool live = false;
  Task submitter;              // the task that set the ring up (task_work CPU)
  RingParams params;
  Ptr ctx_mem = kNull;         // kzalloc(sizeof(struct io_ring_ctx))
  Ptr ring_node = kNull;       // v6.12 ctx->rsrc_node (per_ring_rsrc_node)
  Ptr cancel_hbs = kNull;      // cancel_table.hbs
  Ptr refs_data = kNull;       // ctx->refs: percpu_ref_init()'s percpu_ref_data
  Ptr ring_region = kNull;     // ctx->ring_region's page array (SQ/CQ rings)
  Ptr sq_region = kNull;       // ctx->sq_region's page array (SQEs)
  Ptr ring_pages = kNull;      // ... and the pages themselves (Mm::alloc_page_region)
  Ptr sq_pages = kNull;
  Ptr hash_map = kNull;        // ctx->hash_map (io_wq_hash), set by the first task context
  Ptr tctx_node = kNull;       // the submitter's io_tctx_node for this ring

  // The per-ring io_alloc_caches, in io_ring_ctx_alloc()'s order.
  IoAllocCache apoll_cache, netmsg_cache, rw_cache, cmd_cache, msg_cache;
  IoAllocCache futex_cache;
  IoAllocCache waitv_cache;            // waitv-cache policy only (seed 000)
  IoAllocCache node_cache, imu_cache;  // profiles with a node cache only

  // Request cache: submit_state.free_list (a stack) and the completed
  // requests not yet flushed back to it (submit_state.compl_reqs).
  std::vector<Ptr> req_free;
  std::vector<Ptr> compl_reqs;
  // Async data of completed requests that io_rw_recycle() did not keep,
  // kfree'd with them at the flush (io_free_batch_list()).
  std::vector<Ptr> compl_async;
  uint32_t nr_req_allocated = 0;

  uint32_t batch_depth = 0;    // > 0 inside enter_begin()/enter_end()
  bool first_use_done = false;  // ring_first_use counted (first enter or MSG_RING into it)
  uint64_t cq_pending = 0;     // CQEs posted and not yet reaped
  // CQEs the application has reaped over the ring's life, and the pages
  // of the rings region its reads have reached (the first lap of the CQ
  // array; page 0, the header's, is ring_first_use's): ring_cq_page.
  uint64_t cq_head = 0;
  uint32_t cq_pages_read = 1;
  uint64_t cq_capacity = 0;    // CQEs the CQ ring holds (cq_capacity(), set at creation)
  // ctx->cq_overflow_list: the io_overflow_cqe objects of CQEs posted
  // while the CQ ring was full, oldest first.
  std::vector<Ptr> cq_overflow;

  IoFileTable files;
  std::vector<ArmedFutex> futex_list;
  // Waits a FUTEX_WAKE woke: the wake callback only queues their
  // completion as task_work (io_req_task_work_add()), which runs when the
  // enter returns to user space (finish_enter()), after the enter's own
  // completions are flushed: a WAIT later in the same enter does not find
  // their data back in futex_cache.
  std::vector<ArmedFutex> futex_woken;
  std::vector<Ptr> poll_list;  // armed IORING_OP_POLL_ADD requests
};

// What of a ring decides its future (model/mm/state_sig.h): its task,
// parameters and allocations, every io_alloc_cache's parked objects, the
// request lists, the CQ and the file table (ctx_sig.cc).
void ring_signature(const IoRingCtx& c, StateSig* s);

}  // namespace simcache::iou
