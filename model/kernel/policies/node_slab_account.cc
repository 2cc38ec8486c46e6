// "node-slab-account" (seed 004 patch 1/3, v1): as node-slab, but the
// cache is created with SLAB_ACCOUNT, so every node is memcg-charged (the
// cover letter measured +8.5% per install and dropped it in v2).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.node_alloc = simcache::iou::NodeAlloc::slab_account;
}
}  // namespace

SIMCACHE_IOU_POLICY(node_slab_account, "node-slab-account", "node_alloc",
                    "seed 004 1/3 v1: dedicated io_rsrc_node kmem_cache with SLAB_ACCOUNT",
                    apply)
