// The entry points both generations share: slab_alloc_node() and
// slab_free() around the generation-specific per-CPU layer, the bulk
// API's all-or-nothing contract, and the hooks that run per object
// (zeroing, memcg charge/uncharge, obj_exts vectors).
#include <fmt/format.h>
#include "model/mm/slub.h"

namespace simcache {

std::string_view obj_state_name(ObjState s) {
  switch (s) {
    case ObjState::kFree: return "free";
    case ObjState::kCpuFreelist: return "cpu-freelist";
    case ObjState::kInSheaf: return "in-sheaf";
    case ObjState::kAllocated: return "allocated";
    case ObjState::kMempool: return "mempool";
  }
  return "?";
}

// mirrors kmem_cache_alloc_bulk(): all or nothing, hooks after the loop.
int Slub::alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  if (n <= 0) return 0;
  if (faults_->should_fail(FaultPoint::bulk_zero)) return 0;
  const bool short_fail = faults_->should_fail(FaultPoint::bulk_short);
  const int want = short_fail ? n - 1 : n;
  const int got = (this->*gen_->alloc_bulk)(s, gfp, want, p, t);
  if (got < n) {
    // The kernel frees what it took without running the free hooks.
    for (int i = 0; i < got; ++i) on_free(slot_of(p[i]), idx_of(p[i]), t);
    free_detached(s, got, p, t);
    return 0;
  }
  if (!post_alloc_hook(s, gfp, n, p, t)) return 0;
  return n;
}

// mirrors kmem_cache_free_bulk().
void Slub::free_bulk(CacheId s, int n, Ptr* p, const Task& t) {
  int kept = 0;
  FreeRun run;
  for (int i = 0; i < n; ++i) {  // KASAN + memcg hooks per object
    int32_t id;
    uint32_t idx;
    if (!check_free(s, p[i], &id, &idx)) continue;
    if (cfg_.memcg_batch_free)
      free_hook_batched(s, id, idx, t, &run);
    else
      free_hook(s, id, idx, t);
    on_free(id, idx, t);
    // Free from here on (the generation's bulk path sets the final
    // state): the same pointer twice in the array is a double free.
    slabs_[id].state[idx] = ObjState::kFree;
    p[kept++] = p[i];
  }
  flush_free_run(s, t, &run);
  (this->*gen_->free_bulk)(s, kept, p, t);
}

// mirrors build_detached_freelist(): the last object and every other
// object of its slab found before three misses in a row.
int32_t Slub::detach_group(int* n, Ptr* p) {
  const int32_t id = slot_of(p[--*n]);
  scratch_idx_.clear();
  scratch_idx_.push_back(static_cast<uint16_t>(idx_of(p[*n])));
  int same = *n, lookahead = 3, size = *n;
  while (size) {
    const Ptr q = p[--size];
    if (slot_of(q) == id) {
      scratch_idx_.push_back(static_cast<uint16_t>(idx_of(q)));
      --same;
      if (size != same) std::swap(p[size], p[same]);
      continue;
    }
    if (!--lookahead) break;
  }
  *n = same;
  return id;
}

// mirrors build_detached_freelist() + do_slab_free(): group objects of one
// slab (look-ahead 3) and free each group with one operation. Hooks have
// already run. Consumes p[0..n).
void Slub::free_detached(CacheId s, int n, Ptr* p, const Task& t) {
  while (n > 0) {
    const int32_t id = detach_group(&n, p);
    (this->*gen_->free_group)(s, id, scratch_idx_.data(), int(scratch_idx_.size()), t);
  }
}

// mirrors alloc_slab_obj_exts(): one slabobj_ext (8 B, the objcg pointer)
// per object, kmalloc'ed outside the slab with __GFP_NO_OBJ_EXT.
bool Slub::ensure_obj_exts(int32_t id, const Task& t) {
  if (slabs_[id].obj_exts != kNull) return true;
  const CacheId owner = slabs_[id].cache;
  uint32_t bytes = slabs_[id].objects * 8u;
  // 7.x: never let a kmalloc cache hold its own vector.
  if (gen_->obj_exts_not_in_own_cache &&
      kmalloc_->lookup(bytes, GFP_KERNEL, 0) == owner)
    bytes += 1;
  const uint16_t epoch = slabs_[id].epoch;
  // An internal kmalloc: counted as obj_exts_alloc, not as a caller's
  // kmalloc (bpftrace by call site would put it under the slab code).
  const gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NO_OBJ_EXT;
  Ptr v = alloc(kmalloc_->lookup(bytes, gfp, 0), gfp, t);
  // The recursive kmalloc may have grown slabs_; re-index, and make sure
  // the slab was not discarded meanwhile (it cannot be: it holds objects
  // or is being created).
  if (v == kNull || slabs_[id].epoch != epoch) return false;
  slabs_[id].obj_exts = v;
  ev_->add(Event::obj_exts_alloc);
  return true;
}

// mirrors slab_post_alloc_hook() -> memcg_slab_post_alloc_hook().
bool Slub::post_alloc_hook(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  const KmemCache& c0 = caches_[s];
  if (gfp & __GFP_ZERO) {  // one memset per object (slab_post_alloc_hook's loop)
    ev_->add(Event::zero_bytes, uint64_t(n) * c0.g.object_size);
    ev_->add(Event::zero_call, static_cast<uint64_t>(n));
  }
  if (!backend_->kmem_online()) return true;
  if (!(gfp & __GFP_ACCOUNT) && !(c0.flags & SLAB_ACCOUNT)) return true;
  // __memcg_slab_post_alloc_hook(): current_obj_cgroup() is NULL in the
  // root memcg and for a kernel thread, and the call returns.
  if (t.memcg == kRootMemcg) return ev_->add(Event::memcg_post_alloc_hook_empty), true;
  if (gfp & __GFP_NO_OBJ_EXT) return true;
  const uint32_t full = c0.obj_full_size;
  int i = 0;
  bool ok = true;
  while (i < n && ok) {
    const int32_t id = slot_of(p[i]);
    if (!ensure_obj_exts(id, t)) { ++i; continue; }  // left uncharged
    // A run: one object, or (batched hook) every following object on the
    // same node whose slab has, or can get, its vector.
    int run = 1;
    if (cfg_.memcg_batch_charge) {
      while (i + run < n) {
        const int32_t id2 = slot_of(p[i + run]);
        if (slabs_[id2].node != slabs_[id].node || !ensure_obj_exts(id2, t)) break;
        ++run;
      }
      ev_->add(Event::memcg_batch_run);
    }
    const NodeId node = slabs_[id].node;
    // One refusal, one memcg_charge_fail: the memcg counts its own
    // (try_charge_memcg() failing), an injected one is counted here.
    if (faults_->should_fail(FaultPoint::memcg_charge)) {
      ev_->add(Event::memcg_charge_fail);
      ok = false;
      break;
    }
    if (!backend_->charge_obj(t.cpu, t.memcg, node, full * uint32_t(run), gfp)) {
      ok = false;
      break;
    }
    for (int k = 0; k < run; ++k) {
      const int32_t id2 = slot_of(p[i + k]);
      const uint32_t idx2 = idx_of(p[i + k]);
      slabs_[id2].objcg[idx2] = t.memcg;
      slabs_[id2].objcg_node[idx2] = backend_->objcg_node(t.cpu);
      ev_->add(Event::memcg_post_alloc_hook);
    }
    i += run;
  }
  if (ok) return true;
  // The charge was refused: free everything back. One object:
  // memcg_alloc_abort_single(), no memcg free hook (its object was never
  // charged), the KASAN hook, then 6.18's do_slab_free() (the CPU slab's
  // fast path or __slab_free()) or 7.x's __slab_free() (never a sheaf).
  // Several (a bulk allocation): one kmem_cache_free_bulk(), whose hooks
  // uncharge those charged before the refusal.
  if (n > 1) {
    ev_->add(Event::kmem_cache_free_bulk);
    ev_->add(Event::bulk_free_objects, static_cast<uint64_t>(n));
    free_bulk(s, n, p, t);
    return false;
  }
  int32_t id;
  uint32_t idx;
  if (!check_free(s, p[0], &id, &idx)) return false;
  on_free(id, idx, t);
  if (v7_) {  // __slab_free() alone: FREE_SLOWPATH is slab_free()'s stat
    const uint16_t i16 = static_cast<uint16_t>(idx);
    slab_free_slow(s, id, &i16, 1, t);
  } else {
    free_618(s, id, idx, t);
  }
  return false;
}

// The free side of seed 002's batch (memcg-batch-free, no kernel patch
// yet): __memcg_slab_free_hook() still clears each object's slot, but a
// run of objects of one memcg, slab node and objcg node is uncharged with
// one refill_obj_stock() + account call.
void Slub::free_hook_batched(CacheId s, int32_t id, uint32_t idx, const Task& t,
                             FreeRun* run) {
  Slab& sl = slabs_[id];
  if (sl.obj_exts == kNull) return;
  const MemcgId m = sl.objcg[idx];
  if (m == kRootMemcg) return ev_->add(Event::memcg_free_hook_empty);
  sl.objcg[idx] = kRootMemcg;
  ev_->add(Event::memcg_free_hook);
  if (run->objects &&
      (run->memcg != m || run->node != sl.node || run->objcg_node != sl.objcg_node[idx]))
    flush_free_run(s, t, run);
  run->memcg = m;
  run->node = sl.node;
  run->objcg_node = sl.objcg_node[idx];
  ++run->objects;
}

void Slub::flush_free_run(CacheId s, const Task& t, FreeRun* run) {
  if (run->objects == 0) return;
  backend_->uncharge_obj(t.cpu, run->memcg, run->node,
                       caches_[s].obj_full_size * run->objects, run->objcg_node);
  ev_->add(Event::memcg_batch_run);
  run->objects = 0;
}

// mirrors memcg_slab_free_hook(): uncharge if the object was charged. A
// slab with a vector is on the out-of-line path for every object, charged
// or not (an object of the root memcg or a kernel thread: the loop's
// continue).
void Slub::free_hook(CacheId s, int32_t id, uint32_t idx, const Task& t) {
  Slab& sl = slabs_[id];
  if (sl.obj_exts == kNull) return;
  const MemcgId m = sl.objcg[idx];
  if (m == kRootMemcg) return ev_->add(Event::memcg_free_hook_empty);
  sl.objcg[idx] = kRootMemcg;
  backend_->uncharge_obj(t.cpu, m, sl.node, caches_[s].obj_full_size,
                       sl.objcg_node[idx]);
  ev_->add(Event::memcg_free_hook);
}

// mirrors __kmem_cache_shrink(): flush every CPU's layer, then discard
// every empty slab on the node lists.
void Slub::flush_all(CacheId s) {
  Task kworker;
  for (CpuId cpu = 0; cpu < cfg_.nr_cpus; ++cpu) {
    kworker.cpu = cpu;
    (this->*gen_->flush_cpu)(s, cpu, kworker);
  }
  kworker.cpu = 0;
  for (NodeId nid = 0; nid < cfg_.nr_nodes; ++nid) {
    Node& n = caches_[s].node[nid];
    {  // barn_shrink() (7.x; a 6.18 barn is always empty): the lists are
       // taken off the barn first, as the kernel splices them under the
       // lock. A sheaf's own kfree() may put a sheaf back on this barn (a
       // cache whose sheaves hold one object): it stays there.
      std::vector<int32_t> full, empty;
      full.swap(n.barn_full);
      empty.swap(n.barn_empty);
      for (int32_t sh : full) {
        flush_sheaf(sh, kworker);
        free_sheaf(sh, kworker);
      }
      for (int32_t sh : empty) free_sheaf(sh, kworker);
    }
    auto held = lock(n);
    for (int32_t id = n.partial_head; id >= 0;) {
      const int32_t next = slabs_[id].next;
      if (slabs_[id].inuse == 0) {
        remove_partial(n, id);
        discard_slab(s, id, kworker);
      }
      id = next;
    }
  }
}

}  // namespace simcache
