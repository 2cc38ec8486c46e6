// Kernel profiles: the documented facts of one kernel version that the
// io_uring layer depends on (object sizes, gfp flags, which caches exist)
// and the mm configuration the version implies. Sources for every value
// are in docs/model-io_uring.md ("Profiles").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/mm/memcg.h"
#include "model/types.h"

namespace simcache {
struct MmConfig;
}

namespace simcache::iou {

struct KernelProfile {
  std::string_view name;
  std::string_view summary;

  // rsrc nodes and the fixed-file table.
  bool install_allocates_node = true;  // false before 7029acd8a950 (v6.12)
  // before 7029acd8a950: ctx->rsrc_node, one node per ring, switched (a
  // new one allocated, the old one freed) at every unregister quiesce
  bool per_ring_rsrc_node = false;
  bool has_node_cache = true;          // ctx->node_cache + imu_cache (6.15+)
  bool node_kzalloc = false;           // 6.13/6.14: kzalloc per node, no cache
  uint32_t rsrc_node_size = 24;        // sizeof(struct io_rsrc_node)
  uint32_t node_cache_max = 128;       // IO_ALLOC_CACHE_MAX
  gfp_t file_table_gfp = GFP_KERNEL_ACCOUNT | __GFP_ZERO;  // the nodes array

  // Futex.
  uint32_t futex_data_size = 144;      // sizeof(struct io_futex_data)
  uint32_t futex_cache_max = 32;       // IO_FUTEX_ALLOC_CACHE_MAX
  gfp_t futex_gfp = GFP_NOWAIT;        // io_futex_wait()'s io_cache_alloc gfp
  uint32_t futex_vector_size = 160;    // sizeof(struct futex_vector)
  // offsetof(io_futexv_data, futexv) in v6.18-rc5+; 0 = the bare
  // kcalloc(nr, sizeof(struct futex_vector)) array of <= v6.18-rc4.
  uint32_t waitv_header = 0;
  gfp_t waitv_gfp = GFP_KERNEL;        // without the __GFP_ZERO of kcalloc/kzalloc

  // Requests and the ring.
  uint32_t io_kiocb_size = 248;        // sizeof(struct io_kiocb), derived
  uint32_t io_ring_ctx_size = 1472;    // sizeof(struct io_ring_ctx), derived
  gfp_t req_refill_gfp = GFP_KERNEL | __GFP_NOWARN | __GFP_ZERO;

  // What the version implies for the mm layer.
  SlubGen slub_gen = SlubGen::v6_18;
  MemcgShape memcg_shape = MemcgShape::v6_18;

  // The cqring wait and the idle governor (seed 003, docs/idle.md).
  // io_cqring_wait_schedule() marks the sleep as I/O wait: 8a796565cec3
  // (v6.5-rc1; stable v6.4.4 and v6.1.39), gated on pending requests by
  // 7b72d661f1f2 (a waiter with armed requests, as every program here, still
  // counts). false = plain schedule(), the kernels before it.
  bool cqwait_iowait = true;
  // menu_select() divides the predicted sleep by performance_multiplier()
  // = 1 + 10 * nr_iowaiters; removed by 38f83090f515 (v6.13).
  bool menu_iowait_multiplier = false;
};

// Every profile, oldest first; the default is "v6.18".
std::span<const KernelProfile> kernel_profiles();
inline constexpr std::string_view kDefaultProfile = "v6.18";

// Looks a profile up by name. On failure returns nullptr and, if `error`
// is given, a message naming the bad name and listing the valid ones.
const KernelProfile* profile_by_name(std::string_view name, std::string* error);

// "v6.1.39, v6.4.4, v6.5-rc2, v6.12, v6.13, v6.18, v7.1, v7.2".
std::string profile_names();

// Sets the MmConfig fields the profile implies (SLUB generation, memcg
// shape). Policies are applied after this and may set further fields.
void apply_profile(const KernelProfile& p, MmConfig& mm);

// The WAITV allocation size for `nr` entries under profile `p`.
inline uint32_t waitv_alloc_size(const KernelProfile& p, uint32_t nr) {
  return p.waitv_header + nr * p.futex_vector_size;
}

}  // namespace simcache::iou
