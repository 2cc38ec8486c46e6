// SLUB, 7.x generation: per-CPU main and spare sheaves over a per-node
// barn of full and empty sheaves, refilled from and flushed to slabs
// under list_lock. Mirrors mm/slub.c after "slab: replace cpu (partial)
// slabs with sheaves" (7.0; read at the 7.1/7.2-era blktests tree).
#include <algorithm>

#include "model/mm/id_pool.h"
#include "model/mm/slub.h"

namespace simcache {

// mirrors __alloc_empty_sheaf(), 7.x: a kzalloc of the sheaf header plus
// `capacity` pointers (kmalloc-512 for capacity 60), with __GFP_NO_OBJ_EXT
// for kmalloc caches. A caller already allocating without obj_exts gets
// no sheaf (that is what stops the recursion). Returns -1 on failure.
int32_t Slub::alloc_sheaf(CacheId s, gfp_t gfp, const Task& t) {
  if (gfp & __GFP_NO_OBJ_EXT) return -1;
  const uint32_t cap = caches_[s].g.sheaf_capacity;
  // OBJCGS_CLEAR_MASK: no DMA, reclaimable, accounted or nofail sheaf.
  gfp_t sgfp = (gfp & ~(__GFP_DMA | __GFP_RECLAIMABLE | __GFP_ACCOUNT | __GFP_NOFAIL)) | __GFP_ZERO;
  if (caches_[s].is_kmalloc) sgfp |= __GFP_NO_OBJ_EXT;
  const Ptr mem = alloc(kmalloc_->lookup(32 + 8 * cap, sgfp, 0), sgfp, t);
  if (mem == kNull) return -1;
  const int32_t id = new_sheaf(s);
  sheaves_[id].self = mem;
  stat(caches_[s], t.cpu, SlubStat::SHEAF_ALLOC);
  ev_->add(Event::sheaf_alloc);
  return id;
}

int32_t Slub::new_sheaf(CacheId s) {
  const int32_t id = take_id<int32_t>(sheaves_, free_sheaf_slots_);
  Sheaf& sh = sheaves_[id];
  sh.cache = s;
  sh.capacity = caches_[s].g.sheaf_capacity;
  sh.self = kNull;
  sh.objects.clear();
  sh.objects.reserve(sh.capacity);
  return id;
}

// mirrors free_empty_sheaf(), 7.x: kfree the sheaf.
void Slub::free_sheaf(int32_t id, const Task& t) {
  stat(caches_[sheaves_[id].cache], t.cpu, SlubStat::SHEAF_FREE);
  const Ptr mem = sheaves_[id].self;
  sheaves_[id].cache = kNoCache;
  sheaves_[id].self = kNull;
  free_sheaf_slots_.push_back(id);
  if (mem != kNull) free(kNoCache, mem, t);
}

// mirrors sheaf_flush_unused(), 7.x: every object back to its slab.
void Slub::flush_sheaf(int32_t id, const Task& t) {
  Sheaf& sh = sheaves_[id];
  const CacheId s = sh.cache;
  const int n = static_cast<int>(sh.objects.size());
  if (!n) return;
  stat(caches_[s], t.cpu, SlubStat::SHEAF_FLUSH, n);
  ev_->add(Event::sheaf_flush_objects, n);
  ev_->batch(Batch::sheaf_flush, static_cast<uint64_t>(n));
  // The frees may recurse into sheaf allocation (sheaves_ may grow), so
  // the objects are moved out and the buffer moved back: no allocation.
  std::vector<Ptr> objs;
  objs.swap(sh.objects);
  free_detached(s, n, objs.data(), t);
  objs.clear();
  sheaves_[id].objects.swap(objs);
}

// The barn helpers read the barn's counts before taking its lock ("slab:
// determine barn status racily outside of lock") and return without it
// when the count says no; one task per CPU, so the racy read and the
// locked one agree and a miss takes no lock.

// mirrors barn_replace_empty_sheaf(), 7.x: a full barn sheaf for `empty`.
int32_t Slub::barn_replace_empty_sheaf(Node& n, int32_t empty) {
  if (n.barn_full.empty()) return -1;
  ev_->add(Event::barn_lock);
  const int32_t full = n.barn_full.back();
  n.barn_full.pop_back();
  n.barn_empty.push_back(empty);
  return full;
}

// mirrors barn_get_empty_sheaf(), 7.x.
int32_t Slub::barn_get_empty_sheaf(Node& n) {
  if (n.barn_empty.empty()) return -1;
  ev_->add(Event::barn_lock);
  const int32_t empty = n.barn_empty.back();
  n.barn_empty.pop_back();
  return empty;
}

// mirrors barn_replace_full_sheaf(), 7.x: an empty barn sheaf for `full`;
// -E2BIG when the barn holds MAX_FULL_SHEAVES, -ENOMEM with no empty one.
int32_t Slub::barn_replace_full_sheaf(Node& n, int32_t full) {
  if (n.barn_full.size() >= MAX_FULL_SHEAVES) return kBarnE2BIG;
  if (n.barn_empty.empty()) return kBarnENOMEM;
  ev_->add(Event::barn_lock);
  const int32_t empty = n.barn_empty.back();
  n.barn_empty.pop_back();
  n.barn_full.push_back(full);
  return empty;
}

// mirrors barn_put_empty_sheaf(), 7.x.
void Slub::barn_put_empty_sheaf(Node& n, int32_t empty) {
  ev_->add(Event::barn_lock);
  n.barn_empty.push_back(empty);
}

// mirrors alloc_from_pcs(), 7.x: pop the main sheaf, replacing it when empty.
Ptr Slub::alloc_7x_slow(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  // alloc_from_pcs()'s trylock, whatever follows: a cache without sheaves
  // has its (empty) bootstrap sheaf too and backs off only after it.
  rt_pcs_lock();
  if (!c.g.sheaf_capacity) return alloc_single_7x(s, gfp, t);
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  ensure_main(s, t);
  if (sheaves_[pcs.main].objects.empty() && !replace_empty_main(s, gfp, t))
    return alloc_single_7x(s, gfp, t);
  Sheaf& m = sheaves_[c.cpu[t.cpu].main];
  const Ptr p = m.objects.back();
  m.objects.pop_back();
  on_alloc(caches_[s], slot_of(p), idx_of(p), t);
  stat(c, t.cpu, SlubStat::ALLOC_FASTPATH);
  ev_->add(Event::slab_alloc_fast);
  return p;
}

// mirrors __pcs_replace_empty_main(), 7.x: spare, then a full barn sheaf,
// then refill the spare or an empty barn sheaf (or a new one) from slabs.
bool Slub::replace_empty_main(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  if (pcs.spare >= 0 && !sheaves_[pcs.spare].objects.empty()) {
    std::swap(pcs.main, pcs.spare);
    return true;
  }
  Node& n = c.node[cpu_node(t.cpu)];
  const int32_t full = barn_replace_empty_sheaf(n, pcs.main);
  if (full >= 0) {
    pcs.main = full;
    stat(c, t.cpu, SlubStat::BARN_GET);
    return true;
  }
  stat(c, t.cpu, SlubStat::BARN_GET_FAIL);
  // Only a caller that may not even spin (no reclaim bit: kmalloc_nolock())
  // falls back to one object; GFP_NOWAIT and GFP_ATOMIC refill a sheaf as
  // GFP_KERNEL does (gfpflags_allow_spinning(), not _blocking()).
  if (!gfp_allow_spinning(gfp)) return false;
  int32_t empty = -1;
  if (pcs.spare >= 0) {
    empty = pcs.spare;
    pcs.spare = -1;
  } else {
    empty = barn_get_empty_sheaf(n);
  }
  if (empty < 0) empty = alloc_sheaf(s, gfp, t);  // alloc_full_sheaf()
  if (empty < 0) return false;
  // refill_sheaf()
  const int want = static_cast<int>(c.g.sheaf_capacity);
  sheaves_[empty].objects.resize(want);
  const int got = refill_objects(s, gfp, want, want, sheaves_[empty].objects.data(), t);
  sheaves_[empty].objects.resize(got);
  stat(caches_[s], t.cpu, SlubStat::SHEAF_REFILL, got);
  ev_->add(Event::sheaf_refill_objects, got);
  ev_->batch(Batch::sheaf_refill, static_cast<uint64_t>(got));
  if (got < want) {  // could not fill: give back and fall back
    flush_sheaf(empty, t);
    free_sheaf(empty, t);
    return false;
  }
  rt_pcs_lock();  // retaken to install the refilled sheaf
  KmemCache::Cpu& pcs2 = caches_[s].cpu[t.cpu];
  if (pcs2.spare < 0) pcs2.spare = pcs2.main;
  else barn_put_empty_sheaf(caches_[s].node[cpu_node(t.cpu)], pcs2.main);
  pcs2.main = empty;
  return true;
}

// mirrors alloc_from_new_slab(), 7.x: up to `max` objects straight off a
// new slab's freelist; a slab not used up goes to the partial head.
int Slub::alloc_from_new_slab(int32_t id, int max, Ptr* out) {
  Slab& sl = slabs_[id];
  int got = 0;
  while (!sl.freelist.empty() && got < max) {
    const uint16_t idx = sl.freelist.back();
    sl.freelist.pop_back();
    ++sl.inuse;
    sl.state[idx] = ObjState::kInSheaf;
    out[got++] = make_ptr(id, idx);
  }
  if (!sl.freelist.empty()) {
    Node& n = caches_[sl.cache].node[sl.node];
    auto held = lock(n);
    add_partial(n, id, /*tail=*/false);
  }
  return got;
}

// mirrors ___slab_alloc(), 7.x: one object from a partial slab
// (get_from_partial_node()) or a new slab.
Ptr Slub::alloc_single_7x(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  stat(c, t.cpu, SlubStat::ALLOC_SLOWPATH);
  ev_->add(Event::slab_alloc_slow);
  Ptr p = kNull;
  get_partial(c, t.cpu, [&](NodeId, Node& n) {
    const int32_t id = n.partial_head;
    Slab& sl = slabs_[id];
    const uint16_t idx = sl.freelist.back();
    sl.freelist.pop_back();
    ++sl.inuse;
    if (sl.freelist.empty()) remove_partial(n, id);
    p = make_ptr(id, idx);
    return true;
  });
  if (p == kNull) {
    const int32_t id = new_slab(s, gfp, cpu_node(t.cpu), t);
    if (id < 0) return kNull;
    stat(caches_[s], t.cpu, SlubStat::ALLOC_SLAB);
    alloc_from_new_slab(id, 1, &p);
  }
  on_alloc(caches_[s], slot_of(p), idx_of(p), t);
  return p;
}

// mirrors __refill_objects_node() + get_partial_node_bulk(), 7.x: isolate
// partial slabs worth [min, max] objects (list_lock already held), drain
// their freelists, give surplus back through __slab_free().
int Slub::refill_from_node(CacheId s, Node& n, int min, int max, Ptr* out,
                           const Task& t) {
  const KmemCache& c = caches_[s];
  // The isolated slabs sit on a private list (chained through
  // Slab::next) in reverse order of isolation, drained from its head.
  int32_t iso = -1;
  int total = 0;
  for (int32_t id = n.partial_head; id >= 0;) {
    const int32_t next = slabs_[id].next;
    const int free = slabs_[id].objects - slabs_[id].inuse;
    if (total >= min && total + free > max) break;
    remove_partial(n, id);
    slabs_[id].where = SlabWhere::kIsolated;
    slabs_[id].next = iso;
    iso = id;
    total += free;
    if (total >= max) break;
    id = next;
  }
  int got = 0;
  while (iso >= 0 && got < max) {
    const int32_t id = iso;
    Slab& sl = slabs_[id];
    iso = sl.next;
    sl.next = -1;
    // get_freelist_nofreeze(): the slab looks full and is on no list; the
    // objects not taken are the surplus, handed back as a detached list.
    sl.inuse = sl.objects;
    sl.where = SlabWhere::kFull;
    while (!sl.freelist.empty() && got < max) {
      const uint16_t idx = sl.freelist.back();
      sl.freelist.pop_back();
      sl.state[idx] = ObjState::kInSheaf;
      out[got++] = make_ptr(id, idx);
    }
    if (!sl.freelist.empty())
      slab_freed(s, id, /*prior=*/false, static_cast<int>(sl.freelist.size()), t);
  }
  if (iso >= 0) {  // isolated but not needed: back to the head, in list order
    auto held = lock(n);
    int32_t discard = -1, discard_tail = -1;
    while (iso >= 0) {
      const int32_t id = iso;
      iso = slabs_[id].next;
      slabs_[id].next = -1;
      add_partial_or_discard(n, id, /*tail=*/false, &discard, &discard_tail);
    }
    held.unlock();
    discard_chain(s, discard, /*count_stats=*/false, t);
  }
  (void)c;
  return got;
}

// mirrors refill_objects(), 7.x: the local node, other nodes (as
// get_partial()), then new slabs.
int Slub::refill_objects(CacheId s, gfp_t gfp, int min, int max, Ptr* out,
                         const Task& t) {
  int got = 0;
  get_partial(caches_[s], t.cpu, [&](NodeId, Node& n) {
    got += refill_from_node(s, n, min - got, max - got, out + got, t);
    return got >= min;
  });
  while (got < min) {
    const int32_t id = new_slab(s, gfp, cpu_node(t.cpu), t);
    if (id < 0) break;
    stat(caches_[s], t.cpu, SlubStat::ALLOC_SLAB);
    got += alloc_from_new_slab(id, max - got, out + got);
  }
  return got;
}

// mirrors slab_free(), 7.x: free_to_pcs() for local slabs, else __slab_free().
void Slub::free_7x_slow(CacheId s, int32_t id, uint32_t idx, const Task& t) {
  KmemCache& c = caches_[s];
  // free_to_pcs()'s trylock for every local object: a cache without
  // sheaves finds its bootstrap sheaf "full" (0 of 0) and backs off in
  // __pcs_replace_full_main().
  if (slabs_[id].node == cpu_node(t.cpu)) rt_pcs_lock();
  if (c.g.sheaf_capacity && slabs_[id].node == cpu_node(t.cpu)) {
    KmemCache::Cpu& pcs = c.cpu[t.cpu];
    ensure_main(s, t);
    if (sheaves_[pcs.main].objects.size() < c.g.sheaf_capacity ||
        replace_full_main(s, t)) {
      Sheaf& m = sheaves_[caches_[s].cpu[t.cpu].main];
      m.objects.push_back(make_ptr(id, idx));
      slabs_[id].state[idx] = ObjState::kInSheaf;
      stat(caches_[s], t.cpu, SlubStat::FREE_FASTPATH);
      ev_->add(Event::slab_free_fast);
      return;
    }
  }
  const uint16_t i16 = static_cast<uint16_t>(idx);
  slab_free_slow(s, id, &i16, 1, t);
  stat(caches_[s], t.cpu, SlubStat::FREE_SLOWPATH);
}

// mirrors __pcs_replace_full_main(), 7.x: an empty barn sheaf, the spare,
// or a barn exchange; a full barn flushes the spare (-E2BIG); no empty
// sheaf anywhere allocates one (GFP_NOWAIT), or else flushes the main.
bool Slub::replace_full_main(CacheId s, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  Node& n = c.node[cpu_node(t.cpu)];
  if (pcs.spare < 0) {
    const int32_t empty = barn_get_empty_sheaf(n);
    if (empty >= 0) {
      pcs.spare = pcs.main;
      pcs.main = empty;
      return true;
    }
  } else if (sheaves_[pcs.spare].objects.size() < c.g.sheaf_capacity) {
    std::swap(pcs.main, pcs.spare);
    return true;
  } else {
    const int32_t empty = barn_replace_full_sheaf(n, pcs.main);
    if (empty >= 0) {
      pcs.main = empty;
      stat(c, t.cpu, SlubStat::BARN_PUT);
      return true;
    }
    if (empty == kBarnE2BIG) {
      stat(c, t.cpu, SlubStat::BARN_PUT_FAIL);
      const int32_t to_flush = pcs.spare;
      pcs.spare = -1;
      flush_sheaf(to_flush, t);
      rt_pcs_lock();  // retaken to install it (got_empty)
      install_empty_sheaf(s, to_flush, t);
      return true;
    }
  }
  const bool put_fail = pcs.spare >= 0;  // -ENOMEM from the barn
  const int32_t empty = alloc_sheaf(s, GFP_NOWAIT, t);
  if (empty < 0) {
    if (put_fail) stat(caches_[s], t.cpu, SlubStat::BARN_PUT_FAIL);
    flush_main(s, t);
    rt_pcs_lock();  // retaken to free into the flushed main
    return true;
  }
  rt_pcs_lock();  // retaken to install it (got_empty)
  install_empty_sheaf(s, empty, t);
  return true;
}

// mirrors __pcs_install_empty_sheaf(), 7.x: normally the full main becomes
// the spare; if a nested allocation changed things meanwhile, the kernel's
// fallbacks (extra sheaves to the barn, ignoring its limits).
void Slub::install_empty_sheaf(CacheId s, int32_t empty, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[t.cpu];
  Node& n = caches_[s].node[cpu_node(t.cpu)];
  const size_t cap = caches_[s].g.sheaf_capacity;
  if (pcs.spare < 0) {
    pcs.spare = pcs.main;
    pcs.main = empty;
    return;
  }
  ev_->add(Event::barn_lock);
  if (sheaves_[pcs.main].objects.size() < cap) {
    n.barn_empty.push_back(empty);
    return;
  }
  if (sheaves_[pcs.spare].objects.size() < cap) {
    std::swap(pcs.main, pcs.spare);
    n.barn_empty.push_back(empty);
    return;
  }
  n.barn_full.push_back(pcs.main);
  stat(caches_[s], t.cpu, SlubStat::BARN_PUT);
  pcs.main = empty;
}

// mirrors sheaf_flush_main(), 7.x: the main sheaf back to slabs,
// PCS_BATCH_MAX objects per __kmem_cache_free_bulk().
void Slub::flush_main(CacheId s, const Task& t) {
  const int32_t id = caches_[s].cpu[t.cpu].main;
  if (id >= 0 && !sheaves_[id].objects.empty())
    ev_->batch(Batch::sheaf_flush, sheaves_[id].objects.size());
  while (id >= 0 && !sheaves_[id].objects.empty()) {
    std::vector<Ptr>& objs = sheaves_[id].objects;
    const int batch = std::min<int>(PCS_BATCH_MAX, static_cast<int>(objs.size()));
    Ptr buf[PCS_BATCH_MAX];
    std::copy(objs.end() - batch, objs.end(), buf);
    objs.resize(objs.size() - batch);
    rt_pcs_lock();  // taken for each batch (__sheaf_flush_main_batch())
    stat(caches_[s], t.cpu, SlubStat::SHEAF_FLUSH, batch);
    ev_->add(Event::sheaf_flush_objects, batch);
    free_detached(s, batch, buf, t);
  }
}

// mirrors kmem_cache_alloc_bulk(), 7.x: alloc_from_pcs_bulk() (no refill
// in the bulk path), then refill_objects() straight from slabs.
int Slub::alloc_bulk_7x(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  int i = 0;
  // alloc_from_pcs_bulk() runs for every cache: one without sheaves
  // takes the trylock once and backs off.
  if (!caches_[s].g.sheaf_capacity && n > 0) rt_pcs_lock();
  if (caches_[s].g.sheaf_capacity) {
    ensure_main(s, t);
    while (i < n) {
      KmemCache& c = caches_[s];
      KmemCache::Cpu& pcs = c.cpu[t.cpu];
      rt_pcs_lock();  // alloc_from_pcs_bulk()'s trylock, a batch
      if (sheaves_[pcs.main].objects.empty()) {
        if (pcs.spare >= 0 && !sheaves_[pcs.spare].objects.empty()) {
          std::swap(pcs.main, pcs.spare);
        } else {
          const int32_t full =
              barn_replace_empty_sheaf(c.node[cpu_node(t.cpu)], pcs.main);
          if (full < 0) {
            stat(c, t.cpu, SlubStat::BARN_GET_FAIL);
            break;
          }
          pcs.main = full;
          stat(c, t.cpu, SlubStat::BARN_GET);
        }
      }
      Sheaf& m = sheaves_[pcs.main];
      const int batch = std::min<int>(n - i, static_cast<int>(m.objects.size()));
      for (int k = 0; k < batch; ++k) {
        p[i + k] = m.objects.back();
        m.objects.pop_back();
        on_alloc(caches_[s], slot_of(p[i + k]), idx_of(p[i + k]), t);
      }
      stat(c, t.cpu, SlubStat::ALLOC_FASTPATH, batch);
      ev_->add(Event::slab_alloc_fast, batch);
      i += batch;
    }
  }
  if (i == n) return n;
  const int got = refill_objects(s, gfp, n - i, n - i, p + i, t);
  for (int k = 0; k < got; ++k)
    on_alloc(caches_[s], slot_of(p[i + k]), idx_of(p[i + k]), t);
  if (got < n - i) return i + got;
  stat(caches_[s], t.cpu, SlubStat::ALLOC_SLOWPATH, got);
  ev_->add(Event::slab_alloc_slow, got);
  return n;
}

// The full-main step of free_to_pcs_bulk(), 7.x: an empty barn sheaf
// (no spare), the spare, or a barn exchange; never a new sheaf. False
// when none is to be had (the rest of the batch goes to slabs).
bool Slub::bulk_replace_full_main(CacheId s, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  Node& nd = c.node[cpu_node(t.cpu)];
  if (pcs.spare < 0) {
    const int32_t empty = barn_get_empty_sheaf(nd);
    if (empty < 0) return false;
    pcs.spare = pcs.main;
    pcs.main = empty;
  } else if (sheaves_[pcs.spare].objects.size() < c.g.sheaf_capacity) {
    std::swap(pcs.main, pcs.spare);  // per-CPU only: no barn lock
  } else {
    const int32_t empty = barn_replace_full_sheaf(nd, pcs.main);
    if (empty < 0) {
      stat(c, t.cpu, SlubStat::BARN_PUT_FAIL);
      return false;
    }
    pcs.main = empty;
    stat(c, t.cpu, SlubStat::BARN_PUT);
  }
  return true;
}

// mirrors free_to_pcs_bulk(), 7.x: local objects into the main sheaf
// (spare or an empty barn sheaf when full, or push the full main to the
// barn), the rest (remote node, or no sheaf available) to slabs, remote
// ones PCS_BATCH_MAX at a time. Caches without sheaves: detached lists.
void Slub::free_bulk_7x(CacheId s, int n, Ptr* p, const Task& t) {
  KmemCache& c = caches_[s];
  if (!c.g.sheaf_capacity) {
    stat(c, t.cpu, SlubStat::FREE_SLOWPATH, n);
    free_detached(s, n, p, t);
    return;
  }
  // Remote objects move to the tail, p[size, n), last found first.
  const NodeId local = cpu_node(t.cpu);
  int size = n;
  for (int i = 0; i < size;) {
    if (slabs_[slot_of(p[i])].node != local) std::swap(p[i], p[--size]);
    else ++i;
  }
  const size_t cap = c.g.sheaf_capacity;
  ensure_main(s, t);
  int done = 0;
  while (done < size) {
    rt_pcs_lock();  // free_to_pcs_bulk()'s trylock, a batch
    if (sheaves_[c.cpu[t.cpu].main].objects.size() >= cap &&
        !bulk_replace_full_main(s, t))
      break;
    Sheaf& m = sheaves_[c.cpu[t.cpu].main];
    const int batch = std::min<int>(size - done, int(cap - m.objects.size()));
    for (int k = 0; k < batch; ++k) {
      const Ptr q = p[done + k];
      m.objects.push_back(q);
      slabs_[slot_of(q)].state[idx_of(q)] = ObjState::kInSheaf;
    }
    stat(c, t.cpu, SlubStat::FREE_FASTPATH, batch);
    ev_->add(Event::slab_free_fast, batch);
    done += batch;
  }
  if (done < size) {
    stat(c, t.cpu, SlubStat::FREE_SLOWPATH, size - done);
    free_detached(s, size - done, p + done, t);
  }
  for (int k = n; k > size;) {  // in the order they were found
    Ptr buf[PCS_BATCH_MAX];
    const int batch = std::min<int>(PCS_BATCH_MAX, k - size);
    for (int j = 0; j < batch; ++j) buf[j] = p[k - 1 - j];
    k -= batch;
    stat(caches_[s], t.cpu, SlubStat::FREE_SLOWPATH, batch);
    free_detached(s, batch, buf, t);
  }
}

// mirrors pcs_flush_all(), 7.x: spare and main flushed, the spare freed.
// flush_all() runs it on `cpu` itself, so t.cpu == cpu.
void Slub::flush_cpu_7x(CacheId s, CpuId cpu, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[cpu];
  const int32_t spare = pcs.spare, main = pcs.main;
  // flush_all() queues the work only where has_pcs_used() (a cache with
  // sheaves, and a spare, an rcu_free sheaf or objects in the main):
  // pcs_flush_all()'s local_lock() to detach the spare and the rcu_free
  // sheaf, then sheaf_flush_main(), whose do/while takes the lock once
  // even for an empty main (flush_main() counts a batch's).
  const bool main_objects = main >= 0 && !sheaves_[main].objects.empty();
  if (caches_[s].g.sheaf_capacity && (spare >= 0 || pcs.rcu_free >= 0 || main_objects))
    rt_pcs_lock(main_objects ? 1 : 2);
  pcs.spare = -1;
  if (pcs.rcu_free >= 0) {  // call_rcu(rcu_free_sheaf_nobarn)
    rcu_pending_.push_back({pcs.rcu_free, cpu, true});
    pcs.rcu_free = -1;
  }
  if (spare >= 0) {
    flush_sheaf(spare, t);
    free_sheaf(spare, t);
  }
  if (main >= 0) flush_main(s, t);  // main stays, now empty
}

}  // namespace simcache
