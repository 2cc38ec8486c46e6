// The mm model's boot configuration: what the kernel's config, command
// line and boot-time sizing fix before any cache exists. Read by every
// part of the mm model (SLUB, kmalloc routing, memcg sizing); kept apart
// from the facade (model/mm/mm.h) so that SLUB sees it without seeing the
// layer above it.
#pragma once

#include <cstdint>

#include "model/mm/geometry.h"
#include "model/mm/memcg.h"
#include "model/types.h"

namespace simcache {

struct MmConfig {
  SlubGen gen = SlubGen::v6_18;
  // num_present_cpus() at boot: drives calculate_order(). The seeds'
  // i7-12700KF has 8 P-cores with SMT + 4 E-cores = 20 CPUs.
  uint16_t nr_cpus = 20;
  uint8_t nr_nodes = 1;
  // The per-CPU page lists' high mark (pages; model/kernel/machine.def
  // pcp_high_min and pcp_high_max): it starts at the least and is tuned
  // up to the most. The defaults are the i7-12700KF's.
  uint32_t pcp_high_min = 1128;
  uint32_t pcp_high_max = 46187;
  bool random_kmalloc_caches = false;  // CONFIG_RANDOM_KMALLOC_CACHES
  uint64_t random_kmalloc_seed = 0;    // random_kmalloc_seed (per boot)
  bool slab_nomerge = false;           // boot parameter
  bool hardened_usercopy = false;      // kmalloc caches get usersize
  bool memcg_batch_charge = false;     // seed 002's batched post-alloc hook
  bool memcg_batch_free = false;       // its free side: one uncharge per run
  bool kfree_bulk_sort = false;        // seed 002 review: kfree_bulk() sorted by cache
  GeometryOverride geometry;           // knobs over computed geometry
  bool track_history = true;           // KASAN-style per-object history
  // Call-site scopes (call_site.h): counts by io_uring function for JSON
  // "sites", --explain and KASAN "where". Off: scopes are not entered
  // (those views are empty), about 40 % less run time; counts unchanged.
  bool call_sites = true;
  bool preempt_rt = false;             // CONFIG_PREEMPT_RT (kernel-model-notes §11)
  MemcgConfig memcg;
};

}  // namespace simcache
