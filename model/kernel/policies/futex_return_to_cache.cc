// "futex-return-to-cache" (seed 001): a FUTEX_WAIT that fails to arm gives
// its io_futex_data back to ctx->futex_cache with io_cache_free() instead
// of kfree(), so repeated -EAGAIN arms stop draining the cache.
#include "model/kernel/policy.h"

namespace {
void apply(simcache::iou::PolicySet& p, simcache::MmConfig&) {
  p.futex_return_to_cache = true;
}
}  // namespace

SIMCACHE_IOU_POLICY(futex_return_to_cache, "futex-return-to-cache",
                    "futex_return_to_cache",
                    "seed 001: failed FUTEX_WAIT arms return their data to futex_cache",
                    apply)
