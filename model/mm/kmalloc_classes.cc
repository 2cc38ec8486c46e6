#include "model/mm/kmalloc_classes.h"

namespace simcache {

// mirrors kmalloc_slab() with kmalloc_type(): the random copies, the
// reclaimable and DMA types, and sizes the fast path's tables skip.
CacheId KmallocClasses::lookup_slow(uint32_t size, gfp_t gfp, SiteId site) const {
  if (size == 0 || size > KMALLOC_MAX_CACHE_SIZE) return kNoCache;
  const KmallocType kt = kmalloc_type(gfp, site, random_, seed_);
  return caches_[static_cast<uint32_t>(kt)][kmalloc_index(size)];
}

}  // namespace simcache
