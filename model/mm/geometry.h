// SLUB cache geometry and kmalloc routing as pure functions of object
// size, flags and the number of present CPUs. Mirrors calculate_order(),
// calc_slab_order(), calculate_alignment(), set_cpu_partial(),
// calculate_sheaf_capacity() (mm/slub.c) and kmalloc_index(),
// kmalloc_type() (include/linux/slab.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/types.h"

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
// Whether kmem_cache_create() can lay out objects of `size` bytes with
// `align` and `flags`: a nonzero size whose slot (word- and align-rounded,
// computed without wrapping) fits one slab of at most MAX_PAGE_ORDER,
// i.e. KMALLOC_MAX_SIZE. calculate_order() finds no order otherwise, and
// kmem_cache_create() returns NULL.
bool slab_layout_ok(uint32_t size, uint32_t align, slab_flags_t flags);
// Full geometry for a cache. `gen` decides whether sheaves exist for
// caches that did not request a capacity; `requested_sheaf_capacity` is
// kmem_cache_args.sheaf_capacity.
Geometry compute_geometry(uint32_t size, uint32_t align, slab_flags_t flags,
                          uint16_t nr_present_cpus, SlubGen gen,
                          uint32_t requested_sheaf_capacity = 0);
// get_order(size): smallest order whose pages hold `size` bytes.
uint32_t get_order(uint64_t size);

// Per-cache values a user sets over the computed geometry, as if written
// to /sys/kernel/slab/<cache>/{min_partial,cpu_partial} at boot (and, for
// sheaves, passed as kmem_cache_args.sheaf_capacity). kGeometryFromKernel
// keeps the computed value.
inline constexpr uint32_t kGeometryFromKernel = 0xffffffffu;
struct GeometryOverride {
  uint32_t sheaf_capacity = kGeometryFromKernel;  // caches that have sheaves (7.x)
  uint32_t min_partial = kGeometryFromKernel;
  uint32_t cpu_partial = kGeometryFromKernel;     // caches with a cpu partial list (6.18)
};
// Applies `o` to `g`: cpu_partial_slabs follows cpu_partial as
// slub_set_cpu_partial() does (mm/slub.c, v6.18).
void apply_geometry_override(Geometry& g, const GeometryOverride& o);

// ---- Building blocks of the above, exposed for tests and the SLUB model.

// Flags that make a cache a debug cache (SLAB_DEBUG_FLAGS, mm/slab.h):
// no cpu partial list (6.18) and no sheaves.
inline constexpr slab_flags_t SLAB_DEBUG_FLAGS =
    SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER | SLAB_TRACE |
    SLAB_CONSISTENCY_CHECKS;
// Flags that must be equal for two caches to merge (mm/slab_common.c).
inline constexpr slab_flags_t SLAB_MERGE_SAME =
    SLAB_RECLAIM_ACCOUNT | SLAB_CACHE_DMA | SLAB_CACHE_DMA32 | SLAB_ACCOUNT;
// SLAB_NEVER_MERGE for `gen` (7.x adds SLAB_CONSISTENCY_CHECKS).
slab_flags_t slab_never_merge(SlubGen gen);

// hash_64(val, bits) (include/linux/hash.h, 64-bit multiplicative hash).
uint64_t hash_64(uint64_t val, uint32_t bits);
// kmalloc_size_roundup(size): the bucket size kmalloc(size) really uses.
uint64_t kmalloc_size_roundup(uint64_t size);
// create_boot_cache() alignment request for a kmalloc cache: the largest
// power of two dividing `size`, at least ARCH_KMALLOC_MINALIGN (8).
uint32_t kmalloc_cache_align(uint32_t size);
// Geometry of kmalloc cache (type, index) as new_kmalloc_cache() builds it.
// 7.x kmalloc caches get sheaves (bootstrap_kmalloc_sheaves() for NORMAL
// and the random copies); 6.18 kmalloc caches have none.
Geometry kmalloc_geometry(KmallocType type, uint32_t index,
                          uint16_t nr_present_cpus, SlubGen gen);

// oo_objects(oo_make(order, size)): objects in a slab of `order`.
uint32_t order_objects(uint32_t order, uint32_t size);
// calculate_order()'s default min_objects: 4 * (fls(nr_cpus) + 1).
uint32_t calc_min_objects(uint16_t nr_present_cpus);
// calc_slab_order(): first order in [min_order, max_order] whose leftover is
// at most slab_bytes / fract_leftover; max_order + 1 if none.
uint32_t calc_slab_order(uint32_t size, uint32_t min_order, uint32_t max_order,
                         uint32_t fract_leftover);
// calculate_order(size) for a slot size of `size`.
uint32_t calculate_order(uint32_t size, uint16_t nr_present_cpus);
// s->min_partial = clamp(ilog2(s->size) / 2, MIN_PARTIAL, MAX_PARTIAL).
uint32_t calc_min_partial(uint32_t size);
// set_cpu_partial() (6.18): cpu_partial objects for slot size `size`.
uint32_t calc_cpu_partial(uint32_t size, slab_flags_t flags);
// slub_set_cpu_partial(): slabs = DIV_ROUND_UP(objects * 2, objs_per_slab).
uint32_t calc_cpu_partial_slabs(uint32_t cpu_partial, uint32_t objs_per_slab);
// calculate_sheaf_capacity() (7.x) / the 6.18 rule (exactly the request,
// never enlarged) for slot size `size`.
uint32_t calc_sheaf_capacity(uint32_t size, slab_flags_t flags, SlubGen gen,
                             uint32_t requested_sheaf_capacity);

// ---- Cache merging (mm/slab_common.c).

// An existing cache as find_mergeable() sees it.
struct MergeCandidate {
  uint32_t size = 0;         // s->size (slot size)
  uint32_t object_size = 0;  // s->object_size
  slab_flags_t flags = 0;
  bool has_ctor = false;
  uint32_t usersize = 0;     // nonzero only under CONFIG_HARDENED_USERCOPY
  int refcount = 1;          // < 0: exempt from merging (boot caches)
  // kmem_cache_args.sheaf_capacity it was created with: 6.18 caches with
  // cpu_sheaves and 7.x caches with SLAB_NO_MERGE added for it never merge.
  uint32_t requested_sheaf_capacity = 0;
};

// slab_unmergeable(s).
bool slab_unmergeable(const MergeCandidate& s, bool slab_nomerge, SlubGen gen);
// find_mergeable(): index of the first (oldest) candidate the new cache may
// alias, or -1. `align` is the requested alignment (before
// calculate_alignment()); a nonzero `requested_sheaf_capacity` never merges.
int find_mergeable(uint32_t size, uint32_t align, slab_flags_t flags,
                   uint32_t usersize, bool has_ctor, bool slab_nomerge,
                   SlubGen gen, const std::vector<MergeCandidate>& oldest_first,
                   uint32_t requested_sheaf_capacity = 0);
// create_unique_id(): ":A-0000032" style sysfs id of a mergeable cache;
// `size` is s->size.
std::string create_unique_id(slab_flags_t flags, uint32_t size);

}  // namespace simcache
