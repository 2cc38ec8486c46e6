// "waitv-noaccount" (seed 000): FUTEX_WAITV data is allocated GFP_KERNEL
// whatever the profile says (the reporter's diagnostic revert on v7.2).
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.waitv_account = simcache::iou::WaitvAccount::noaccount;
}
}  // namespace

SIMCACHE_IOU_POLICY(waitv_noaccount, "waitv-noaccount", "waitv_account",
                    "seed 000: FUTEX_WAITV data allocated GFP_KERNEL (not charged)", apply)
