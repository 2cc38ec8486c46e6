// The deferred and batched frees (seed 002's "bulk-free side"):
// kfree_bulk(), which is kmem_cache_free_bulk() with no cache, and
// kfree_rcu(), whose objects wait for a grace period in per-CPU batches
// (the kvfree_rcu pages, freed by kfree_bulk()) or, on 7.x, in the CPU's
// rcu_free sheaf of the object's cache. Mirrors mm/slab_common.c
// (kvfree_call_rcu, kvfree_rcu_bulk) and mm/slub.c (kmem_cache_free_bulk
// with s == NULL, __kfree_rcu_sheaf, rcu_free_sheaf), v6.18 and 7.1.
#include <algorithm>

#include "model/mm/mm.h"
#include "model/mm/slub.h"

namespace simcache {

// ---- SLUB side

// kmem_cache_free_bulk(NULL, n, p). As the kernel is: no cache to choose
// sheaves by, so detached freelists, each group's cache the one its slab
// belongs to; the memcg free hook runs for the group, then do_slab_free()
// (6.18) or __slab_free() (7.x). With kfree-bulk-sort (seed 002 review):
// the objects are sorted by cache and each cache's objects go through
// kmem_cache_free_bulk(s, ...), so 7.x frees them into the sheaves and
// the batched memcg hook sees every object of the cache at once.
void Slub::kfree_bulk(int n, Ptr* p, const Task& t) {
  // KASAN checks first: an invalid or already free pointer is reported
  // and dropped (its slab could not be grouped). A checked object is
  // marked free at once, so the same pointer twice in the array is a
  // double free (its slab's freeing sets its final state).
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    int32_t id;
    uint32_t idx;
    if (!check_free(kNoCache, p[i], &id, &idx)) continue;
    slabs_[id].state[idx] = ObjState::kFree;
    p[kept++] = p[i];
  }
  if (cfg_.kfree_bulk_sort) {
    ev_->add(Event::kfree_bulk_sort, kept);
    // Stable by cache, caches in the order their first object comes; each
    // cache's objects through kmem_cache_free_bulk(s, ...) (free_bulk()
    // past its checks, done above). The other caches' objects move down
    // to p[0..kept), order kept.
    while (kept > 0) {
      const CacheId s = slabs_[slot_of(p[0])].cache;
      scratch_sort_.clear();
      int rest = 0;
      for (int i = 0; i < kept; ++i) {
        if (slabs_[slot_of(p[i])].cache == s) scratch_sort_.push_back(p[i]);
        else p[rest++] = p[i];
      }
      kept = rest;
      ev_->add(Event::kmem_cache_free_bulk);
      FreeRun run;
      for (Ptr q : scratch_sort_) {
        const int32_t id = slot_of(q);
        const uint32_t idx = idx_of(q);
        if (cfg_.memcg_batch_free) free_hook_batched(s, id, idx, t, &run);
        else free_hook(s, id, idx, t);
        on_free(id, idx, t);
      }
      flush_free_run(s, t, &run);
      (this->*gen_->free_bulk)(s, static_cast<int>(scratch_sort_.size()),
                               scratch_sort_.data(), t);
    }
    return;
  }
  // Hooks and the object's accounting first, as free_bulk() does; the
  // grouping below takes the cache from each group's slab.
  for (int i = 0; i < kept; ++i) {
    const int32_t id = slot_of(p[i]);
    const uint32_t idx = idx_of(p[i]);
    if (!cfg_.memcg_batch_free) free_hook(slabs_[id].cache, id, idx, t);
    on_free(id, idx, t);
  }
  while (kept > 0) {
    const int32_t id = detach_group(&kept, p);
    const CacheId s = slabs_[id].cache;
    if (cfg_.memcg_batch_free) {  // the group is one slab: one run per memcg
      FreeRun run;
      for (uint16_t idx : scratch_idx_) free_hook_batched(s, id, idx, t, &run);
      flush_free_run(s, t, &run);
    }
    if (v7_) stat(caches_[s], t.cpu, SlubStat::FREE_SLOWPATH, scratch_idx_.size());
    (this->*gen_->free_group)(s, id, scratch_idx_.data(), int(scratch_idx_.size()), t);
  }
}

// __kfree_rcu_sheaf(), 7.x: the object waits in this CPU's rcu_free sheaf
// (the empty spare, an empty barn sheaf, or a new one); a full rcu_free
// sheaf is handed to call_rcu(). Only for caches with sheaves and objects
// of the local node; its hooks run after the grace period.
bool Slub::kfree_rcu_sheaf(Ptr p, const Task& t) {
  int32_t id;
  uint32_t idx;
  if (!v7_ || !decode(p, &id, &idx)) return false;
  const CacheId s = slabs_[id].cache;
  KmemCache& c = caches_[s];
  if (!c.g.sheaf_capacity || slabs_[id].node != cpu_node(t.cpu)) return false;
  KmemCache::Cpu& pcs = c.cpu[t.cpu];
  if (pcs.rcu_free < 0) {
    if (pcs.spare >= 0 && sheaves_[pcs.spare].objects.empty()) {
      pcs.rcu_free = pcs.spare;
      pcs.spare = -1;
    } else {
      int32_t empty = barn_get_empty_sheaf(c.node[cpu_node(t.cpu)]);
      if (empty < 0) empty = alloc_sheaf(s, GFP_NOWAIT, t);
      if (empty < 0) {
        stat(c, t.cpu, SlubStat::FREE_RCU_SHEAF_FAIL);
        return false;
      }
      caches_[s].cpu[t.cpu].rcu_free = empty;  // alloc_sheaf may grow caches_' vectors
    }
  }
  KmemCache& cc = caches_[s];
  Sheaf& sh = sheaves_[cc.cpu[t.cpu].rcu_free];
  sh.objects.push_back(p);
  if (sh.objects.size() >= cc.g.sheaf_capacity) {
    rcu_pending_.push_back({cc.cpu[t.cpu].rcu_free, t.cpu, false});
    cc.cpu[t.cpu].rcu_free = -1;
  }
  stat(cc, t.cpu, SlubStat::FREE_RCU_SHEAF);
  ev_->add(Event::kfree_rcu_sheaf);
  return true;
}

// flush_all_rcu_sheaves() (kvfree_rcu_barrier()): every partly filled
// rcu_free sheaf goes to call_rcu(rcu_free_sheaf_nobarn) (flush_rcu_sheaf()
// on each CPU): after the grace period its objects go back to their slabs
// and the sheaf is freed, never parked in the barn as a short "full" one.
void Slub::flush_rcu_sheaves() {
  for (CacheId s = 0; s < caches_.size(); ++s)
    for (CpuId cpu = 0; cpu < caches_[s].cpu.size(); ++cpu) {
      // flush_rcu_sheaf() runs on every online CPU for every cache with
      // sheaves, its local_lock() whether or not a sheaf is there (RT
      // too: kvfree_rcu_barrier() flushes even where kfree_rcu() bypasses).
      if (caches_[s].g.sheaf_capacity) rt_pcs_lock();
      int32_t& rf = caches_[s].cpu[cpu].rcu_free;
      if (rf < 0) continue;
      rcu_pending_.push_back({rf, cpu, /*nobarn=*/true});
      rf = -1;
    }
}

// rcu_free_sheaf(), after the grace period, on the CPU whose callback it
// is (a softirq: root memcg context): the free hooks of every object,
// then the sheaf goes to the barn as a full one (BARN_PUT) while the barn
// has room, else its objects go back to slabs (BARN_PUT_FAIL) and the
// empty sheaf to the barn or kfree. rcu_free_sheaf_nobarn() (a CPU's
// flush) always flushes and frees it.
void Slub::rcu_free_sheaves() {
  std::vector<RcuSheaf> pending;
  pending.swap(rcu_pending_);
  for (const RcuSheaf& r : pending) {
    const Task t{r.cpu, kRootMemcg, 0};
    const CacheId s = sheaves_[r.sheaf].cache;
    // __rcu_free_sheaf_prepare(): hooks per object; an object KASAN
    // refuses (freed twice meanwhile) leaves the sheaf.
    std::vector<Ptr>& objs = sheaves_[r.sheaf].objects;
    size_t keep = 0;
    FreeRun run;
    for (size_t i = 0; i < objs.size(); ++i) {
      int32_t id;
      uint32_t idx;
      if (!check_free(s, objs[i], &id, &idx)) continue;
      if (cfg_.memcg_batch_free) free_hook_batched(s, id, idx, t, &run);
      else free_hook(s, id, idx, t);
      on_free(id, idx, t);
      slabs_[id].state[idx] = ObjState::kInSheaf;
      objs[keep++] = objs[i];
    }
    flush_free_run(s, t, &run);
    sheaves_[r.sheaf].objects.resize(keep);
    KmemCache& c = caches_[s];
    Node& n = c.node[cpu_node(r.cpu)];
    if (keep > 0 && !r.nobarn) {
      if (n.barn_full.size() < MAX_FULL_SHEAVES) {
        stat(c, r.cpu, SlubStat::BARN_PUT);
        ev_->add(Event::barn_lock);
        n.barn_full.push_back(r.sheaf);
        continue;
      }
      stat(c, r.cpu, SlubStat::BARN_PUT_FAIL);
    }
    flush_sheaf(r.sheaf, t);
    if (!r.nobarn && caches_[s].node[cpu_node(r.cpu)].barn_empty.size() < MAX_EMPTY_SHEAVES) {
      barn_put_empty_sheaf(caches_[s].node[cpu_node(r.cpu)], r.sheaf);
      continue;
    }
    free_sheaf(r.sheaf, t);
  }
  // Keep the vector's capacity for the next grace period.
  pending.clear();
  if (rcu_pending_.empty()) rcu_pending_.swap(pending);
}

size_t Slub::rcu_sheaf_objects() const {
  size_t n = 0;
  for (const RcuSheaf& r : rcu_pending_) n += sheaves_[r.sheaf].objects.size();
  for (const KmemCache& c : caches_)
    for (const KmemCache::Cpu& cpu : c.cpu)
      if (cpu.rcu_free >= 0) n += sheaves_[cpu.rcu_free].objects.size();
  return n;
}

// ---- The facade

// kfree_bulk(): large kmalloc objects are freed on their own
// (free_large_kmalloc() inside build_detached_freelist()); NULL entries
// are skipped.
void Mm::kfree_bulk(int n, Ptr* p, const Task& t) {
  if (n <= 0) return;
  events_.add(Event::kfree_bulk);
  events_.add(Event::bulk_free_objects, n);
  events_.batch(Batch::kmem_cache_free_bulk, static_cast<uint64_t>(n));
  if (!cfg_.kfree_bulk_sort) events_.add(Event::kmem_cache_free_bulk);
  const size_t nrep = slub_->reports.size();
  int kept = 0;
  for (int i = 0; i < n; ++i) {
    if (p[i] == kNull || p[i] == kZeroSizePtr) continue;
    if (p[i] & (kLargeBit | kVmallocBit)) {
      free_large(p[i], t, false);
      continue;
    }
    slub_->note_free_cpu(p[i], t.cpu);
    p[kept++] = p[i];
  }
  slub_->kfree_bulk(kept, p, t);
  if (slub_->reports.size() != nrep) stamp_reports(nrep);
}

// kvfree_call_rcu(): on 7.x (not PREEMPT_RT) a slab object of a cache
// with sheaves waits in the rcu_free sheaf; anything else joins this
// CPU's kvfree_rcu batch (pages of KVFREE_BULK_MAX_ENTR pointers).
void Mm::kfree_rcu(Ptr p, const Task& t) {
  events_.add(Event::kfree_rcu);
  if (p == kNull || p == kZeroSizePtr) return;
  if (!cfg_.preempt_rt && !(p & (kLargeBit | kVmallocBit)) && slub_->kfree_rcu_sheaf(p, t))
    return;
  if (krcp_.size() < cfg_.nr_cpus) krcp_.resize(cfg_.nr_cpus);
  krcp_[t.cpu].push_back(p);
}

// A grace period ends everywhere. Each CPU's kfree_rcu_work() frees its
// batch with kfree_bulk(), one call per page of records (vmalloc'ed
// objects with vfree() one by one), on that CPU in the root memcg; then
// the RCU callbacks of the submitted rcu_free sheaves run.
void Mm::rcu_grace_period() {
  for (CpuId cpu = 0; cpu < krcp_.size(); ++cpu) {
    std::vector<Ptr> batch;
    batch.swap(krcp_[cpu]);
    const Task t{cpu, kRootMemcg, 0};
    // kvfree_call_rcu() put slab and large kmalloc objects in channel 0,
    // vmalloc ones in channel 1.
    size_t slab_n = 0;
    for (Ptr q : batch) {
      if (q & kVmallocBit) free_large(q, t, true);  // vfree()
      else batch[slab_n++] = q;
    }
    for (size_t i = 0; i < slab_n; i += KVFREE_BULK_MAX_ENTR) {
      const size_t k = std::min<size_t>(KVFREE_BULK_MAX_ENTR, slab_n - i);
      kfree_bulk(static_cast<int>(k), batch.data() + i, t);
    }
    batch.clear();
    if (krcp_[cpu].empty()) krcp_[cpu].swap(batch);  // keep the capacity
  }
  slub_->rcu_free_sheaves();
}

// kvfree_rcu_barrier(): flush the partly filled rcu_free sheaves, then
// wait for the grace period and its frees.
void Mm::kvfree_rcu_barrier() {
  slub_->flush_rcu_sheaves();
  rcu_grace_period();
}

size_t Mm::rcu_pending() const {
  size_t n = slub_->rcu_sheaf_objects();
  for (const auto& b : krcp_) n += b.size();
  return n;
}

}  // namespace simcache
