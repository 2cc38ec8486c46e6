// memcg charging of slab objects. Model of mm/memcontrol.c as of 6.18.y
// (MemcgShape::v6_18) and of the 7.1+/next tree with per-node objcg and
// the 5-slot obj stock (MemcgShape::v7_1). docs/model-memcg.md lists the
// simplifications and every event bumped here.
#include "model/mm/memcg.h"

#include <cassert>
#include <cstdlib>
#include <stdexcept>

namespace simcache {
namespace {

constexpr uint32_t kPageMask = PAGE_SIZE - 1;
constexpr int64_t kS16Max = 32767;
constexpr uint32_t kU16Max = 65535;

bool gfp_allow_blocking(gfp_t gfp) { return gfp & __GFP_DIRECT_RECLAIM; }

}  // namespace

Memcg::Memcg(const MemcgConfig& cfg, EventSink* events, uint16_t nr_cpus,
             uint8_t nr_nodes)
    : cfg_(cfg), ev_(events), nr_cpus_(nr_cpus), nr_nodes_(nr_nodes) {
  if (nr_cpus == 0 || nr_nodes == 0)
    throw std::invalid_argument("Memcg: nr_cpus and nr_nodes must be > 0");
  // memcg_stock_pcp keeps uint8 page counts: BUILD_BUG_ON(batch > S8_MAX).
  if (cfg.charge_batch == 0 || cfg.charge_batch > 127)
    throw std::invalid_argument("Memcg: charge_batch must be 1..127");
  const bool v7 = cfg.shape == MemcgShape::v7_1;
  const bool slots_set = cfg.obj_stock_slots >= 1 && cfg.obj_stock_slots <= kNrObjStock;
  obj_slots_ = !v7 ? 1 : slots_set ? static_cast<int>(cfg.obj_stock_slots) : kNrObjStock;
  objcgs_per_memcg_ = v7 ? nr_nodes : 1;
  memcgs_.emplace_back();  // the root cgroup, id 0
  objcgs_.resize(objcgs_per_memcg_, Objcg{kRootMemcg, 0});
  MemcgStock empty_memcg_stock;
  empty_memcg_stock.cached.fill(kRootMemcg);
  memcg_stock_.assign(nr_cpus, empty_memcg_stock);
  ObjStock empty_obj_stock;
  empty_obj_stock.cached.fill(kNoObjcg);
  obj_stock_.assign(nr_cpus, empty_obj_stock);
}

MemcgId Memcg::create(MemcgId parent, uint64_t max_pages) {
  if (parent >= memcgs_.size())
    throw std::invalid_argument("Memcg::create: unknown parent");
  if (memcgs_.size() > 0xffff)
    throw std::length_error("Memcg::create: MemcgId space exhausted");
  const auto id = static_cast<MemcgId>(memcgs_.size());
  MemcgState st;
  st.parent = parent;
  st.max = max_pages;
  memcgs_.push_back(st);
  for (uint32_t n = 0; n < objcgs_per_memcg_; ++n)
    objcgs_.push_back(Objcg{id, 0});
  return id;
}

NodeId Memcg::objcg_node(CpuId cpu) const {
  if (cfg_.shape == MemcgShape::v6_18) return 0;
  return static_cast<NodeId>(uint32_t{cpu} * nr_nodes_ / nr_cpus_);
}

// The hooks run only with kmem accounting online, and never for the root
// (6.18: current_obj_cgroup() is NULL; 7.1+: obj_cgroup_is_root()).
bool Memcg::charges(MemcgId memcg) const {
  assert(memcg < memcgs_.size());
  return cfg_.kmem_online && memcg != kRootMemcg;
}

// mirrors mem_cgroup_is_descendant(): true for root itself too.
bool Memcg::is_descendant(MemcgId memcg, MemcgId root) const {
  for (;;) {
    if (memcg == root) return true;
    if (memcg == kRootMemcg) return false;
    memcg = memcgs_[memcg].parent;
  }
}

Memcg::ObjcgId Memcg::objcg_of(MemcgId memcg, NodeId nid) const {
  if (cfg_.shape == MemcgShape::v6_18) return memcg;
  assert(nid < nr_nodes_);
  return ObjcgId{memcg} * objcgs_per_memcg_ + nid;
}

int64_t Memcg::subtree_sum(MemcgId root, int64_t MemcgState::*field) const {
  int64_t sum = 0;
  for (size_t m = 0; m < memcgs_.size(); ++m)
    if (is_descendant(static_cast<MemcgId>(m), root)) sum += memcgs_[m].*field;
  return sum;
}

// ---------------------------------------------------------------------------
// page_counter and the per-CPU memcg stock

// mirrors page_counter_try_charge(), 6.x: every level up to the root's
// counter; the first level over max refuses and nothing stays charged.
// The root's own counter (no limit, no memory.current) is not kept: its
// usage is derived in usage_pages().
bool Memcg::page_counter_try_charge(MemcgId memcg, uint64_t nr,
                                    MemcgId* over) {
  ev_->add(Event::page_counter_charge);
  for (MemcgId c = memcg; c != kRootMemcg; c = memcgs_[c].parent) {
    const MemcgState& s = memcgs_[c];
    if (s.max && s.usage + nr > s.max) {
      *over = c;
      return false;
    }
  }
  for (MemcgId c = memcg; c != kRootMemcg; c = memcgs_[c].parent)
    memcgs_[c].usage += nr;
  return true;
}

// mirrors page_counter_charge(), 6.x: forced, ignores memory.max.
void Memcg::page_counter_charge(MemcgId memcg, uint64_t nr) {
  ev_->add(Event::page_counter_charge);
  for (MemcgId c = memcg; c != kRootMemcg; c = memcgs_[c].parent)
    memcgs_[c].usage += nr;
}

// mirrors memcg_uncharge() -> page_counter_uncharge(), 6.x (no memsw: v2).
void Memcg::memcg_uncharge(MemcgId memcg, uint64_t nr) {
  if (nr == 0) return;
  ev_->add(Event::page_counter_uncharge);
  for (MemcgId c = memcg; c != kRootMemcg; c = memcgs_[c].parent) {
    assert(memcgs_[c].usage >= nr);
    memcgs_[c].usage -= nr;
  }
}

// mirrors consume_stock(), 6.16+: 7 slots; the first slot caching memcg
// decides. 6.18 leaves an emptied slot cached; 7.1 releases it.
bool Memcg::consume_stock(CpuId cpu, MemcgId memcg, uint32_t nr) {
  if (nr > cfg_.charge_batch) return false;
  MemcgStock& stock = memcg_stock_[cpu];
  for (int i = 0; i < kNrMemcgStock; ++i) {
    if (stock.cached[i] != memcg) continue;
    if (stock.nr_pages[i] < nr) return false;
    stock.nr_pages[i] = static_cast<uint8_t>(stock.nr_pages[i] - nr);
    if (stock.nr_pages[i] == 0 && cfg_.shape == MemcgShape::v7_1)
      stock.cached[i] = kRootMemcg;
    ev_->add(Event::memcg_stock_hit);
    return true;
  }
  return false;
}

// mirrors drain_stock(), 6.16+: the slot's pages go back to page_counter.
void Memcg::drain_stock(MemcgStock& stock, int i) {
  const MemcgId old = stock.cached[i];
  if (old == kRootMemcg) return;
  memcg_uncharge(old, stock.nr_pages[i]);
  stock.nr_pages[i] = 0;
  stock.cached[i] = kRootMemcg;
}

// mirrors refill_stock(), 6.16+: the memcg's slot, else an empty one, else
// evict round robin (7.1 drain_idx; 6.18 picks a random victim, which the
// model replaces with the same round robin to stay deterministic). A slot
// over MEMCG_CHARGE_BATCH is drained; a refill over the batch bypasses.
void Memcg::refill_stock(CpuId cpu, MemcgId memcg, uint32_t nr) {
  if (nr == 0) return;
  if (nr > cfg_.charge_batch) {
    memcg_uncharge(memcg, nr);
    return;
  }
  MemcgStock& stock = memcg_stock_[cpu];
  int empty = -1;
  for (int i = 0; i < kNrMemcgStock; ++i) {
    if (stock.cached[i] == kRootMemcg && empty == -1) empty = i;
    if (stock.cached[i] != memcg) continue;
    const uint32_t pages = stock.nr_pages[i] + nr;
    stock.nr_pages[i] = static_cast<uint8_t>(pages);
    if (pages > cfg_.charge_batch) drain_stock(stock, i);
    return;
  }
  int i = empty;
  if (i == -1) {
    i = stock.drain_idx;
    stock.drain_idx = static_cast<uint8_t>((i + 1) % kNrMemcgStock);
    drain_stock(stock, i);
  }
  stock.cached[i] = memcg;
  stock.nr_pages[i] = static_cast<uint8_t>(nr);
}

// mirrors try_charge_memcg(), 6.18/7.1: stock, then a batch through
// page_counter, then exactly nr_pages. Over the limit a blocking gfp gets
// one drain_all_stock() and a retry; reclaim and the memcg OOM killer are
// not modelled (they would free nothing here), so the charge then fails
// unless __GFP_NOFAIL/__GFP_HIGH force it past memory.max.
bool Memcg::try_charge_memcg(CpuId cpu, MemcgId memcg, gfp_t gfp,
                             uint32_t nr) {
  uint32_t batch = nr > cfg_.charge_batch ? nr : cfg_.charge_batch;
  if (!gfp_allow_spinning(gfp)) batch = nr;  // no refill, no old-stock flush
  bool drained = false;
  for (;;) {
    if (consume_stock(cpu, memcg, nr)) return true;
    MemcgId over = kRootMemcg;
    if (page_counter_try_charge(memcg, batch, &over)) {
      refill_stock(cpu, memcg, batch - nr);
      return true;
    }
    if (batch > nr) {
      batch = nr;
      continue;
    }
    if (!gfp_allow_blocking(gfp) || drained) break;
    drain_all_stock(over);
    drained = true;
  }
  if (!(gfp & (__GFP_NOFAIL | __GFP_HIGH))) return false;
  page_counter_charge(memcg, nr);
  return true;
}

// mirrors drain_all_stock(), 6.16+: every CPU whose memcg stock holds
// pages of (or whose obj stock caches an objcg of) the subtree is drained
// in full. The kernel drains remote CPUs from work items; the model drains
// them synchronously, as if the work ran before the retry.
void Memcg::drain_all_stock(MemcgId root) {
  for (CpuId cpu = 0; cpu < nr_cpus_; ++cpu) {
    MemcgStock& ms = memcg_stock_[cpu];
    bool needed = false;
    for (int i = 0; i < kNrMemcgStock; ++i)
      needed |= ms.cached[i] != kRootMemcg && ms.nr_pages[i] &&
                is_descendant(ms.cached[i], root);
    if (needed)
      for (int i = 0; i < kNrMemcgStock; ++i) drain_stock(ms, i);
    ObjStock& os = obj_stock_[cpu];
    bool flush = false;
    for (int i = 0; i < obj_slots_; ++i)
      flush |= os.cached[i] != kNoObjcg && is_descendant(memcg_of(os.cached[i]), root);
    if (flush) drain_obj_stock(os);
  }
}

// mirrors obj_cgroup_charge_pages(), 6.x: try_charge, then MEMCG_KMEM.
bool Memcg::obj_cgroup_charge_pages(CpuId cpu, MemcgId memcg, gfp_t gfp,
                                    uint32_t nr) {
  ev_->add(Event::memcg_charge);
  if (!try_charge_memcg(cpu, memcg, gfp, nr)) return false;
  memcgs_[memcg].kmem += nr;
  return true;
}

// mirrors obj_cgroup_uncharge_pages(), 6.x: MEMCG_KMEM down, the pages go
// to this CPU's memcg stock (refill_stock), not straight to page_counter.
void Memcg::obj_cgroup_uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr) {
  ev_->add(Event::memcg_uncharge_pages);
  memcgs_[memcg].kmem -= nr;
  refill_stock(cpu, memcg, nr);
}

// ---------------------------------------------------------------------------
// The per-CPU obj stock

int Memcg::find_obj_slot(const ObjStock& stock, ObjcgId objcg) const {
  for (int i = 0; i < obj_slots_; ++i)
    if (stock.cached[i] == objcg) return i;
  return -1;
}

// mirrors consume_obj_stock() (6.18, one slot) and __consume_obj_stock()
// (7.1, the slot caching objcg): enough precharged bytes or a miss.
bool Memcg::consume_obj_stock(CpuId cpu, ObjcgId objcg, uint32_t bytes) {
  ObjStock& stock = obj_stock_[cpu];
  const int i = find_obj_slot(stock, objcg);
  if (i < 0 || stock.nr_bytes[i] < bytes) return false;
  stock.nr_bytes[i] -= bytes;
  return true;
}

// mirrors drain_obj_stock() (6.18) / drain_obj_stock_slot() (7.1): whole
// pages are uncharged straight from page_counter (memcg_uncharge, not the
// memcg stock), the sub-page rest parks in the objcg's nr_charged_bytes,
// and the cached vmstat delta owned by the slot is flushed.
void Memcg::drain_obj_stock_slot(ObjStock& stock, int i) {
  const ObjcgId old = stock.cached[i];
  if (old == kNoObjcg) return;
  ev_->add(Event::obj_stock_drain);
  const uint32_t pages = stock.nr_bytes[i] >> PAGE_SHIFT;
  if (pages) {
    memcgs_[memcg_of(old)].kmem -= pages;
    memcg_uncharge(memcg_of(old), pages);
  }
  objcgs_[old].nr_charged_bytes += stock.nr_bytes[i] & kPageMask;
  stock.nr_bytes[i] = 0;
  if (stock.index == i) drain_obj_stock_stats(stock);
  stock.cached[i] = kNoObjcg;
}

void Memcg::drain_obj_stock(ObjStock& stock) {
  for (int i = 0; i < obj_slots_; ++i) drain_obj_stock_slot(stock, i);
}

// mirrors refill_obj_stock() (6.18) / __refill_obj_stock() (7.1): find or
// take a slot (draining the victim), seed a new slot from the objcg's
// nr_charged_bytes and then always allow the uncharge; whole pages above
// PAGE_SIZE (or, 7.1, above the uint16 slot) go to obj_cgroup_uncharge_pages.
void Memcg::refill_obj_stock(CpuId cpu, ObjcgId objcg, uint32_t bytes,
                             bool allow_uncharge) {
  ev_->add(Event::obj_stock_refill);
  ObjStock& stock = obj_stock_[cpu];
  int slot = -1, empty = -1;
  for (int i = 0; i < obj_slots_ && slot == -1; ++i) {
    if (stock.cached[i] == kNoObjcg) {
      if (empty == -1) empty = i;
    } else if (stock.cached[i] == objcg) {
      slot = i;
    }
  }
  uint64_t total;
  if (slot == -1 && empty == -1 && allow_uncharge && cfg_.obj_stock_refill_keep) {
    // obj-stock-keep: the stock stays with its owners; the bytes go where
    // a failed trylock sends them, and whole pages are uncharged at once.
    ev_->add(Event::obj_stock_refill_bypass);
    uint64_t parked = objcgs_[objcg].nr_charged_bytes + uint64_t{bytes};
    const auto pages = static_cast<uint32_t>(parked >> PAGE_SHIFT);
    parked &= kPageMask;
    objcgs_[objcg].nr_charged_bytes = static_cast<uint32_t>(parked);
    if (pages) obj_cgroup_uncharge_pages(cpu, memcg_of(objcg), pages);
    return;
  }
  if (slot == -1) {
    slot = empty;
    if (slot == -1) {
      slot = stock.drain_idx;
      stock.drain_idx = static_cast<uint8_t>((slot + 1) % obj_slots_);
      drain_obj_stock_slot(stock, slot);
    }
    stock.cached[slot] = objcg;
    total = objcgs_[objcg].nr_charged_bytes;  // atomic_xchg(.., 0)
    objcgs_[objcg].nr_charged_bytes = 0;
    allow_uncharge = true;
  } else {
    total = stock.nr_bytes[slot];
  }
  total += bytes;
  uint32_t pages = 0;
  const bool slot_full = cfg_.shape == MemcgShape::v7_1 && total > kU16Max;
  if ((allow_uncharge && total > PAGE_SIZE) || slot_full) {
    pages = static_cast<uint32_t>(total >> PAGE_SHIFT);
    total &= kPageMask;
  }
  stock.nr_bytes[slot] = static_cast<uint32_t>(total);
  if (pages) obj_cgroup_uncharge_pages(cpu, memcg_of(objcg), pages);
}

// mirrors drain_obj_stock_stats() (7.1) and the stat part of 6.18's
// drain_obj_stock(): the cached delta goes to the owning memcg's lruvec.
void Memcg::drain_obj_stock_stats(ObjStock& stock) {
  if (stock.index >= 0 && stock.slab_b)
    mod_objcg_mlstate(stock.cached[stock.index], stock.slab_b);
  stock.slab_b = 0;
  stock.index = -1;
  stock.node = -1;
}

// mirrors mod_objcg_mlstate() -> mod_memcg_lruvec_state(): one flush.
void Memcg::mod_objcg_mlstate(ObjcgId objcg, int64_t nr) {
  ev_->add(Event::memcg_vmstat_flush);
  memcgs_[memcg_of(objcg)].slab_flushed += nr;
}

// mirrors __account_obj_stock(). 6.18: one int accumulator for the cached
// objcg and cached_pgdat; the first delta is always cached, later ones
// flush once |sum| > PAGE_SIZE. 7.1: one int16 accumulator shared by the
// slots, tagged (slot, node); a delta for an objcg with no slot goes
// straight to the lruvec; a sum is kept only while it fits int16 and the
// accumulator was empty or |sum| <= PAGE_SIZE.
void Memcg::account_obj_stock(CpuId cpu, ObjcgId objcg, int64_t nr,
                              NodeId pgdat) {
  ev_->add(Event::obj_stock_account);
  ObjStock& stock = obj_stock_[cpu];
  const int slot = find_obj_slot(stock, objcg);
  if (slot < 0) {  // 7.1, or obj-stock-keep's bypass: straight to the lruvec
    assert(cfg_.shape == MemcgShape::v7_1 || cfg_.obj_stock_refill_keep);
    mod_objcg_mlstate(objcg, nr);
    return;
  }
  if (stock.index != slot || stock.node != pgdat) {
    drain_obj_stock_stats(stock);
    stock.index = static_cast<int8_t>(slot);
    stock.node = pgdat;
  }
  const int64_t sum = stock.slab_b + nr;
  bool keep;
  if (cfg_.shape == MemcgShape::v6_18)
    keep = stock.slab_b == 0 || std::llabs(sum) <= PAGE_SIZE;
  else
    keep = std::llabs(sum) <= kS16Max &&
           (stock.slab_b == 0 || std::llabs(sum) <= PAGE_SIZE);
  if (keep) {
    stock.slab_b = static_cast<int32_t>(sum);
    return;
  }
  stock.slab_b = 0;
  mod_objcg_mlstate(objcg, sum);
}

// mirrors the whole-page uncharge of obj_cgroup_release(): once every
// object is gone an objcg's nr_charged_bytes is a multiple of PAGE_SIZE.
// The model folds per memcg (summing its per-node objcgs), because an
// object freed through uncharge_obj() without objcg_nid may land in
// another node's objcg of the same memcg than the one it was charged to.
void Memcg::release_charged_bytes() {
  for (size_t m = 1; m < memcgs_.size(); ++m) {
    const ObjcgId first = objcg_of(static_cast<MemcgId>(m), 0);
    uint64_t total = 0;
    for (uint32_t n = 0; n < objcgs_per_memcg_; ++n) {
      total += objcgs_[first + n].nr_charged_bytes;
      objcgs_[first + n].nr_charged_bytes = 0;
    }
    const uint64_t pages = total >> PAGE_SHIFT;
    objcgs_[first].nr_charged_bytes = static_cast<uint32_t>(total & kPageMask);
    if (pages) {
      memcgs_[m].kmem -= static_cast<int64_t>(pages);
      memcg_uncharge(static_cast<MemcgId>(m), pages);
    }
  }
}

// ---------------------------------------------------------------------------
// Public entry points

// mirrors obj_cgroup_charge_account() (6.16-7.0) and the per-object body
// of __memcg_slab_post_alloc_hook() (7.1): stock hit, or charge
// ceil(bytes / PAGE_SIZE) pages and refill the rest without uncharging.
bool Memcg::charge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes,
                       gfp_t gfp) {
  if (!charges(memcg) || bytes == 0) return true;
  const ObjcgId objcg = objcg_of(memcg, objcg_node(cpu));
  if (consume_obj_stock(cpu, objcg, bytes)) {
    ev_->add(Event::obj_stock_hit);
  } else {
    ev_->add(Event::obj_stock_miss);
    const uint32_t pages = (bytes + kPageMask) >> PAGE_SHIFT;
    if (!obj_cgroup_charge_pages(cpu, memcg, gfp, pages)) {
      ev_->add(Event::memcg_charge_fail);
      return false;
    }
    const uint32_t rest = static_cast<uint32_t>(
        (uint64_t{pages} << PAGE_SHIFT) - bytes);
    // 6.18 refills even a zero rest (pgdat is set), switching the stock.
    if (rest || cfg_.shape == MemcgShape::v6_18)
      refill_obj_stock(cpu, objcg, rest, false);
  }
  account_obj_stock(cpu, objcg, bytes, pgdat);
  memcgs_[memcg].live += bytes;
  return true;
}

void Memcg::uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat,
                         uint32_t bytes) {
  uncharge_obj(cpu, memcg, pgdat, bytes, objcg_node(cpu));
}

// mirrors the per-object body of __memcg_slab_free_hook(): refill with
// allow_uncharge, then account the negative delta.
void Memcg::uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat,
                         uint32_t bytes, NodeId objcg_nid) {
  if (!charges(memcg) || bytes == 0) return;
  const NodeId nid = cfg_.shape == MemcgShape::v6_18 ? 0 : objcg_nid;
  const ObjcgId objcg = objcg_of(memcg, nid);
  refill_obj_stock(cpu, objcg, bytes, true);
  account_obj_stock(cpu, objcg, -static_cast<int64_t>(bytes), pgdat);
  memcgs_[memcg].live -= bytes;
}

// mirrors __memcg_kmem_charge_page(): obj_cgroup_charge_pages, no obj stock.
bool Memcg::charge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages,
                         gfp_t gfp) {
  if (!charges(memcg) || nr_pages == 0) return true;
  if (obj_cgroup_charge_pages(cpu, memcg, gfp, nr_pages)) return true;
  ev_->add(Event::memcg_charge_fail);
  return false;
}

// mirrors __memcg_kmem_uncharge_page(): obj_cgroup_uncharge_pages.
void Memcg::uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages) {
  if (!charges(memcg) || nr_pages == 0) return;
  obj_cgroup_uncharge_pages(cpu, memcg, nr_pages);
}

void Memcg::uncharge_pages_batch(MemcgId memcg, uint32_t nr_pages) {
  if (!charges(memcg) || nr_pages == 0) return;
  memcgs_[memcg].kmem -= nr_pages;
  memcg_uncharge(memcg, nr_pages);
}

// drain_all_stock(root_mem_cgroup) on every CPU, unconditionally, plus the
// objcg release fold; see docs/model-memcg.md.
void Memcg::drain_all() {
  for (CpuId cpu = 0; cpu < nr_cpus_; ++cpu) {
    drain_obj_stock(obj_stock_[cpu]);
    for (int i = 0; i < kNrMemcgStock; ++i) drain_stock(memcg_stock_[cpu], i);
  }
  release_charged_bytes();
}

// ---------------------------------------------------------------------------
// Queries

uint64_t Memcg::usage_pages(MemcgId memcg) const {
  if (memcg != kRootMemcg) return memcgs_[memcg].usage;
  uint64_t sum = 0;  // the root's counter: its children's, hierarchically
  for (size_t m = 1; m < memcgs_.size(); ++m)
    if (memcgs_[m].parent == kRootMemcg) sum += memcgs_[m].usage;
  return sum;
}

int64_t Memcg::kmem_pages(MemcgId memcg) const {
  return subtree_sum(memcg, &MemcgState::kmem);
}

int64_t Memcg::live_obj_bytes(MemcgId memcg) const {
  return subtree_sum(memcg, &MemcgState::live);
}

void Memcg::mod_lruvec_slab(MemcgId memcg, int64_t bytes) {
  if (!charges(memcg) || bytes == 0) return;
  ev_->add(Event::memcg_vmstat_flush);
  memcgs_[memcg].slab_flushed += bytes;
}

// Flushed lruvec state plus every CPU's cached delta: exact, unlike a
// kernel read, which misses the per-CPU caches.
int64_t Memcg::slab_bytes(MemcgId memcg) const {
  int64_t sum = subtree_sum(memcg, &MemcgState::slab_flushed);
  for (const ObjStock& st : obj_stock_)
    if (st.index >= 0 && is_descendant(memcg_of(st.cached[st.index]), memcg))
      sum += st.slab_b;
  return sum;
}

uint64_t Memcg::memcg_stock_pages(MemcgId memcg) const {
  uint64_t sum = 0;
  for (const MemcgStock& st : memcg_stock_)
    for (int i = 0; i < kNrMemcgStock; ++i)
      if (st.cached[i] != kRootMemcg && is_descendant(st.cached[i], memcg))
        sum += st.nr_pages[i];
  return sum;
}

uint64_t Memcg::obj_stock_bytes(MemcgId memcg) const {
  uint64_t sum = 0;
  for (const ObjStock& st : obj_stock_)
    for (int i = 0; i < obj_slots_; ++i)
      if (st.cached[i] != kNoObjcg && is_descendant(memcg_of(st.cached[i]), memcg))
        sum += st.nr_bytes[i];
  return sum;
}

uint64_t Memcg::charged_bytes(MemcgId memcg) const {
  uint64_t sum = 0;
  for (const Objcg& o : objcgs_)
    if (o.memcg != kRootMemcg && is_descendant(o.memcg, memcg))
      sum += o.nr_charged_bytes;
  return sum;
}

void Memcg::signature(StateSig* s) const {
  s->add(memcgs_.size());
  for (const MemcgState& m : memcgs_) {
    s->add(m.parent);
    s->add(m.max);
    s->add(m.usage);
    s->add(static_cast<uint64_t>(m.kmem));
    s->add(static_cast<uint64_t>(m.slab_flushed));
    s->add(static_cast<uint64_t>(m.live));
  }
  for (const Objcg& o : objcgs_) {
    s->add(o.memcg);
    s->add(o.nr_charged_bytes);
  }
  for (const MemcgStock& st : memcg_stock_) {
    s->all(st.cached);
    s->all(st.nr_pages);
    s->add(st.drain_idx);
  }
  for (const ObjStock& st : obj_stock_) {
    s->all(st.cached);
    s->all(st.nr_bytes);
    s->add(st.drain_idx);
    s->add(static_cast<uint8_t>(st.index));
    s->add(static_cast<uint16_t>(st.node));
    s->add(static_cast<uint32_t>(st.slab_b));
  }
}

}  // namespace simcache
