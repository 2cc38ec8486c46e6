// "bulk-refill" (seed 004 patch 2/3): a node-cache miss bulk-allocates up
// to IO_ALLOC_CACHE_REFILL (32) objects, bounded by the cache's free room,
// returns the last and stashes the rest. Needs node-slab(-account).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.bulk_refill = simcache::iou::IO_ALLOC_CACHE_REFILL;
}
}  // namespace

SIMCACHE_IOU_POLICY(bulk_refill, "bulk-refill", "bulk_refill",
                    "seed 004 2/3: refill the node cache 32 objects at a time on a miss",
                    apply)
