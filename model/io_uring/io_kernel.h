// The global io_uring state of one simulated kernel: the allocator, the
// version facts, the policies, and the kmem_caches io_uring_init()
// creates. Every operation in this layer takes an IoKernel<A>&.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <utility>
#include <vector>

#include "model/io_uring/ctx.h"
#include "model/io_uring/allocator.h"
#include "model/sched/cpufreq.h"
#include "model/sched/idle.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"

namespace simcache::iou {

// sizeof(struct io_mapped_ubuf) + 32 bvecs (IO_CACHED_BVECS_SEGS), derived
// in docs/sources.md §2; only the imu_cache array is allocated.
inline constexpr uint32_t kImuCacheElemSize = 568;

// Sizes of the ring set-up and task-context objects, 6.18 x86-64 (the
// bytes_req of the live kernel's kmem:kmalloc events, docs/measure.md;
// every profile uses them: their kmalloc classes are the same in v6.12
// and v7.x).
inline constexpr uint32_t kPercpuRefDataSize = 56;  // struct percpu_ref_data
inline constexpr uint32_t kIoRingsHeader = 192;     // offsetof(struct io_rings, cqes)
inline constexpr uint32_t kCqeSize = 16;            // struct io_uring_cqe
inline constexpr uint32_t kSqeSize = 64;            // struct io_uring_sqe
inline constexpr uint32_t kIoUringTaskSize = 320;   // struct io_uring_task
inline constexpr uint32_t kIoWqHashSize = 40;       // struct io_wq_hash
inline constexpr uint32_t kIoWqSize = 808;          // struct io_wq
inline constexpr uint32_t kIoTctxNodeSize = 32;     // struct io_tctx_node
inline constexpr uint32_t kIoWorkerSize = 240;      // struct io_worker (live 6.18.44 trace: bytes_req=240)

// One task's io_uring context (current->io_uring): made on the task's
// first ring, freed when the task exits. Tasks are told apart by CPU and
// memory cgroup (a model task is pinned to one CPU in one memcg).
struct IoUringTask {
  CpuId cpu = 0;
  MemcgId memcg = kRootMemcg;
  Ptr tctx = kNull;   // kzalloc(sizeof(struct io_uring_task))
  Ptr io_wq = kNull;  // tctx->io_wq
  Ptr wq_hash = kNull;  // the io_wq's reference on a ring's hash_map
  Ptr io_worker = kNull;  // its io-wq's one worker (create_io_worker()), once work was queued
};

// What of the task contexts decides the future (model/mm/state_sig.h):
// each one's allocations, the io_wq_hash references and the waiting
// CPU's frequency boost (ctx_sig.cc).
void tasks_signature(const std::vector<IoUringTask>& tasks,
                     const std::vector<std::pair<Ptr, uint32_t>>& wq_hash_refs,
                     const IowaitBoost& boost, StateSig* s);

// The running CPU's virtual clock where the allocator has one (priced
// runs), else 0.
template <IoAllocator A>
double io_clock(A& a) {
  if constexpr (requires { a.events().now(); }) return a.events().now();
  else return 0;
}

template <IoAllocator A>
struct IoKernel {
  A& mm;
  KernelProfile profile;
  PolicySet policy;
  CacheId req_cachep = kNoCache;        // "io_kiocb"
  CacheId rsrc_node_cachep = kNoCache;  // "io_rsrc_node" (node-slab policies)
  // The machine's cpuidle states the wait model picks from (machine.def);
  // nullptr: none modelled, a cqring wait prices no idle exit.
  const IdleTable* idle = idle_table(kDefaultIdleMachine);
  // The machine's governor raises the frequency on iowait wake-ups
  // (schedutil / intel_pstate without HWP; machine.def
  // cpufreq_iowait_boost), and the waiting CPU's boost state (cpufreq.h).
  bool cpufreq_iowait_boost = false;
  IowaitBoost freq_boost;
  // The last-level cache the benchmark's data keeps (machine.def llc_kib;
  // 0, the default of a bare IoKernel: no limit modelled): the polls a
  // ring arms beyond what it holds are priced cold (io_ring_exit_cancel).
  uint64_t llc_bytes = 0;
  // Virtual ns the waiting CPU spent idle in I/O-wait sleeps (priced runs).
  double iowait_ns = 0;
  // The last io_ring_ctx_free()'s node-cache free (io_alloc_cache_free()
  // of ctx->node_cache): its start and end on the running CPU's clock,
  // and the nodes it freed (priced runs; a driver places the teardown on
  // the kworker's timeline from them).
  double node_free_begin = 0, node_free_end = 0;
  uint64_t node_free_objects = 0;
  // Live task contexts (tctx.h) and the references on each io_wq_hash
  // (one from its ring, one per io_wq that took it).
  std::vector<IoUringTask> tasks;
  std::vector<std::pair<Ptr, uint32_t>> wq_hash_refs;

  // Mirrors io_uring_init(), 6.18: the io_kiocb cache (SLAB_HWCACHE_ALIGN |
  // SLAB_PANIC | SLAB_ACCOUNT | SLAB_TYPESAFE_BY_RCU; its usercopy window
  // and freeptr offset are not expressible here and change nothing: the
  // cache is unmergeable anyway), plus seed 004 patch 1/3's node cache.
  IoKernel(A& a, const KernelProfile& p, const PolicySet& pol)
      : mm(a), profile(p), policy(pol) {
    req_cachep = mm.kmem_cache_create(
        "io_kiocb", profile.io_kiocb_size, 0,
        SLAB_HWCACHE_ALIGN | SLAB_PANIC | SLAB_ACCOUNT | SLAB_TYPESAFE_BY_RCU);
    if (policy.node_alloc != NodeAlloc::kmalloc && profile.has_node_cache) {
      slab_flags_t f = SLAB_HWCACHE_ALIGN | SLAB_PANIC;
      if (policy.node_alloc == NodeAlloc::slab_account) f |= SLAB_ACCOUNT;
      rsrc_node_cachep =
          mm.kmem_cache_create("io_rsrc_node", profile.rsrc_node_size, 0, f);
    }
  }
};

// sizeof(struct io_overflow_cqe): a list_head and a 16-byte CQE.
inline constexpr uint64_t kOverflowCqeSize = 32;

// CQEs the ring's CQ holds: cq_entries rounded up to a power of two, as
// io_uring_setup() sizes it.
template <class Ctx>
uint64_t cq_capacity(const Ctx& ctx) {
  return std::bit_ceil(std::clamp<uint32_t>(ctx.params.cq_entries, 1, IORING_MAX_CQ_ENTRIES));
}

// A request or an armed op posts a CQE to `ctx`. With the CQ ring full
// (as many CQEs posted and not reaped as it holds) the CQE overflows:
// io_alloc_ocqe() allocates an io_overflow_cqe (the profile's ocqe_gfp,
// accounted) onto ctx->cq_overflow_list; a failed allocation loses the
// CQE. The allocation runs where the CQE is posted: the ring's submitter
// task, whose task_work runs its completions (the live 6.18 trace
// allocates them on the program's CPU even when the ring's exit work
// cancelled the requests), or `poster` (a MSG_RING into another ring).
// A DEFER_TASKRUN ring's CQ is lockless (ctx->lockless_cq), and its
// completions allocate the entry GFP_KERNEL instead of the profile's
// atomic gfp (__io_submit_flush_completions() picks the sleeping gfp for
// a lockless CQ, 6.16 and later), still accounted (and zeroed where the
// profile kzallocs). An auxiliary CQE (io_post_aux_cqe(): a MSG_RING
// target's) takes the CQ lock whatever the ring and overflows through
// io_cqe_overflow_locked() with the profile's atomic gfp, DEFER_TASKRUN
// or not (`aux`).
template <IoAllocator A, class Ctx>
[[gnu::noinline, gnu::cold]] void io_cqe_overflow(IoKernel<A>& k, Ctx& ctx, const Task& poster,
                                                  bool aux) {
  SiteScope scope(k.mm, CallSite::io_alloc_ocqe);
  ev(k.mm, Event::cqe_overflow);
  const gfp_t gfp = ctx.params.defer_taskrun && !aux
                        ? GFP_KERNEL | (k.profile.ocqe_gfp & (__GFP_ACCOUNT | __GFP_ZERO))
                        : k.profile.ocqe_gfp;
  const Ptr o = k.mm.kmalloc(kOverflowCqeSize, gfp, poster);
  if (o == kNull) {
    ev(k.mm, Event::cqe_overflow_dropped);
    return;
  }
  ctx.cq_overflow.push_back(o);
}

// While older CQEs wait on the overflow list (IO_CHECK_CQ_OVERFLOW_BIT
// set), io_cqe_cache_refill() refuses the ring and every new CQE
// overflows too, room or not, until a flush empties the list: the ring
// keeps CQEs in order.
template <IoAllocator A, class Ctx>
inline void io_post_cqe(IoKernel<A>& k, Ctx& ctx, const Task& poster, bool aux = false) {
  ev(k.mm, Event::cqe_post);
  if (ctx.cq_pending < ctx.cq_capacity && ctx.cq_overflow.empty()) [[likely]] {
    ctx.cq_pending++;
    return;
  }
  io_cqe_overflow(k, ctx, poster, aux);
}
// io_post_aux_cqe(): a CQE posted outside a request's completion (the
// MSG_RING target's), under the CQ lock.
template <IoAllocator A, class Ctx>
inline void io_post_aux_cqe(IoKernel<A>& k, Ctx& ctx, const Task& poster) {
  io_post_cqe(k, ctx, poster, /*aux=*/true);
}
template <IoAllocator A, class Ctx>
inline void io_post_cqe(IoKernel<A>& k, Ctx& ctx) {
  io_post_cqe(k, ctx, ctx.submitter);
}

// __io_cqring_overflow_flush(): every overflowed CQE, oldest first, its
// io_overflow_cqe kfree'd on `t`; the caller accounts for where the CQEs
// went (reaped, or dropped with a dying ring).
template <IoAllocator A, class Ctx>
void io_cqring_overflow_flush(IoKernel<A>& k, Ctx& ctx, const Task& t) {
  for (Ptr o : ctx.cq_overflow) k.mm.kfree(o, t);
  ctx.cq_overflow.clear();
}

}  // namespace simcache::iou
