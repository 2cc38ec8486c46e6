#include "model/mm/page_alloc.h"

#include "model/mm/id_pool.h"

#include <cstdio>
#include <cstdlib>

namespace simcache {

PageAllocator::PageAllocator(EventSink* events, FaultInjector* faults)
    : ev_(events), faults_(faults) {
  live_.push_back(0);  // page id 0 is "no page"
}

// mirrors __alloc_pages(): counts the order, honours injected failures.
uint32_t PageAllocator::alloc_pages(uint32_t order, NodeId node, gfp_t gfp) {
  (void)gfp;
  if (order > MAX_PAGE_ORDER) return 0;  // the buddy allocator has no such order: NULL
  if (faults_->should_fail(FaultPoint::page_alloc)) return 0;
  static constexpr Event kByOrder[] = {
      Event::page_alloc_order0, Event::page_alloc_order1,
      Event::page_alloc_order2, Event::page_alloc_order3};
  // zone->lock around the buddy work (the model has no per-CPU page
  // lists, so every allocation takes it; its hold is the priced event).
  if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
  ev_->add(kByOrder[order < 3 ? order : 3]);
  if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
  const uint32_t id = take_id<uint32_t>(live_, free_ids_);
  live_[id] = static_cast<uint8_t>(node + 1);  // 0 = free, else node + 1
  return id;
}

// mirrors __free_pages().
void PageAllocator::free_pages(uint32_t page, uint32_t order) {
  if (page == 0 || page >= live_.size() || live_[page] == 0) {
    std::fprintf(stderr, "simcache: internal error: bad page free %u\n", page);
    std::abort();
  }
  (void)order;
  const NodeId node = static_cast<NodeId>(live_[page] - 1);
  live_[page] = 0;
  free_ids_.push_back(page);
  if (ev_->locks) ev_->locks->acquire(LockClass::zone_lock, node);
  ev_->add(Event::page_free);
  if (ev_->locks) ev_->locks->release(LockClass::zone_lock, node);
}

}  // namespace simcache
