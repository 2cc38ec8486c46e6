// The ring's user memory and the task's io_uring context: the page-pointer
// arrays io_allocate_scq_urings() makes (io_uring/memmap.c), and
// io_uring/tctx.c's per-task state (struct io_uring_task, its io-wq, one
// io_tctx_node per ring the task uses), made when a task creates its
// first ring and freed when the task exits.
#pragma once

#include <algorithm>
#include <bit>
#include <utility>

#include "model/io_uring/ctx.h"
#include "model/io_uring/io_kernel.h"

namespace simcache::iou {

// The pages of the two regions io_allocate_scq_urings() creates, as
// io_uring_fill_params() sizes the rings: SQ entries and CQ entries
// rounded up to powers of two; the rings region holds struct io_rings,
// the CQEs and (no IORING_SETUP_NO_SQARRAY) the SQ index array after a
// cacheline; the SQ region holds the SQEs.
// Where the SQ index array starts in the rings region: after struct
// io_rings and the CQEs, at the next cacheline.
inline uint64_t sq_array_offset(const RingParams& p) {
  const uint64_t cq = std::bit_ceil(std::clamp(p.cq_entries, 1u, IORING_MAX_CQ_ENTRIES));
  return (kIoRingsHeader + cq * kCqeSize + 63) / 64 * 64;
}
inline uint32_t ring_region_pages(const RingParams& p) {
  const uint64_t sq = std::bit_ceil(std::clamp(p.sq_entries, 1u, IORING_MAX_ENTRIES));
  return static_cast<uint32_t>((sq_array_offset(p) + sq * 4 + PAGE_SIZE - 1) / PAGE_SIZE);
}
// The page of the rings region that CQE `idx` (below the CQ size) is in.
inline uint32_t cq_entry_page(uint64_t idx) {
  return static_cast<uint32_t>((kIoRingsHeader + idx * kCqeSize) / PAGE_SIZE);
}
// The page of the rings region where the SQ index array starts: the
// program writes the whole array when it sets the ring up (liburing's
// io_uring_queue_init() maps SQ slot i to SQE i), so the CQ array's
// pages from this one on are not first read while reaping.
inline uint32_t sq_array_page(const RingParams& p) {
  return static_cast<uint32_t>(sq_array_offset(p) / PAGE_SIZE);
}
inline uint32_t sq_region_pages(const RingParams& p) {
  const uint64_t sq = std::bit_ceil(std::clamp(p.sq_entries, 1u, IORING_MAX_ENTRIES));
  return static_cast<uint32_t>((sq * kSqeSize + PAGE_SIZE - 1) / PAGE_SIZE);
}

// Mirrors io_allocate_scq_urings(), 6.14+ (io_create_region(); v6.12 and
// v6.13 make the same array in io_pages_map()): per region a page-pointer
// array kvmalloc_array(nr_pages, 8, GFP_KERNEL_ACCOUNT | __GFP_ZERO |
// __GFP_NOWARN), then the pages with the same gfp
// (io_region_allocate_pages(): one zeroed compound, else order-0 pages;
// Mm::alloc_page_region). Once io_uring_setup() has returned the ring,
// the program maps both regions (liburing's io_uring_queue_init()
// mmap()s them; io_uring_mmap() -> vm_insert_pages()): ring_create()
// counts their pages as ring_pages_mapped, which ring_page prices with
// their unmapping and first touches.
// __io_account_mem() (RLIMIT_MEMLOCK) is skipped: the programs the model
// replays run with CAP_IPC_LOCK.
template <IoAllocator A>
int io_allocate_scq_urings(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_allocate_scq_urings);
  constexpr gfp_t gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO | __GFP_NOWARN;
  const Task site = at_site(t, kSiteRegionPages);
  const uint32_t ring_pages = ring_region_pages(ctx.params);
  const uint32_t sq_pages = sq_region_pages(ctx.params);
  ctx.ring_region = k.mm.kvmalloc(uint64_t{ring_pages} * 8, gfp, site);
  if (ctx.ring_region == kNull) return kENOMEM;
  ctx.ring_pages = k.mm.alloc_page_region(ring_pages, gfp, site);
  if (ctx.ring_pages == kNull) return kENOMEM;
  ctx.sq_region = k.mm.kvmalloc(uint64_t{sq_pages} * 8, gfp, site);
  if (ctx.sq_region == kNull) return kENOMEM;
  ctx.sq_pages = k.mm.alloc_page_region(sq_pages, gfp, site);
  return ctx.sq_pages == kNull ? kENOMEM : 0;
}

// Mirrors io_rings_free(): io_free_region() of the SQ region, then of the
// rings region; each releases its pages, then kvfree()s their array.
template <IoAllocator A>
void io_rings_free(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  for (auto [pages, array] : {std::pair{&ctx.sq_pages, &ctx.sq_region},
                              std::pair{&ctx.ring_pages, &ctx.ring_region}}) {
    if (*pages != kNull) k.mm.free_page_region(*pages, t), *pages = kNull;
    if (*array != kNull) k.mm.kvfree(*array, t), *array = kNull;
  }
}

inline bool same_task(const IoUringTask& u, const Task& t) {
  return u.cpu == t.cpu && u.memcg == t.memcg;
}

// current->io_uring of `t`, or nullptr.
template <IoAllocator A>
IoUringTask* io_task_ctx(IoKernel<A>& k, const Task& t) {
  for (IoUringTask& u : k.tasks)
    if (same_task(u, t)) return &u;
  return nullptr;
}

// Mirrors io_wq_put_hash(): the last reference frees the io_wq_hash.
template <IoAllocator A>
void io_wq_put_hash(IoKernel<A>& k, Ptr hash, const Task& t) {
  auto it = std::find_if(k.wq_hash_refs.begin(), k.wq_hash_refs.end(),
                         [&](const auto& r) { return r.first == hash; });
  if (it == k.wq_hash_refs.end() || --it->second > 0) return;
  k.wq_hash_refs.erase(it);
  k.mm.kfree(hash, t);
}

// Mirrors io_uring_alloc_task_context(), 6.18: kzalloc the io_uring_task
// (GFP_KERNEL); io_init_wq_offload(): the ring's hash_map if it has none
// (kzalloc, GFP_KERNEL; the ring holds one reference), then
// io_wq_create() (kzalloc of struct io_wq, which takes a reference on the
// hash). No io-wq worker is created until work is queued to it, which no
// modelled operation does. The percpu_counter is per-CPU memory, not slab.
template <IoAllocator A>
int io_uring_alloc_task_context(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_uring_alloc_task_context);
  IoUringTask u;
  u.cpu = t.cpu;
  u.memcg = t.memcg;
  u.tctx = k.mm.kmalloc(kIoUringTaskSize, GFP_KERNEL | __GFP_ZERO, at_site(t, kSiteTctx));
  if (u.tctx == kNull) return kENOMEM;
  if (ctx.hash_map == kNull) {
    ctx.hash_map = k.mm.kmalloc(kIoWqHashSize, GFP_KERNEL | __GFP_ZERO, at_site(t, kSiteWqHash));
    if (ctx.hash_map == kNull) {
      k.mm.kfree(u.tctx, t);
      return kENOMEM;
    }
    k.wq_hash_refs.emplace_back(ctx.hash_map, 1);
  }
  {
    SiteScope wq(k.mm, CallSite::io_wq_create);
    u.io_wq = k.mm.kmalloc(kIoWqSize, GFP_KERNEL | __GFP_ZERO, at_site(t, kSiteIoWq));
  }
  if (u.io_wq == kNull) {
    k.mm.kfree(u.tctx, t);
    return kENOMEM;
  }
  u.wq_hash = ctx.hash_map;
  for (auto& r : k.wq_hash_refs)
    if (r.first == u.wq_hash) ++r.second;
  k.tasks.push_back(u);
  return 0;
}

// Mirrors __io_uring_add_tctx_node() as io_uring_create() calls it for
// the ring's creator: the task context on the task's first ring, then
// one io_tctx_node (kmalloc, GFP_KERNEL) stored in the task's xarray
// (the xarray's own nodes, radix_tree_node, are not modelled).
template <IoAllocator A>
int io_uring_add_tctx_node(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_uring_add_tctx_node);
  if (io_task_ctx(k, t) == nullptr) {
    if (int ret = io_uring_alloc_task_context(k, ctx, t); ret != 0) return ret;
  }
  ctx.tctx_node = k.mm.kmalloc(kIoTctxNodeSize, GFP_KERNEL, at_site(t, kSiteTctxNode));
  return ctx.tctx_node == kNull ? kENOMEM : 0;
}

// Mirrors io_uring_del_tctx_node(): the ring's node, freed in the task's
// context (io_ring_exit_work()'s task_work, or the task's own exit).
template <IoAllocator A>
void io_uring_del_tctx_node(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  if (ctx.tctx_node == kNull) return;
  k.mm.kfree(ctx.tctx_node, t);
  ctx.tctx_node = kNull;
}

// The task-context half of a task's exit, once its rings' nodes are gone:
// io_uring_clean_tctx() frees the io_wq (io_wq_put_and_exit(), which drops
// its hash reference), and __io_uring_free() the io_uring_task.
template <IoAllocator A>
void io_uring_free_task_context(IoKernel<A>& k, const Task& t) {
  auto it = std::find_if(k.tasks.begin(), k.tasks.end(),
                         [&](const IoUringTask& u) { return same_task(u, t); });
  if (it == k.tasks.end()) return;
  const IoUringTask u = *it;
  k.tasks.erase(it);
  // io_wq_exit_workers(): the worker exits (io_worker_exit(), kfree_rcu()
  // in the kernel; the model frees it at once).
  if (u.io_worker != kNull) k.mm.kfree(u.io_worker, t);
  k.mm.kfree(u.io_wq, t);
  if (u.wq_hash != kNull) io_wq_put_hash(k, u.wq_hash, t);
  k.mm.kfree(u.tctx, t);
}

}  // namespace simcache::iou
