// "node-slab" (seed 004 patch 1/3, v2): io_rsrc_node objects come from a
// dedicated kmem_cache "io_rsrc_node" (SLAB_HWCACHE_ALIGN | SLAB_PANIC, no
// SLAB_ACCOUNT) instead of kmalloc-32; every free path uses
// kmem_cache_free().
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.node_alloc = simcache::iou::NodeAlloc::slab;
}
}  // namespace

SIMCACHE_IOU_POLICY(node_slab, "node-slab", "node_alloc",
                    "seed 004 1/3 v2: dedicated io_rsrc_node kmem_cache, not accounted",
                    apply)
