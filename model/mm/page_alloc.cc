#include "model/mm/page_alloc.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "model/mm/id_pool.h"

namespace simcache {

PageAllocator::PageAllocator(EventSink* events, FaultInjector* faults, uint32_t high_min,
                             uint32_t high_max)
    : ev_(events), faults_(faults), high_min_(high_min), high_max_(high_max) {
  if (high_min < PCP_HIGH_FLOOR || high_max < high_min) {
    std::fprintf(stderr, "simcache: internal error: per-CPU page lists' high mark %u..%u\n",
                 high_min, high_max);
    std::abort();
  }
  live_.push_back(0);  // page id 0 is "no page"
}

PageAllocator::Pcp& PageAllocator::pcp(CpuId cpu, NodeId node) {
  const uint32_t key = uint32_t{cpu} << 8 | node;
  for (Pcp& p : pcp_)
    if (p.key == key) return p;
  return pcp_.emplace_back(Pcp{key, {}, 0, high_min_, 0, 0});
}

// A block from the node's free blocks (the buddy lists).
uint32_t PageAllocator::take_free() { return take_id<uint32_t>(live_, free_ids_); }

// free_pcppages_bulk(): at the high mark the CPU gives back `count`
// pages (nr_pcp_free()), oldest first, from the list the block was freed
// to, then the next order's, and so on round the orders, the count
// checked after each block (so it may end below 0 by less than a
// block). Returns the blocks given back.
uint32_t PageAllocator::drain(Pcp& p, uint32_t order, int64_t count) {
  uint32_t blocks = 0;
  while (count > 0 && p.pages > 0) {
    auto& l = p.list[order];
    while (count > 0 && !l.empty()) {
      free_ids_.push_back(l.front().id);
      l.pop_front();
      p.pages -= 1u << order;
      count -= int64_t{1} << order;
      ++blocks;
    }
    order = (order + 1) % (PCP_MAX_ORDER + 1);
  }
  return blocks;
}

// mirrors __alloc_pages(): counts the order, honours injected failures;
// rmqueue_pcplist() up to PCP_MAX_ORDER, rmqueue_buddy() above.
uint32_t PageAllocator::alloc_pages(uint32_t order, NodeId node, gfp_t gfp, CpuId cpu,
                                    bool* cold) {
  (void)gfp;
  if (cold) *cold = false;
  if (order > MAX_PAGE_ORDER) return 0;  // the buddy allocator has no such order: NULL
  if (faults_->should_fail(FaultPoint::page_alloc)) return 0;
  static constexpr Event kByOrder[] = {
      Event::page_alloc_order0, Event::page_alloc_order1,
      Event::page_alloc_order2, Event::page_alloc_order3};
  uint32_t id;
  if (order <= PCP_MAX_ORDER) {
    // rmqueue_pcplist(): the CPU's own list under its pcp lock, which
    // nothing else contends; zone->lock only for a refill's buddy work,
    // which comes before the block's own preparation (priced by
    // page_alloc_order*, below).
    Pcp& p = pcp(cpu, node);
    p.free_count >>= 1;  // an allocation halves the run of frees
    auto& l = p.list[order];
    if (l.empty()) {  // rmqueue_bulk(): a batch of blocks not in this CPU's caches
      // nr_pcp_alloc(): the refill's batch raises the mark; an order-0
      // batch doubles with each refill since the last free, within the
      // room below the mark.
      uint32_t batch = order == 0 ? PCP_BATCH << p.alloc_factor : PCP_BATCH;
      p.high = std::min(p.high + batch, high_max_);
      if (order == 0) {
        const auto room = static_cast<uint32_t>(
            std::max<int64_t>(int64_t{p.high} - p.pages - PCP_BATCH, PCP_BATCH));
        if (batch <= room && p.alloc_factor < PCP_BATCH_SCALE_MAX) ++p.alloc_factor;
        batch = std::min(batch, room);
      } else {
        batch = std::max<uint32_t>(batch >> order, 2);
      }
      if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
      for (uint32_t i = 0; i < batch; ++i) l.push_front({take_free(), false});
      ev_->add(Event::page_pcp_refill);
      ev_->add(Event::page_pcp_refill_blocks, batch);
      if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
      p.pages += batch << order;
    }
    ev_->add(kByOrder[order]);
    const Block b = l.back();  // LIFO: the last freed, or the refill's
    l.pop_back();
    p.pages -= 1u << order;
    id = b.id;
    if (!b.hot) {
      ev_->add(Event::page_alloc_cold);
      if (cold) *cold = true;
    }
  } else {
    // rmqueue_buddy(): straight from the free blocks, under zone->lock.
    if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
    ev_->add(Event::page_alloc_order3);
    if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
    id = take_free();
  }
  live_[id] = static_cast<uint8_t>(node + 1);  // 0 = free, else node + 1
  ++allocated_;
  return id;
}

// mirrors __free_pages(): to the freeing CPU's list up to PCP_MAX_ORDER
// (free_frozen_page_commit()), to the node's free blocks above.
void PageAllocator::free_pages(uint32_t page, uint32_t order, CpuId cpu) {
  if (page == 0 || page >= live_.size() || live_[page] == 0) {
    std::fprintf(stderr, "simcache: internal error: bad page free %u\n", page);
    std::abort();
  }
  const NodeId node = static_cast<NodeId>(live_[page] - 1);
  live_[page] = 0;
  --allocated_;
  if (order <= PCP_MAX_ORDER) {
    ev_->add(Event::page_free);  // free_pages_prepare(), before the list
    Pcp& p = pcp(cpu, node);
    p.list[order].push_back({page, true});
    p.pages += 1u << order;
    p.alloc_factor >>= 1;  // a free halves the order-0 refills' growth
    if (p.free_count < PCP_FREE_COUNT_MAX) p.free_count += 1u << order;
    // nr_pcp_high(): the mark this free is judged by; at it, the mark is
    // raised (for the frees after) to hold the run and a batch.
    const uint32_t high = p.high;
    if (p.pages >= high) {  // free_pcppages_bulk(), under zone->lock
      p.high = std::max(p.high, std::min(p.free_count + PCP_BATCH, high_max_));
      // nr_pcp_free(): the run of frees, at least a batch, at most the
      // mark less a batch (the mark is at least 4 batches: the two are
      // ordered).
      const int64_t count = std::min<int64_t>(std::max<int64_t>(p.free_count, PCP_BATCH),
                                              int64_t{high} - PCP_BATCH);
      if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
      const uint32_t blocks = drain(p, order, count);
      ev_->add(Event::page_pcp_drain);
      ev_->add(Event::page_pcp_drain_blocks, blocks);
      if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
    }
  } else {  // free_one_page() straight to the free blocks, under zone->lock
    if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
    ev_->add(Event::page_free);  // the hold: the call's own price
    free_ids_.push_back(page);
    if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
  }
}

void PageAllocator::signature(StateSig* s) const {
  s->add(allocated_);
  uint64_t lists = 0;  // the CPUs' lists that hold blocks: where this part ends
  const auto blank = [&](const Pcp& p) {
    return p.pages == 0 && p.high == high_min_ && p.free_count == 0 && p.alloc_factor == 0;
  };
  for (const Pcp& p : pcp_) lists += !blank(p);
  s->add(lists);
  for (const Pcp& p : pcp_) {
    if (blank(p)) continue;
    s->add(p.key);
    s->add(uint64_t{p.high} << 32 | p.free_count);
    s->add(p.alloc_factor);
    for (const auto& l : p.list) {
      s->add(l.size());
      uint64_t word = 0;
      uint32_t bits = 0;
      for (const Block& b : l) {
        word = word << 1 | b.hot;
        if (++bits == 64) s->add(word), word = 0, bits = 0;
      }
      if (bits) s->add(word);
    }
  }
}

}  // namespace simcache
