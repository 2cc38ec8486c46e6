// "slab-nomerge": the slab_nomerge boot parameter (no kmem_cache aliasing).
// Lives in the mm layer; this only switches MmConfig.slab_nomerge on.
#include "model/kernel/policy.h"
#include "model/mm/mm.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig& mm) {
  p.slab_nomerge = true;
  mm.slab_nomerge = true;
}
}  // namespace

SIMCACHE_IOU_POLICY(slab_nomerge, "slab-nomerge", "slab_nomerge",
                    "boot option slab_nomerge: never alias kmem_caches", apply)
