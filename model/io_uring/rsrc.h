// rsrc nodes and fixed-file registration (io_uring/rsrc.c): node
// allocation through ctx->node_cache, node free back to it, register
// (sparse or not), unregister, FILES_UPDATE, and the seed 004 hooks that
// run at sparse registration (prefill, slab-prime).
//
// Node references: the model issues no request that holds a fixed-file
// node beyond its own step, so the table's reference is the only one and
// io_put_rsrc_node() always frees (documented in docs/model-io_uring.md).
// Tags are never set, so no tag CQE is posted on free.
#pragma once

#include <algorithm>
#include <vector>

#include "model/io_uring/filetable.h"

namespace simcache::iou {

// Mirrors io_rsrc_node_alloc(): 6.15+ io_cache_alloc(&ctx->node_cache,
// GFP_KERNEL) (kmalloc(24) from kmalloc-32 on a miss, or the RFC's slab);
// 6.13/6.14 kzalloc(32, GFP_KERNEL) with no cache.
template <IoAllocator A>
Ptr io_rsrc_node_alloc(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_rsrc_node_alloc);
  ev(k.mm, Event::io_rsrc_node_alloc);
  Ptr node;
  if (!k.profile.has_node_cache && !ctx.files.prefilled.empty()) {
    node = ctx.files.prefilled.back();
    ctx.files.prefilled.pop_back();
    ev(k.mm, Event::io_cache_get);
  } else if (!k.profile.has_node_cache) {
    const gfp_t gfp = k.profile.node_kzalloc ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL;
    node = k.mm.kmalloc(k.profile.rsrc_node_size, gfp, at_site(t, kSiteNodeKzalloc));
  } else {
    node = io_alloc_cache_get(k.mm, ctx.node_cache, t);
    if (node == kNull && ctx.node_cache.lazy_fill != 0) {
      // prefill=lazy: the first miss after registration fills the cache.
      const uint32_t nr = ctx.node_cache.lazy_fill;
      ctx.node_cache.lazy_fill = 0;
      io_alloc_cache_prefill(k.mm, ctx.node_cache, nr, k.policy.prefill_max, t);
      node = io_alloc_cache_get(k.mm, ctx.node_cache, t);
    }
    if (node != kNull)
      ev(k.mm, Event::node_cache_hit);
    else
      node = io_cache_alloc_new(k.mm, ctx.node_cache, GFP_KERNEL, t);
  }
  // type, refs, tag and file_ptr are written: a poisoned object is caught.
  if (node != kNull) k.mm.kasan_check_access(node, "io_rsrc_node_alloc");
  return node;
}

// Mirrors io_free_rsrc_node() reached from io_put_rsrc_node() when the
// last reference drops: fput the file, then io_cache_free(&node_cache)
// (6.15+) or kfree (6.13/6.14).
template <IoAllocator A>
void io_free_rsrc_node(IoKernel<A>& k, IoRingCtx& ctx, Ptr node, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_free_rsrc_node);
  ev(k.mm, Event::io_free_rsrc_node);
  ev(k.mm, Event::fput);
  if (!k.profile.has_node_cache) {
    k.mm.kfree(node, t);
    ev(k.mm, Event::node_slab_free);
    return;
  }
  switch (io_alloc_cache_put_r(k.mm, ctx.node_cache, node, t)) {
    case PutResult::kept:
      ev(k.mm, Event::node_cache_put);
      break;
    case PutResult::full:
      io_cache_destroy_obj(k.mm, ctx.node_cache, node, t);
      ev(k.mm, Event::node_slab_free);
      break;
    case PutResult::refused:
      break;  // KASAN reported it; see io_cache_free()
  }
}

// Mirrors io_reset_rsrc_node(): put the slot's node (or, before 6.13,
// drop the slot's file) and empty the slot. Returns whether the slot was
// in use. The caller owns the bitmap bit.
template <IoAllocator A>
bool io_reset_rsrc_node(IoKernel<A>& k, IoRingCtx& ctx, uint32_t idx, const Task& t) {
  IoFileTable& ft = ctx.files;
  if (!ft.test_bit(idx)) return false;
  const Ptr node = ft.nodes[idx];
  ft.nodes[idx] = kNull;
  if (node != kNull)
    io_free_rsrc_node(k, ctx, node, t);
  else
    ev(k.mm, Event::fput);
  return true;
}

// The seeded bugs (PolicySet::debug_bug) on the FILES_UPDATE removal path;
// they exist only so tests can show the model's KASAN catches them.
template <IoAllocator A>
bool io_reset_rsrc_node_seeded_bug(IoKernel<A>& k, IoRingCtx& ctx, uint32_t idx,
                                   const Task& t) {
  IoFileTable& ft = ctx.files;
  const Ptr node = ft.test_bit(idx) ? ft.nodes[idx] : kNull;
  switch (k.policy.debug_bug) {
    case DebugBug::leak_node:
      if (!ft.test_bit(idx)) return false;
      ft.nodes[idx] = kNull;  // forgotten: never put
      return true;
    case DebugBug::double_put_node: {
      const bool was = io_reset_rsrc_node(k, ctx, idx, t);
      if (node != kNull) io_free_rsrc_node(k, ctx, node, t);
      return was;
    }
    case DebugBug::use_after_put_node: {
      const bool was = io_reset_rsrc_node(k, ctx, idx, t);
      if (node != kNull) k.mm.kasan_check_access(node, "io_rsrc_node (seeded use-after-put)");
      return was;
    }
    case DebugBug::none:
    case DebugBug::leak_node_cache:  // a teardown bug (io_free_alloc_caches())
      break;
  }
  return io_reset_rsrc_node(k, ctx, idx, t);
}

// io_rsrc_node_alloc() as the slab-prime diagnostic calls it: the
// io_rsrc_node_alloc scope and count, then one object straight from the
// allocator a node miss uses (the per-ring cache is neither taken from
// nor bulk-refilled, so the priming touches slab pages only).
template <IoAllocator A>
Ptr io_rsrc_node_alloc_prime(IoKernel<A>& k, bool slab, CacheId c, uint32_t size, gfp_t gfp,
                             const Task& site) {
  SiteScope scope(k.mm, CallSite::io_rsrc_node_alloc);
  ev(k.mm, Event::io_rsrc_node_alloc);
  return slab ? k.mm.kmem_cache_alloc(c, gfp, site) : k.mm.kmalloc(size, gfp, site);
}

// Seed 004 diagnostic 4395bc031111 "slab primed, 0 new pages" (policy
// slab-prime, v6.13). The model's reading of it: with M = min(nr,
// prefill_max), allocate one object at a time through
// io_rsrc_node_alloc() from the allocator a node miss uses (same cache,
// gfp and call site) until M objects can be freed back; the first object
// met on each distinct slab page, an already partial page included, is
// kept as an anchor so that page cannot be discarded, the others are
// freed in reverse order. Anchors are freed at unregister. At 128 objects
// a page, 32 fresh pages give back 4,064 and a 33rd the last 32: the
// RFC's row says "33 anchors kept". Best effort: an allocation failure
// stops the priming.
template <IoAllocator A>
void io_rsrc_slab_prime(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_rsrc_slab_prime);
  const IoAllocCache& nc = ctx.node_cache;
  const bool slab = k.profile.has_node_cache && nc.slab != kNoCache;
  const uint32_t size = k.profile.has_node_cache ? nc.elem_size : k.profile.rsrc_node_size;
  const gfp_t gfp = (!k.profile.has_node_cache && k.profile.node_kzalloc)
                        ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL;
  const Task site = at_site(t, k.profile.has_node_cache ? kSiteIoCacheAllocNew
                                                        : kSiteNodeKzalloc);
  const CacheId c = slab ? nc.slab : k.mm.kmalloc_cache(size, gfp, site.site);
  if (k.mm.info(c).objs_per_slab == 0) return;
  const uint32_t want = std::min(nr, k.policy.prefill_max);
  std::vector<Ptr> spare;       // registration time, not a hot path
  std::vector<int64_t> pages;   // slabs touched, in order
  auto& anchors = ctx.files.anchors;
  const size_t first = anchors.size();
  // A page holds at least one object, so M objects back never need more
  // than M + 1 pages: the bound ends a cache of one-object slabs.
  while (spare.size() < want && pages.size() <= want) {
    const Ptr p = io_rsrc_node_alloc_prime(k, slab, c, size, gfp, site);
    if (p == kNull) break;
    const int64_t page = k.mm.slab_of(p);
    if (std::find(pages.begin(), pages.end(), page) == pages.end()) {
      pages.push_back(page);
      anchors.push_back(p);
    } else {
      spare.push_back(p);
    }
  }
  ev(k.mm, Event::slab_prime_alloc, spare.size() + anchors.size() - first);
  for (size_t i = spare.size(); i-- > 0;) {
    if (slab)
      k.mm.kmem_cache_free(c, spare[i], t);
    else
      k.mm.kfree(spare[i], t);
  }
  ev(k.mm, Event::slab_prime_anchor, anchors.size() - first);
}

// Seed 004 diagnostic 63e60a1059df on v6.13 (policy kmalloc-prefill):
// kzalloc min(nr, prefill_max) nodes at the install site and stash them;
// taken last-allocated first. Best effort, like the diagnostic.
template <IoAllocator A>
void io_rsrc_kmalloc_prefill(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr, const Task& t) {
  if (k.profile.has_node_cache) return;
  const uint32_t want = std::min(nr, k.policy.prefill_max);
  const gfp_t gfp = k.profile.node_kzalloc ? GFP_KERNEL | __GFP_ZERO : GFP_KERNEL;
  ctx.files.prefilled.reserve(want);
  for (uint32_t i = 0; i < want; i++) {
    const Ptr p = k.mm.kmalloc(k.profile.rsrc_node_size, gfp, at_site(t, kSiteNodeKzalloc));
    if (p == kNull) break;
    ctx.files.prefilled.push_back(p);
  }
  ev(k.mm, Event::io_cache_prefill, ctx.files.prefilled.size());
}

// Frees the slab-prime anchors and the kmalloc-prefill leftovers (at
// unregister).
template <IoAllocator A>
void io_rsrc_free_anchors(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  const CacheId slab = k.profile.has_node_cache ? ctx.node_cache.slab : kNoCache;
  for (Ptr p : ctx.files.anchors) {
    if (slab != kNoCache)
      k.mm.kmem_cache_free(slab, p, t);
    else
      k.mm.kfree(p, t);
  }
  ctx.files.anchors.clear();
  for (Ptr p : ctx.files.prefilled) k.mm.kfree(p, t);
  ctx.files.prefilled.clear();
}

// The seed 004 hooks of a sparse registration: slab-prime, then prefill
// (patch 3/3: `if (!fds) io_alloc_cache_prefill(&ctx->node_cache, nr)`),
// or one of the review's variants: grow the array only, or arm a fill
// that the first miss performs (lazy).
template <IoAllocator A>
void io_rsrc_sparse_register_hooks(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr,
                                   bool optin, const Task& t) {
  if (k.policy.slab_prime) io_rsrc_slab_prime(k, ctx, nr, t);
  if (k.policy.kmalloc_prefill) io_rsrc_kmalloc_prefill(k, ctx, nr, t);
  if (!k.profile.has_node_cache) return;
  // prefill_grow: the array grows at every sparse registration, whatever
  // the fill mode fills (a fill grows it too, to what it fills).
  if (k.policy.prefill_grow)
    io_alloc_cache_grow(k.mm, ctx.node_cache, std::min(nr, k.policy.prefill_max), t);
  switch (k.policy.prefill) {
    case Prefill::off: break;
    case Prefill::optin:
      if (!optin) break;
      [[fallthrough]];
    case Prefill::always:
      io_alloc_cache_prefill(k.mm, ctx.node_cache, nr, k.policy.prefill_max, t);
      break;
    case Prefill::lazy:
      ctx.node_cache.lazy_fill = nr;
      break;
  }
}

// v6.12: the ring's ctx->rsrc_node dropped (at a switch, or with the
// ring), under the io_free_rsrc_node scope as on 6.13+: kfree.
template <IoAllocator A>
void io_free_ring_node(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_free_rsrc_node);
  ev(k.mm, Event::io_free_rsrc_node);
  k.mm.kfree(ctx.ring_node, t);
  ctx.ring_node = kNull;
}

// Mirrors io_rsrc_node_switch() before 7029acd8a950 (v6.12): allocate the
// ring's next ctx->rsrc_node (kzalloc) and free the current one, at ring
// set-up and at every unregister quiesce. 0 or kENOMEM.
template <IoAllocator A>
int io_rsrc_ring_node_switch(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  Ptr node;
  {
    SiteScope scope(k.mm, CallSite::io_rsrc_node_alloc);
    ev(k.mm, Event::io_rsrc_node_alloc);
    node = k.mm.kmalloc(k.profile.rsrc_node_size, GFP_KERNEL | __GFP_ZERO,
                        at_site(t, kSiteNodeKzalloc));
  }
  if (node == kNull) return kENOMEM;
  if (ctx.ring_node != kNull) io_free_ring_node(k, ctx, t);
  ctx.ring_node = node;
  return 0;
}

// Mirrors io_sqe_files_unregister() / io_rsrc_data_free(), 6.16+: put
// every node from the top index down (each may land in node_cache), free
// the table arrays, reset the allocation range.
template <IoAllocator A>
int io_sqe_files_unregister(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_sqe_files_unregister);
  IoFileTable& ft = ctx.files;
  if (!ft.registered) return kENXIO;
  for (uint32_t i = ft.nr; i-- > 0;) io_reset_rsrc_node(k, ctx, i, t);
  io_free_file_tables(k, ctx, t);
  io_rsrc_free_anchors(k, ctx, t);
  ctx.node_cache.lazy_fill = 0;  // a lazy fill no miss took
  io_file_table_set_alloc_range(ft, 0, 0);
  // v6.12: the unregister quiesce switches the ring's node (best effort:
  // on failure the old node stays)
  if (k.profile.per_ring_rsrc_node && ctx.ring_node != kNull) io_rsrc_ring_node_switch(k, ctx, t);
  ev(k.mm, Event::io_sqe_files_unregister);
  return 0;
}

// Mirrors io_sqe_files_register(), 6.16+. Sparse (IORING_RSRC_REGISTER_SPARSE):
// no node per slot, then the seed 004 hooks. Otherwise one fget and one
// node per slot; a failed node allocation unregisters what was built.
template <IoAllocator A>
int io_sqe_files_register(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr, bool sparse,
                          bool optin, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_sqe_files_register);
  IoFileTable& ft = ctx.files;
  if (ft.registered) return kEBUSY;
  if (nr == 0) return kEINVAL;
  if (nr > IORING_MAX_FIXED_FILES) return kEMFILE;
  if (!io_alloc_file_tables(k, ctx, nr, t)) return kENOMEM;
  ev(k.mm, Event::io_sqe_files_register);
  ev(k.mm, Event::file_table_slot, nr);
  if (sparse) io_rsrc_sparse_register_hooks(k, ctx, nr, optin, t);
  for (uint32_t i = 0; !sparse && i < nr; i++) {
    ev(k.mm, Event::fget);
    if (k.profile.install_allocates_node) {
      const Ptr node = io_rsrc_node_alloc(k, ctx, t);
      if (node == kNull) {
        ev(k.mm, Event::fput);
        io_sqe_files_unregister(k, ctx, t);
        return kENOMEM;
      }
      ft.nodes[i] = node;
    }
    io_file_bitmap_set(ft, i);
  }
  io_file_table_set_alloc_range(ft, 0, nr);
  return 0;
}

// Mirrors __io_sqe_files_update() with every fd = -1 (FILES_UPDATE
// removal): reset each slot of [offset, offset+count) and clear its bit.
template <IoAllocator A>
int io_files_update_remove(IoKernel<A>& k, IoRingCtx& ctx, uint32_t offset,
                           uint32_t count, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_files_update);
  IoFileTable& ft = ctx.files;
  if (!ft.registered) return kENXIO;
  if (count == 0 || uint64_t{offset} + count > ft.nr) return kEINVAL;
  for (uint32_t i = offset; i < offset + count; i++) {
    ev(k.mm, Event::files_update_entry);
    const bool was = k.policy.debug_bug == DebugBug::none
                         ? io_reset_rsrc_node(k, ctx, i, t)
                         : io_reset_rsrc_node_seeded_bug(k, ctx, i, t);
    if (was) io_file_bitmap_clear(ft, i);
  }
  return static_cast<int>(count);
}

// Mirrors __io_sqe_files_update() with a real fd per entry: reset the slot
// FIRST, then fget and allocate a node (the opposite order to install).
// Returns the number done, or the error if none was.
template <IoAllocator A>
int io_files_update_set(IoKernel<A>& k, IoRingCtx& ctx, uint32_t offset,
                        uint32_t count, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_files_update);
  IoFileTable& ft = ctx.files;
  if (!ft.registered) return kENXIO;
  if (count == 0 || uint64_t{offset} + count > ft.nr) return kEINVAL;
  uint32_t done = 0;
  for (; done < count; done++) {
    const uint32_t i = offset + done;
    ev(k.mm, Event::files_update_entry);
    if (io_reset_rsrc_node(k, ctx, i, t)) io_file_bitmap_clear(ft, i);
    ev(k.mm, Event::fget);
    Ptr node = kNull;
    if (k.profile.install_allocates_node) {
      node = io_rsrc_node_alloc(k, ctx, t);
      if (node == kNull) {
        ev(k.mm, Event::fput);
        break;
      }
    }
    ft.nodes[i] = node;
    io_file_bitmap_set(ft, i);
  }
  return done ? static_cast<int>(done) : kENOMEM;
}

}  // namespace simcache::iou
