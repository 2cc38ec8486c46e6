// SLUB geometry, kmalloc routing and cache merging as pure functions.
// Modelled after mm/slub.c, mm/slab_common.c and include/linux/slab.h of
// v6.18 (per-CPU slab + partial) and v7.x (sheaves); see
// docs/sources.md (kmalloc routing, SLUB geometry).
#include "model/mm/geometry.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>

namespace simcache {
namespace {

constexpr uint32_t kWord = 8;              // sizeof(void *) on x86-64
constexpr uint32_t kCacheLine = 64;        // cache_line_size()
constexpr uint32_t kArchSlabMinalign = 8;  // arch_slab_minalign()
constexpr uint32_t kMaxObjsPerPage = 32767;
constexpr uint32_t kSheafHeader = 32;      // slab_sheaf minus objects[]
constexpr uint64_t kGoldenRatio64 = 0x61C8864680B583EBull;

// Class index for sizes 1..192, one entry per 8 bytes (kmalloc_size_index[]):
// 96 and 192 are the two non-power-of-two classes (indices 1 and 2).
constexpr std::array<uint8_t, 24> kSmallIndex = {
    3, 4, 5, 5, 6, 6, 6, 6, 1, 1, 1, 1,
    7, 7, 7, 7, 2, 2, 2, 2, 2, 2, 2, 2};

// fls(): 1-based position of the highest set bit, 0 for 0.
uint32_t fls32(uint32_t x) { return x ? 32 - std::countl_zero(x) : 0; }

uint32_t align_up(uint32_t x, uint32_t a) { return (x + a - 1) / a * a; }

// The "-<n>" part of a kmalloc cache name (kmalloc_info[].name).
std::string short_size(uint32_t index) {
  const uint32_t size = kmalloc_size(index);
  if (size >= 1024) return std::to_string(size / 1024) + "k";
  return std::to_string(size);
}

}  // namespace

// kmalloc_index(): size class for a request of `size` bytes.
uint32_t kmalloc_index(uint32_t size) {
  if (size == 0) return 0;
  if (size <= 192) return kSmallIndex[(size - 1) / 8];
  return fls32(size - 1);
}

// kmalloc_info[index].size.
uint32_t kmalloc_size(uint32_t index) {
  if (index == 1) return 96;
  if (index == 2) return 192;
  if (index < 3 || index > 31) return 0;
  return 1u << index;
}

// hash_64(): the generic 64-bit multiplicative hash.
uint64_t hash_64(uint64_t val, uint32_t bits) {
  if (bits == 0) return 0;
  return (val * kGoldenRatio64) >> (64 - bits);
}

// kmalloc_type(): KMALLOC_RANDOM_START == KMALLOC_NORMAL, so hash 0 is the
// normal cache and hash k is kmalloc-rnd-<k>.
KmallocType kmalloc_type(gfp_t flags, SiteId site, bool random, uint64_t seed) {
  if ((flags & (__GFP_RECLAIMABLE | __GFP_DMA | __GFP_ACCOUNT)) == 0) {
    if (!random) return KmallocType::NORMAL;
    return static_cast<KmallocType>(hash_64(uint64_t{site} ^ seed, 4));
  }
  if (flags & __GFP_DMA) return KmallocType::DMA;
  if (flags & __GFP_RECLAIMABLE) return KmallocType::RECLAIM;
  return KmallocType::CGROUP;  // CONFIG_MEMCG on
}

// kmalloc_info[index].name[type].
std::string kmalloc_cache_name(KmallocType type, uint32_t index) {
  const std::string sz = short_size(index);
  switch (type) {
    case KmallocType::NORMAL: return "kmalloc-" + sz;
    case KmallocType::RECLAIM: return "kmalloc-rcl-" + sz;
    case KmallocType::DMA: return "dma-kmalloc-" + sz;
    case KmallocType::CGROUP: return "kmalloc-cg-" + sz;
    default: break;
  }
  char rnd[24];
  std::snprintf(rnd, sizeof rnd, "kmalloc-rnd-%02u-",
                static_cast<unsigned>(type));
  return rnd + sz;
}

// new_kmalloc_cache() flags, CONFIG_MEMCG and CONFIG_ZONE_DMA on.
slab_flags_t kmalloc_cache_flags(KmallocType type) {
  switch (type) {
    case KmallocType::NORMAL: return SLAB_KMALLOC | SLAB_NO_MERGE;
    case KmallocType::RECLAIM: return SLAB_KMALLOC | SLAB_RECLAIM_ACCOUNT;
    case KmallocType::DMA: return SLAB_KMALLOC | SLAB_CACHE_DMA;
    case KmallocType::CGROUP: return SLAB_KMALLOC | SLAB_ACCOUNT;
    default: return SLAB_KMALLOC | SLAB_NO_MERGE;  // random copies
  }
}

// kmalloc_size_roundup().
uint64_t kmalloc_size_roundup(uint64_t size) {
  if (size == 0) return 0;
  if (size <= KMALLOC_MAX_CACHE_SIZE)
    return kmalloc_size(kmalloc_index(static_cast<uint32_t>(size)));
  if (size <= KMALLOC_MAX_SIZE)
    return uint64_t{PAGE_SIZE} << get_order(size);
  return size;
}

// create_boot_cache(): a kmalloc cache is aligned to the largest power of
// two dividing its size (v6.11+), at least ARCH_KMALLOC_MINALIGN.
uint32_t kmalloc_cache_align(uint32_t size) {
  const uint32_t pow2 = size ? (size & (~size + 1)) : 1;
  return std::max(kWord, pow2);
}

// get_order().
uint32_t get_order(uint64_t size) {
  if (size <= PAGE_SIZE) return 0;
  const uint64_t pages_m1 = (size - 1) >> PAGE_SHIFT;
  return 64 - static_cast<uint32_t>(std::countl_zero(pages_m1));
}

// calculate_alignment(): HWCACHE_ALIGN uses the cache line, halved while
// the object fits twice; never below the requested or arch alignment.
uint32_t calculate_alignment(slab_flags_t flags, uint32_t align,
                             uint32_t size) {
  if (flags & SLAB_HWCACHE_ALIGN) {
    uint32_t ralign = kCacheLine;
    while (ralign > 1 && size <= ralign / 2) ralign /= 2;
    align = std::max(align, ralign);
  }
  align = std::max(align, kArchSlabMinalign);
  return align_up(align, kWord);
}

bool slab_layout_ok(uint32_t size, uint32_t align, slab_flags_t flags) {
  if (size == 0 || size > KMALLOC_MAX_SIZE || align > KMALLOC_MAX_SIZE) return false;
  // Both below 2^23 here: align_up cannot wrap.
  const uint32_t a = calculate_alignment(flags, align, size);
  return uint64_t{align_up(align_up(size, kWord), a)} <= KMALLOC_MAX_SIZE;
}

// oo_objects(oo_make(order, size)).
uint32_t order_objects(uint32_t order, uint32_t size) {
  if (size == 0) return 0;
  return static_cast<uint32_t>((uint64_t{PAGE_SIZE} << order) / size);
}

// calculate_order(): min_objects grows with fls(present CPUs); a single
// present CPU falls back to nr_cpu_ids, which the model takes as 1 too.
uint32_t calc_min_objects(uint16_t nr_present_cpus) {
  const uint32_t nr = std::max<uint32_t>(nr_present_cpus, 1);
  return 4 * (fls32(nr) + 1);
}

// calc_slab_order().
uint32_t calc_slab_order(uint32_t size, uint32_t min_order, uint32_t max_order,
                         uint32_t fract_leftover) {
  uint32_t order = min_order;
  for (; order <= max_order; ++order) {
    const uint64_t slab_bytes = uint64_t{PAGE_SIZE} << order;
    if (slab_bytes % size <= slab_bytes / fract_leftover) break;
  }
  return order;
}

// calculate_order() (6.8+ form: one min_order, fractions 16, 8, 4, 2).
uint32_t calculate_order(uint32_t size, uint16_t nr_present_cpus) {
  if (size == 0) return 0;
  const uint32_t max_objects =
      std::max(order_objects(SLUB_MAX_ORDER, size), 1u);
  const uint32_t min_objects =
      std::min(calc_min_objects(nr_present_cpus), max_objects);
  const uint32_t min_order = get_order(uint64_t{min_objects} * size);
  if (order_objects(min_order, size) > kMaxObjsPerPage)
    return get_order(uint64_t{size} * kMaxObjsPerPage) - 1;
  for (uint32_t fraction = 16; fraction > 1; fraction /= 2) {
    const uint32_t order =
        calc_slab_order(size, min_order, SLUB_MAX_ORDER, fraction);
    if (order <= SLUB_MAX_ORDER) return order;
  }
  return get_order(size);  // one object per slab, beyond slub_max_order
}

// kmem_cache_open()/do_kmem_cache_create(): min_partial from ilog2(s->size).
uint32_t calc_min_partial(uint32_t size) {
  const uint32_t ilog2 = size ? fls32(size) - 1 : 0;
  return std::clamp(ilog2 / 2, MIN_PARTIAL, MAX_PARTIAL);
}

// set_cpu_partial() (6.18): debug caches keep no CPU partial slabs.
uint32_t calc_cpu_partial(uint32_t size, slab_flags_t flags) {
  if (flags & SLAB_DEBUG_FLAGS) return 0;
  if (size >= PAGE_SIZE) return 6;
  if (size >= 1024) return 24;
  if (size >= 256) return 52;
  return 120;
}

// slub_set_cpu_partial(): assumes CPU partial slabs are half full.
void apply_geometry_override(Geometry& g, const GeometryOverride& o) {
  if (o.min_partial != kGeometryFromKernel) g.min_partial = o.min_partial;
  if (o.cpu_partial != kGeometryFromKernel && g.cpu_partial_slabs > 0) {
    g.cpu_partial = o.cpu_partial;
    g.cpu_partial_slabs = calc_cpu_partial_slabs(g.cpu_partial, g.objects);
  }
  if (o.sheaf_capacity != kGeometryFromKernel && g.sheaf_capacity > 0)
    g.sheaf_capacity = o.sheaf_capacity;
}

uint32_t calc_cpu_partial_slabs(uint32_t cpu_partial, uint32_t objs_per_slab) {
  if (cpu_partial == 0 || objs_per_slab == 0) return 0;
  return (cpu_partial * 2 + objs_per_slab - 1) / objs_per_slab;
}

// calculate_sheaf_capacity() (7.x); 6.18 do_kmem_cache_create() takes the
// request as is (no rounding to a kmalloc bucket) and only for non-debug.
uint32_t calc_sheaf_capacity(uint32_t size, slab_flags_t flags, SlubGen gen,
                             uint32_t requested_sheaf_capacity) {
  if (flags & SLAB_DEBUG_FLAGS) return 0;
  if (gen == SlubGen::v6_18) return requested_sheaf_capacity;
  if (flags & (SLAB_NO_OBJ_EXT | SLAB_NOLEAKTRACE)) return 0;
  uint32_t base = 60;
  if (size >= PAGE_SIZE) base = 4;
  else if (size >= 1024) base = 12;
  else if (size >= 256) base = 26;
  // Grow the sheaf until it fills the kmalloc bucket it is allocated from.
  const uint64_t bucket = kmalloc_size_roundup(kSheafHeader + kWord * base);
  const uint32_t capacity =
      static_cast<uint32_t>((bucket - kSheafHeader) / kWord);
  return std::max(capacity, requested_sheaf_capacity);
}

// calculate_sizes() + do_kmem_cache_create(): slot size, order, partial
// and per-CPU caching limits. No debug metadata: the free pointer lives
// inside the object, so the slot is the word-aligned size rounded to align.
Geometry compute_geometry(uint32_t size, uint32_t align, slab_flags_t flags,
                          uint16_t nr_present_cpus, SlubGen gen,
                          uint32_t requested_sheaf_capacity) {
  Geometry g;
  g.object_size = size;
  g.align = calculate_alignment(flags, align, size);
  g.size = align_up(align_up(size, kWord), g.align);
  g.order = calculate_order(g.size, nr_present_cpus);
  g.objects = order_objects(g.order, g.size);
  g.min_order = get_order(g.size);
  g.min_objects = order_objects(g.min_order, g.size);
  g.min_partial = calc_min_partial(g.size);
  if (gen == SlubGen::v6_18) {
    g.cpu_partial = calc_cpu_partial(g.size, flags);
    g.cpu_partial_slabs = calc_cpu_partial_slabs(g.cpu_partial, g.objects);
  }
  g.sheaf_capacity =
      calc_sheaf_capacity(g.size, flags, gen, requested_sheaf_capacity);
  return g;
}

// new_kmalloc_cache() -> create_boot_cache(); 6.18 kmalloc caches never
// request sheaves, 7.x ones all get the computed capacity.
Geometry kmalloc_geometry(KmallocType type, uint32_t index,
                          uint16_t nr_present_cpus, SlubGen gen) {
  const uint32_t size = kmalloc_size(index);
  return compute_geometry(size, kmalloc_cache_align(size),
                          kmalloc_cache_flags(type), nr_present_cpus, gen);
}

// SLAB_NEVER_MERGE (mm/slab_common.c); 7.0 added SLAB_CONSISTENCY_CHECKS.
slab_flags_t slab_never_merge(SlubGen gen) {
  slab_flags_t f = SLAB_RED_ZONE | SLAB_POISON | SLAB_STORE_USER |
                   SLAB_TRACE | SLAB_TYPESAFE_BY_RCU | SLAB_NOLEAKTRACE |
                   SLAB_FAILSLAB | SLAB_NO_MERGE;
  if (gen == SlubGen::v7) f |= SLAB_CONSISTENCY_CHECKS;
  return f;
}

// slab_unmergeable(); a requested sheaf capacity stands for 6.18's
// s->cpu_sheaves test and 7.x's SLAB_NO_MERGE added at creation.
bool slab_unmergeable(const MergeCandidate& s, bool slab_nomerge, SlubGen gen) {
  if (slab_nomerge || (s.flags & slab_never_merge(gen))) return true;
  if (s.has_ctor || s.usersize != 0) return true;
  if (s.refcount < 0) return true;
  return s.requested_sheaf_capacity != 0;
}

// find_mergeable(): first fit, scanning from the oldest cache.
int find_mergeable(uint32_t size, uint32_t align, slab_flags_t flags,
                   uint32_t usersize, bool has_ctor, bool slab_nomerge,
                   SlubGen gen, const std::vector<MergeCandidate>& oldest_first,
                   uint32_t requested_sheaf_capacity) {
  if (slab_nomerge || has_ctor || usersize != 0) return -1;
  if (requested_sheaf_capacity != 0) return -1;
  if (flags & slab_never_merge(gen)) return -1;
  size = align_up(size, kWord);
  align = calculate_alignment(flags, align, size);
  size = align_up(size, align);
  for (size_t i = 0; i < oldest_first.size(); ++i) {
    const MergeCandidate& s = oldest_first[i];
    if (slab_unmergeable(s, slab_nomerge, gen)) continue;
    if (size > s.size) continue;
    if ((flags & SLAB_MERGE_SAME) != (s.flags & SLAB_MERGE_SAME)) continue;
    if ((s.size & ~(align - 1)) != s.size) continue;  // alignment compatible
    if (s.size - size >= kWord) continue;  // would waste a word or more
    return static_cast<int>(i);
  }
  return -1;
}

// create_unique_id(): ':' + flag letters + '-' (if any) + 7-digit s->size.
std::string create_unique_id(slab_flags_t flags, uint32_t size) {
  std::string id = ":";
  if (flags & SLAB_CACHE_DMA) id += 'd';
  if (flags & SLAB_CACHE_DMA32) id += 'D';
  if (flags & SLAB_RECLAIM_ACCOUNT) id += 'a';
  if (flags & SLAB_CONSISTENCY_CHECKS) id += 'F';
  if (flags & SLAB_ACCOUNT) id += 'A';
  if (id.size() > 1) id += '-';
  char digits[16];
  std::snprintf(digits, sizeof digits, "%07u", size);
  return id + digits;
}

}  // namespace simcache
