// The kernel profiles (facts per version). Where each value comes from is
// documented in docs/model-io_uring.md, "Profiles".
#include "model/kernel/profile.h"

#include <array>

#include "model/kernel/policy.h"
#include "model/mm/mm.h"

namespace simcache::iou {
namespace {

// The seed 003 kernels (July 2023). Their io_uring predates IORING_OP_FUTEX_*
// (v6.7) and their rsrc nodes and SLUB differ from every later profile in
// ways the wait model does not read; the nearest profile, v6.12, stands in
// for all of that (docs/idle.md, "Era profiles"). What they add is the
// cqring wait: all three carry 8a796565cec3 (io_schedule), v6.1.39 and
// v6.4.4 as its stable backport, and menu's iowait multiplier.
constexpr KernelProfile era(const KernelProfile& base, std::string_view name,
                            std::string_view summary) {
  KernelProfile p = base;
  p.name = name;
  p.summary = summary;
  p.cqwait_iowait = true;
  p.menu_iowait_multiplier = true;
  return p;
}

// v6.12: parent of 7029acd8a950. Installs write the file into the table;
// no io_rsrc_node per slot. futex_q has no drop_hb_ref yet (128 B).
constexpr KernelProfile kV6_12 = [] {
  KernelProfile p;
  p.name = "v6.12";
  p.summary = "parent of 7029acd8a950: fixed-file installs allocate no node";
  p.install_allocates_node = false;
  p.per_ring_rsrc_node = true;
  p.has_node_cache = false;
  p.rsrc_node_size = 32;
  p.futex_data_size = 136;
  p.futex_vector_size = 152;
  p.req_refill_gfp = GFP_KERNEL | __GFP_NOWARN;
  p.menu_iowait_multiplier = true;  // 38f83090f515 is v6.13 (6.12.y got it later)
  return p;
}();

// v6.13 (through 6.14): a node per install, kzalloc'ed, kfree'd, no cache;
// struct io_rsrc_node still carries ctx_ptr (32 B).
constexpr KernelProfile kV6_13 = [] {
  KernelProfile p;
  p.name = "v6.13";
  p.summary = "a node per install (kzalloc 32 B / kfree), no node cache";
  p.has_node_cache = false;
  p.node_kzalloc = true;
  p.rsrc_node_size = 32;
  p.file_table_gfp = GFP_KERNEL | __GFP_ZERO;  // io_rsrc_data_alloc() at 7029acd8
  p.futex_data_size = 136;
  p.futex_vector_size = 152;
  p.req_refill_gfp = GFP_KERNEL | __GFP_NOWARN;
  return p;
}();

// v6.18 (-rc4, the RFC's base 6146a0f1dfae): node_cache of 128, 24 B
// nodes, WAITV as a bare kcalloc'ed array, GFP_KERNEL.
constexpr KernelProfile kV6_18 = [] {
  KernelProfile p;
  p.name = "v6.18";
  p.summary = "v6.18-rc4: node cache 128, 24 B nodes, WAITV kcalloc GFP_KERNEL";
  return p;
}();

// v7.1 / v7.2: sheaves SLUB, per-node objcg memcg, WAITV wrapped in
// io_futexv_data and allocated GFP_KERNEL_ACCOUNT (Jan 2026 patch).
constexpr KernelProfile v7(std::string_view name, std::string_view summary) {
  KernelProfile p;
  p.name = name;
  p.summary = summary;
  p.waitv_header = 8;
  p.waitv_gfp = GFP_KERNEL_ACCOUNT;
  p.slub_gen = SlubGen::v7;
  p.memcg_shape = MemcgShape::v7_1;
  return p;
}

constexpr std::array<KernelProfile, 8> kProfiles = {
    era(kV6_12, "v6.1.39", "seed 003: stable 6.1 with the io_schedule backport; v6.12 stands in for io_uring/mm"),
    era(kV6_12, "v6.4.4", "seed 003: stable 6.4 with the io_schedule backport; v6.12 stands in for io_uring/mm"),
    era(kV6_12, "v6.5-rc2", "seed 003: io_schedule in cqring wait (8a796565cec3); v6.12 stands in for io_uring/mm"),
    kV6_12, kV6_13, kV6_18,
    v7("v7.1", "sheaves SLUB, WAITV io_futexv_data GFP_KERNEL_ACCOUNT"),
    v7("v7.2", "as v7.1 (io_uring and SLUB facts unchanged for the model)"),
};

}  // namespace

std::span<const KernelProfile> kernel_profiles() { return kProfiles; }

std::string profile_names() {
  std::string s;
  for (const KernelProfile& p : kProfiles) {
    if (!s.empty()) s += ", ";
    s += p.name;
  }
  return s;
}

const KernelProfile* profile_by_name(std::string_view name, std::string* error) {
  for (const KernelProfile& p : kProfiles)
    if (p.name == name) return &p;
  if (error)
    *error = "unknown kernel profile '" + escape_controls(name) +
             "'; valid profiles: " + profile_names();
  return nullptr;
}

void apply_profile(const KernelProfile& p, MmConfig& mm) {
  mm.gen = p.slub_gen;
  mm.memcg.shape = p.memcg_shape;
}

}  // namespace simcache::iou
