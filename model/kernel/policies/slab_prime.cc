// "slab-prime" (seed 004 cover letter, diagnostic "slab primed, 0 new
// pages"): at sparse registration, allocate enough node objects to
// populate ceil(min(N,4096) / objs_per_slab) slab pages, keep one anchor
// object per page so the pages stay, free the rest; anchors are freed at
// unregister. See docs/model-io_uring.md for the exact reading.
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) { p.slab_prime = true; }
}  // namespace

SIMCACHE_IOU_POLICY(slab_prime, "slab-prime", "slab_prime",
                    "seed 004 diagnostic: pre-populate node slab pages at registration",
                    apply)
