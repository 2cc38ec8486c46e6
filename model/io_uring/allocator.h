// The seam between the io_uring layer and the allocator below it.
//
// Everything under model/io_uring/ is a template over an
// allocator type `A` that provides the subset of simcache::Mm listed in
// the IoAllocator concept. simcache::Mm satisfies it (instantiated in
// model/io_uring/instantiate.cc); so does the counting fake the tests use
// (tests/fake_mm.h). Calls go straight to A's members: no virtual
// dispatch, no per-operation heap allocation.
#pragma once

#include <concepts>
#include <cstdint>
#include <string_view>

#include "model/counters.h"
#include "model/mm/call_site.h"
#include "model/types.h"

namespace simcache {

struct CacheInfo;  // model/mm/mm.h

namespace iou {

template <class A>
concept IoAllocator = requires(A& a, Ptr p, Ptr* v, const Task& t, CacheId c,
                               uint32_t sz, uint64_t big, gfp_t g,
                               slab_flags_t f, std::string_view s, int n) {
  { a.kmalloc(sz, g, t) } -> std::same_as<Ptr>;
  a.kfree(p, t);
  { a.kmem_cache_create(s, sz, sz, f) } -> std::same_as<CacheId>;
  { a.kmem_cache_alloc(c, g, t) } -> std::same_as<Ptr>;
  a.kmem_cache_free(c, p, t);
  { a.kmem_cache_alloc_bulk(c, g, n, v, t) } -> std::same_as<int>;
  { a.kvmalloc(big, g, t) } -> std::same_as<Ptr>;
  a.kvfree(p, t);
  { a.alloc_page_region(sz, g, t) } -> std::same_as<Ptr>;
  a.free_page_region(p, t);
  { a.kasan_mempool_poison_object(p, t) } -> std::same_as<bool>;
  a.kasan_mempool_unpoison_object(p, t);
  a.kasan_check_access(p, s);
  { a.events() } -> std::convertible_to<Counters&>;
  // Registration-time only (slab-prime): which cache kmalloc would use and
  // how many objects one of its slabs holds.
  { a.kmalloc_cache(sz, g, SiteId{}) } -> std::same_as<CacheId>;
  { a.info(c).objs_per_slab } -> std::convertible_to<uint32_t>;
  // ... and which slab page an object sits on (virt_to_slab()).
  { a.slab_of(p) } -> std::convertible_to<int64_t>;
};

// Caller-visible results are ints: >= 0 success, negative errno on failure
// (x86-64 values).
inline constexpr int kEBADF = -9;
inline constexpr int kEAGAIN = -11;
inline constexpr int kENOMEM = -12;
inline constexpr int kEBUSY = -16;
inline constexpr int kENXIO = -6;
inline constexpr int kEINVAL = -22;
inline constexpr int kENFILE = -23;
inline constexpr int kEMFILE = -24;
inline constexpr int kECANCELED = -125;

// kmalloc call sites. CONFIG_RANDOM_KMALLOC_CACHES picks the random copy by
// hashing the caller's return address; the model hashes these ids instead,
// one per kernel call site that allocates.
enum : SiteId {
  kSiteIoCacheAllocNew = 0x10001u,  // io_cache_alloc_new(): every per-ring cache miss
  kSiteCacheEntries = 0x10002u,     // io_alloc_cache_init(): entries array
  kSitePrefillEntries = 0x10003u,   // io_alloc_cache_prefill(): grown entries array
  kSiteCtx = 0x10004u,              // io_ring_ctx_alloc(): the ctx itself
  kSiteCancelTable = 0x10005u,      // io_alloc_hash_table()
  kSiteRsrcNodes = 0x10006u,        // io_rsrc_data_alloc(): nodes array
  kSiteFileBitmap = 0x10007u,       // io_alloc_file_tables(): bitmap_zalloc
  kSiteWaitv = 0x10008u,            // io_futexv_prep()
  kSiteNodeKzalloc = 0x10009u,      // 6.13 io_rsrc_node_alloc(): kzalloc
  kSiteSlabPrime = 0x1000au,        // slab-prime diagnostic
  kSitePrefillObjs = 0x1000bu,      // io_alloc_cache_prefill(): kmalloc-based fill
  kSitePercpuRef = 0x1000cu,        // percpu_ref_init(): ctx->refs' percpu_ref_data
  kSiteRegionPages = 0x1000du,      // io_create_region(): the region's page array
  kSiteTctx = 0x1000eu,             // io_uring_alloc_task_context(): struct io_uring_task
  kSiteWqHash = 0x1000fu,           // io_init_wq_offload(): ctx->hash_map
  kSiteIoWq = 0x10010u,             // io_wq_create(): struct io_wq
  kSiteTctxNode = 0x10011u,         // __io_uring_add_tctx_node(): struct io_tctx_node
  kSiteIoWorker = 0x10012u,         // create_io_worker(): struct io_worker
};

// The same task, making a call from a named site.
inline Task at_site(const Task& t, SiteId site) {
  Task r = t;
  r.site = site;
  return r;
}

// The kernel function a SiteId names (for reports); "" if unknown.
inline std::string_view site_name(SiteId s) {
  switch (s) {
    case kSiteIoCacheAllocNew: return "io_cache_alloc_new";
    case kSiteCacheEntries: return "io_alloc_cache_init";
    case kSitePrefillEntries: return "io_alloc_cache_prefill";
    case kSiteCtx: return "io_ring_ctx_alloc";
    case kSiteCancelTable: return "io_alloc_hash_table";
    case kSiteRsrcNodes: return "io_rsrc_data_alloc";
    case kSiteFileBitmap: return "io_alloc_file_tables";
    case kSiteWaitv: return "io_futexv_prep";
    case kSiteNodeKzalloc: return "io_rsrc_node_alloc";
    case kSiteSlabPrime: return "io_rsrc_slab_prime";
    case kSitePrefillObjs: return "io_alloc_cache_prefill";
    case kSitePercpuRef: return "percpu_ref_init";
    case kSiteRegionPages: return "io_create_region";
    case kSiteTctx: return "io_uring_alloc_task_context";
    case kSiteWqHash: return "io_init_wq_offload";
    case kSiteIoWq: return "io_wq_create";
    case kSiteTctxNode: return "__io_uring_add_tctx_node";
    case kSiteIoWorker: return "create_io_worker";
    default: return "";
  }
}

// RAII call-site scope at a kernel-function boundary: the allocator's
// events inside it are counted under `site` (model/mm/call_site.h). An
// allocator without scopes (the tests' fake) compiles it away.
template <class A>
class SiteScope {
 public:
  SiteScope(A& a, CallSite site) : a_(a), site_(site) {
    if constexpr (requires { a.call_site_enter(site); }) on_ = a.call_site_enter(site);
  }
  ~SiteScope() {
    if constexpr (requires { a_.call_site_exit(site_); })
      if (on_) a_.call_site_exit(site_);
  }
  SiteScope(const SiteScope&) = delete;
  SiteScope& operator=(const SiteScope&) = delete;

 private:
  A& a_;
  CallSite site_;
  bool on_ = false;
};

// Records one batch size where the allocator keeps histograms.
template <class A>
inline void note_batch(A& a, Batch b, uint64_t n) {
  if constexpr (requires { a.batch(b, n); }) a.batch(b, n);
}

// Bumps an io_uring (or mm) event on the allocator's counters.
template <class A>
inline void ev(A& a, Event e, uint64_t n = 1) {
  a.events().add(e, n);
}

}  // namespace iou
}  // namespace simcache
