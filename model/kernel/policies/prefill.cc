// "prefill" (seed 004 patch 3/3): every sparse file-table registration of
// N slots grows the node cache to min(N, 4096) entries and fills it with
// one bulk allocation. Needs node-slab(-account).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.prefill = simcache::iou::Prefill::always;
}
}  // namespace

SIMCACHE_IOU_POLICY(prefill, "prefill", "prefill",
                    "seed 004 3/3: sparse registration prefills the node cache to min(N,4096)",
                    apply)
