// Slabs, node partial lists, __slab_free() and the per-object hooks that
// both SLUB generations share. Mirrors mm/slub.c allocate_slab(),
// discard_slab(), add_partial()/remove_partial(), __slab_free(),
// slab_post_alloc_hook() and memcg_slab_free_hook().
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include "model/mm/id_pool.h"
#include "model/mm/slub.h"

namespace simcache {
const Slub::GenOps Slub::kOps618 = {
    &Slub::alloc_bulk_618, &Slub::free_bulk_618,  &Slub::do_slab_free,  &Slub::flush_cpu_618,
    /*obj_exts_not_in_own_cache=*/false,
};
const Slub::GenOps Slub::kOps7x = {
    &Slub::alloc_bulk_7x,  &Slub::free_bulk_7x,   &Slub::slab_free_slow, &Slub::flush_cpu_7x,
    /*obj_exts_not_in_own_cache=*/true,
};

Slub::Slub(const MmConfig& cfg, EventSink* ev, SlabBackend* backend,
           FaultInjector* faults, const KmallocClasses* kmalloc)
    : cfg_(cfg), gen_(cfg.gen == SlubGen::v6_18 ? &kOps618 : &kOps7x),
      v7_(gen_ == &kOps7x),
      ev_(ev), backend_(backend), faults_(faults), kmalloc_(kmalloc) {
  for (uint32_t c = 0; c < cfg_.nr_cpus; ++c)
    cpu_node_.push_back(static_cast<NodeId>(c * cfg_.nr_nodes / cfg_.nr_cpus));
}

// mirrors do_kmem_cache_create() for the state the model keeps.
CacheId Slub::create(std::string_view name, uint32_t size, uint32_t align,
                     slab_flags_t flags, uint32_t sheaf_capacity,
                     bool is_kmalloc, KmallocType ktype, uint32_t usersize) {
  KmemCache c;
  c.name = std::string(name);
  c.flags = flags;
  c.usersize = usersize;
  c.requested_sheaf_capacity = sheaf_capacity;
  c.is_kmalloc = is_kmalloc;
  c.ktype = ktype;
  c.g = compute_geometry(size, align, flags, cfg_.nr_cpus, cfg_.gen,
                         sheaf_capacity);
  c.obj_full_size = c.g.size + 8;
  c.node.resize(cfg_.nr_nodes);
  for (uint32_t nid = 0; nid < cfg_.nr_nodes; ++nid)
    c.node[nid].lock_id = static_cast<uint32_t>(caches_.size() * cfg_.nr_nodes + nid);
  c.cpu.resize(cfg_.nr_cpus);
  for (CpuId cpu = 0; cpu < cfg_.nr_cpus; ++cpu) c.cpu[cpu].node = cpu_node(cpu);
  // One detached freelist holds at most a slab's objects.
  if (scratch_idx_.capacity() < c.g.objects) scratch_idx_.reserve(c.g.objects);
  caches_.push_back(std::move(c));
  return static_cast<CacheId>(caches_.size() - 1);
}

size_t Slub::last_free_slots() const {
  size_t n = 0;
  for (const Slab& sl : slabs_) n += sl.last_free.size();
  return n;
}

// mirrors allocate_slab() + account_slab(): pages, freelist, vmstat.
int32_t Slub::new_slab(CacheId s, gfp_t gfp, NodeId node, const Task& t) {
  const Geometry g = caches_[s].g;
  uint32_t order = g.order, objects = g.objects;
  uint32_t page = backend_->alloc_pages(order, node, gfp | __GFP_NORETRY, t.cpu);
  if (!page && g.min_order != g.order) {
    order = g.min_order;
    objects = g.min_objects;
    page = backend_->alloc_pages(order, node, gfp, t.cpu);
    if (page) stat(caches_[s], t.cpu, SlubStat::ORDER_FALLBACK);
  }
  if (!page) return -1;
  const int32_t id = take_id<int32_t>(slabs_, free_slab_slots_);
  Slab& sl = slabs_[id];
  sl.cache = s;
  sl.node = node;
  sl.order = static_cast<uint8_t>(order);
  sl.where = SlabWhere::kFull;
  sl.epoch = slub_ptr::next_epoch(sl.epoch);
  sl.objects = static_cast<uint16_t>(objects);
  sl.inuse = 0;
  sl.prev = sl.next = -1;
  sl.page = page;
  sl.obj_exts = kNull;
  // Address order: the first object handed out is index 0.
  sl.freelist.resize(objects);
  for (uint32_t i = 0; i < objects; ++i) sl.freelist[i] = uint16_t(objects - 1 - i);
  sl.state.assign(objects, ObjState::kFree);
  sl.last_free.assign(objects, kNoLastFree);
  if (cfg_.track_history) sl.hist.assign(objects, ObjHist{});
  sl.objcg.assign(objects, kRootMemcg);
  sl.objcg_node.assign(objects, 0);
  KmemCache::Node& n = caches_[s].node[node];
  ++n.nr_slabs;
  n.total_objects += objects;
  slab_bytes_ += uint64_t(PAGE_SIZE) << order;
  ev_->add(Event::allocate_slab);
  if (backend_->kmem_online() && (caches_[s].flags & SLAB_ACCOUNT))
    ensure_obj_exts(id, t);
  return id;
}

// mirrors discard_slab() -> free_slab() -> __free_slab() + unaccount_slab().
void Slub::discard_slab(CacheId s, int32_t id, const Task& t) {
  KmemCache::Node& n = caches_[s].node[slabs_[id].node];
  --n.nr_slabs;
  n.total_objects -= slabs_[id].objects;
  slab_bytes_ -= uint64_t(PAGE_SIZE) << slabs_[id].order;
  backend_->free_pages(slabs_[id].page, slabs_[id].order, t.cpu);
  const Ptr ext = slabs_[id].obj_exts;
  slabs_[id].where = SlabWhere::kUnused;
  slabs_[id].obj_exts = kNull;
  free_slab_slots_.push_back(id);
  ev_->add(Event::free_slab);
  if (ext != kNull) free(kNoCache, ext, t);  // may recurse into another cache
}

// mirrors add_partial(): head, or tail for DEACTIVATE_TO_TAIL.
void Slub::add_partial(Node& n, int32_t id, bool tail) {
  Slab& sl = slabs_[id];
  sl.where = SlabWhere::kNodePartial;
  if (tail) {
    sl.next = -1;
    sl.prev = n.partial_tail;
    if (n.partial_tail >= 0) slabs_[n.partial_tail].next = id;
    n.partial_tail = id;
    if (n.partial_head < 0) n.partial_head = id;
  } else {
    sl.prev = -1;
    sl.next = n.partial_head;
    if (n.partial_head >= 0) slabs_[n.partial_head].prev = id;
    n.partial_head = id;
    if (n.partial_tail < 0) n.partial_tail = id;
  }
  ++n.nr_partial;
}

// mirrors remove_partial(); the caller decides where the slab goes next.
void Slub::remove_partial(Node& n, int32_t id) {
  Slab& sl = slabs_[id];
  if (sl.prev >= 0) slabs_[sl.prev].next = sl.next; else n.partial_head = sl.next;
  if (sl.next >= 0) slabs_[sl.next].prev = sl.prev; else n.partial_tail = sl.prev;
  sl.prev = sl.next = -1;
  sl.where = SlabWhere::kFull;
  --n.nr_partial;
}

// mirrors __put_partials() / the put-back of __refill_objects_node().
bool Slub::add_partial_or_discard(Node& n, int32_t id, bool tail,
                                  int32_t* discard_head, int32_t* discard_tail) {
  const KmemCache& c = caches_[slabs_[id].cache];
  if (slabs_[id].inuse == 0 && n.nr_partial >= c.g.min_partial) {
    slabs_[id].where = SlabWhere::kFull;
    slabs_[id].next = -1;
    if (*discard_tail >= 0) slabs_[*discard_tail].next = id;
    else *discard_head = id;
    *discard_tail = id;
    return true;
  }
  add_partial(n, id, tail);
  return false;
}

// The discards collected above, in collection order, after list_lock is
// dropped (a discard may kfree an obj_exts vector into another cache).
void Slub::discard_chain(CacheId s, int32_t head, bool count_stats, const Task& t) {
  for (int32_t id = head; id >= 0;) {
    const int32_t next = slabs_[id].next;
    slabs_[id].next = -1;
    if (count_stats) stat(caches_[s], t.cpu, SlubStat::DEACTIVATE_EMPTY);
    discard_slab(s, id, t);
    if (count_stats) stat(caches_[s], t.cpu, SlubStat::FREE_SLAB);
    id = next;
  }
}

// mirrors __slab_free(): return `cnt` objects of one slab that is not this
// CPU's slab. Both generations; 6.18 adds frozen slabs and CPU partials
// (a 7.x cache has cpu_partial_slabs 0 and never a frozen slab).
void Slub::slab_free_slow(CacheId s, int32_t id, const uint16_t* idx, int cnt,
                          const Task& t) {
  Slab& sl = slabs_[id];
  const bool prior = !sl.freelist.empty();
  for (int i = 0; i < cnt; ++i) {
    sl.freelist.push_back(idx[i]);
    sl.state[idx[i]] = ObjState::kFree;
  }
  slab_freed(s, id, prior, cnt, t);
}

void Slub::slab_freed(CacheId s, int32_t id, bool prior, int cnt, const Task& t) {
  KmemCache& c = caches_[s];
  ev_->add(Event::slab_free_slow);
  Slab& sl = slabs_[id];
  const bool frozen = sl.where == SlabWhere::kCpuSlab;
  const bool cpu_partial = c.g.cpu_partial_slabs > 0;
  sl.inuse = static_cast<uint16_t>(sl.inuse - cnt);
  const bool empty = sl.inuse == 0;
  if (frozen || !(empty || !prior) || (cpu_partial && !prior)) {  // no lock
    if (frozen) {
      stat(c, t.cpu, SlubStat::FREE_FROZEN);
    } else if (cpu_partial && !prior) {
      put_cpu_partial(s, id, true, t);
      stat(c, t.cpu, SlubStat::CPU_PARTIAL_FREE);
    }
    return;
  }
  Node& n = c.node[sl.node];
  auto held = lock(n);
  const bool on_node = sl.where == SlabWhere::kNodePartial;
  if (prior && !on_node) return;  // on a CPU partial list or isolated
  if (empty && n.nr_partial >= c.g.min_partial) {
    if (on_node) {
      remove_partial(n, id);
      stat(c, t.cpu, SlubStat::FREE_REMOVE_PARTIAL);
    }
    held.unlock();  // slab_empty: the page goes back after the unlock
    stat(c, t.cpu, SlubStat::FREE_SLAB);
    discard_slab(s, id, t);
    return;
  }
  if (!prior && !on_node) {
    add_partial(n, id, /*tail=*/true);
    stat(c, t.cpu, SlubStat::FREE_ADD_PARTIAL);
  }
}

std::string Slub::history(Ptr p) const {
  int32_t id;
  uint32_t idx;
  if (!decode(p, &id, &idx)) return "no live slab holds this address";
  const Slab& sl = slabs_[id];
  std::string out = fmt::format("object {} of slab {} ({}, state {})", idx, id,
                                caches_[sl.cache].name,
                                obj_state_name(sl.state[idx]));
  if (!cfg_.track_history) return out;
  const ObjHist& h = sl.hist[idx];
  if (h.alloc_seq)
    out += fmt::format("; allocated by site {:#x} on cpu {} at op {}",
                       h.alloc_site, h.alloc_cpu, h.alloc_seq);
  if (h.free_seq)
    out += fmt::format("; last freed by site {:#x} on cpu {} at op {}",
                       h.free_site, h.free_cpu, h.free_seq);
  return out;
}

void Slub::report(std::string kind, Ptr p, CacheId s, std::string detail) {
  KasanReport r;
  r.kind = std::move(kind);
  r.ptr = p;
  r.cache = s < caches_.size() ? caches_[s].name : std::string("?");
  r.detail = std::move(detail);
  reports.push_back(std::move(r));
}

// The KASAN half of slab_free(): refuse frees the kernel would report.
bool Slub::check_free(CacheId s, Ptr p, int32_t* id, uint32_t* idx) {
  if (!decode(p, id, idx)) {
    report("invalid-free", p, s,
           fmt::format("pointer {:#x} is not an object of a live slab "
                       "(never allocated, or its slab was discarded)", p));
    return false;
  }
  const Slab& sl = slabs_[*id];
  if (s != kNoCache && sl.cache != s) {
    report("wrong-cache-free", p, s,
           fmt::format("kmem_cache_free({}) but the object belongs to {}: {}",
                       caches_[s].name, caches_[sl.cache].name, history(p)));
    return false;
  }
  const ObjState st = sl.state[*idx];
  if (st != ObjState::kAllocated) {
    report("double-free", p, sl.cache, history(p));
    return false;
  }
  return true;
}

std::vector<Ptr> Slub::internal_objects() const {
  std::vector<Ptr> out;
  for (const Slab& sl : slabs_)
    if (sl.where != SlabWhere::kUnused && sl.obj_exts != kNull) out.push_back(sl.obj_exts);
  for (const Sheaf& sh : sheaves_)
    if (sh.cache != kNoCache && sh.self != kNull) out.push_back(sh.self);
  return out;
}

std::vector<Ptr> Slub::live_objects() const {
  std::vector<Ptr> out;
  for (size_t i = 0; i < slabs_.size(); ++i) {
    const Slab& sl = slabs_[i];
    if (sl.where == SlabWhere::kUnused) continue;
    for (uint32_t j = 0; j < sl.objects; ++j) {
      const auto st = sl.state[j];
      if (st == ObjState::kAllocated || st == ObjState::kMempool)
        out.push_back(make_ptr(static_cast<int32_t>(i), j));
    }
  }
  return out;
}

}  // namespace simcache
