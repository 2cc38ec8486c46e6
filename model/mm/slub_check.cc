// Consistency checks over the whole SLUB model: what the tests' invariant
// sweeps assert after every step. Independent of the code paths that
// maintain the structures, so a bookkeeping slip shows up here.
#include <array>
#include <span>

#include <fmt/format.h>

#include "model/mm/slub.h"

namespace simcache {

uint64_t Slub::cached_objects(CacheId s) const {
  const KmemCache& c = caches_[s];
  uint64_t n = 0;
  for (const KmemCache::Cpu& cpu : c.cpu) {
    n += cpu.freelist.size();
    if (cpu.main >= 0) n += sheaves_[cpu.main].objects.size();
    if (cpu.spare >= 0) n += sheaves_[cpu.spare].objects.size();
  }
  for (const KmemCache::Node& nd : c.node)
    for (int32_t sh : nd.barn_full) n += sheaves_[sh].objects.size();
  return n;
}

namespace {
struct Errors {
  std::string text;
  int n = 0;
  template <typename... A>
  void add(fmt::format_string<A...> f, A&&... a) {
    if (++n <= 8) text += fmt::format(f, std::forward<A>(a)...) + "\n";
  }
};
}  // namespace

std::string Slub::check_invariants() const {
  Errors e;
  std::vector<uint64_t> live(caches_.size(), 0), cached(caches_.size(), 0);
  std::vector<std::vector<uint64_t>> slabs_per_node(
      caches_.size(), std::vector<uint64_t>(cfg_.nr_nodes, 0));
  for (size_t i = 0; i < slabs_.size(); ++i) {
    const Slab& sl = slabs_[i];
    if (sl.where == SlabWhere::kUnused) continue;
    ++slabs_per_node[sl.cache][sl.node];
    std::array<uint32_t, 5> by{};
    for (uint32_t j = 0; j < sl.objects; ++j) ++by[size_t(sl.state[j])];
    for (uint16_t j : sl.freelist)
      if (sl.state[j] != ObjState::kFree)
        e.add("slab {}: object {} on the slab freelist is {}", i, j,
              obj_state_name(sl.state[j]));
    if (by[size_t(ObjState::kFree)] != sl.freelist.size())
      e.add("slab {}: {} free objects but freelist holds {}", i,
            by[size_t(ObjState::kFree)], sl.freelist.size());
    if (sl.inuse != sl.objects - sl.freelist.size())
      e.add("slab {}: inuse {} != objects {} - free {}", i, sl.inuse,
            sl.objects, sl.freelist.size());
    live[sl.cache] += by[size_t(ObjState::kAllocated)] + by[size_t(ObjState::kMempool)];
    cached[sl.cache] += by[size_t(ObjState::kCpuFreelist)] + by[size_t(ObjState::kInSheaf)];
    if (sl.where == SlabWhere::kCpuSlab &&
        caches_[sl.cache].cpu[sl.cpu].slab != static_cast<int32_t>(i))
      e.add("slab {}: marked CPU slab of cpu {} but that CPU has another", i, sl.cpu);
  }
  for (CacheId s = 0; s < caches_.size(); ++s) {
    const KmemCache& c = caches_[s];
    if (live[s] != c.live)
      e.add("{}: {} objects allocated by state, {} by counter", c.name, live[s], c.live);
    if (cached[s] != cached_objects(s))
      e.add("{}: {} objects per-CPU by state, {} in per-CPU structures", c.name,
            cached[s], cached_objects(s));
    for (NodeId nid = 0; nid < cfg_.nr_nodes; ++nid) {
      const KmemCache::Node& n = c.node[nid];
      if (n.nr_slabs != slabs_per_node[s][nid])
        e.add("{} node {}: nr_slabs {} but {} slabs exist", c.name, nid,
              n.nr_slabs, slabs_per_node[s][nid]);
      uint32_t count = 0;
      int32_t prev = -1;
      for (int32_t id = n.partial_head; id >= 0; id = slabs_[id].next) {
        const Slab& sl = slabs_[id];
        if (sl.where != SlabWhere::kNodePartial || sl.cache != s || sl.prev != prev)
          e.add("{} node {}: partial list broken at slab {}", c.name, nid, id);
        if (sl.freelist.empty())
          e.add("{} node {}: full slab {} on the partial list", c.name, nid, id);
        prev = id;
        if (++count > slabs_.size()) break;
      }
      if (count != n.nr_partial || prev != n.partial_tail)
        e.add("{} node {}: nr_partial {} but list has {}", c.name, nid,
              n.nr_partial, count);
    }
    for (const KmemCache::Cpu& cpu : c.cpu) {
      if (cpu.slab >= 0 && cpu.slab_base != make_ptr(cpu.slab, 0))
        e.add("{}: CPU slab {} with a stale pointer base", c.name, cpu.slab);
      for (uint16_t j : cpu.freelist)
        if (cpu.slab < 0 || slabs_[cpu.slab].state[j] != ObjState::kCpuFreelist)
          e.add("{}: CPU freelist entry {} not a per-CPU object", c.name, j);
    }
  }
  if (e.n > 8) e.text += fmt::format("... and {} more\n", e.n - 8);
  return e.text;
}

void Slub::signature(StateSig* s) const {
  // Every cache's CPU and node state, naming slabs and sheaves by label.
  s->add(caches_.size());
  for (const KmemCache& c : caches_) {
    s->add(c.live);
    s->add(static_cast<uint32_t>(c.refcount));
    for (const KmemCache::Cpu& pc : c.cpu) {
      const uint64_t cpu_slab = s->slab(pc.slab);
      s->add(cpu_slab);
      if (pc.slab >= 0) {
        s->objects(cpu_slab, pc.freelist);
      } else {
        s->all(pc.freelist);
      }
      s->add(s->slab(pc.partial));
      s->add(pc.partial_slabs);
      s->add(s->sheaf(pc.main));
      s->add(s->sheaf(pc.spare));
      s->add(s->sheaf(pc.rcu_free));
    }
    for (const Node& n : c.node) {
      s->add(s->slab(n.partial_head));
      s->add(s->slab(n.partial_tail));
      s->add(n.nr_partial);
      s->add(n.nr_slabs);
      s->add(n.total_objects);
      s->add(n.barn_full.size());
      for (int32_t sh : n.barn_full) s->add(s->sheaf(sh));
      s->add(n.barn_empty.size());
      for (int32_t sh : n.barn_empty) s->add(s->sheaf(sh));
    }
  }
  s->add(rcu_pending_.size());
  for (const RcuSheaf& r : rcu_pending_) {
    s->add(s->sheaf(r.sheaf));
    s->add(r.cpu);
    s->add(r.nobarn);
  }
  s->add(slab_bytes_);
  // Then each slab and sheaf met, in label order; their contents name
  // more (list neighbours, objects' own slabs), met in turn. A slab no
  // walk reaches (its objects held by nobody the walks know) comes last,
  // by slot.
  s->add(slabs_.size() - free_slab_slots_.size());
  size_t k = 0, j = 0, next_unmet = 0;
  for (;;) {
    if (k < s->slab_order().size()) {
      const uint64_t label = k;
      const Slab& sl = slabs_[s->slab_order()[k++]];
      s->add(static_cast<uint64_t>(sl.where));
      s->add(sl.cache);
      s->add(sl.objects);
      s->add(sl.inuse);
      s->add(sl.node);
      s->add(sl.order);
      s->add(sl.cpu);
      s->ptr(sl.obj_exts);
      s->objects(label, sl.freelist);
      s->add(s->slab(sl.prev));
      s->add(s->slab(sl.next));
    } else if (j < s->sheaf_order().size()) {
      const Sheaf& sh = sheaves_[s->sheaf_order()[j++]];
      s->add(sh.cache);
      s->add(sh.capacity);
      s->ptr(sh.self);
      s->ptrs(sh.objects);
    } else {
      while (next_unmet < slabs_.size() &&
             (slabs_[next_unmet].where == SlabWhere::kUnused ||
              s->has_slab(static_cast<int32_t>(next_unmet))))
        ++next_unmet;
      if (next_unmet == slabs_.size()) break;
      s->slab(static_cast<int32_t>(next_unmet));
    }
  }
  // Last, each slab's per-object state, its objects by label: every
  // reference to them (rings, freelists, sheaves, kfree_rcu batches) is
  // written by now, so only objects nobody the walks know holds take
  // their labels here, by index (StateSig::objects_by_label()).
  for (uint64_t label = 0; label < s->slab_order().size(); ++label) {
    const Slab& sl = slabs_[s->slab_order()[label]];
    const std::span<const uint16_t> order = s->objects_by_label(label, sl.objects);
    if (order.size() == sl.objects) {
      s->all_by(order, sl.state);
      s->all_by(order, sl.last_free);
      s->all_by(order, sl.objcg);
      s->all_by(order, sl.objcg_node);
    } else {
      // A stale pointer named an index past the objects: each index's
      // label, then the vectors as they are.
      s->add(StateSig::kNone);
      for (uint16_t i = 0; i < sl.objects; ++i) s->add(s->object(label, i));
      s->all(sl.state);
      s->all(sl.last_free);
      s->all(sl.objcg);
      s->all(sl.objcg_node);
    }
  }
}

}  // namespace simcache
