// Geometry, kmalloc routing and merging against the tables in
// docs/sources.md (kmalloc routing, SLUB geometry).
#include <catch2/catch.hpp>

#include <set>
#include <vector>

#include "model/mm/geometry.h"

using namespace simcache;

namespace {

constexpr KmallocType kAllTypes[] = {
    KmallocType::NORMAL, KmallocType::RANDOM_FIRST, KmallocType::RANDOM_LAST,
    KmallocType::RECLAIM, KmallocType::DMA, KmallocType::CGROUP};

struct OrderRow {
  uint32_t index;     // kmalloc size class
  uint16_t cpus;      // num_present_cpus()
  uint32_t order;
  uint32_t objects;
  uint32_t leftover;  // (PAGE_SIZE << order) % size
};

// min_objects = 4 * (fls(cpus) + 1): 2 -> 12, 8 -> 20, 16 -> 24, 128 -> 36,
// 512 -> 44. min_order = get_order(min(min_objects, max_objects) * size);
// then the first order >= min_order with leftover <= slab / 16 wins (every
// row below already meets 1/16 at min_order).
const OrderRow kOrderTable[] = {
    // kmalloc-8: 12..36 * 8 <= 288 B -> order 0; 4096 % 8 = 0 -> 512 objs.
    {3, 2, 0, 512, 0}, {3, 16, 0, 512, 0}, {3, 128, 0, 512, 0},
    // kmalloc-16: 36 * 16 = 576 B -> order 0, 256 objects.
    {4, 2, 0, 256, 0}, {4, 16, 0, 256, 0}, {4, 128, 0, 256, 0},
    // kmalloc-32 (sources.md §6: any CPUs -> 0 / 128).
    {5, 2, 0, 128, 0}, {5, 16, 0, 128, 0}, {5, 128, 0, 128, 0},
    // kmalloc-64 (sources.md §6: any -> 0 / 64); 36 * 64 = 2304 B -> order 0.
    {6, 2, 0, 64, 0}, {6, 16, 0, 64, 0}, {6, 128, 0, 64, 0},
    // kmalloc-96: 36 * 96 = 3456 B -> order 0; 4096 = 42 * 96 + 64 and
    // 64 <= 4096 / 16 -> order 0, 42 objects at every CPU count.
    {1, 2, 0, 42, 64}, {1, 16, 0, 42, 64}, {1, 128, 0, 42, 64},
    // kmalloc-128 (sources.md §6: < 128 CPUs 0 / 32, >= 128 -> 1 / 64).
    {7, 2, 0, 32, 0}, {7, 16, 0, 32, 0}, {7, 128, 1, 64, 0},
    // kmalloc-192 (sources.md §6: 2-15 -> 0 / 21; 16-511 -> 1 / 42; 512+ -> 2 / 85).
    {2, 2, 0, 21, 64}, {2, 16, 1, 42, 128}, {2, 128, 1, 42, 128},
    {2, 512, 2, 85, 64},
    // kmalloc-256: 12 * 256 = 3072 -> order 0, 16 objects; 24 * 256 = 6144
    // -> order 1, 32; 36 * 256 = 9216 -> order 2, 64. No leftover.
    {8, 2, 0, 16, 0}, {8, 16, 1, 32, 0}, {8, 128, 2, 64, 0},
    // kmalloc-512 (sources.md §6: 2-7 -> 1 / 16; 8-127 -> 2 / 32; >= 128 -> 3 / 64).
    {9, 2, 1, 16, 0}, {9, 8, 2, 32, 0}, {9, 16, 2, 32, 0}, {9, 128, 3, 64, 0},
    // kmalloc-1k (sources.md §6: 2-7 -> 2 / 16; >= 8 -> 3 / 32).
    {10, 2, 2, 16, 0}, {10, 8, 3, 32, 0}, {10, 16, 3, 32, 0},
    {10, 128, 3, 32, 0},
    // kmalloc-2k (sources.md §6: any -> 3 / 16): max_objects 16 caps min_objects.
    {11, 2, 3, 16, 0}, {11, 16, 3, 16, 0}, {11, 128, 3, 16, 0},
    // kmalloc-4k: max_objects = 32768 / 4096 = 8 caps min_objects at 8;
    // get_order(8 * 4096) = 3 -> order 3, 8 objects, at every CPU count.
    {12, 2, 3, 8, 0}, {12, 16, 3, 8, 0}, {12, 128, 3, 8, 0},
    // kmalloc-8k: max_objects = 4; get_order(4 * 8192) = 3 -> 3 / 4.
    {13, 2, 3, 4, 0}, {13, 16, 3, 4, 0}, {13, 128, 3, 4, 0},
};

}  // namespace

TEST_CASE("kmalloc_index at class boundaries", "[geometry][kmalloc]") {
  const std::pair<uint32_t, uint32_t> cases[] = {
      {1, 3},    {8, 3},    {9, 4},     {24, 5},    {32, 5},    {33, 6},
      {64, 6},   {65, 1},   {96, 1},    {97, 7},    {128, 7},   {129, 2},
      {144, 2},  {192, 2},  {193, 8},   {256, 8},   {568, 10},  {1288, 11},
      {2048, 11}, {2049, 12}, {8192, 13}};
  for (auto [size, index] : cases) {
    INFO("size " << size);
    CHECK(kmalloc_index(size) == index);
  }
  CHECK(kmalloc_index(0) == 0);
}

TEST_CASE("kmalloc_size inverts kmalloc_index", "[geometry][kmalloc]") {
  CHECK(kmalloc_size(1) == 96);
  CHECK(kmalloc_size(2) == 192);
  CHECK(kmalloc_size(3) == 8);
  CHECK(kmalloc_size(13) == 8192);
  const uint32_t classes[] = {8, 16, 32, 64, 96, 128, 192,
                              256, 512, 1024, 2048, 4096, 8192};
  for (uint32_t size = 1; size <= KMALLOC_MAX_CACHE_SIZE; ++size) {
    const uint32_t bucket = kmalloc_size(kmalloc_index(size));
    uint32_t smallest = 0;
    for (uint32_t c : classes) {
      if (c >= size) {
        smallest = c;
        break;
      }
    }
    if (bucket != smallest) FAIL("size " << size << " -> " << bucket);
  }
  CHECK(kmalloc_size_roundup(0) == 0);
  CHECK(kmalloc_size_roundup(240) == 256);
  CHECK(kmalloc_size_roundup(8193) == 16384);  // order-2 pages
  CHECK(kmalloc_size_roundup(12288) == 16384);
}

TEST_CASE("kmalloc_type routing", "[geometry][kmalloc]") {
  CHECK(kmalloc_type(GFP_KERNEL, 7, false, 0) == KmallocType::NORMAL);
  CHECK(kmalloc_type(GFP_NOWAIT | __GFP_ZERO, 7, false, 0) ==
        KmallocType::NORMAL);
  CHECK(kmalloc_type(GFP_KERNEL_ACCOUNT, 7, false, 0) == KmallocType::CGROUP);
  CHECK(kmalloc_type(GFP_KERNEL | __GFP_RECLAIMABLE, 7, false, 0) ==
        KmallocType::RECLAIM);
  // Priority: DMA > RECLAIM > CGROUP.
  CHECK(kmalloc_type(GFP_KERNEL_ACCOUNT | __GFP_RECLAIMABLE, 7, false, 0) ==
        KmallocType::RECLAIM);
  CHECK(kmalloc_type(GFP_KERNEL_ACCOUNT | __GFP_DMA, 7, false, 0) ==
        KmallocType::DMA);
  CHECK(kmalloc_type(__GFP_DMA | __GFP_RECLAIMABLE, 7, false, 0) ==
        KmallocType::DMA);
  // Random caches never apply to accounted/reclaimable/DMA requests.
  CHECK(kmalloc_type(GFP_KERNEL_ACCOUNT, 7, true, 12345) ==
        KmallocType::CGROUP);
}

TEST_CASE("random kmalloc copies are a deterministic hash_64",
          "[geometry][kmalloc]") {
  // hash_64(1, 4) = 0x61C8864680B583EB >> 60 = 6.
  CHECK(hash_64(1, 4) == 6);
  CHECK(hash_64(0, 4) == 0);
  CHECK(kmalloc_type(GFP_KERNEL, 0, true, 0) == KmallocType::NORMAL);
  CHECK(static_cast<int>(kmalloc_type(GFP_KERNEL, 1, true, 0)) == 6);
  const uint64_t seed = 0x0123456789abcdefull;
  std::set<int> seen;
  for (SiteId site = 0; site < 4096; ++site) {
    const KmallocType t = kmalloc_type(GFP_KERNEL, site, true, seed);
    REQUIRE(t == kmalloc_type(GFP_KERNEL, site, true, seed));
    const uint64_t h = ((uint64_t{site} ^ seed) * 0x61C8864680B583EBull) >> 60;
    REQUIRE(static_cast<uint64_t>(t) == h);
    seen.insert(static_cast<int>(t));
  }
  CHECK(seen.size() == 16);  // normal + 15 copies
  CHECK(*seen.begin() == 0);
  CHECK(*seen.rbegin() == static_cast<int>(KmallocType::RANDOM_LAST));
}

TEST_CASE("kmalloc cache names", "[geometry][kmalloc]") {
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 3) == "kmalloc-8");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 5) == "kmalloc-32");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 1) == "kmalloc-96");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 2) == "kmalloc-192");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 9) == "kmalloc-512");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 10) == "kmalloc-1k");
  CHECK(kmalloc_cache_name(KmallocType::NORMAL, 13) == "kmalloc-8k");
  CHECK(kmalloc_cache_name(KmallocType::CGROUP, 11) == "kmalloc-cg-2k");
  CHECK(kmalloc_cache_name(KmallocType::RECLAIM, 12) == "kmalloc-rcl-4k");
  CHECK(kmalloc_cache_name(KmallocType::DMA, 7) == "dma-kmalloc-128");
  CHECK(kmalloc_cache_name(KmallocType::RANDOM_FIRST, 2) ==
        "kmalloc-rnd-01-192");
  CHECK(kmalloc_cache_name(static_cast<KmallocType>(3), 2) ==
        "kmalloc-rnd-03-192");
  CHECK(kmalloc_cache_name(KmallocType::RANDOM_LAST, 10) ==
        "kmalloc-rnd-15-1k");
}

TEST_CASE("kmalloc cache flags", "[geometry][kmalloc]") {
  for (KmallocType t : kAllTypes)
    CHECK((kmalloc_cache_flags(t) & SLAB_KMALLOC));
  CHECK(kmalloc_cache_flags(KmallocType::NORMAL) ==
        (SLAB_KMALLOC | SLAB_NO_MERGE));
  CHECK(kmalloc_cache_flags(KmallocType::RANDOM_FIRST) ==
        (SLAB_KMALLOC | SLAB_NO_MERGE));
  CHECK(kmalloc_cache_flags(KmallocType::RANDOM_LAST) ==
        (SLAB_KMALLOC | SLAB_NO_MERGE));
  CHECK(kmalloc_cache_flags(KmallocType::CGROUP) ==
        (SLAB_KMALLOC | SLAB_ACCOUNT));
  CHECK(kmalloc_cache_flags(KmallocType::RECLAIM) ==
        (SLAB_KMALLOC | SLAB_RECLAIM_ACCOUNT));
  CHECK(kmalloc_cache_flags(KmallocType::DMA) ==
        (SLAB_KMALLOC | SLAB_CACHE_DMA));
}

TEST_CASE("alignment and slot size", "[geometry][align]") {
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 0, 24) == 32);
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 0, 32) == 32);
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 0, 64) == 64);
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 0, 144) == 64);
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 0, 8) == 8);
  CHECK(calculate_alignment(SLAB_HWCACHE_ALIGN, 128, 24) == 128);
  CHECK(calculate_alignment(0, 0, 24) == 8);
  CHECK(calculate_alignment(0, 4, 24) == 8);
  CHECK(calculate_alignment(0, 12, 24) == 16);  // rounded up to a word

  auto slot = [](uint32_t size, slab_flags_t flags) {
    return compute_geometry(size, 0, flags, 16, SlubGen::v6_18).size;
  };
  CHECK(slot(24, SLAB_HWCACHE_ALIGN) == 32);
  CHECK(slot(144, SLAB_HWCACHE_ALIGN) == 192);
  CHECK(slot(24, 0) == 24);
  CHECK(slot(144, 0) == 144);
  CHECK(slot(20, 0) == 24);  // word-aligned

  // kmalloc caches: largest power of two dividing the size, at least 8.
  CHECK(kmalloc_cache_align(8) == 8);
  CHECK(kmalloc_cache_align(32) == 32);
  CHECK(kmalloc_cache_align(64) == 64);
  CHECK(kmalloc_cache_align(96) == 32);
  CHECK(kmalloc_cache_align(192) == 64);
  CHECK(kmalloc_cache_align(2048) == 2048);
  for (uint32_t i = 1; i < kNumKmallocIndex; ++i) {
    if (kmalloc_size(i) == 0) continue;
    const Geometry g = kmalloc_geometry(KmallocType::NORMAL, i, 16,
                                        SlubGen::v6_18);
    CHECK(g.size == kmalloc_size(i));  // no padding on non-debug builds
    CHECK(g.object_size == kmalloc_size(i));
  }
}

TEST_CASE("min_objects by present CPUs", "[geometry][order]") {
  CHECK(calc_min_objects(1) == 8);
  CHECK(calc_min_objects(2) == 12);
  CHECK(calc_min_objects(3) == 12);
  CHECK(calc_min_objects(4) == 16);
  CHECK(calc_min_objects(8) == 20);
  CHECK(calc_min_objects(16) == 24);
  CHECK(calc_min_objects(20) == 24);
  CHECK(calc_min_objects(64) == 32);
  CHECK(calc_min_objects(128) == 36);
  CHECK(calc_min_objects(1023) == 44);
}

TEST_CASE("order and objects per slab for every kmalloc cache",
          "[geometry][order]") {
  for (const OrderRow& r : kOrderTable) {
    for (SlubGen gen : {SlubGen::v6_18, SlubGen::v7}) {
      for (KmallocType t : kAllTypes) {
        const Geometry g = kmalloc_geometry(t, r.index, r.cpus, gen);
        INFO(kmalloc_cache_name(t, r.index) << " @ " << r.cpus << " CPUs");
        CHECK(g.order == r.order);
        CHECK(g.objects == r.objects);
        CHECK(((PAGE_SIZE << g.order) % g.size) == r.leftover);
        CHECK(g.min_order == get_order(g.size));
        CHECK(g.min_objects == order_objects(g.min_order, g.size));
      }
    }
  }
  // kmalloc-32: order 0, 128 objects (the io_uring hot size).
  const Geometry g32 = kmalloc_geometry(KmallocType::CGROUP, 5, 20,
                                        SlubGen::v6_18);
  CHECK(g32.order == 0);
  CHECK(g32.objects == 128);
  // kmalloc-192: 15 CPUs still order 0; 16 CPUs order 1.
  auto objs192 = [](uint16_t cpus) {
    return kmalloc_geometry(KmallocType::NORMAL, 2, cpus, SlubGen::v7).objects;
  };
  CHECK(objs192(15) == 21);
  CHECK(objs192(511) == 42);
}

TEST_CASE("min_partial", "[geometry]") {
  // ilog2(size) / 2 is at most 5 up to 2k; kmalloc-4k and -8k get
  // ilog2 12 / 2 = ilog2 13 / 2 = 6 (docs/sources.md §6).
  for (uint32_t i = 1; i < kNumKmallocIndex; ++i) {
    if (kmalloc_size(i) == 0) continue;
    const uint32_t want = kmalloc_size(i) >= 4096 ? 6 : 5;
    CHECK(kmalloc_geometry(KmallocType::NORMAL, i, 16, SlubGen::v7)
              .min_partial == want);
  }
  CHECK(calc_min_partial(1u << 12) == 6);  // ilog2 12 / 2
  CHECK(calc_min_partial(1u << 14) == 7);
  CHECK(calc_min_partial(1u << 21) == 10);
  CHECK(calc_min_partial(1u << 30) == 10);
}

TEST_CASE("cpu_partial and cpu_partial_slabs (6.18)", "[geometry][v6_18]") {
  auto g = [](uint32_t index, uint16_t cpus) {
    return kmalloc_geometry(KmallocType::NORMAL, index, cpus, SlubGen::v6_18);
  };
  CHECK(g(5, 16).cpu_partial == 120);
  CHECK(g(5, 16).cpu_partial_slabs == 2);   // ceil(240 / 128)
  CHECK(g(6, 16).cpu_partial_slabs == 4);   // ceil(240 / 64)
  CHECK(g(2, 16).cpu_partial_slabs == 6);   // 42 per slab: ceil(240 / 42)
  CHECK(g(2, 2).cpu_partial_slabs == 12);   // 21 per slab: ceil(240 / 21)
  CHECK(g(2, 512).cpu_partial_slabs == 3);  // 85 per slab
  CHECK(g(8, 16).cpu_partial == 52);
  CHECK(g(10, 16).cpu_partial == 24);
  CHECK(g(11, 16).cpu_partial == 24);
  CHECK(g(11, 16).cpu_partial_slabs == 3);  // ceil(48 / 16)
  CHECK(g(12, 16).cpu_partial == 6);
  // Debug caches keep no CPU partial slabs; 7.x has none at all.
  const Geometry dbg = compute_geometry(64, 0, SLAB_STORE_USER, 16,
                                        SlubGen::v6_18);
  CHECK(dbg.cpu_partial == 0);
  CHECK(dbg.cpu_partial_slabs == 0);
  const Geometry v7 = kmalloc_geometry(KmallocType::NORMAL, 5, 16, SlubGen::v7);
  CHECK(v7.cpu_partial == 0);
  CHECK(v7.cpu_partial_slabs == 0);
}

TEST_CASE("sheaf capacity", "[geometry][sheaves]") {
  auto cap7 = [](uint32_t index) {
    return kmalloc_geometry(KmallocType::CGROUP, index, 16, SlubGen::v7)
        .sheaf_capacity;
  };
  // 60 -> 32 + 480 = 512 B sheaf; 26 -> 240 -> 256 B, capacity 28;
  // 12 -> 128 B; 4 -> 64 B.
  for (uint32_t i : {3u, 4u, 5u, 6u, 1u, 7u, 2u}) CHECK(cap7(i) == 60);
  CHECK(cap7(8) == 28);
  CHECK(cap7(9) == 28);
  CHECK(cap7(10) == 12);
  CHECK(cap7(11) == 12);
  CHECK(cap7(12) == 4);
  CHECK(cap7(13) == 4);
  for (uint32_t cap : {60u, 28u, 12u, 4u}) {
    const uint64_t bytes = 32 + 8 * cap;
    CHECK(kmalloc_size_roundup(bytes) == bytes);  // fills its bucket
  }
  CHECK(kmalloc_index(32 + 8 * 60) == kmalloc_index(512));
  CHECK(kmalloc_index(32 + 8 * 28) == kmalloc_index(256));
  CHECK(kmalloc_index(32 + 8 * 12) == kmalloc_index(128));
  CHECK(kmalloc_index(32 + 8 * 4) == kmalloc_index(64));
  // Every kmalloc type has the same capacity on 7.x.
  for (KmallocType t : kAllTypes)
    CHECK(kmalloc_geometry(t, 5, 16, SlubGen::v7).sheaf_capacity == 60);
  // Size used is the slot size: 24 B HWCACHE_ALIGN -> 32 B slot; 250 B
  // plain -> 256 B slot -> base 26.
  CHECK(compute_geometry(250, 0, SLAB_HWCACHE_ALIGN, 16, SlubGen::v7)
            .sheaf_capacity == 28);
  CHECK(compute_geometry(252, 0, 0, 16, SlubGen::v7).sheaf_capacity == 28);
  CHECK(compute_geometry(248, 0, 0, 16, SlubGen::v7).sheaf_capacity == 60);
  // A request above the computed value wins; debug caches get none.
  CHECK(compute_geometry(64, 0, 0, 16, SlubGen::v7, 100).sheaf_capacity == 100);
  CHECK(compute_geometry(64, 0, 0, 16, SlubGen::v7, 20).sheaf_capacity == 60);
  CHECK(compute_geometry(64, 0, SLAB_RED_ZONE, 16, SlubGen::v7)
            .sheaf_capacity == 0);
  CHECK(compute_geometry(64, 0, SLAB_NO_OBJ_EXT, 16, SlubGen::v7)
            .sheaf_capacity == 0);
  // 6.18: none unless requested, and then exactly the request.
  CHECK(kmalloc_geometry(KmallocType::NORMAL, 5, 16, SlubGen::v6_18)
            .sheaf_capacity == 0);
  CHECK(compute_geometry(64, 0, 0, 16, SlubGen::v6_18).sheaf_capacity == 0);
  CHECK(compute_geometry(64, 0, 0, 16, SlubGen::v6_18, 32).sheaf_capacity ==
        32);
  CHECK(compute_geometry(64, 0, SLAB_POISON, 16, SlubGen::v6_18, 32)
            .sheaf_capacity == 0);
}

TEST_CASE("cache merging", "[geometry][merge]") {
  const slab_flags_t acct_hw = SLAB_ACCOUNT | SLAB_HWCACHE_ALIGN;
  // An existing mergeable 32-byte SLAB_ACCOUNT cache (e.g. a dedicated
  // cache) and the kmalloc caches of 32 bytes, oldest first.
  MergeCandidate kmalloc32;  // kmalloc-32: NO_MERGE under MEMCG
  kmalloc32.size = kmalloc32.object_size = 32;
  kmalloc32.flags = kmalloc_cache_flags(KmallocType::NORMAL);
  MergeCandidate rnd32 = kmalloc32;
  rnd32.flags = kmalloc_cache_flags(KmallocType::RANDOM_FIRST);
  MergeCandidate acct32;
  acct32.size = acct32.object_size = 32;
  acct32.flags = SLAB_ACCOUNT | SLAB_HWCACHE_ALIGN;
  const std::vector<MergeCandidate> caches = {kmalloc32, rnd32, acct32};

  for (SlubGen gen : {SlubGen::v6_18, SlubGen::v7}) {
    // 24 B + HWCACHE_ALIGN -> align 32 -> 32 B: aliases the 32-byte cache.
    CHECK(find_mergeable(24, 0, acct_hw, 0, false, false, gen, caches) == 2);
    // Without HWCACHE_ALIGN it stays 24 B and 32 - 24 = 8 blocks it.
    CHECK(find_mergeable(24, 0, SLAB_ACCOUNT, 0, false, false, gen, caches) ==
          -1);
    CHECK(find_mergeable(24, 0, acct_hw, 0, false, true, gen, caches) == -1);
    // Never onto the NO_MERGE kmalloc-normal/random caches.
    CHECK(find_mergeable(32, 0, SLAB_HWCACHE_ALIGN, 0, false, false, gen,
                         caches) == -1);
    CHECK(find_mergeable(32, 0, 0, 0, false, false, gen, {kmalloc32}) == -1);
    // SLAB_ACCOUNT must match.
    CHECK(find_mergeable(24, 0, SLAB_HWCACHE_ALIGN, 0, false, false, gen,
                         {acct32}) == -1);
    CHECK(find_mergeable(24, 0, SLAB_HWCACHE_ALIGN | SLAB_RECLAIM_ACCOUNT |
                         SLAB_ACCOUNT, 0, false, false, gen, {acct32}) == -1);
    // ctor, usercopy window, NEVER_MERGE flags and sheaf requests.
    CHECK(find_mergeable(24, 0, acct_hw, 0, true, false, gen, caches) == -1);
    CHECK(find_mergeable(24, 0, acct_hw, 16, false, false, gen, caches) == -1);
    CHECK(find_mergeable(24, 0, acct_hw | SLAB_TYPESAFE_BY_RCU, 0, false,
                         false, gen, caches) == -1);
    CHECK(find_mergeable(24, 0, acct_hw, 0, false, false, gen, caches, 32) ==
          -1);
    // A larger requested alignment grows the slot past the candidate.
    CHECK(find_mergeable(24, 64, acct_hw, 0, false, false, gen, caches) == -1);
    // A bigger request never fits a smaller cache.
    CHECK(find_mergeable(40, 0, acct_hw, 0, false, false, gen, caches) == -1);
  }
  // Candidates that cannot be targets.
  auto merge_v7 = [&](const MergeCandidate& cand) {
    return find_mergeable(24, 0, acct_hw, 0, false, false, SlubGen::v7,
                          {cand});
  };
  MergeCandidate c = acct32;
  c.refcount = -1;
  CHECK(merge_v7(c) == -1);
  c = acct32;
  c.has_ctor = true;
  CHECK(merge_v7(c) == -1);
  c = acct32;
  c.usersize = 32;  // CONFIG_HARDENED_USERCOPY kmalloc-cg-32
  CHECK(merge_v7(c) == -1);
  c = acct32;
  c.requested_sheaf_capacity = 32;
  CHECK(find_mergeable(24, 0, acct_hw, 0, false, false, SlubGen::v6_18, {c}) ==
        -1);
  // First fit from the oldest.
  CHECK(find_mergeable(32, 0, acct_hw, 0, false, false, SlubGen::v7,
                       {acct32, acct32}) == 0);
  // SLAB_CONSISTENCY_CHECKS blocks merging only on 7.x.
  CHECK(find_mergeable(24, 0, acct_hw | SLAB_CONSISTENCY_CHECKS, 0, false,
                       false, SlubGen::v7, caches) == -1);
  c = acct32;
  c.flags |= SLAB_CONSISTENCY_CHECKS;
  CHECK(find_mergeable(24, 0, acct_hw, 0, false, false, SlubGen::v6_18, {c}) ==
        0);
  CHECK(merge_v7(c) == -1);
  // kmalloc-cg caches are mergeable targets without hardened usercopy.
  MergeCandidate cg32;
  cg32.size = cg32.object_size = 32;
  cg32.flags = kmalloc_cache_flags(KmallocType::CGROUP);
  CHECK(find_mergeable(32, 0, SLAB_ACCOUNT, 0, false, false, SlubGen::v7,
                       {kmalloc32, cg32}) == 1);
}

TEST_CASE("create_unique_id", "[geometry][merge]") {
  CHECK(create_unique_id(SLAB_ACCOUNT | SLAB_HWCACHE_ALIGN, 32) ==
        ":A-0000032");
  CHECK(create_unique_id(0, 32) == ":0000032");
  CHECK(create_unique_id(SLAB_CACHE_DMA | SLAB_RECLAIM_ACCOUNT, 192) ==
        ":da-0000192");
  CHECK(create_unique_id(SLAB_CACHE_DMA32 | SLAB_CONSISTENCY_CHECKS |
                             SLAB_ACCOUNT, 8192) == ":DFA-0008192");
}
