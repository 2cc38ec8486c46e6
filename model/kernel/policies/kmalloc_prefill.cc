// "kmalloc-prefill" (seed 004 first-fill diagnostic 63e60a1059df, rows
// SF-102..104): on the v6.13 child, which has no node cache, sparse
// registration kzalloc()s min(N, 4096) nodes and keeps them; installs take
// one of them before falling back to kzalloc. Freed nodes are kfree'd as
// on v6.13, leftovers at unregister.
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) { p.kmalloc_prefill = true; }
}  // namespace

SIMCACHE_IOU_POLICY(kmalloc_prefill, "kmalloc-prefill", "kmalloc_prefill",
                    "seed 004 diagnostic: 4096 kzalloc'd nodes cached at sparse registration (no node cache)",
                    apply)
