// The mm model's facade: the slab API (kmalloc, kmem_cache_*, bulk,
// kvmalloc) over SLUB (v6.18 or v7.x), the page allocator and memcg.
// Every call names the CPU and task it runs for (Task), so remote frees,
// per-CPU caches and memcg stocks behave as in the kernel.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/counters.h"
#include "model/mm/lock_hook.h"
#include "model/mm/call_site.h"
#include "model/mm/fault.h"
#include "model/mm/geometry.h"
#include "model/mm/kmalloc_classes.h"
#include "model/mm/memcg.h"
#include "model/mm/mm_config.h"
#include "model/mm/obj_state.h"
#include "model/types.h"

namespace simcache {


// The /sys/kernel/slab/<cache>/ files that are not stat items.
struct CacheInfo {
  std::string name;
  std::vector<std::string> aliases;  // names merged into this cache
  uint32_t object_size = 0, slab_size = 0, align = 0;
  uint32_t order = 0, objs_per_slab = 0, min_partial = 0;
  uint32_t cpu_partial = 0, cpu_partial_slabs = 0, sheaf_capacity = 0;
  slab_flags_t flags = 0;
  uint64_t slabs = 0, partial = 0, objects = 0, total_objects = 0;
  uint64_t objects_partial = 0;     // free objects on node partial slabs
  uint64_t live_objects = 0;        // allocated or parked in a mempool
  uint64_t cached_objects = 0;      // in per-CPU freelists, CPU slabs or sheaves
  // 6.18's cpu_slabs file (show_slab_objects(SO_CPU)): CPUs with a CPU
  // slab plus the slabs on per-CPU partial lists. 7.x has no such file.
  bool has_cpu_slabs = false;
  uint64_t cpu_slabs = 0;
  uint64_t bytes = 0;               // PAGE_SIZE << order per slab
};

class Slub;  // model/mm/slub.h: the allocator proper
class PageAllocator;
class SlabBackend;  // model/mm/backend.h: pages and memcg below SLUB

// KVFREE_BULK_MAX_ENTR: pointers in one kvfree_rcu_bulk_data page (a
// 4 KiB page less its 40-byte header: list_head, rcu_gp_oldstate of two
// longs, nr_records), freed by one kfree_bulk() call.
inline constexpr size_t KVFREE_BULK_MAX_ENTR = (PAGE_SIZE - 40) / 8;

// ZERO_SIZE_PTR: what kmalloc(0) returns; kfree() ignores it.
inline constexpr Ptr kZeroSizePtr = 0x10;

class Mm {
 public:
  explicit Mm(const MmConfig& cfg);
  // With `backend` (not owned) below SLUB and large kmalloc instead of
  // the model's page allocator and memcg: for tests that drive page
  // failures and charges directly.
  Mm(const MmConfig& cfg, SlabBackend* backend);
  ~Mm();
  Mm(const Mm&) = delete;
  Mm& operator=(const Mm&) = delete;

  const MmConfig& config() const { return cfg_; }

  // kmem_cache_create(): may return an existing cache it merged with;
  // kNoCache for a size no slab can lay out (slab_layout_ok()).
  CacheId kmem_cache_create(std::string_view name, uint32_t size,
                            uint32_t align, slab_flags_t flags,
                            uint32_t sheaf_capacity = 0);
  // The kmalloc cache kmalloc(size, gfp) from `site` would use
  // (kNoCache above KMALLOC_MAX_CACHE_SIZE).
  CacheId kmalloc_cache(uint32_t size, gfp_t gfp, SiteId site) const {
    return kmalloc_.lookup(size, gfp, site);
  }

  // kmalloc(): size_t, as in the kernel; above KMALLOC_MAX_SIZE it fails
  // (kNull), never truncated.
  Ptr kmalloc(uint64_t size, gfp_t gfp, const Task& t);
  void kfree(Ptr p, const Task& t);
  Ptr kmem_cache_alloc(CacheId s, gfp_t gfp, const Task& t);
  void kmem_cache_free(CacheId s, Ptr p, const Task& t);
  // All-or-nothing: returns n or 0.
  int kmem_cache_alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void kmem_cache_free_bulk(CacheId s, int n, Ptr* p, const Task& t);
  Ptr kvmalloc(uint64_t size, gfp_t gfp, const Task& t);
  void kvfree(Ptr p, const Task& t);
  // Pages for a mapped region, as io_region_allocate_pages() takes them
  // (a compound, else order-0 pages; mm.cc), and their release
  // (io_free_region()). kfree() of one is an invalid free.
  Ptr alloc_page_region(uint32_t nr_pages, gfp_t gfp, const Task& t);
  void free_page_region(Ptr p, const Task& t);
  // kfree_rcu.cc. kfree_bulk(): kmem_cache_free_bulk(NULL, n, p), objects
  // of any cache (and large kmallocs). kfree_rcu(): the object is freed
  // at the next rcu_grace_period(), by kfree_bulk() from this CPU's batch
  // or (7.x) through the cache's rcu_free sheaf. kvfree_rcu_barrier():
  // flush the partly filled rcu_free sheaves and end a grace period;
  // shrink_all() and check_leaks() run it first.
  void kfree_bulk(int n, Ptr* p, const Task& t);
  void kfree_rcu(Ptr p, const Task& t);
  void rcu_grace_period();
  void kvfree_rcu_barrier();
  // Objects kfree_rcu() queued that no grace period has freed yet.
  size_t rcu_pending() const;

  // Size the object's cache hands out (ksize()); 0 for an invalid pointer.
  uint32_t ksize(Ptr p) const;
  CacheId cache_of(Ptr p) const;
  // The slab (page) holding a slab object, as virt_to_slab() finds it;
  // -1 for a large or invalid pointer. Ids are stable while the slab lives.
  int64_t slab_of(Ptr p) const;

  // kasan_mempool_poison_object()/unpoison: a caller parks an allocated
  // object in its own cache. Poison returns false (and reports) if the
  // object is not allocated.
  bool kasan_mempool_poison_object(Ptr p, const Task& t);
  void kasan_mempool_unpoison_object(Ptr p, const Task& t);
  // A model access to an object: reports use-after-free / use-after-put.
  void kasan_check_access(Ptr p, std::string_view who);
  ObjState obj_state(Ptr p) const;

  // Flushes per-CPU slabs/sheaves and barns, as kmem_cache_shrink() on
  // every cache, so only live objects keep slabs.
  void shrink_all();

  // Call-site scopes (model/mm/call_site.h), entered by iou::SiteScope.
  bool call_site_enter(CallSite s) { return cfg_.call_sites && sites_.enter(s, events_); }
  void call_site_exit(CallSite s) { sites_.exit(s, events_); }
  const CallSiteCounts& call_sites() const { return sites_.counts(); }
  void batch(Batch b, uint64_t n) { events_.batch(b, n); }
  const BatchHists& batches() const { return events_.batches(); }
  // Every cache's stat items summed over CPUs, flat [cache][item]: the
  // snapshot a timed region's per-cache deltas are taken from.
  void stat_sums(std::vector<uint64_t>* out) const;
  // Bytes charged to `m` (page_counter usage, PAGE_SIZE units).
  uint64_t memcg_charged_bytes(MemcgId m) const;

  EventSink& events() { return events_; }
  const EventSink& events() const { return events_; }
  uint64_t stat(CacheId s, SlubStat item) const;              // all CPUs
  uint64_t stat_cpu(CacheId s, SlubStat item, CpuId cpu) const;
  CacheInfo info(CacheId s) const;
  std::vector<CacheId> caches() const;  // every cache created so far
  CacheId find_cache(std::string_view name) const;  // by name or alias
  uint64_t slab_bytes_total() const;    // NR_SLAB_UNRECLAIMABLE_B + _RECLAIMABLE_B
  uint64_t large_bytes_total() const;   // large kmalloc + vmalloc bytes live
  uint64_t region_bytes_total() const;  // page regions' bytes live (alloc_page_region)

  FaultInjector& faults() { return faults_; }
  // The page allocator and memcg below SLUB: trace replay's mm_page_alloc / mm_page_free.
  SlabBackend& backend() { return *backend_; }
  Memcg& memcg() { return *memcg_; }
  const Memcg& memcg() const { return *memcg_; }

  const std::vector<KasanReport>& kasan_reports() const;
  // End-of-run check: every live object is a leak; memcg balance is
  // checked after draining stocks. Appends to kasan_reports(); returns the
  // number of new reports.
  size_t check_leaks();
  // The state a steady-state check compares (model/mm/state_sig.h): the
  // page allocator, memcg, SLUB, the large objects and the kvfree_rcu
  // batches.
  void signature(StateSig* s) const;

  // Per-object slots holding a last-free CPU (slab_alloc_remote), kept
  // in the slabs' own metadata: proportional to the slab table.
  size_t remote_tracked() const;

  Slub& slub() { return *slub_; }
  const Slub& slub() const { return *slub_; }

 private:
  struct Large {  // a large kmalloc, a vmalloc area or a page region
    uint64_t bytes = 0;
    uint32_t page = 0, order = 0, nr_pages = 0;
    MemcgId memcg = kRootMemcg;
    bool live = false, vmalloc = false, mempool = false, region = false;
    SiteId site = 0;
    std::vector<uint32_t> vpages;  // vmalloc, or a region of order-0 pages: one each
  };
  // kmalloc(), kfree() and kmem_cache_free() beyond their per-CPU fast
  // paths.
  Ptr kmalloc_slow(uint64_t size, gfp_t gfp, const Task& t);
  void kfree_slow(Ptr p, const Task& t);
  [[gnu::noinline]] void kmem_cache_free_slow(CacheId s, Ptr p, const Task& t);
  Ptr alloc_large(uint64_t size, gfp_t gfp, const Task& t, bool vmalloc);
  void free_large(Ptr p, const Task& t, bool via_kvfree);
  uint32_t commit_large(Large& l, gfp_t gfp, const Task& t);
  void pages_cleared(gfp_t gfp, uint64_t pages, bool cold);
  uint32_t store_large(Large& l);
  void give_back_pages(Large& l, CpuId cpu);
  Large* large(Ptr p);
  const Large* large(Ptr p) const;
  // Names the innermost scope in reports added since `from`.
  void stamp_reports(size_t from);
  // The KASAN hooks beyond their fast path (an allocated slab object,
  // or a parked one for unpoison): large objects, reports. Out of line,
  // so the fast path saves no registers for them.
  [[gnu::noinline]] bool kasan_mempool_poison_slow(Ptr p);
  [[gnu::noinline]] void kasan_mempool_unpoison_slow(Ptr p);
  [[gnu::noinline]] void kasan_check_access_slow(Ptr p, std::string_view who);
  void note_alloc(Ptr p, const Task& t);

  MmConfig cfg_;
  EventSink events_;
  CallSiteStack sites_;
  FaultInjector faults_;
  std::unique_ptr<PageAllocator> pages_;
  std::unique_ptr<Memcg> memcg_;
  std::unique_ptr<SlabBackend> own_backend_;
  SlabBackend* backend_;
  std::unique_ptr<Slub> slub_;
  // kmalloc_caches[type][index], created at boot; SLUB reads it too.
  KmallocClasses kmalloc_;
  std::vector<Large> large_;
  std::vector<uint32_t> free_large_ids_;
  std::vector<std::vector<Ptr>> krcp_;  // per CPU: kvfree_rcu batch records
  uint64_t large_bytes_ = 0;
  uint64_t region_bytes_ = 0;
};

}  // namespace simcache
