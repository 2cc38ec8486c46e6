// SLUB cache geometry and kmalloc routing as pure functions of object
// size, flags and the number of present CPUs. Mirrors calculate_order(),
// calc_slab_order(), calculate_alignment(), set_cpu_partial(),
// calculate_sheaf_capacity() (mm/slub.c) and kmalloc_index(),
// kmalloc_type() (include/linux/slab.h).
#pragma once

#include <cstdint>
#include <string>

#include "simcache/types.h"

namespace simcache {

inline constexpr uint32_t KMALLOC_MIN_SIZE = 8;
inline constexpr uint32_t KMALLOC_MAX_CACHE_SIZE = 8192;
inline constexpr uint32_t KMALLOC_SHIFT_HIGH = 13;
inline constexpr uint32_t SLUB_MAX_ORDER = 3;  // PAGE_ALLOC_COSTLY_ORDER
inline constexpr uint32_t MIN_PARTIAL = 5;
inline constexpr uint32_t MAX_PARTIAL = 10;
inline constexpr uint32_t MAX_FULL_SHEAVES = 10;
inline constexpr uint32_t MAX_EMPTY_SHEAVES = 10;
inline constexpr uint32_t PCS_BATCH_MAX = 32;
inline constexpr uint32_t RANDOM_KMALLOC_CACHES_NR = 15;

// kmalloc size-class index: 1 = 8 ... 13 = 8192, with 96 -> 1 and
// 192 -> 2 as in the kernel (kmalloc_index()). 0 for size 0.
// Precondition: size <= KMALLOC_MAX_CACHE_SIZE.
uint32_t kmalloc_index(uint32_t size);
// Object size of size-class index i (kmalloc_info[i].size).
uint32_t kmalloc_size(uint32_t index);
inline constexpr uint32_t kNumKmallocIndex = KMALLOC_SHIFT_HIGH + 1;

enum class KmallocType : uint8_t {
  NORMAL = 0,
  RANDOM_FIRST = 1,                 // KMALLOC_RANDOM_START + 0 .. 14
  RANDOM_LAST = RANDOM_FIRST + RANDOM_KMALLOC_CACHES_NR - 1,
  RECLAIM,
  DMA,
  CGROUP,
  kCount
};
inline constexpr uint32_t kNumKmallocTypes = static_cast<uint32_t>(KmallocType::kCount);

// kmalloc_type(flags, caller). `random` is CONFIG_RANDOM_KMALLOC_CACHES;
// the random copy is hash_64(site ^ seed, 4) as in the kernel (copy 0 is
// the normal cache itself).
KmallocType kmalloc_type(gfp_t flags, SiteId site, bool random, uint64_t seed);
// "kmalloc-32", "kmalloc-cg-2k", "kmalloc-rnd-03-192", ...
std::string kmalloc_cache_name(KmallocType type, uint32_t index);
// The flags new_kmalloc_cache() gives a cache of this type (memcg on).
slab_flags_t kmalloc_cache_flags(KmallocType type);

struct Geometry {
  uint32_t object_size = 0;   // requested size
  uint32_t size = 0;          // slot size after alignment (s->size)
  uint32_t align = 0;
  uint32_t order = 0;         // s->oo order
  uint32_t objects = 0;       // objects per slab at `order`
  uint32_t min_order = 0;     // s->min: order for one object (fallback)
  uint32_t min_objects = 0;   // objects at min_order
  uint32_t min_partial = 0;
  uint32_t cpu_partial = 0;       // 6.18 objects
  uint32_t cpu_partial_slabs = 0; // 6.18
  uint32_t sheaf_capacity = 0;    // 7.x (6.18: only if requested)
};

// calculate_alignment(flags, align, size).
uint32_t calculate_alignment(slab_flags_t flags, uint32_t align, uint32_t size);
// Full geometry for a cache. `gen` decides whether sheaves exist for
// caches that did not request a capacity; `requested_sheaf_capacity` is
// kmem_cache_args.sheaf_capacity.
Geometry compute_geometry(uint32_t size, uint32_t align, slab_flags_t flags,
                          uint16_t nr_present_cpus, SlubGen gen,
                          uint32_t requested_sheaf_capacity = 0);
// get_order(size): smallest order whose pages hold `size` bytes.
uint32_t get_order(uint64_t size);

}  // namespace simcache
