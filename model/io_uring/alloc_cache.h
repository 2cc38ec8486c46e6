// io_alloc_cache: the per-ring LIFO object cache (io_uring/alloc_cache.[ch])
// plus the RFC "reduce node allocation cost" additions (seed 004): an
// optional dedicated kmem_cache (1/3), bulk refill on a miss (2/3) and a
// registration-time prefill (3/3). With slab == kNoCache and refill == 0
// the cache is exactly the unpatched one.
//
// The model keeps its own copy of the entries array (a std::vector sized
// at init, so puts and gets never allocate) and separately the allocation
// that backs it in the kernel (entries_mem), so the array's memory is
// counted by the allocator like any other object.
//
// KASAN at this layer: a parked object is poisoned through
// A::kasan_mempool_poison_object and unpoisoned on get, so a free of, or
// an access to, an object that sits in a cache is reported by A.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/io_uring/allocator.h"

namespace simcache::iou {

inline constexpr uint32_t IO_ALLOC_CACHE_MAX = 128;
inline constexpr uint32_t IO_POLL_ALLOC_CACHE_MAX = 32;
inline constexpr uint32_t IO_FUTEX_ALLOC_CACHE_MAX = 32;

// struct io_alloc_cache (include/linux/io_uring_types.h, 6.14+) + RFC 1/3 slab.
struct IoAllocCache {
  std::vector<Ptr> entries;  // entries[0, nr_cached) are parked objects
  Ptr entries_mem = kNull;   // the kvmalloc_array() backing `entries`
  uint32_t nr_cached = 0;
  uint32_t max_cached = 0;
  uint32_t elem_size = 0;
  uint32_t init_clear = 0;
  CacheId slab = kNoCache;   // RFC 1/3: dedicated kmem_cache, or kmalloc
  uint32_t refill = 0;       // RFC 2/3: bulk refill batch (0 = single alloc)
  uint32_t lazy_fill = 0;    // prefill=lazy: fill to this size on the next miss
};

// Why io_alloc_cache_put() did not keep an object.
enum class PutResult : uint8_t { kept, full, refused };

// Mirrors io_alloc_cache_init(), 6.10+: the entries array is
// kvmalloc_array(max_nr, 8, GFP_KERNEL). Returns 0 or kENOMEM (the kernel
// returns true on failure).
template <IoAllocator A>
int io_alloc_cache_init(A& a, IoAllocCache& c, uint32_t max_nr, uint32_t size,
                        uint32_t init_bytes, const Task& t) {
  c.entries_mem = a.kvmalloc(uint64_t{max_nr} * 8, GFP_KERNEL,
                             at_site(t, kSiteCacheEntries));
  if (c.entries_mem == kNull) return kENOMEM;
  c.entries.assign(max_nr, kNull);
  c.nr_cached = 0;
  c.max_cached = max_nr;
  c.elem_size = size;
  c.init_clear = init_bytes;
  c.slab = kNoCache;
  c.refill = 0;
  c.lazy_fill = 0;
  return 0;
}

// Frees one object the way this cache's destructor does: kmem_cache_free
// for a dedicated slab (RFC 1/3), kfree otherwise (io_cache_free() uses
// kvfree from 7.1; identical for slab objects).
template <IoAllocator A>
void io_cache_destroy_obj(A& a, const IoAllocCache& c, Ptr p, const Task& t) {
  if (c.slab != kNoCache)
    a.kmem_cache_free(c.slab, p, t);
  else
    a.kfree(p, t);
}

// Mirrors io_alloc_cache_put(), 6.15+: LIFO push if below max_cached,
// after KASAN poisoning; a refused poison (object not allocated: double
// put, put after free) is reported by A and the object is not kept.
template <IoAllocator A>
PutResult io_alloc_cache_put_r(A& a, IoAllocCache& c, Ptr p, const Task& t) {
  if (c.nr_cached >= c.max_cached) {
    ev(a, Event::io_cache_put_full);
    return PutResult::full;
  }
  if (!a.kasan_mempool_poison_object(p, t)) {
    ev(a, Event::io_cache_poison_refused);
    return PutResult::refused;
  }
  c.entries[c.nr_cached++] = p;
  ev(a, Event::io_cache_put);
  return PutResult::kept;
}

template <IoAllocator A>
bool io_alloc_cache_put(A& a, IoAllocCache& c, Ptr p, const Task& t) {
  return io_alloc_cache_put_r(a, c, p, t) == PutResult::kept;
}

// Mirrors io_alloc_cache_get(), 6.15+: pop the most recently put object
// and unpoison it. (The kernel zeroes init_clear here only under KASAN;
// the model follows a production build and does not.)
template <IoAllocator A>
Ptr io_alloc_cache_get(A& a, IoAllocCache& c, const Task& t) {
  if (c.nr_cached == 0) return kNull;
  Ptr p = c.entries[--c.nr_cached];
  c.entries[c.nr_cached] = kNull;
  a.kasan_mempool_unpoison_object(p, t);
  ev(a, Event::io_cache_get);
  return p;
}

// Mirrors io_cache_stash() (RFC 3/3, factored out of 2/3): park `nr`
// freshly allocated objects that already sit at entries[nr_cached...],
// zeroing init_clear and poisoning each; if poisoning refuses one, that
// one and the rest go back to the slab. Returns how many were parked.
template <IoAllocator A>
uint32_t io_cache_stash(A& a, IoAllocCache& c, uint32_t nr, const Task& t) {
  const uint32_t base = c.nr_cached;
  uint32_t i = 0;
  for (; i < nr; i++) {
    Ptr p = c.entries[base + i];
    if (c.init_clear) ev(a, Event::zero_bytes, c.init_clear), ev(a, Event::zero_call);
    if (!a.kasan_mempool_poison_object(p, t)) {
      ev(a, Event::io_cache_poison_refused);
      break;
    }
    c.nr_cached++;
  }
  const uint32_t kept = i;
  for (; i < nr; i++) {
    io_cache_destroy_obj(a, c, c.entries[base + i], t);
    c.entries[base + i] = kNull;
  }
  return kept;
}

// RFC 2/3 miss path: bulk-allocate up to `refill` objects straight into
// the free part of the entries array, return the last one, stash the rest.
// No room: one kmem_cache_alloc. Zero objects: NULL.
template <IoAllocator A>
Ptr io_cache_bulk_refill(A& a, IoAllocCache& c, gfp_t gfp, const Task& t) {
  const uint32_t room = c.max_cached - c.nr_cached;
  if (room == 0) return a.kmem_cache_alloc(c.slab, gfp, t);
  const uint32_t batch = std::min(c.refill, room);
  const int got = a.kmem_cache_alloc_bulk(c.slab, gfp, static_cast<int>(batch),
                                          &c.entries[c.nr_cached], t);
  ev(a, Event::io_cache_bulk_refill);
  note_batch(a, Batch::io_cache_bulk_refill, got > 0 ? static_cast<uint64_t>(got) : 0);
  if (got <= 0) return kNull;
  const uint32_t last = c.nr_cached + static_cast<uint32_t>(got) - 1;
  Ptr obj = c.entries[last];
  c.entries[last] = kNull;
  const uint32_t kept = io_cache_stash(a, c, static_cast<uint32_t>(got) - 1, t);
  ev(a, Event::io_cache_refill_stash, kept);
  return obj;
}

// Mirrors io_cache_alloc_new(): kmalloc(elem_size) (6.15+), or the
// dedicated slab (RFC 1/3) with bulk refill (RFC 2/3); zero init_clear
// bytes of the returned object.
template <IoAllocator A>
Ptr io_cache_alloc_new(A& a, IoAllocCache& c, gfp_t gfp, const Task& t) {
  SiteScope scope(a, CallSite::io_cache_alloc_new);
  const Task site = at_site(t, kSiteIoCacheAllocNew);
  Ptr obj;
  if (c.slab == kNoCache)
    obj = a.kmalloc(c.elem_size, gfp, site);
  else if (c.refill == 0)
    obj = a.kmem_cache_alloc(c.slab, gfp, site);
  else
    obj = io_cache_bulk_refill(a, c, gfp, site);
  ev(a, Event::io_cache_alloc_new);
  if (obj != kNull && c.init_clear) ev(a, Event::zero_bytes, c.init_clear), ev(a, Event::zero_call);
  return obj;
}

// Mirrors io_cache_alloc(): cached object if any, else a new one.
template <IoAllocator A>
Ptr io_cache_alloc(A& a, IoAllocCache& c, gfp_t gfp, const Task& t) {
  Ptr p = io_alloc_cache_get(a, c, t);
  return p != kNull ? p : io_cache_alloc_new(a, c, gfp, t);
}

// Mirrors io_cache_free(): keep if there is room, else free to the slab.
// An object whose poisoning KASAN refused is not freed again: the kernel
// would call kfree(), but KASAN's pre-free check rejects that free too, so
// the net effect (report, no free) is the same.
template <IoAllocator A>
void io_cache_free(A& a, IoAllocCache& c, Ptr p, const Task& t) {
  if (io_alloc_cache_put_r(a, c, p, t) == PutResult::full)
    io_cache_destroy_obj(a, c, p, t);
}

// Mirrors io_alloc_cache_free(): every parked object goes to the cache's
// destructor, then the entries array is kvfree'd. Safe on a cache whose
// init failed (entries_mem == NULL).
template <IoAllocator A>
void io_alloc_cache_free(A& a, IoAllocCache& c, const Task& t) {
  SiteScope scope(a, CallSite::io_alloc_cache_free);
  if (c.entries_mem == kNull) return;
  for (Ptr p; (p = io_alloc_cache_get(a, c, t)) != kNull;) {
    io_cache_destroy_obj(a, c, p, t);
    ev(a, Event::io_cache_teardown_free);
  }
  a.kvfree(c.entries_mem, t);
  c.entries_mem = kNull;
  c.entries.clear();
  c.entries.shrink_to_fit();
  c.max_cached = 0;
}

// The first half of io_alloc_cache_prefill() (RFC 3/3), and all of the
// grow-only variant (seed 004 review question, no kernel patch): grow the
// entries array to `nr` (kvmalloc_array; the grown array is kept and
// max_cached grows with it), filling nothing. Never shrinks. Returns
// false only if the new array could not be allocated.
template <IoAllocator A>
bool io_alloc_cache_grow(A& a, IoAllocCache& c, uint32_t nr, const Task& t) {
  if (c.entries_mem == kNull) return false;
  if (nr <= c.max_cached) return true;
  const gfp_t gfp = GFP_KERNEL | __GFP_NOWARN;
  Ptr mem = a.kvmalloc(uint64_t{nr} * 8, gfp, at_site(t, kSitePrefillEntries));
  if (mem == kNull) return false;
  c.entries.resize(nr, kNull);  // registration time, not a hot path
  a.kvfree(c.entries_mem, t);
  c.entries_mem = mem;
  c.max_cached = nr;
  return true;
}

// Mirrors io_alloc_cache_prefill() (RFC 3/3): grow the cache to
// min(nr, max_nr) entries and fill it with one bulk allocation. A cache
// without a dedicated slab (the kmalloc'd nodes of v6.18; seed 004's
// "free callback, no dedicated slab" question) fills with one kmalloc()
// per object: kmalloc has no bulk entry point. Best effort: any failure
// leaves a valid cache. Returns objects stashed.
template <IoAllocator A>
uint32_t io_alloc_cache_prefill(A& a, IoAllocCache& c, uint32_t nr,
                                uint32_t max_nr, const Task& t) {
  SiteScope scope(a, CallSite::io_alloc_cache_prefill);
  const gfp_t gfp = GFP_KERNEL | __GFP_NOWARN;
  if (c.entries_mem == kNull) return 0;
  nr = std::min(nr, max_nr);
  if (nr <= c.nr_cached) return 0;
  if (!io_alloc_cache_grow(a, c, nr, t)) return 0;
  int got = 0;
  if (c.slab != kNoCache) {
    got = a.kmem_cache_alloc_bulk(c.slab, gfp, static_cast<int>(nr - c.nr_cached),
                                  &c.entries[c.nr_cached], t);
  } else {
    const Task site = at_site(t, kSitePrefillObjs);
    for (uint32_t i = c.nr_cached; i < nr; ++i, ++got)
      if ((c.entries[i] = a.kmalloc(c.elem_size, gfp, site)) == kNull) break;
  }
  if (got <= 0) return 0;
  const uint32_t kept = io_cache_stash(a, c, static_cast<uint32_t>(got), t);
  ev(a, Event::io_cache_prefill, kept);
  note_batch(a, Batch::io_alloc_cache_prefill, kept);
  return kept;
}

}  // namespace simcache::iou
