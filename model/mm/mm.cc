// The Mm facade: kmalloc routing over the kmalloc caches created at boot,
// large kmalloc and kvmalloc over the page allocator, kmem_cache_create()
// with merging, and the model-level KASAN entry points.
#include "model/mm/mm.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include "model/mm/backend.h"
#include "model/mm/geometry.h"
#include "model/mm/page_alloc.h"
#include "model/mm/slub.h"

namespace simcache {

Mm::Mm(const MmConfig& cfg) : Mm(cfg, nullptr) {}

Mm::Mm(const MmConfig& cfg, SlabBackend* backend)
    : cfg_(cfg), kmalloc_(cfg.random_kmalloc_caches, cfg.random_kmalloc_seed) {
  if (cfg_.nr_cpus == 0 || cfg_.nr_nodes == 0 || cfg_.nr_nodes > cfg_.nr_cpus) {
    std::fprintf(stderr, "simcache: invalid mm config: %u cpus, %u nodes\n",
                 cfg_.nr_cpus, cfg_.nr_nodes);
    std::exit(2);
  }
  pages_ = std::make_unique<PageAllocator>(&events_, &faults_, cfg_.pcp_high_min,
                                           cfg_.pcp_high_max);
  memcg_ = std::make_unique<Memcg>(cfg_.memcg, &events_, cfg_.nr_cpus, cfg_.nr_nodes);
  if (!backend) {
    own_backend_ = std::make_unique<KernelBackend>(pages_.get(), memcg_.get());
    backend = own_backend_.get();
  }
  backend_ = backend;
  slub_ = std::make_unique<Slub>(cfg_, &events_, backend_, &faults_, &kmalloc_);
  // create_kmalloc_caches(): every type and size exists from boot, so no
  // cache is ever created in the middle of an allocation.
  for (uint32_t type = 0; type < kNumKmallocTypes; ++type) {
    const auto kt = static_cast<KmallocType>(type);
    if (!kmalloc_.exists(kt)) continue;
    for (uint32_t idx = 1; idx < kNumKmallocIndex; ++idx) {
      const uint32_t size = kmalloc_size(idx);
      const uint32_t align = size & (~size + 1);
      const uint32_t usersize = cfg_.hardened_usercopy ? size : 0;
      const CacheId id = slub_->create(kmalloc_cache_name(kt, idx), size, align,
                                       kmalloc_cache_flags(kt), 0, true, kt, usersize);
      apply_geometry_override(slub_->cache(id).g, cfg_.geometry);
      kmalloc_.set(kt, idx, id);
    }
  }
  kmalloc_.finish();
}

Mm::~Mm() = default;

// mirrors __kmem_cache_create_args(): alias a mergeable cache or create.
CacheId Mm::kmem_cache_create(std::string_view name, uint32_t size,
                              uint32_t align, slab_flags_t flags,
                              uint32_t sheaf_capacity) {
  // calculate_sizes()/calculate_order() find no order for a slot above
  // KMALLOC_MAX_SIZE: the kernel's kmem_cache_create() returns NULL.
  if (!slab_layout_ok(size, align, flags)) return kNoCache;
  std::vector<MergeCandidate> cands;
  cands.reserve(slub_->nr_caches());
  for (CacheId s = 0; s < slub_->nr_caches(); ++s) {
    const KmemCache& c = slub_->cache(s);
    MergeCandidate mc;
    mc.size = c.g.size;
    mc.object_size = c.g.object_size;
    mc.flags = c.flags;
    mc.usersize = c.usersize;
    mc.refcount = c.refcount;
    mc.requested_sheaf_capacity = c.requested_sheaf_capacity;
    cands.push_back(mc);
  }
  const int m = find_mergeable(size, align, flags, 0, false, cfg_.slab_nomerge,
                               cfg_.gen, cands, sheaf_capacity);
  if (m >= 0) {
    KmemCache& c = slub_->cache(static_cast<CacheId>(m));
    c.aliases.emplace_back(name);
    ++c.refcount;
    return static_cast<CacheId>(m);
  }
  // The geometry knobs act where the cache is created, not in SLUB's paths.
  const CacheId id = slub_->create(name, size, align, flags, sheaf_capacity, false,
                                   KmallocType::NORMAL, 0);
  apply_geometry_override(slub_->cache(id).g, cfg_.geometry);
  return id;
}

// Counts an object whose last free ran on another CPU: its cache lines
// are remote (seed 004's cold rounds after a teardown on the kworker).
// The last-free CPU lives in the slab's per-object metadata
// (Slab::last_free), set by the facade's frees.
void Mm::note_alloc(Ptr p, const Task& t) {
  if (slub_->take_remote(p, t.cpu)) events_.add(Event::slab_alloc_remote);
}

size_t Mm::remote_tracked() const { return slub_->last_free_slots(); }

// mirrors __do_kmalloc_node(). The fast path (SLUB's, which counts the
// kmalloc event too) calls nothing and the slow one is a tail call.
Ptr Mm::kmalloc(uint64_t size, gfp_t gfp, const Task& t) {
  if (size - 1 < KMALLOC_MAX_CACHE_SIZE) [[likely]] {  // neither 0 nor large
    const CacheId s = kmalloc_.lookup_fast(static_cast<uint32_t>(size), gfp);
    Ptr p;
    if (s != kNoCache && slub_->alloc_fast<true>(s, gfp, t, &p, Event::kmalloc)) [[likely]]
      return p;
  }
  return kmalloc_slow(size, gfp, t);
}

// kmalloc() past its fast path: the whole of kmalloc_slab() and
// slab_alloc_node().
Ptr Mm::kmalloc_slow(uint64_t size, gfp_t gfp, const Task& t) {
  if (size == 0) return kZeroSizePtr;
  if (size > KMALLOC_MAX_CACHE_SIZE) return alloc_large(size, gfp, t, false);
  events_.add(Event::kmalloc);
  const uint32_t small = static_cast<uint32_t>(size);
  const Ptr p = slub_->alloc_slow<true>(kmalloc_cache(small, gfp, t.site), gfp, t);
  if (p == kNull) events_.add(Event::alloc_failed);
  return p;
}

// mirrors kfree(). The slab free records the last-free CPU
// (slab_alloc_remote); only a slow path can file a report.
void Mm::kfree(Ptr p, const Task& t) {
  if (p == kNull || p == kZeroSizePtr) return;
  if (!(p & (kLargeBit | kVmallocBit)) &&
      slub_->free_valid<true>(kNoCache, p, t, Event::kfree)) [[likely]]
    return;
  kfree_slow(p, t);
}

// kfree() past its fast path.
void Mm::kfree_slow(Ptr p, const Task& t) {
  const size_t nrep = slub_->reports.size();
  if (p & (kLargeBit | kVmallocBit)) {
    free_large(p, t, false);
  } else {
    events_.add(Event::kfree);
    slub_->free_slow<true>(kNoCache, p, t);
  }
  if (slub_->reports.size() != nrep) stamp_reports(nrep);
}

Ptr Mm::kmem_cache_alloc(CacheId s, gfp_t gfp, const Task& t) {
  Ptr p;
  if (slub_->alloc_fast<true>(s, gfp, t, &p, Event::kmem_cache_alloc)) [[likely]] return p;
  events_.add(Event::kmem_cache_alloc);
  p = slub_->alloc_slow<true>(s, gfp, t);
  if (p == kNull) events_.add(Event::alloc_failed);
  return p;
}

void Mm::kmem_cache_free(CacheId s, Ptr p, const Task& t) {
  if (p == kNull) return;
  if (!(p & (kLargeBit | kVmallocBit)) &&
      slub_->free_valid<true>(s, p, t, Event::kmem_cache_free)) [[likely]]
    return;
  kmem_cache_free_slow(s, p, t);
}

// kmem_cache_free() past its fast path, as kfree_slow().
void Mm::kmem_cache_free_slow(CacheId s, Ptr p, const Task& t) {
  events_.add(Event::kmem_cache_free);
  const size_t nrep = slub_->reports.size();
  if (p & (kLargeBit | kVmallocBit))
    slub_->report("invalid-free", p, s, "kmem_cache_free() of a non-slab pointer");
  else
    slub_->free_slow<true>(s, p, t);
  if (slub_->reports.size() != nrep) stamp_reports(nrep);
}

int Mm::kmem_cache_alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  events_.add(Event::kmem_cache_alloc_bulk);
  events_.batch(Batch::kmem_cache_alloc_bulk, n > 0 ? static_cast<uint64_t>(n) : 0);
  const int got = slub_->alloc_bulk(s, gfp, n, p, t);
  events_.add(Event::bulk_objects, got);
  for (int i = 0; i < got; ++i) note_alloc(p[i], t);
  if (!got && n) events_.add(Event::alloc_failed);
  return got;
}

void Mm::kmem_cache_free_bulk(CacheId s, int n, Ptr* p, const Task& t) {
  if (n <= 0) return;
  events_.add(Event::kmem_cache_free_bulk);
  events_.add(Event::bulk_free_objects, n);
  events_.batch(Batch::kmem_cache_free_bulk, static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) slub_->note_free_cpu(p[i], t.cpu);
  slub_->free_bulk(s, n, p, t);
}

// mirrors __kvmalloc_node_noprof(): kmalloc first (no retry above a page),
// then vmalloc for requests above PAGE_SIZE.
Ptr Mm::kvmalloc(uint64_t size, gfp_t gfp, const Task& t) {
  events_.add(Event::kvmalloc);
  // kvmalloc() refuses more than INT_MAX bytes (5.15+) before trying.
  if (size > INT32_MAX || faults_.should_fail(FaultPoint::kvmalloc)) {
    events_.add(Event::alloc_failed);
    return kNull;
  }
  gfp_t kgfp = gfp;
  if (size > PAGE_SIZE) kgfp = (kgfp | __GFP_NOWARN | __GFP_NORETRY) & ~__GFP_NOFAIL;
  Ptr p = size > KMALLOC_MAX_CACHE_SIZE ? alloc_large(size, kgfp, t, false)
                                        : kmalloc(size, kgfp, t);
  if (p != kNull || size <= PAGE_SIZE) return p;
  return alloc_large(size, gfp, t, true);
}

void Mm::kvfree(Ptr p, const Task& t) {
  events_.add(Event::kvfree);
  if (!(p & kVmallocBit)) return kfree(p, t);
  const size_t nrep = slub_->reports.size();
  free_large(p, t, true);
  if (slub_->reports.size() != nrep) stamp_reports(nrep);
}

// __kmalloc_large_node() (compound page of get_order(size)) or a vmalloc
// area of order-0 pages; both charged page-wise with __GFP_ACCOUNT.
Ptr Mm::alloc_large(uint64_t size, gfp_t gfp, const Task& t, bool vmalloc) {
  events_.add(vmalloc ? Event::vmalloc_fallback : Event::kmalloc_large);
  const NodeId node = static_cast<NodeId>(uint32_t(t.cpu) * cfg_.nr_nodes / cfg_.nr_cpus);
  Large l;
  l.bytes = size;
  l.vmalloc = vmalloc;
  l.site = t.site;
  if (vmalloc) {
    l.nr_pages = static_cast<uint32_t>((size + PAGE_SIZE - 1) / PAGE_SIZE);
    for (uint32_t i = 0; i < l.nr_pages; ++i) {  // one order-0 page each
      bool cold = false;
      const uint32_t pg = backend_->alloc_pages(0, node, gfp, t.cpu, &cold);
      if (!pg) {
        for (uint32_t v : l.vpages) backend_->free_pages(v, 0, t.cpu);
        events_.add(Event::alloc_failed);
        return kNull;
      }
      pages_cleared(gfp, 1, cold);
      l.vpages.push_back(pg);
    }
    events_.add(Event::vmalloc_pages, l.nr_pages);
  } else {
    l.order = get_order(size);
    if (l.order > MAX_PAGE_ORDER) {  // above KMALLOC_MAX_SIZE: the page allocator refuses
      events_.add(Event::alloc_failed);
      return kNull;
    }
    l.nr_pages = 1u << l.order;
    bool cold = false;
    l.page = backend_->alloc_pages(l.order, node, gfp | __GFP_COMP, t.cpu, &cold);
    if (!l.page) {
      events_.add(Event::alloc_failed);
      return kNull;
    }
    pages_cleared(gfp, l.nr_pages, cold);
  }
  const uint32_t id = commit_large(l, gfp, t);
  if (id == UINT32_MAX) return kNull;
  large_bytes_ += uint64_t(l.nr_pages) * PAGE_SIZE;
  // ___kmalloc_large_node(): NR_SLAB_UNRECLAIMABLE_B on the charged
  // compound's memcg lruvec (a vmalloc area is no slab memory).
  if (!vmalloc && l.memcg != kRootMemcg)
    backend_->mod_large_slab_stat(l.memcg, int64_t{l.nr_pages} * PAGE_SIZE);
  return (vmalloc ? kVmallocBit : kLargeBit) | id;
}

// __GFP_ZERO clears whole pages, one at a time, as the page allocator
// hands them out (post_alloc_hook() -> kernel_init_pages()): every byte of
// 1 << order pages, not only the bytes asked for, and before any charge,
// so pages given back after a failure were cleared too. A block the
// page allocator handed out cache-cold (model/mm/page_alloc.h) is
// cleared through misses: its bytes count zero_bytes_cold too.
void Mm::pages_cleared(gfp_t gfp, uint64_t pages, bool cold) {
  if (!(gfp & __GFP_ZERO)) return;
  events_.add(Event::zero_bytes, pages * PAGE_SIZE);
  events_.add(Event::zero_call, pages);
  if (cold) events_.add(Event::zero_bytes_cold, pages * PAGE_SIZE);
}

// What a large kmalloc and a vmalloc area share once their pages are
// held (and cleared with __GFP_ZERO): the page-wise charge with
// __GFP_ACCOUNT (its failure gives the pages back) and a slot in large_.
// Returns the slot, or UINT32_MAX on a failed charge.
uint32_t Mm::commit_large(Large& l, gfp_t gfp, const Task& t) {
  // In the root memcg (or a kernel thread) __memcg_kmem_charge_page() is
  // still called, once for a large kmalloc's compound and once for each
  // page of a vmalloc area (the bulk allocator takes one at a time with
  // __GFP_ACCOUNT), and finds no objcg.
  const bool charge_call = (gfp & __GFP_ACCOUNT) && backend_->kmem_online();
  if (charge_call && t.memcg == kRootMemcg)
    events_.add(Event::memcg_charge_page_empty, l.vmalloc ? l.nr_pages : 1);
  if (charge_call && t.memcg != kRootMemcg) {
    // A large kmalloc's compound is one __memcg_kmem_charge_page() of its
    // pages; a vmalloc area's pages are charged one by one as the page
    // allocator hands them out (the bulk allocator refuses __GFP_ACCOUNT),
    // each through the memcg stock. A refusal gives back what was charged
    // (vfree() of the pages so far: one uncharge a page) and the pages.
    // The memcg counts its refusals (memcg_charge_fail), an injected one
    // is counted here.
    const uint32_t calls = l.vmalloc ? l.nr_pages : 1;
    const uint32_t each = l.vmalloc ? 1 : l.nr_pages;
    for (uint32_t i = 0; i < calls; ++i) {
      const bool injected = faults_.should_fail(FaultPoint::memcg_charge);
      if (injected || !backend_->charge_pages(t.cpu, t.memcg, each, gfp)) {
        if (injected) events_.add(Event::memcg_charge_fail);
        for (uint32_t j = 0; j < i; ++j) backend_->uncharge_pages(t.cpu, t.memcg, each);
        give_back_pages(l, t.cpu);
        events_.add(Event::alloc_failed);
        return UINT32_MAX;
      }
    }
    l.memcg = t.memcg;
  }
  return store_large(l);
}

// A slot in large_ for a live large object; returns it.
uint32_t Mm::store_large(Large& l) {
  l.live = true;
  uint32_t id;
  if (!free_large_ids_.empty()) {
    id = free_large_ids_.back();
    free_large_ids_.pop_back();
    large_[id] = l;
  } else {
    id = static_cast<uint32_t>(large_.size());
    large_.push_back(l);
  }
  return id;
}

// The pages of a large object back to the page allocator: one order-0
// page each (a vmalloc area, a region made in order-0 pages), or the
// compound, to `cpu`'s per-CPU lists.
void Mm::give_back_pages(Large& l, CpuId cpu) {
  if (!l.vpages.empty()) {
    for (uint32_t v : l.vpages) backend_->free_pages(v, 0, cpu);
    l.vpages.clear();
  } else if (l.page) {
    backend_->free_pages(l.page, l.order, cpu);
  }
}

// io_region_allocate_pages()'s pages (io_uring/memmap.c, 6.14+): one
// compound of get_order(nr_pages) pages (io_mem_alloc_compound(),
// __GFP_COMP above order 0), else alloc_pages_bulk_node() of nr_pages
// order-0 pages, all or none. The page allocator zeroes every page it
// hands out with __GFP_ZERO (a compound whole) and __alloc_pages()
// charges it page-wise with __GFP_ACCOUNT (__memcg_kmem_charge_page()),
// freeing it if the charge is refused: a refused compound, either way,
// leads to the bulk allocator. That does not charge: with __GFP_ACCOUNT
// and kmem accounting online, or for a single page, it takes one page
// through the single-page allocator and stops, so a region of more than
// one page fails there (its page given back) and the ring with it.
// Without accounting the order-0 pages then need a vmap()
// (io_region_init_ptr()), whose vm_struct and vmap_area are not
// modelled.
Ptr Mm::alloc_page_region(uint32_t nr_pages, gfp_t gfp, const Task& t) {
  const NodeId node = static_cast<NodeId>(uint32_t(t.cpu) * cfg_.nr_nodes / cfg_.nr_cpus);
  // __GFP_ACCOUNT with kmem accounting online: __memcg_kmem_charge_page()
  // is called, and charges unless the task is in the root memcg.
  const bool charge_call = (gfp & __GFP_ACCOUNT) && backend_->kmem_online();
  const bool account = charge_call && t.memcg != kRootMemcg;
  // One allocation from the page allocator as __alloc_pages() makes it:
  // zeroed (pages_cleared()), then charged; 0 if refused (a refused
  // charge frees it).
  const auto take = [&](uint32_t order, gfp_t g) -> uint32_t {
    bool cold = false;
    const uint32_t pg = backend_->alloc_pages(order, node, g, t.cpu, &cold);
    if (!pg) return 0;
    pages_cleared(gfp, uint64_t{1} << order, cold);
    if (charge_call && !account) events_.add(Event::memcg_charge_page_empty);  // no objcg
    if (account) {
      const bool injected = faults_.should_fail(FaultPoint::memcg_charge);
      if (injected || !backend_->charge_pages(t.cpu, t.memcg, 1u << order, gfp)) {
        if (injected) events_.add(Event::memcg_charge_fail);  // the memcg counts its own
        backend_->free_pages(pg, order, t.cpu);
        return 0;
      }
    }
    return pg;
  };
  Large l;
  l.region = true;
  l.site = t.site;
  l.bytes = uint64_t{nr_pages} * PAGE_SIZE;
  if (account) l.memcg = t.memcg;
  const uint32_t order = get_order(l.bytes);
  if (nr_pages == 0) {
    events_.add(Event::alloc_failed);
    return kNull;
  }
  if (order <= MAX_PAGE_ORDER) l.page = take(order, order ? (gfp | __GFP_COMP) : gfp);
  if (l.page) {
    l.order = order;
    l.nr_pages = 1u << order;
  } else if (nr_pages == 1 || charge_call) {
    // The bulk allocator's one page (alloc_pages_bulk_noprof()'s
    // "failed:" path): enough only for a one-page region.
    const uint32_t pg = take(0, gfp);
    if (!pg || nr_pages > 1) {
      if (pg) {
        if (account) backend_->uncharge_pages_batch(t.memcg, 1);  // release_pages()
        backend_->free_pages(pg, 0, t.cpu);
      }
      events_.add(Event::alloc_failed);
      return kNull;
    }
    l.vpages.push_back(pg);
    l.nr_pages = 1;
  } else {
    for (uint32_t i = 0; i < nr_pages; ++i) {
      const uint32_t pg = take(0, gfp);
      if (!pg) {
        give_back_pages(l, t.cpu);
        events_.add(Event::alloc_failed);
        return kNull;
      }
      l.vpages.push_back(pg);
    }
    l.nr_pages = nr_pages;
  }
  const uint32_t id = store_large(l);  // charged and zeroed page by page above
  region_bytes_ += uint64_t{l.nr_pages} * PAGE_SIZE;
  return kLargeBit | id;
}

// io_free_region()'s pages: release_pages() of the compound's one
// reference or of the order-0 pages; their charge goes straight to the
// page_counter (mem_cgroup_uncharge_folios()), not to a per-CPU stock.
void Mm::free_page_region(Ptr p, const Task& t) {
  if (p == kNull) return;
  const size_t nrep = slub_->reports.size();
  Large* l = (p & (kLargeBit | kVmallocBit)) ? large(p) : nullptr;
  if (!l || !l->region || l->mempool) {
    const bool gone = (p & (kLargeBit | kVmallocBit)) && (!l || l->mempool);
    const char* kind = gone ? "double-free" : "invalid-free";
    const char* why = !l && !(p & (kLargeBit | kVmallocBit)) ? "free of a slab object as a page region"
                      : !l                                      ? "page region not live (freed before?)"
                      : l->mempool ? "pointer parked by kasan_mempool_poison_object()"
                      : l->vmalloc ? "free of a vmalloc area as a page region"
                                   : "free of a large kmalloc as a page region";
    slub_->report(kind, p, kNoCache, why);
    if (slub_->reports.size() != nrep) stamp_reports(nrep);
    return;
  }
  if (l->memcg != kRootMemcg) backend_->uncharge_pages_batch(l->memcg, l->nr_pages);
  give_back_pages(*l, t.cpu);
  region_bytes_ -= uint64_t{l->nr_pages} * PAGE_SIZE;
  l->live = false;
  free_large_ids_.push_back(static_cast<uint32_t>(p & ~kLargeBit));
}

Mm::Large* Mm::large(Ptr p) {
  const uint64_t id = p & ~(kLargeBit | kVmallocBit);
  if (id >= large_.size() || !large_[id].live) return nullptr;
  if (large_[id].vmalloc != bool(p & kVmallocBit)) return nullptr;
  return &large_[id];
}
const Mm::Large* Mm::large(Ptr p) const {
  return const_cast<Mm*>(this)->large(p);
}

// mirrors free_large_kmalloc() / vfree().
void Mm::free_large(Ptr p, const Task& t, bool via_kvfree) {
  Large* l = large(p);
  if (!l || l->mempool || l->region || (l->vmalloc && !via_kvfree)) {
    slub_->report(l ? (l->mempool ? "double-free" : "invalid-free") : "double-free",
                  p, kNoCache,
                  l && l->region    ? "kfree() of a page region (io_free_region() frees it)"
                  : l && l->vmalloc ? "kfree() of a vmalloc address"
                                    : "large allocation not live (freed before?)");
    return;
  }
  if (!l->vmalloc) events_.add(Event::kfree_large);  // kvfree() counts itself
  // vfree() gives an area's pages back one by one, each uncharged
  // (__free_page() -> __memcg_kmem_uncharge_page()); a compound at once.
  if (l->memcg != kRootMemcg) {
    if (l->vmalloc) {
      for (uint32_t i = 0; i < l->nr_pages; ++i) backend_->uncharge_pages(t.cpu, l->memcg, 1);
    } else {  // free_large_kmalloc(): the stat back, then the pages
      backend_->mod_large_slab_stat(l->memcg, -int64_t{l->nr_pages} * PAGE_SIZE);
      backend_->uncharge_pages(t.cpu, l->memcg, l->nr_pages);
    }
  }
  give_back_pages(*l, t.cpu);
  large_bytes_ -= uint64_t(l->nr_pages) * PAGE_SIZE;
  l->live = false;
  free_large_ids_.push_back(static_cast<uint32_t>(p & ~(kLargeBit | kVmallocBit)));
}

uint32_t Mm::ksize(Ptr p) const {
  if (p & (kLargeBit | kVmallocBit)) {
    const Large* l = large(p);
    return l ? l->nr_pages * PAGE_SIZE : 0;
  }
  const CacheId s = cache_of(p);
  return s == kNoCache ? 0 : slub_->cache(s).g.size;
}

CacheId Mm::cache_of(Ptr p) const {
  int32_t id;
  uint32_t idx;
  if (!slub_->decode(p, &id, &idx)) return kNoCache;
  return slub_->slab(id).cache;
}

// mirrors virt_to_slab() (v6.18 / 7.x): the object's slab, by the same
// decoding kfree() uses.
int64_t Mm::slab_of(Ptr p) const {
  int32_t id;
  uint32_t idx;
  if (!slub_->decode(p, &id, &idx)) return -1;
  return id;
}

ObjState Mm::obj_state(Ptr p) const {
  if (p & (kLargeBit | kVmallocBit)) {
    const Large* l = large(p);
    if (!l) return ObjState::kFree;
    return l->mempool ? ObjState::kMempool : ObjState::kAllocated;
  }
  return slub_->state(p);
}

// mirrors kasan_mempool_poison_object(): the object is parked by a caller.
bool Mm::kasan_mempool_poison_object(Ptr p, const Task& t) {
  (void)t;
  if (!(p & (kLargeBit | kVmallocBit))) [[likely]] {
    ObjState* slot = slub_->state_slot(p);
    if (slot && *slot == ObjState::kAllocated) [[likely]] {
      *slot = ObjState::kMempool;
      return true;
    }
  }
  return kasan_mempool_poison_slow(p);
}

bool Mm::kasan_mempool_poison_slow(Ptr p) {
  ObjState* slot = (p & (kLargeBit | kVmallocBit)) ? nullptr : slub_->state_slot(p);
  const ObjState st = slot ? *slot : obj_state(p);
  if (st != ObjState::kAllocated) {
    slub_->report("double-free", p, cache_of(p),
                  "kasan_mempool_poison_object() of an object that is not "
                  "allocated: " + slub_->history(p));
    stamp_reports(slub_->reports.size() - 1);
    return false;
  }
  if (slot) *slot = ObjState::kMempool;
  else large(p)->mempool = true;
  return true;
}

void Mm::kasan_mempool_unpoison_object(Ptr p, const Task& t) {
  (void)t;
  if (!(p & (kLargeBit | kVmallocBit))) [[likely]] {
    ObjState* slot = slub_->state_slot(p);
    if (slot && *slot == ObjState::kMempool) [[likely]] {
      *slot = ObjState::kAllocated;
      return;
    }
  }
  kasan_mempool_unpoison_slow(p);
}

void Mm::kasan_mempool_unpoison_slow(Ptr p) {
  ObjState* slot = (p & (kLargeBit | kVmallocBit)) ? nullptr : slub_->state_slot(p);
  const ObjState st = slot ? *slot : obj_state(p);
  if (st != ObjState::kMempool) {
    slub_->report("use-after-free", p, cache_of(p),
                  "unpoison of an object not parked in a mempool: " +
                      slub_->history(p));
    stamp_reports(slub_->reports.size() - 1);
    return;
  }
  if (slot) *slot = ObjState::kAllocated;
  else large(p)->mempool = false;
}

void Mm::kasan_check_access(Ptr p, std::string_view who) {
  if (!(p & (kLargeBit | kVmallocBit))) [[likely]] {
    const ObjState* slot = slub_->state_slot(p);
    if (slot && *slot == ObjState::kAllocated) [[likely]] return;
  }
  kasan_check_access_slow(p, who);
}

void Mm::kasan_check_access_slow(Ptr p, std::string_view who) {
  const ObjState st = obj_state(p);
  if (st == ObjState::kAllocated) return;
  slub_->report(st == ObjState::kMempool ? "use-after-put" : "use-after-free",
                p, cache_of(p),
                fmt::format("{} touched it: {}", who, slub_->history(p)));
  stamp_reports(slub_->reports.size() - 1);
}

void Mm::stamp_reports(size_t from) {
  for (size_t i = from; i < slub_->reports.size(); ++i)
    if (slub_->reports[i].where.empty()) slub_->reports[i].where = sites_.current();
}

void Mm::stat_sums(std::vector<uint64_t>* out) const {
  const size_t n = slub_->nr_caches();
  out->resize(n * kNumSlubStats);
  for (size_t s = 0; s < n; ++s) {
    const auto& tot = slub_->cache(static_cast<CacheId>(s)).stat_total;
    std::copy(tot.begin(), tot.end(), out->begin() + static_cast<ptrdiff_t>(s * kNumSlubStats));
  }
}

uint64_t Mm::memcg_charged_bytes(MemcgId m) const {
  return m == kRootMemcg ? 0 : memcg_->usage_pages(m) * PAGE_SIZE;
}

// Discarding a slab frees its obj_exts vector into another cache, so
// repeat until nothing more is released.
void Mm::shrink_all() {
  kvfree_rcu_barrier();  // kfree_rcu()'d objects are not live (kmem_cache_destroy() waits too)
  uint64_t before;
  do {
    before = slub_->slab_bytes();
    for (CacheId s = 0; s < slub_->nr_caches(); ++s) slub_->flush_all(s);
  } while (slub_->slab_bytes() < before);
}

uint64_t Mm::stat(CacheId s, SlubStat item) const {
  return slub_->cache(s).stat_total[static_cast<size_t>(item)];
}

uint64_t Mm::stat_cpu(CacheId s, SlubStat item, CpuId cpu) const {
  return slub_->cache(s).cpu[cpu].stat[static_cast<size_t>(item)];
}

std::vector<CacheId> Mm::caches() const {
  std::vector<CacheId> out;
  for (CacheId s = 0; s < slub_->nr_caches(); ++s) out.push_back(s);
  return out;
}

CacheId Mm::find_cache(std::string_view name) const {
  for (CacheId s = 0; s < slub_->nr_caches(); ++s) {
    const KmemCache& c = slub_->cache(s);
    if (c.name == name) return s;
    for (const auto& a : c.aliases)
      if (a == name) return s;
  }
  return kNoCache;
}

uint64_t Mm::slab_bytes_total() const { return slub_->slab_bytes(); }
uint64_t Mm::large_bytes_total() const { return large_bytes_; }
uint64_t Mm::region_bytes_total() const { return region_bytes_; }

const std::vector<KasanReport>& Mm::kasan_reports() const { return slub_->reports; }

void Mm::signature(StateSig* s) const {
  pages_->signature(s);
  memcg_->signature(s);
  for (const std::vector<Ptr>& batch : krcp_) s->ptrs(batch);
  slub_->signature(s);
  // The large objects met, in label order, then any live one nobody the
  // walks know holds, by id.
  size_t live = 0;
  for (const Large& l : large_) live += l.live;
  s->add(live);
  s->add(large_bytes_);
  s->add(region_bytes_);
  for (size_t k = 0, next_unmet = 0;;) {
    if (k < s->large_order().size()) {
      const uint64_t id = s->large_order()[k++];
      if (id >= large_.size() || !large_[id].live) {
        s->add(StateSig::kNone);
        continue;
      }
      const Large& l = large_[id];
      s->add(l.bytes);
      s->add(l.order);
      s->add(l.nr_pages);
      s->add(l.memcg);
      s->add(l.vmalloc);
      s->add(l.mempool);
      s->add(l.region);
      s->add(l.site);
      s->add(l.vpages.size());
      continue;
    }
    while (next_unmet < large_.size() && (!large_[next_unmet].live || s->has_large(next_unmet)))
      ++next_unmet;
    if (next_unmet == large_.size()) break;
    s->large(next_unmet);
  }
}

}  // namespace simcache
