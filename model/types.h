// Basic vocabulary shared by every layer of the model.
#pragma once

#include <cstddef>
#include <cstdint>

namespace simcache {

using CpuId = uint16_t;
using NodeId = uint8_t;
using CacheId = uint16_t;   // index into the kmem_cache table
using MemcgId = uint16_t;   // 0 is the root cgroup (never charged)
using SiteId = uint32_t;    // a kmalloc call site (random kmalloc copies hash it)

inline constexpr CacheId kNoCache = 0xffff;
inline constexpr MemcgId kRootMemcg = 0;

// A simulated kernel pointer. 0 is NULL. Slab objects encode
// (epoch:16 | slab slot:32 | object index:15); large kmalloc and vmalloc
// areas set kLargeBit and carry their own id. Epochs make a stale pointer
// into a discarded and reused slab detectable.
using Ptr = uint64_t;
inline constexpr Ptr kNull = 0;
inline constexpr Ptr kLargeBit = 1ull << 63;
inline constexpr Ptr kVmallocBit = 1ull << 62;

// gfp_t: only the bits the model acts on. Values are the model's own.
using gfp_t = uint32_t;
inline constexpr gfp_t __GFP_DMA = 1u << 0;
inline constexpr gfp_t __GFP_RECLAIMABLE = 1u << 1;
inline constexpr gfp_t __GFP_ACCOUNT = 1u << 2;
inline constexpr gfp_t __GFP_ZERO = 1u << 3;
inline constexpr gfp_t __GFP_NOWARN = 1u << 4;
inline constexpr gfp_t __GFP_DIRECT_RECLAIM = 1u << 5;
inline constexpr gfp_t __GFP_KSWAPD_RECLAIM = 1u << 6;
inline constexpr gfp_t __GFP_THISNODE = 1u << 7;
inline constexpr gfp_t __GFP_NOFAIL = 1u << 8;
inline constexpr gfp_t __GFP_NORETRY = 1u << 9;
inline constexpr gfp_t __GFP_NOMEMALLOC = 1u << 10;
inline constexpr gfp_t __GFP_HIGH = 1u << 11;
inline constexpr gfp_t __GFP_NO_OBJ_EXT = 1u << 12;
inline constexpr gfp_t __GFP_COMP = 1u << 13;
inline constexpr gfp_t GFP_NOWAIT = __GFP_KSWAPD_RECLAIM;
inline constexpr gfp_t GFP_ATOMIC = __GFP_HIGH | __GFP_KSWAPD_RECLAIM;
inline constexpr gfp_t GFP_KERNEL = __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM;
inline constexpr gfp_t GFP_KERNEL_ACCOUNT = GFP_KERNEL | __GFP_ACCOUNT;
// gfpflags_allow_spinning(): any reclaim bit (GFP_NOWAIT and GFP_ATOMIC
// too); kmalloc_nolock() has none.
inline constexpr bool gfp_allow_spinning(gfp_t gfp) {
  return (gfp & (__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)) != 0;
}

// SLAB_* cache creation flags (model values).
using slab_flags_t = uint32_t;
inline constexpr slab_flags_t SLAB_HWCACHE_ALIGN = 1u << 0;
inline constexpr slab_flags_t SLAB_ACCOUNT = 1u << 1;
inline constexpr slab_flags_t SLAB_RECLAIM_ACCOUNT = 1u << 2;
inline constexpr slab_flags_t SLAB_CACHE_DMA = 1u << 3;
inline constexpr slab_flags_t SLAB_CACHE_DMA32 = 1u << 4;
inline constexpr slab_flags_t SLAB_TYPESAFE_BY_RCU = 1u << 5;
inline constexpr slab_flags_t SLAB_PANIC = 1u << 6;
inline constexpr slab_flags_t SLAB_NO_MERGE = 1u << 7;
inline constexpr slab_flags_t SLAB_KMALLOC = 1u << 8;
inline constexpr slab_flags_t SLAB_RED_ZONE = 1u << 9;
inline constexpr slab_flags_t SLAB_POISON = 1u << 10;
inline constexpr slab_flags_t SLAB_STORE_USER = 1u << 11;
inline constexpr slab_flags_t SLAB_TRACE = 1u << 12;
inline constexpr slab_flags_t SLAB_NOLEAKTRACE = 1u << 13;
inline constexpr slab_flags_t SLAB_FAILSLAB = 1u << 14;
inline constexpr slab_flags_t SLAB_CONSISTENCY_CHECKS = 1u << 15;
inline constexpr slab_flags_t SLAB_NO_OBJ_EXT = 1u << 16;

inline constexpr uint32_t PAGE_SHIFT = 12;
inline constexpr uint32_t PAGE_SIZE = 1u << PAGE_SHIFT;
// MAX_PAGE_ORDER (x86-64 default): the page allocator refuses larger orders,
// so no kmalloc() and no slab can be larger than KMALLOC_MAX_SIZE (4 MiB).
inline constexpr uint32_t MAX_PAGE_ORDER = 10;
inline constexpr uint64_t KMALLOC_MAX_SIZE = uint64_t{PAGE_SIZE} << MAX_PAGE_ORDER;

// Which SLUB the model runs: v6.18 (per-CPU slab + per-CPU partial list)
// or v7.x (per-CPU sheaves + per-node barn).
enum class SlubGen : uint8_t { v6_18, v7 };

// Who performs an operation: the CPU it runs on, the memcg of the task
// (kRootMemcg for kernel threads and root-cgroup tasks) and the call site.
struct Task {
  CpuId cpu = 0;
  MemcgId memcg = kRootMemcg;
  SiteId site = 0;
};

}  // namespace simcache
