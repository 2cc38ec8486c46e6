// "memcg-batch-charge" (seed 002): the proposed batched
// __memcg_slab_post_alloc_hook. Lives in the mm layer; this only switches
// MmConfig.memcg_batch_charge on.
#include "model/kernel/policy.h"
#include "model/mm/mm.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig& mm) {
  p.memcg_batch_charge = true;
  mm.memcg_batch_charge = true;
}
}  // namespace

SIMCACHE_IOU_POLICY(memcg_batch_charge, "memcg-batch-charge", "memcg_batch_charge",
                    "seed 002: charge bulk allocations to memcg per run, not per object",
                    apply)
