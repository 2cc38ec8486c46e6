// "prefill-optin": the alternative the seed 004 cover letter offers --
// prefill as in patch 3/3, but only for registrations that pass an opt-in
// flag (files_register_sparse(..., optin = true)).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.prefill = simcache::iou::Prefill::optin;
}
}  // namespace

SIMCACHE_IOU_POLICY(prefill_optin, "prefill-optin", "prefill",
                    "seed 004 alternative: prefill only registrations that opt in",
                    apply)
