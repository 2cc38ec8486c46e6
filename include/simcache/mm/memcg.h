// memcg charging of slab objects: obj_cgroup per cgroup, the per-CPU obj
// stock, the per-CPU memcg stock and page_counter charging in batches of
// MEMCG_CHARGE_BATCH pages. Mirrors mm/memcontrol.c (6.16-7.0 shape for
// MemcgShape::v6_18; 7.1+ per-node objcg and 5-slot obj stock for v7_1).
//
// The slab layer owns the per-object loop (obj_exts vectors, objcg ref
// get/put); this component prices bytes: one call per object, or one per
// run when the batched post-alloc hook (seed 002) is on.
#pragma once

#include <cstdint>
#include <vector>

#include "simcache/counters.h"
#include "simcache/types.h"

namespace simcache {

enum class MemcgShape : uint8_t {
  v6_18,  // single-slot obj stock, one objcg per memcg, 7-slot memcg stock
  v7_1,   // per-node objcg, NR_OBJ_STOCK = 5 slots, restructured API
};

struct MemcgConfig {
  MemcgShape shape = MemcgShape::v6_18;
  bool kmem_online = true;  // a non-root memcg exists, so hooks run
  uint32_t charge_batch = 64;  // MEMCG_CHARGE_BATCH (pages)
};

class Memcg {
 public:
  Memcg(const MemcgConfig& cfg, Counters* events, uint16_t nr_cpus,
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
  void uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes);

  // Page-wise charge for large kmalloc / vmalloc (__memcg_kmem_charge_page).
  bool charge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages, gfp_t gfp);
  void uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages);

  // Drains every per-CPU obj stock and memcg stock (drain_all_stock), so
  // that page_counter usage reflects only live objects.
  void drain_all();

  // memory.current of `memcg` in pages (page_counter usage, includes pages
  // parked in per-CPU stocks).
  uint64_t usage_pages(MemcgId memcg) const;
  // MEMCG_KMEM pages and the slab byte stat (memory.stat slab_unreclaimable).
  int64_t kmem_pages(MemcgId memcg) const;
  int64_t slab_bytes(MemcgId memcg) const;
  // Bytes charged to objects currently alive (sum of charge_obj minus
  // uncharge_obj); the ground truth the stocks approximate.
  int64_t live_obj_bytes(MemcgId memcg) const;

 private:
  MemcgConfig cfg_;
  Counters* ev_;
  // (private state: flat vectors indexed by memcg id and CPU)
};

}  // namespace simcache
