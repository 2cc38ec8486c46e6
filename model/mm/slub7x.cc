// SLUB, 7.x generation: per-CPU main and spare sheaves over a per-node
// barn of full and empty sheaves, refilled from and flushed to slabs
// under list_lock. Mirrors mm/slub.c after "slab: replace cpu (partial)
// slabs with sheaves" (7.0; read at the 7.1/7.2-era blktests tree).
#include <algorithm>

#include "model/mm/id_pool.h"
#include "model/mm/slub.h"

namespace simcache {

// mirrors __alloc_empty_sheaf(): a kzalloc of the sheaf header plus
// `capacity` pointers (kmalloc-512 for capacity 60), with __GFP_NO_OBJ_EXT
// for kmalloc caches. A caller already allocating without obj_exts gets
// no sheaf (that is what stops the recursion). Returns -1 on failure.
int32_t Slub::alloc_sheaf(CacheId s, gfp_t gfp, const Task& t) {
  if (gfp & __GFP_NO_OBJ_EXT) return -1;
  const uint32_t cap = caches_[s].g.sheaf_capacity;
  gfp_t sgfp = (gfp & ~__GFP_ACCOUNT) | __GFP_ZERO;
  if (caches_[s].is_kmalloc) sgfp |= __GFP_NO_OBJ_EXT;
  const Ptr mem = alloc(mm_->kmalloc_cache(32 + 8 * cap, sgfp, 0), sgfp, t);
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

// mirrors free_empty_sheaf(): kfree the sheaf.
void Slub::free_sheaf(int32_t id, const Task& t) {
  stat(caches_[sheaves_[id].cache], t.cpu, SlubStat::SHEAF_FREE);
  const Ptr mem = sheaves_[id].self;
  sheaves_[id].cache = kNoCache;
  sheaves_[id].self = kNull;
  free_sheaf_slots_.push_back(id);
  if (mem != kNull) free(kNoCache, mem, t);
}

// mirrors sheaf_flush_unused(): every object back to its slab.
void Slub::flush_sheaf(int32_t id, const Task& t) {
  Sheaf& sh = sheaves_[id];
  const CacheId s = sh.cache;
  const int n = static_cast<int>(sh.objects.size());
  if (!n) return;
  stat(caches_[s], t.cpu, SlubStat::SHEAF_FLUSH, n);
  ev_->add(Event::sheaf_flush_objects, n);
  std::vector<Ptr> objs;
  objs.swap(sh.objects);
  free_detached(s, n, objs.data(), t);
  objs.clear();
  sheaves_[id].objects.swap(objs);  // keep the capacity
}

namespace {
KmemCache::Cpu& pcs_of(KmemCache& c, CpuId cpu) { return c.cpu[cpu]; }
}  // namespace

// mirrors alloc_from_pcs(): pop the main sheaf, replacing it when empty.
Ptr Slub::alloc_7x(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  if (!c.g.sheaf_capacity) return alloc_single_7x(s, gfp, t);
  KmemCache::Cpu& pcs = pcs_of(c, t.cpu);
  ensure_main(s, t);
  if (sheaves_[pcs.main].objects.empty() && !replace_empty_main(s, gfp, t))
    return alloc_single_7x(s, gfp, t);
  Sheaf& m = sheaves_[c.cpu[t.cpu].main];
  const Ptr p = m.objects.back();
  m.objects.pop_back();
  on_alloc(slot_of(p), idx_of(p), t);
  stat(c, t.cpu, SlubStat::ALLOC_FASTPATH);
  ev_->add(Event::slab_alloc_fast);
  return p;
}

// mirrors __pcs_replace_empty_main(): spare, then a full barn sheaf, then
// refill the spare or an empty barn sheaf (or a new one) from slabs.
bool Slub::replace_empty_main(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  if (pcs.spare >= 0 && !sheaves_[pcs.spare].objects.empty()) {
    std::swap(pcs.main, pcs.spare);
    return true;
  }
  KmemCache::Node& n = c.node[cpu_node(t.cpu)];
  ev_->add(Event::barn_lock);
  if (!n.barn_full.empty()) {  // barn_replace_empty_sheaf()
    const int32_t full = n.barn_full.back();
    n.barn_full.pop_back();
    n.barn_empty.push_back(pcs.main);
    pcs.main = full;
    stat(c, t.cpu, SlubStat::BARN_GET);
    return true;
  }
  stat(c, t.cpu, SlubStat::BARN_GET_FAIL);
  if (!(gfp & __GFP_DIRECT_RECLAIM)) return false;  // may not block: one object
  int32_t empty = -1;
  if (pcs.spare >= 0) {
    empty = pcs.spare;
    pcs.spare = -1;
  } else {
    ev_->add(Event::barn_lock);
    if (!n.barn_empty.empty()) {
      empty = n.barn_empty.back();
      n.barn_empty.pop_back();
    }
  }
  if (empty < 0) empty = alloc_sheaf(s, gfp, t);  // alloc_full_sheaf()
  if (empty < 0) return false;
  const int want = static_cast<int>(c.g.sheaf_capacity);
  Sheaf& sh = sheaves_[empty];
  sh.objects.resize(want);
  const int got = refill_objects(s, gfp, want, want, sheaves_[empty].objects.data(), t);
  sheaves_[empty].objects.resize(got);
  stat(caches_[s], t.cpu, SlubStat::SHEAF_REFILL, got);
  ev_->add(Event::sheaf_refill_objects, got);
  if (got < want) {  // could not fill: give back and fall back
    flush_sheaf(empty, t);
    free_sheaf(empty, t);
    return false;
  }
  KmemCache::Cpu& pcs2 = caches_[s].cpu[t.cpu];
  if (pcs2.spare < 0) {
    pcs2.spare = pcs2.main;
  } else {
    ev_->add(Event::barn_lock);
    caches_[s].node[cpu_node(t.cpu)].barn_empty.push_back(pcs2.main);
  }
  pcs2.main = empty;
  return true;
}

// mirrors ___slab_alloc() 7.x: one object from a partial or new slab.
Ptr Slub::alloc_single_7x(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  stat(c, t.cpu, SlubStat::ALLOC_SLOWPATH);
  ev_->add(Event::slab_alloc_slow);
  const NodeId local = cpu_node(t.cpu);
  for (uint32_t k = 0; k < cfg_.nr_nodes; ++k) {  // get_from_partial()
    const NodeId nid = static_cast<NodeId>((local + k) % cfg_.nr_nodes);
    KmemCache::Node& n = c.node[nid];
    if (n.nr_partial == 0 || (k > 0 && n.nr_partial <= c.g.min_partial)) continue;
    lock(n);
    const int32_t id = n.partial_head;
    Slab& sl = slabs_[id];
    const uint16_t idx = sl.freelist.back();
    sl.freelist.pop_back();
    ++sl.inuse;
    if (sl.freelist.empty()) remove_partial(n, id);
    on_alloc(id, idx, t);
    return make_ptr(id, idx);
  }
  const int32_t id = new_slab(s, gfp, local, t);
  if (id < 0) return kNull;
  stat(caches_[s], t.cpu, SlubStat::ALLOC_SLAB);
  Slab& sl = slabs_[id];
  const uint16_t idx = sl.freelist.back();
  sl.freelist.pop_back();
  sl.inuse = 1;
  if (!sl.freelist.empty()) {
    KmemCache::Node& n = caches_[s].node[sl.node];
    lock(n);
    add_partial(n, id, /*tail=*/false);
  }
  on_alloc(id, idx, t);
  return make_ptr(id, idx);
}

// mirrors __refill_objects_node() + get_partial_node_bulk(): isolate
// partial slabs worth [min, max] objects under one list_lock section,
// drain their freelists, give surplus back through __slab_free().
int Slub::refill_from_node(CacheId s, NodeId nid, int min, int max, Ptr* out,
                           const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Node& n = c.node[nid];
  if (n.nr_partial == 0) return 0;
  lock(n);
  std::vector<int32_t> iso;
  int total = 0;
  for (int32_t id = n.partial_head; id >= 0;) {
    const int32_t next = slabs_[id].next;
    const int free = slabs_[id].objects - slabs_[id].inuse;
    if (total >= min && total + free > max) break;
    remove_partial(n, id);
    slabs_[id].where = SlabWhere::kIsolated;
    iso.push_back(id);
    total += free;
    if (total >= max) break;
    id = next;
  }
  // The isolated slabs sit on a private list in reverse order of
  // isolation, and are drained from its head: last isolated first.
  int got = 0;
  size_t left = iso.size();  // iso[0, left) not yet drained
  while (left > 0 && got < max) {
    const int32_t id = iso[--left];
    slabs_[id].inuse = slabs_[id].objects;  // get_freelist_nofreeze()
    scratch_idx_.clear();
    scratch_idx_.swap(slabs_[id].freelist);  // the slab's freelist is now empty
    size_t i = scratch_idx_.size();
    while (i > 0 && got < max) {
      const uint16_t idx = scratch_idx_[--i];
      slabs_[id].state[idx] = static_cast<uint8_t>(ObjState::kInSheaf);
      out[got++] = make_ptr(id, idx);
    }
    slabs_[id].where = SlabWhere::kFull;
    scratch_idx_.resize(i);  // the surplus, as a detached freelist
    std::vector<uint16_t> surplus;
    surplus.swap(scratch_idx_);
    if (!surplus.empty()) slab_free_slow(s, id, surplus.data(), int(surplus.size()), t);
    surplus.clear();
    scratch_idx_.swap(surplus);
  }
  if (left > 0) {  // isolated but not needed: back to the head, in list order
    lock(n);
    std::vector<int32_t> discard;
    while (left > 0) {
      const int32_t id = iso[--left];
      if (slabs_[id].inuse == 0 && n.nr_partial >= c.g.min_partial)
        discard.push_back(id);
      else
        add_partial(n, id, /*tail=*/false);
    }
    for (int32_t id : discard) discard_slab(s, id, t);
  }
  return got;
}

// mirrors refill_objects(): local node, other nodes, then new slabs
// (alloc_from_new_slab(): a slab not used up goes to the partial head).
int Slub::refill_objects(CacheId s, gfp_t gfp, int min, int max, Ptr* out,
                         const Task& t) {
  const NodeId local = cpu_node(t.cpu);
  int got = refill_from_node(s, local, min, max, out, t);
  for (uint32_t k = 1; k < cfg_.nr_nodes && got < min; ++k) {
    const NodeId nid = static_cast<NodeId>((local + k) % cfg_.nr_nodes);
    if (caches_[s].node[nid].nr_partial <= caches_[s].g.min_partial) continue;
    got += refill_from_node(s, nid, min - got, max - got, out + got, t);
  }
  while (got < min) {
    const int32_t id = new_slab(s, gfp, local, t);
    if (id < 0) break;
    stat(caches_[s], t.cpu, SlubStat::ALLOC_SLAB);
    Slab& sl = slabs_[id];
    while (!sl.freelist.empty() && got < max) {
      const uint16_t idx = sl.freelist.back();
      sl.freelist.pop_back();
      ++sl.inuse;
      sl.state[idx] = static_cast<uint8_t>(ObjState::kInSheaf);
      out[got++] = make_ptr(id, idx);
    }
    if (!sl.freelist.empty()) {
      KmemCache::Node& n = caches_[s].node[sl.node];
      lock(n);
      add_partial(n, id, /*tail=*/false);
    }
  }
  return got;
}

// mirrors slab_free() 7.x: free_to_pcs() for local slabs, else __slab_free().
void Slub::free_7x(CacheId s, Ptr p, int32_t id, uint32_t idx, const Task& t) {
  KmemCache& c = caches_[s];
  if (c.g.sheaf_capacity && slabs_[id].node == cpu_node(t.cpu)) {
    KmemCache::Cpu& pcs = c.cpu[t.cpu];
    ensure_main(s, t);
    if (sheaves_[pcs.main].objects.size() < c.g.sheaf_capacity ||
        replace_full_main(s, t)) {
      Sheaf& m = sheaves_[caches_[s].cpu[t.cpu].main];
      m.objects.push_back(p);
      slabs_[id].state[idx] = static_cast<uint8_t>(ObjState::kInSheaf);
      stat(caches_[s], t.cpu, SlubStat::FREE_FASTPATH);
      ev_->add(Event::slab_free_fast);
      return;
    }
  }
  const uint16_t i16 = static_cast<uint16_t>(idx);
  slab_free_slow(s, id, &i16, 1, t);
  stat(caches_[s], t.cpu, SlubStat::FREE_SLOWPATH);
}

// mirrors __pcs_replace_full_main() + __pcs_install_empty_sheaf().
bool Slub::replace_full_main(CacheId s, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  KmemCache::Node& n = c.node[cpu_node(t.cpu)];
  const size_t cap = c.g.sheaf_capacity;
  if (pcs.spare < 0) {
    ev_->add(Event::barn_lock);
    if (!n.barn_empty.empty()) {  // barn_get_empty_sheaf()
      pcs.spare = pcs.main;
      pcs.main = n.barn_empty.back();
      n.barn_empty.pop_back();
      return true;
    }
  } else if (sheaves_[pcs.spare].objects.size() < cap) {
    std::swap(pcs.main, pcs.spare);
    return true;
  } else {
    ev_->add(Event::barn_lock);  // barn_replace_full_sheaf()
    if (n.barn_full.size() < MAX_FULL_SHEAVES && !n.barn_empty.empty()) {
      n.barn_full.push_back(pcs.main);
      pcs.main = n.barn_empty.back();
      n.barn_empty.pop_back();
      stat(c, t.cpu, SlubStat::BARN_PUT);
      return true;
    }
    if (n.barn_full.size() >= MAX_FULL_SHEAVES) {  // -E2BIG
      stat(c, t.cpu, SlubStat::BARN_PUT_FAIL);
      const int32_t to_flush = pcs.spare;
      pcs.spare = -1;
      flush_sheaf(to_flush, t);
      install_empty_sheaf(s, to_flush, t);
      return true;
    }
  }
  // No empty sheaf to be had: allocate one (GFP_NOWAIT) and install it;
  // if even that fails, flush the main sheaf to slabs.
  const bool put_fail = pcs.spare >= 0;
  const int32_t empty = alloc_sheaf(s, GFP_NOWAIT, t);
  if (empty < 0) {
    if (put_fail) stat(caches_[s], t.cpu, SlubStat::BARN_PUT_FAIL);
    flush_main(s, t);
    return true;
  }
  install_empty_sheaf(s, empty, t);
  return true;
}

// mirrors __pcs_install_empty_sheaf(): normally the full main becomes the
// spare; if a nested allocation changed things meanwhile, the kernel's
// fallbacks (extra sheaves to the barn, ignoring its limits).
void Slub::install_empty_sheaf(CacheId s, int32_t empty, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[t.cpu];
  KmemCache::Node& n = caches_[s].node[cpu_node(t.cpu)];
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

// mirrors sheaf_flush_main(): the main sheaf back to slabs, PCS_BATCH_MAX
// objects per __kmem_cache_free_bulk().
void Slub::flush_main(CacheId s, const Task& t) {
  const int32_t id = caches_[s].cpu[t.cpu].main;
  while (id >= 0 && !sheaves_[id].objects.empty()) {
    std::vector<Ptr>& objs = sheaves_[id].objects;
    const int batch = std::min<int>(PCS_BATCH_MAX, static_cast<int>(objs.size()));
    Ptr buf[PCS_BATCH_MAX];
    std::copy(objs.end() - batch, objs.end(), buf);
    objs.resize(objs.size() - batch);
    stat(caches_[s], t.cpu, SlubStat::SHEAF_FLUSH, batch);
    ev_->add(Event::sheaf_flush_objects, batch);
    free_detached(s, batch, buf, t);
  }
}

// mirrors kmem_cache_alloc_bulk() 7.x: alloc_from_pcs_bulk() (no refill
// in the bulk path), then refill_objects() straight from slabs.
int Slub::alloc_bulk_7x(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  KmemCache& c = caches_[s];
  int i = 0;
  if (c.g.sheaf_capacity) {
    ensure_main(s, t);
    while (i < n) {
      KmemCache::Cpu& pcs = caches_[s].cpu[t.cpu];
      if (sheaves_[pcs.main].objects.empty()) {
        if (pcs.spare >= 0 && !sheaves_[pcs.spare].objects.empty()) {
          std::swap(pcs.main, pcs.spare);
        } else {
          KmemCache::Node& nd = caches_[s].node[cpu_node(t.cpu)];
          ev_->add(Event::barn_lock);
          if (nd.barn_full.empty()) {
            stat(caches_[s], t.cpu, SlubStat::BARN_GET_FAIL);
            break;
          }
          const int32_t full = nd.barn_full.back();
          nd.barn_full.pop_back();
          nd.barn_empty.push_back(pcs.main);
          pcs.main = full;
          stat(caches_[s], t.cpu, SlubStat::BARN_GET);
        }
      }
      Sheaf& m = sheaves_[caches_[s].cpu[t.cpu].main];
      const int batch = std::min<int>(n - i, static_cast<int>(m.objects.size()));
      for (int k = 0; k < batch; ++k) {
        p[i + k] = m.objects.back();
        m.objects.pop_back();
        int32_t id;
        uint32_t idx;
        decode(p[i + k], &id, &idx);
        on_alloc(id, idx, t);
      }
      stat(caches_[s], t.cpu, SlubStat::ALLOC_FASTPATH, batch);
      ev_->add(Event::slab_alloc_fast, batch);
      i += batch;
    }
  }
  if (i == n) return n;
  const int got = refill_objects(s, gfp, n - i, n - i, p + i, t);
  for (int k = 0; k < got; ++k) {
    int32_t id;
    uint32_t idx;
    decode(p[i + k], &id, &idx);
    on_alloc(id, idx, t);
  }
  if (got < n - i) return i + got;
  stat(caches_[s], t.cpu, SlubStat::ALLOC_SLOWPATH, got);
  ev_->add(Event::slab_alloc_slow, got);
  return n;
}

// mirrors free_to_pcs_bulk(): local objects into the main sheaf (spare or
// an empty barn sheaf when full, or push the full main to the barn),
// the rest (remote node, or no sheaf available) to slabs.
void Slub::free_bulk_7x(CacheId s, int n, Ptr* p, const Task& t) {
  const NodeId local = cpu_node(t.cpu);
  int size = n, remote = 0;
  std::vector<Ptr> remote_objs;
  for (int i = 0; i < size;) {
    int32_t id;
    uint32_t idx;
    decode(p[i], &id, &idx);
    if (slabs_[id].node != local) {
      remote_objs.push_back(p[i]);
      p[i] = p[--size];
      ++remote;
      continue;
    }
    ++i;
  }
  KmemCache& c = caches_[s];
  const size_t cap = c.g.sheaf_capacity;
  ensure_main(s, t);
  int done = 0;
  while (done < size) {
    KmemCache::Cpu& pcs = c.cpu[t.cpu];
    if (sheaves_[pcs.main].objects.size() >= cap) {
      KmemCache::Node& nd = c.node[local];
      ev_->add(Event::barn_lock);
      if (pcs.spare < 0) {
        if (nd.barn_empty.empty()) break;
        pcs.spare = pcs.main;
        pcs.main = nd.barn_empty.back();
        nd.barn_empty.pop_back();
      } else if (sheaves_[pcs.spare].objects.size() < cap) {
        std::swap(pcs.main, pcs.spare);
      } else if (nd.barn_full.size() < MAX_FULL_SHEAVES && !nd.barn_empty.empty()) {
        nd.barn_full.push_back(pcs.main);
        pcs.main = nd.barn_empty.back();
        nd.barn_empty.pop_back();
        stat(c, t.cpu, SlubStat::BARN_PUT);
      } else {
        stat(c, t.cpu, SlubStat::BARN_PUT_FAIL);
        break;
      }
    }
    Sheaf& m = sheaves_[c.cpu[t.cpu].main];
    const int batch = std::min<int>(size - done, int(cap - m.objects.size()));
    for (int k = 0; k < batch; ++k) {
      m.objects.push_back(p[done + k]);
      set_state(p[done + k], ObjState::kInSheaf);
    }
    stat(c, t.cpu, SlubStat::FREE_FASTPATH, batch);
    ev_->add(Event::slab_free_fast, batch);
    done += batch;
  }
  if (done < size) {
    stat(c, t.cpu, SlubStat::FREE_SLOWPATH, size - done);
    free_detached(s, size - done, p + done, t);
  }
  for (int done_remote = 0; done_remote < remote;) {  // PCS_BATCH_MAX at a time
    const int batch = std::min<int>(PCS_BATCH_MAX, remote - done_remote);
    stat(caches_[s], t.cpu, SlubStat::FREE_SLOWPATH, batch);
    free_detached(s, batch, remote_objs.data() + done_remote, t);
    done_remote += batch;
  }
}

// mirrors pcs_flush_all(): spare and main flushed, both freed.
void Slub::flush_cpu_7x(CacheId s, CpuId cpu, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[cpu];
  const int32_t spare = pcs.spare, main = pcs.main;
  pcs.spare = -1;
  if (spare >= 0) {
    flush_sheaf(spare, t);
    free_sheaf(spare, t);
  }
  (void)cpu;  // flush_all() runs this on `cpu` itself: t.cpu == cpu
  if (main >= 0) flush_main(s, t);  // main stays, now empty
}


}  // namespace simcache
