// The kmalloc size classes of one booted kernel: kmalloc_caches[type]
// [index] (the caches create_kmalloc_caches() makes at boot) and the
// kmalloc_slab() look-up from (size, gfp, caller) to a cache. The facade
// (model/mm/mm.h) fills the table at boot and routes kmalloc() through
// it; SLUB reads it for its own internal kmallocs (obj_exts vectors, 7.x
// sheaves) without seeing the facade.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/mm/geometry.h"
#include "model/types.h"

namespace simcache {

class KmallocClasses {
 public:
  // CONFIG_RANDOM_KMALLOC_CACHES and random_kmalloc_seed.
  KmallocClasses(bool random, uint64_t seed)
      : random_(random), seed_(seed),
        caches_(kNumKmallocTypes, std::vector<CacheId>(kNumKmallocIndex, kNoCache)) {
    by_size_.fill(kNoCache);
  }

  // Whether boot creates the caches of `type` (the random copies only
  // with CONFIG_RANDOM_KMALLOC_CACHES).
  bool exists(KmallocType type) const {
    const bool rnd = type >= KmallocType::RANDOM_FIRST && type <= KmallocType::RANDOM_LAST;
    return !rnd || random_;
  }
  // Boot: the cache of (type, size-class index), then finish() once all are set.
  void set(KmallocType type, uint32_t index, CacheId s) {
    caches_[static_cast<uint32_t>(type)][index] = s;
  }
  // Builds the fast path's by-size table from the table (left empty with
  // the random copies, which hash the call site).
  void finish() {
    by_size_.fill(kNoCache);
    if (random_) return;
    for (uint32_t size = 8; size <= KMALLOC_MAX_CACHE_SIZE; size += 8) {
      const uint32_t idx = kmalloc_index(size);
      by_size_[(size - 1) / 8] = caches_[uint32_t(KmallocType::NORMAL)][idx];
      by_size_[kBySize + (size - 1) / 8] = caches_[uint32_t(KmallocType::CGROUP)][idx];
    }
  }

  // The kmalloc cache kmalloc(size, gfp) from `site` would use
  // (kNoCache for 0 or above KMALLOC_MAX_CACHE_SIZE).
  CacheId lookup(uint32_t size, gfp_t gfp, SiteId site) const {
    if (size - 1 < KMALLOC_MAX_CACHE_SIZE) {
      const CacheId s = lookup_fast(size, gfp);
      if (s != kNoCache) return s;
    }
    return lookup_slow(size, gfp, site);
  }
  // kmalloc_slab()'s fast path, for 1 <= size <= KMALLOC_MAX_CACHE_SIZE:
  // a plain or __GFP_ACCOUNT-only request without random copies. kNoCache
  // when lookup() has more to do.
  CacheId lookup_fast(uint32_t size, gfp_t gfp) const {
    if (gfp & (__GFP_RECLAIMABLE | __GFP_DMA)) return kNoCache;
    return by_size_[((gfp & __GFP_ACCOUNT) ? kBySize : 0) + (size - 1) / 8];
  }

 private:
  CacheId lookup_slow(uint32_t size, gfp_t gfp, SiteId site) const;

  bool random_;
  uint64_t seed_;
  // kmalloc_caches[type][index], created at boot (create_kmalloc_caches).
  std::vector<std::vector<CacheId>> caches_;
  // kmalloc_slab() fast path: by (size - 1) / 8, the plain cases then the
  // __GFP_ACCOUNT-only ones (kNoCache throughout with random copies).
  static constexpr uint32_t kBySize = KMALLOC_MAX_CACHE_SIZE / 8;
  std::array<CacheId, 2 * kBySize> by_size_{};
};

}  // namespace simcache
