// SLUB, v6.18 generation: the per-CPU slab with its lockless freelist and
// the per-CPU partial list over the node partial list. Mirrors mm/slub.c
// as of v6.18-rc4 (kmem_cache_cpu; no sheaves for kmalloc caches).
#include "model/mm/slub.h"

namespace simcache {

namespace {
// mirrors get_freelist() / freeze_slab(), v6.18: the slab's whole freelist
// becomes the CPU freelist; inuse becomes objects.
void take_freelist(Slab& sl, KmemCache::Cpu& c) {
  for (uint16_t i : sl.freelist)
    sl.state[i] = ObjState::kCpuFreelist;
  c.freelist.assign(sl.freelist.begin(), sl.freelist.end());
  sl.freelist.clear();
  sl.inuse = sl.objects;
}
}  // namespace

// mirrors get_partial_node(), v6.18: the head slab of a locked node list
// becomes the CPU slab; floor(cpu_partial_slabs / 2) + 1 more go to the
// CPU partial list.
int32_t Slub::get_partial_node(CacheId s, Node& n, const Task& t) {
  KmemCache& c = caches_[s];
  const int32_t got = n.partial_head;
  remove_partial(n, got);
  stat(c, t.cpu, SlubStat::ALLOC_FROM_PARTIAL);
  uint32_t moved = 0;
  while (c.g.cpu_partial && n.partial_head >= 0) {
    const int32_t extra = n.partial_head;
    remove_partial(n, extra);
    put_cpu_partial(s, extra, false, t);
    stat(c, t.cpu, SlubStat::CPU_PARTIAL_NODE);
    if (++moved > c.g.cpu_partial_slabs / 2) break;
  }
  return got;
}

// mirrors ___slab_alloc(), v6.18: CPU slab refill, CPU partial list, node
// partial lists (get_partial), then new_slab().
Ptr Slub::slab_alloc_slow_618(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[t.cpu];
  stat(c, t.cpu, SlubStat::ALLOC_SLOWPATH);
  ev_->add(Event::slab_alloc_slow);
  int32_t got = -1;
  if (cpu.slab >= 0) {
    Slab& sl = slabs_[cpu.slab];
    if (!sl.freelist.empty()) {  // remote frees into the frozen slab
      take_freelist(sl, cpu);
      stat(c, t.cpu, SlubStat::ALLOC_REFILL);
      got = cpu.slab;
    } else {  // full: unfreeze onto no list
      sl.where = SlabWhere::kFull;
      cpu.slab = -1;
      stat(c, t.cpu, SlubStat::DEACTIVATE_BYPASS);
    }
  }
  if (got < 0 && cpu.partial >= 0) {  // slub_percpu_partial()
    got = cpu.partial;
    cpu.partial = slabs_[got].next;
    cpu.partial_slabs = cpu.partial >= 0 ? cpu.partial_slabs - 1 : 0;
    stat(c, t.cpu, SlubStat::CPU_PARTIAL_ALLOC);
    ev_->add(Event::cpu_partial_refill);
  }
  if (got < 0) {
    get_partial(c, t.cpu, [&](NodeId, Node& n) {
      got = get_partial_node(s, n, t);
      return true;
    });
  }
  if (got < 0) {
    got = new_slab(s, gfp, cpu_node(t.cpu), t);
    if (got < 0) return kNull;
    stat(caches_[s], t.cpu, SlubStat::ALLOC_SLAB);
  }
  // new_slab() may have recursed (obj_exts): re-fetch references.
  KmemCache::Cpu& cpu2 = caches_[s].cpu[t.cpu];
  if (cpu2.slab != got) {
    Slab& sl = slabs_[got];
    take_freelist(sl, cpu2);
    sl.where = SlabWhere::kCpuSlab;
    sl.cpu = t.cpu;
    cpu2.slab = got;
    cpu2.slab_base = make_ptr(got, 0);
  }
  const uint16_t idx = cpu2.freelist.back();
  cpu2.freelist.pop_back();
  on_alloc(caches_[s], got, idx, t);
  return make_ptr(got, idx);
}

// mirrors put_cpu_partial(), v6.18: push a slab on this CPU's partial
// list; with `drain`, a list already at cpu_partial_slabs goes to the node
// lists first.
void Slub::put_cpu_partial(CacheId s, int32_t id, bool drain, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[t.cpu];
  int32_t to_put = -1;
  if (cpu.partial >= 0 && drain && cpu.partial_slabs >= c.g.cpu_partial_slabs) {
    to_put = cpu.partial;
    cpu.partial = -1;
    cpu.partial_slabs = 0;
  }
  Slab& sl = slabs_[id];
  sl.where = SlabWhere::kCpuPartial;
  sl.cpu = t.cpu;
  sl.prev = -1;
  sl.next = cpu.partial;
  cpu.partial = id;
  ++cpu.partial_slabs;
  if (to_put >= 0) {
    put_partials(s, to_put, t);
    stat(caches_[s], t.cpu, SlubStat::CPU_PARTIAL_DRAIN);
  }
}

// mirrors __put_partials(), v6.18: unfreeze a detached CPU partial chain
// onto the node lists (one list_lock section per node run), discarding
// empty slabs beyond min_partial.
void Slub::put_partials(CacheId s, int32_t head, const Task& t) {
  KmemCache& c = caches_[s];
  int locked_node = -1;
  int32_t discard = -1, discard_tail = -1;
  for (int32_t id = head; id >= 0;) {
    const int32_t next = slabs_[id].next;
    Node& n = c.node[slabs_[id].node];
    if (locked_node != slabs_[id].node) {
      if (locked_node >= 0) unlock_raw(c.node[locked_node]);
      lock_raw(n);
      locked_node = slabs_[id].node;
    }
    if (!add_partial_or_discard(n, id, /*tail=*/true, &discard, &discard_tail))
      stat(c, t.cpu, SlubStat::FREE_ADD_PARTIAL);
    id = next;
  }
  if (locked_node >= 0) unlock_raw(c.node[locked_node]);
  discard_chain(s, discard, /*count_stats=*/true, t);
}

// mirrors deactivate_slab(), v6.18: give the CPU slab and its CPU
// freelist back.
void Slub::deactivate_slab(CacheId s, CpuId cpu_id, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[cpu_id];
  const int32_t id = cpu.slab;
  if (id < 0) return;
  Slab& sl = slabs_[id];
  const bool remote = !sl.freelist.empty();
  if (remote) stat(c, t.cpu, SlubStat::DEACTIVATE_REMOTE_FREES);
  for (uint16_t i : cpu.freelist) {
    sl.freelist.push_back(i);
    sl.state[i] = ObjState::kFree;
  }
  sl.inuse = static_cast<uint16_t>(sl.inuse - cpu.freelist.size());
  cpu.freelist.clear();
  cpu.slab = -1;
  sl.where = SlabWhere::kFull;
  Node& n = c.node[sl.node];
  if (sl.inuse == 0 && n.nr_partial >= c.g.min_partial) {
    stat(c, t.cpu, SlubStat::DEACTIVATE_EMPTY);
    discard_slab(s, id, t);
    stat(caches_[s], t.cpu, SlubStat::FREE_SLAB);
  } else if (!sl.freelist.empty()) {
    auto held = lock(n);
    add_partial(n, id, remote);
    stat(c, t.cpu, remote ? SlubStat::DEACTIVATE_TO_TAIL : SlubStat::DEACTIVATE_TO_HEAD);
  } else {
    stat(c, t.cpu, SlubStat::DEACTIVATE_FULL);
  }
}

// mirrors __flush_cpu_slab(), v6.18: flush_slab() then put_partials_cpu().
void Slub::flush_cpu_618(CacheId s, CpuId cpu_id, const Task& t) {
  KmemCache::Cpu& cpu = caches_[s].cpu[cpu_id];
  if (cpu.slab >= 0) {
    stat(caches_[s], t.cpu, SlubStat::CPUSLAB_FLUSH);
    deactivate_slab(s, cpu_id, t);
  }
  KmemCache::Cpu& cpu2 = caches_[s].cpu[cpu_id];
  if (cpu2.partial >= 0) {
    const int32_t head = cpu2.partial;
    cpu2.partial = -1;
    cpu2.partial_slabs = 0;
    put_partials(s, head, t);
  }
}

// mirrors __kmem_cache_alloc_bulk(), v6.18: pop c->freelist per object,
// ___slab_alloc() for one object whenever it runs dry.
int Slub::alloc_bulk_618(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t) {
  for (int i = 0; i < n; ++i) {
    p[i] = pop_cpu_freelist(s, t);
    if (p[i] == kNull) p[i] = slab_alloc_slow_618(s, gfp, t);
    if (p[i] == kNull) return i;
  }
  return n;
}

// mirrors kmem_cache_free_bulk(), v6.18 (no sheaves): detached freelists.
void Slub::free_bulk_618(CacheId s, int n, Ptr* p, const Task& t) {
  free_detached(s, n, p, t);
}

}  // namespace simcache
