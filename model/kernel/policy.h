// Cache policies: plain data whose defaults are the unpatched kernel (the
// null baseline). Each named policy is one small file in
// model/kernel/policies/ that registers a `void apply(PolicySet&,
// MmConfig&)` under its name; names combine with '+'
// ("node-slab+bulk-refill+prefill"). The io_uring model reads the
// PolicySet fields at its seams; no policy code runs per operation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel/profile.h"

namespace simcache {
struct MmConfig;
}

namespace simcache::iou {

// The seed 004 RFC's constants: the refill batch of patch 2/3 and the
// prefill cap of patch 3/3 (alloc_cache.h in the series).
inline constexpr uint32_t IO_ALLOC_CACHE_REFILL = 32;
inline constexpr uint32_t IO_ALLOC_CACHE_PREFILL_MAX = 4096;

// Where io_rsrc_node objects come from (seed 004 patch 1/3).
enum class NodeAlloc : uint8_t {
  kmalloc,       // unpatched: kmalloc(sizeof(io_rsrc_node)) via io_cache_alloc_new
  slab,          // v2: kmem_cache "io_rsrc_node", SLAB_HWCACHE_ALIGN
  slab_account,  // v1: the same with SLAB_ACCOUNT
};

// Registration-time prefill of the node cache (seed 004 patch 3/3).
enum class Prefill : uint8_t {
  off,     // unpatched
  always,  // every sparse registration
  optin,   // only registrations that pass the opt-in flag (the RFC's alternative)
};

// gfp of the FUTEX_WAITV allocation (seed 000).
enum class WaitvAccount : uint8_t {
  profile,    // as the kernel profile says (GFP_KERNEL <= 6.19, _ACCOUNT 7.0+)
  account,    // force GFP_KERNEL_ACCOUNT
  noaccount,  // force GFP_KERNEL
};

// Deliberate bugs for tests of the model's own KASAN; not a policy name.
enum class DebugBug : uint8_t {
  none,
  double_put_node,     // FILES_UPDATE removal puts the old node twice
  leak_node,           // FILES_UPDATE removal forgets the old node
  use_after_put_node,  // FILES_UPDATE removal touches the node after putting it
};

struct PolicySet {
  bool futex_return_to_cache = false;          // seed 001
  NodeAlloc node_alloc = NodeAlloc::kmalloc;   // seed 004 1/3
  uint32_t bulk_refill = 0;                    // seed 004 2/3: refill batch, 0 = off
  Prefill prefill = Prefill::off;              // seed 004 3/3
  uint32_t prefill_max = IO_ALLOC_CACHE_PREFILL_MAX;
  bool slab_prime = false;                     // seed 004 cover letter diagnostic
  bool kmalloc_prefill = false;                // seed 004 diagnostic 63e60a1059df (v6.13)
  WaitvAccount waitv_account = WaitvAccount::profile;  // seed 000
  bool memcg_batch_charge = false;             // seed 002 (sets MmConfig)
  bool slab_nomerge = false;                   // boot option (sets MmConfig)
  DebugBug debug_bug = DebugBug::none;         // tests only
};

using PolicyApplyFn = void (*)(PolicySet&, MmConfig&);

struct PolicyInfo {
  std::string_view name;     // "node-slab"
  std::string_view group;    // the PolicySet field it sets; two of a group conflict
  std::string_view summary;  // one line for --help and docs
  PolicyApplyFn apply;
};

// Name -> policy. Registration happens during static initialisation, one
// registrar per policy file; duplicates are rejected (kept as errors()).
class PolicyRegistry {
 public:
  static PolicyRegistry& get();
  void add(const PolicyInfo& info);
  const PolicyInfo* find(std::string_view name) const;
  std::span<const PolicyInfo> all() const { return policies_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::vector<PolicyInfo> policies_;
  std::vector<std::string> errors_;
};

struct PolicyRegistrar {
  explicit PolicyRegistrar(const PolicyInfo& info) { PolicyRegistry::get().add(info); }
};

// Registers a policy from its own .cc file. `ident` must also be listed in
// model/kernel/policies/policies.def: simcache_model is a static library,
// and that list is what makes the linker keep every policy's object file.
#define SIMCACHE_IOU_POLICY(ident, name, group, summary, fn)            \
  extern const int kSimcachePolicyAnchor_##ident;                       \
  const int kSimcachePolicyAnchor_##ident = 0;                          \
  namespace {                                                           \
  const ::simcache::iou::PolicyRegistrar simcache_policy_registrar_##ident( \
      ::simcache::iou::PolicyInfo{name, group, summary, fn});           \
  }

// Every registered name, sorted, comma-separated.
std::string policy_names();

// Parses "a+b+c": applies each named policy to *out and *mm in order, then
// validates the combination. On error returns false with a message naming
// the bad token and listing valid names. `profile` may be null (no
// profile-dependent checks).
bool parse_policies(std::string_view spec, const KernelProfile* profile,
                    PolicySet* out, MmConfig* mm, std::string* error);

// Checks a combination (prefill and bulk-refill need a dedicated slab;
// node policies need a profile with a node cache, ...).
bool validate_policies(const PolicySet& p, const KernelProfile* profile,
                       std::string* error);

// One line per field, for printing the resolved configuration.
std::string describe(const PolicySet& p);

}  // namespace simcache::iou
