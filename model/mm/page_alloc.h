// The page allocator, reduced to what the slab layer and large kmalloc
// need: order-N allocations per node, counted by order, freeable, and
// able to fail on demand. Mirrors the interface of alloc_pages_node() /
// __free_pages(); no zones, no buddy merging, no reclaim.
//
// Orders up to PAGE_ALLOC_COSTLY_ORDER go through per-CPU lists, as the
// kernel's per_cpu_pages (mm/page_alloc.c: rmqueue_pcplist(),
// free_frozen_page_commit()): one LIFO list per CPU, node and order; a
// free pushes onto the freeing CPU's list, an allocation pops the
// allocating CPU's newest block, and an empty list is refilled from the
// node's free blocks (rmqueue_bulk(); the batch below). A CPU whose lists reach their high mark gives back
// pages, oldest first (free_pcppages_bulk()). What the lists decide is
// which block an allocation gets, and so whether its memory is
// cache-hot: a block this CPU freed counts as hot, one a refill brought
// as cold (last written by another CPU or long ago). Clearing a cold
// block is dearer (zero_bytes_cold, model/mm/mm.cc). Higher orders come
// straight from the node's free blocks and count as hot.
//
// The high mark is the machine's (machine.def pcp_high_min and
// pcp_high_max, zone_highsize()): each CPU's starts at the least and is
// tuned as 6.18 tunes pcp->high while the zone is above its high
// watermark (nr_pcp_alloc(), nr_pcp_high()): up by the refill's batch at
// every refill, and, when a free finds the lists at the mark, up to the
// run of pages freed since the last allocations (pcp->free_count) plus a
// batch, never past the most. A drain gives back that run, at least a
// batch and at most the mark less a batch (nr_pcp_free()). free_count
// grows by each freed block's pages, to at most 32 batches
// (CONFIG_PCP_BATCH_SCALE_MAX = 5), and halves at each allocation from
// the lists. An order-0 refill is a batch times 2^pcp->alloc_factor: the
// factor grows by one at each order-0 refill whose own batch fits the
// room below the mark (the mark less the pages held and a batch, at
// least a batch), so the next is doubled, to at most 5, and a free
// halves it; the refill is held to that room. A higher order's refill is max(63 >> order, 2) blocks.
//
// zone->lock is taken where the kernel takes it on these paths: around
// a refill's and a drain's buddy work (held for the blocks moved, priced
// by page_buddy_block) and around an allocation or free above
// PCP_MAX_ORDER (held for the call's own price, page_alloc_order3 or
// page_free). An allocation or free the CPU's list serves takes only that
// list's pcp->lock, which nothing contends in the model, so it is not
// taken. Not modelled: the kernel's fallback to zone->lock for a single
// block when the pcp lock is busy (an interrupt on the same CPU, a remote
// drain_all_pages(), an RT preemption of the holder), the vmstat
// worker's timed drains and its decay of the high mark back toward the
// least (decay_pcp_high(), once a second), and THP's PMD-order list.
//
// Simplified against 6.18: no free_high fast drain of the order-1 to 3
// lists after a run of high-order frees; no zone below its high
// watermark or reclaiming (which hold the mark down); one list per
// order, not per migratetype, and no THP list; the lists start empty and
// each CPU's mark at its least, where a running kernel's lists hold
// pages and its marks sit where the last second's traffic tuned them.
// Every kernel profile tunes as 6.18 does (before 6.7 the mark was fixed
// and a drain's size doubled with each drain in a row). None of these
// changes which blocks are cold on a CPU that frees fewer blocks than it
// takes, which is what zero_bytes_cold counts.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "model/counters.h"
#include "model/mm/lock_hook.h"
#include "model/mm/fault.h"
#include "model/mm/state_sig.h"
#include "model/types.h"

namespace simcache {

// PAGE_ALLOC_COSTLY_ORDER: the highest order the per-CPU lists hold.
inline constexpr uint32_t PCP_MAX_ORDER = 3;
// pcp->batch of a zone of a few GiB and more (zone_batchsize(): 64
// rounded to 2^n - 1); the lists' high mark is never below 4 batches
// (zone_highsize()); a run of frees counts to at most 32 batches
// (CONFIG_PCP_BATCH_SCALE_MAX = 5).
inline constexpr uint32_t PCP_BATCH = 63;
inline constexpr uint32_t PCP_HIGH_FLOOR = 4 * PCP_BATCH;
inline constexpr uint32_t PCP_BATCH_SCALE_MAX = 5;
inline constexpr uint32_t PCP_FREE_COUNT_MAX = PCP_BATCH << PCP_BATCH_SCALE_MAX;

class PageAllocator {
 public:
  // PCP_HIGH_FLOOR <= high_min <= high_max (MmConfig, machine.def);
  // other marks are an internal error (abort).
  PageAllocator(EventSink* events, FaultInjector* faults, uint32_t high_min, uint32_t high_max);

  // Allocates 2^order pages on `node` for a task on `cpu`. Returns a
  // page id (> 0) or 0 on failure (injected). *cold, when given, says
  // whether the block came cache-cold (a refill; always false above
  // PCP_MAX_ORDER).
  uint32_t alloc_pages(uint32_t order, NodeId node, gfp_t gfp, CpuId cpu, bool* cold = nullptr);
  // Frees on `cpu`: the block goes to that CPU's list (orders up to
  // PCP_MAX_ORDER).
  void free_pages(uint32_t page, uint32_t order, CpuId cpu);
  // The pages allocated and, per CPU list, its blocks' temperatures in
  // list order, its high mark and its run of frees (model/mm/state_sig.h).
  // A page id is a label: which one a slab gets decides nothing else, so
  // the ids are left out.
  void signature(StateSig* s) const;

 private:
  struct Block {
    uint32_t id;
    bool hot;
  };
  struct Pcp {
    uint32_t key;  // cpu << 8 | node
    std::array<std::deque<Block>, PCP_MAX_ORDER + 1> list;  // front: oldest
    uint32_t pages = 0;
    uint32_t high = 0;          // pcp->high
    uint32_t free_count = 0;    // pcp->free_count: pages freed since the allocations
    uint32_t alloc_factor = 0;  // pcp->alloc_factor: order-0 refills since a free
  };
  Pcp& pcp(CpuId cpu, NodeId node);
  uint32_t take_free();
  uint32_t drain(Pcp& p, uint32_t order, int64_t count);

  EventSink* ev_;
  FaultInjector* faults_;
  uint32_t high_min_, high_max_;
  std::vector<uint32_t> free_ids_;
  std::vector<uint8_t> live_;  // indexed by page id: node + 1 while allocated
  std::vector<Pcp> pcp_;  // one per (cpu, node), made on first use
  uint64_t allocated_ = 0;  // blocks allocated now (on no list)
};

}  // namespace simcache
