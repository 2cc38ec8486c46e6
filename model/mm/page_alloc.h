// The page allocator, reduced to what the slab layer and large kmalloc
// need: order-N allocations per node, counted by order, freeable, and
// able to fail on demand. Mirrors the interface of alloc_pages_node() /
// __free_pages(); no zones, no buddy merging, no reclaim.
#pragma once

#include <cstdint>
#include <vector>

#include "model/counters.h"
#include "model/mm/lock_hook.h"
#include "model/mm/fault.h"
#include "model/mm/state_sig.h"
#include "model/types.h"

namespace simcache {

class PageAllocator {
 public:
  PageAllocator(EventSink* events, FaultInjector* faults);

  // Allocates 2^order pages on `node`. Returns a page id (> 0) or 0 on
  // failure (injected).
  uint32_t alloc_pages(uint32_t order, NodeId node, gfp_t gfp);
  void free_pages(uint32_t page, uint32_t order);
  // The pages allocated (model/mm/state_sig.h). A page id is a label:
  // which one a slab gets decides nothing else, so the ids are left out.
  void signature(StateSig* s) const {
    s->add(live_.size() - free_ids_.size());
  }

 private:
  EventSink* ev_;
  FaultInjector* faults_;
  std::vector<uint32_t> free_ids_;
  std::vector<uint8_t> live_;  // indexed by page id: 1 while allocated
};

}  // namespace simcache
