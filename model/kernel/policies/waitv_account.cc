// "waitv-account" (seed 000): FUTEX_WAITV data is allocated
// GFP_KERNEL_ACCOUNT whatever the profile says (the 7.0 behaviour).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.waitv_account = simcache::iou::WaitvAccount::account;
}
}  // namespace

SIMCACHE_IOU_POLICY(waitv_account, "waitv-account", "waitv_account",
                    "seed 000: FUTEX_WAITV data allocated GFP_KERNEL_ACCOUNT", apply)
