// "unpatched": the null baseline. Applies nothing; every PolicySet default
// already is the unpatched kernel of the chosen profile.
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet&, simcache::MmConfig&) {}
}  // namespace

SIMCACHE_IOU_POLICY(unpatched, "unpatched", "",
                    "the kernel as the profile describes it (null baseline)", apply)
