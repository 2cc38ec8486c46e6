// memcg charging of slab objects: obj_cgroup per cgroup, the per-CPU obj
// stock, the per-CPU memcg stock and page_counter charging in batches of
// MEMCG_CHARGE_BATCH pages. Mirrors mm/memcontrol.c (6.16-7.0 shape for
// MemcgShape::v6_18; 7.1+ per-node objcg and 5-slot obj stock for v7_1).
//
// The slab layer owns the per-object loop (obj_exts vectors, objcg ref
// get/put); this component prices bytes: one call per object, or one per
// run when the batched post-alloc hook (seed 002) is on.
//
// Every per-memcg query is hierarchical, like memory.current and
// memory.stat: it covers `memcg` and all its descendants (the root covers
// every cgroup). See docs/model-memcg.md for what is and is not modelled.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/counters.h"
#include "model/mm/lock_hook.h"
#include "model/mm/state_sig.h"
#include "model/types.h"

namespace simcache {

enum class MemcgShape : uint8_t {
  v6_18,  // single-slot obj stock, one objcg per memcg, 7-slot memcg stock
  v7_1,   // per-node objcg, NR_OBJ_STOCK = 5 slots, restructured API
};

struct MemcgConfig {
  MemcgShape shape = MemcgShape::v6_18;
  bool kmem_online = true;  // a non-root memcg exists, so hooks run
  uint32_t charge_batch = 64;  // MEMCG_CHARGE_BATCH (pages), 1..127
  // Obj stock slots on the v7_1 shape, 1..NR_OBJ_STOCK; 0 (or more than
  // NR_OBJ_STOCK): the kernel's NR_OBJ_STOCK. v6_18 always has one.
  uint32_t obj_stock_slots = 0;
  // obj-stock-keep (a proposal): a free whose objcg holds no slot, with
  // every slot taken, goes to objcg->nr_charged_bytes (whole pages
  // uncharged at once) instead of draining a slot for it.
  bool obj_stock_refill_keep = false;
};

class Memcg {
 public:
  // Throws std::invalid_argument for nr_cpus == 0, nr_nodes == 0 or a
  // charge_batch outside 1..127 (the kernel's uint8 stock slots).
  Memcg(const MemcgConfig& cfg, EventSink* events, uint16_t nr_cpus,
        uint8_t nr_nodes);

  // Creates a cgroup below `parent` (kRootMemcg for a top-level one) with
  // a memory.max limit in pages (0 = unlimited). Returns its id.
  MemcgId create(MemcgId parent, uint64_t max_pages = 0);

  bool kmem_online() const { return cfg_.kmem_online; }
  const MemcgConfig& config() const { return cfg_; }

  // Charges `bytes` (an object's obj_full_size, or a whole run's) to the
  // objcg of `memcg` as allocated on `cpu`, for a slab on node `pgdat`.
  // Mirrors obj_cgroup_charge_account(). Returns false if the charge is
  // refused (memory.max with a non-blocking gfp); nothing is charged then.
  bool charge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes,
                  gfp_t gfp);
  // Mirrors the refill_obj_stock(allow_uncharge=true) of the free hook.
  // The object is returned to the objcg of the freeing CPU's node; use
  // the overload below when the allocating node is known (v7_1).
  void uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes);
  // As above, to the objcg of node `objcg_nid` (the objcg the object was
  // charged to: objcg_node() of the allocating CPU). Ignored by v6_18.
  void uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes,
                    NodeId objcg_nid);

  // Page-wise charge for large kmalloc / vmalloc (__memcg_kmem_charge_page).
  bool charge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages, gfp_t gfp);
  void uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages);
  // release_pages() of charged kmem pages (mem_cgroup_uncharge_folios() ->
  // uncharge_batch()): MEMCG_KMEM and the page_counter, no per-CPU stock.
  void uncharge_pages_batch(MemcgId memcg, uint32_t nr_pages);

  // Drains every per-CPU obj stock and memcg stock (drain_all_stock), so
  // that page_counter usage reflects only live objects. Also uncharges the
  // whole pages parked in objcg nr_charged_bytes (as obj_cgroup_release()).
  void drain_all();
  // Every memcg's counters, objcg and stock (model/mm/state_sig.h).
  void signature(StateSig* s) const;

  // memory.current of `memcg` in pages (page_counter usage, includes pages
  // parked in per-CPU stocks).
  uint64_t usage_pages(MemcgId memcg) const;
  // MEMCG_KMEM pages and the slab byte stat (memory.stat slab_unreclaimable).
  int64_t kmem_pages(MemcgId memcg) const;
  int64_t slab_bytes(MemcgId memcg) const;
  // lruvec_stat_mod_folio(NR_SLAB_UNRECLAIMABLE_B) for a large kmalloc's
  // compound charged to `memcg` (___kmalloc_large_node(),
  // free_large_kmalloc()): one memcg lruvec update, unbatched, counted as
  // memcg_vmstat_flush; the bytes join the memcg's slab bytes.
  void mod_lruvec_slab(MemcgId memcg, int64_t bytes);
  // Bytes charged to objects currently alive (sum of charge_obj minus
  // uncharge_obj); the ground truth the stocks approximate.
  int64_t live_obj_bytes(MemcgId memcg) const;

  // Queries added for tests and reports (all hierarchical).
  // The node whose objcg a charge on `cpu` uses: cpu * nr_nodes / nr_cpus
  // for v7_1, 0 for v6_18 (one objcg per memcg).
  NodeId objcg_node(CpuId cpu) const;
  uint32_t nr_memcgs() const { return static_cast<uint32_t>(memcgs_.size()); }
  MemcgId parent(MemcgId memcg) const { return memcgs_[memcg].parent; }
  // Pages precharged in per-CPU memcg stocks (part of usage_pages).
  uint64_t memcg_stock_pages(MemcgId memcg) const;
  // Precharged bytes in per-CPU obj stocks and in objcg nr_charged_bytes.
  uint64_t obj_stock_bytes(MemcgId memcg) const;
  uint64_t charged_bytes(MemcgId memcg) const;

 private:
  using ObjcgId = uint32_t;
  static constexpr ObjcgId kNoObjcg = UINT32_MAX;
  static constexpr int kNrMemcgStock = 7;  // NR_MEMCG_STOCK, 6.16+
  static constexpr int kNrObjStock = 5;    // NR_OBJ_STOCK, 7.1+

  struct MemcgState {        // the parts of struct mem_cgroup modelled
    MemcgId parent = kRootMemcg;
    uint64_t max = 0;        // memory.max in pages, 0 = unlimited
    uint64_t usage = 0;      // memory page_counter (hierarchical by walk)
    int64_t kmem = 0;        // MEMCG_KMEM, this cgroup only
    int64_t slab_flushed = 0;  // NR_SLAB_UNRECLAIMABLE_B in the lruvecs
    int64_t live = 0;        // model ground truth, this cgroup only
  };
  struct Objcg {             // struct obj_cgroup
    MemcgId memcg = kRootMemcg;
    uint32_t nr_charged_bytes = 0;
  };
  struct MemcgStock {        // struct memcg_stock_pcp; kRootMemcg = empty
    std::array<MemcgId, kNrMemcgStock> cached{};
    std::array<uint8_t, kNrMemcgStock> nr_pages{};
    uint8_t drain_idx = 0;
  };
  struct ObjStock {          // struct obj_stock_pcp (1 or 5 slots used)
    std::array<ObjcgId, kNrObjStock> cached{};
    std::array<uint32_t, kNrObjStock> nr_bytes{};
    uint8_t drain_idx = 0;
    int8_t index = -1;       // slot owning the cached vmstat delta
    int16_t node = -1;       // its pgdat (cached_pgdat / node_id)
    int32_t slab_b = 0;      // nr_slab_unreclaimable_b
  };

  bool charges(MemcgId memcg) const;
  bool is_descendant(MemcgId memcg, MemcgId root) const;
  ObjcgId objcg_of(MemcgId memcg, NodeId nid) const;
  MemcgId memcg_of(ObjcgId objcg) const { return objcgs_[objcg].memcg; }
  int64_t subtree_sum(MemcgId root, int64_t MemcgState::*field) const;

  // page_counter and the memcg stock.
  bool page_counter_try_charge(MemcgId memcg, uint64_t nr, MemcgId* over);
  void page_counter_charge(MemcgId memcg, uint64_t nr);
  void memcg_uncharge(MemcgId memcg, uint64_t nr);
  bool consume_stock(CpuId cpu, MemcgId memcg, uint32_t nr);
  void drain_stock(MemcgStock& stock, int i);
  void refill_stock(CpuId cpu, MemcgId memcg, uint32_t nr);
  bool try_charge_memcg(CpuId cpu, MemcgId memcg, gfp_t gfp, uint32_t nr);
  void drain_all_stock(MemcgId root);
  bool obj_cgroup_charge_pages(CpuId cpu, MemcgId memcg, gfp_t gfp,
                               uint32_t nr);
  void obj_cgroup_uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr);

  // The obj stock.
  int find_obj_slot(const ObjStock& stock, ObjcgId objcg) const;
  bool consume_obj_stock(CpuId cpu, ObjcgId objcg, uint32_t bytes);
  void refill_obj_stock(CpuId cpu, ObjcgId objcg, uint32_t bytes,
                        bool allow_uncharge);
  void drain_obj_stock_slot(ObjStock& stock, int i);
  void drain_obj_stock(ObjStock& stock);
  void account_obj_stock(CpuId cpu, ObjcgId objcg, int64_t nr, NodeId pgdat);
  void drain_obj_stock_stats(ObjStock& stock);
  void mod_objcg_mlstate(ObjcgId objcg, int64_t nr);
  void release_charged_bytes();

  MemcgConfig cfg_;
  EventSink* ev_;
  uint16_t nr_cpus_;
  uint8_t nr_nodes_;
  int obj_slots_;            // 1 (v6_18) or NR_OBJ_STOCK (v7_1)
  uint8_t objcgs_per_memcg_; // 1 (v6_18) or nr_nodes (v7_1)
  std::vector<MemcgState> memcgs_;    // by MemcgId; [0] is the root
  std::vector<Objcg> objcgs_;         // memcg * objcgs_per_memcg_ + node
  std::vector<MemcgStock> memcg_stock_;  // by CPU
  std::vector<ObjStock> obj_stock_;      // by CPU
};

}  // namespace simcache
