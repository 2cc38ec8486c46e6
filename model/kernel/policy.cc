// Policy registry, the '+' parser and combination checks.
#include "model/kernel/policy.h"

#include <algorithm>

#include "model/mm/mm.h"

#define SC_POLICY(id) extern const int kSimcachePolicyAnchor_##id;
#include "model/kernel/policies/policies.def"
#undef SC_POLICY

// Referencing every anchor keeps every policy object file linked.
extern const int* const kSimcachePolicyAnchors[];
const int* const kSimcachePolicyAnchors[] = {
#define SC_POLICY(id) &kSimcachePolicyAnchor_##id,
#include "model/kernel/policies/policies.def"
#undef SC_POLICY
};

namespace simcache::iou {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool fail(std::string* error, std::string msg) {
  if (error) *error = std::move(msg);
  return false;
}

std::string_view node_alloc_name(NodeAlloc n) {
  switch (n) {
    case NodeAlloc::kmalloc: return "kmalloc";
    case NodeAlloc::slab: return "slab";
    case NodeAlloc::slab_account: return "slab_account";
  }
  return "?";
}

std::string_view prefill_name(Prefill p) {
  switch (p) {
    case Prefill::off: return "off";
    case Prefill::always: return "always";
    case Prefill::optin: return "optin";
  }
  return "?";
}

std::string_view waitv_name(WaitvAccount w) {
  switch (w) {
    case WaitvAccount::profile: return "profile";
    case WaitvAccount::account: return "account";
    case WaitvAccount::noaccount: return "noaccount";
  }
  return "?";
}

}  // namespace

PolicyRegistry& PolicyRegistry::get() {
  static PolicyRegistry r;
  return r;
}

void PolicyRegistry::add(const PolicyInfo& info) {
  if (find(info.name) != nullptr) {
    errors_.push_back("policy '" + std::string(info.name) + "' registered twice");
    return;
  }
  policies_.push_back(info);
}

const PolicyInfo* PolicyRegistry::find(std::string_view name) const {
  for (const PolicyInfo& p : policies_)
    if (p.name == name) return &p;
  return nullptr;
}

std::string policy_names() {
  std::vector<std::string_view> names;
  for (const PolicyInfo& p : PolicyRegistry::get().all()) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  std::string s;
  for (std::string_view n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

bool validate_policies(const PolicySet& p, const KernelProfile* profile,
                       std::string* error) {
  const bool slab = p.node_alloc != NodeAlloc::kmalloc;
  if (p.bulk_refill != 0 && !slab)
    return fail(error, "bulk-refill needs node-slab or node-slab-account: "
                       "kmem_cache_alloc_bulk() has no kmalloc equivalent "
                       "(seed 004 patch 2/3)");
  if (p.prefill != Prefill::off && !slab)
    return fail(error, "prefill/prefill-optin need node-slab or "
                       "node-slab-account: io_alloc_cache_prefill() only fills "
                       "a cache with a dedicated slab (seed 004 patch 3/3)");
  if (profile == nullptr) return true;
  if (slab && !profile->has_node_cache)
    return fail(error, "node-slab/node-slab-account need a kernel profile with "
                       "a per-ring node cache (v6.18, v7.1, v7.2); '" +
                       std::string(profile->name) + "' has none");
  if (p.slab_prime && !profile->install_allocates_node)
    return fail(error, "slab-prime needs a kernel profile that allocates a node "
                       "per install; '" + std::string(profile->name) +
                       "' allocates none");
  if (p.kmalloc_prefill && (profile->has_node_cache || !profile->install_allocates_node))
    return fail(error, "kmalloc-prefill needs a kernel profile that allocates a node "
                       "per install and has no node cache (v6.13); '" +
                       std::string(profile->name) + "' does not");
  return true;
}

bool parse_policies(std::string_view spec, const KernelProfile* profile,
                    PolicySet* out, MmConfig* mm, std::string* error) {
  const PolicyRegistry& reg = PolicyRegistry::get();
  if (!reg.errors().empty()) return fail(error, reg.errors().front());
  std::vector<const PolicyInfo*> seen;
  std::string_view rest = spec;
  while (true) {
    const size_t plus = rest.find('+');
    const std::string_view tok = trim(rest.substr(0, plus));
    const PolicyInfo* info = reg.find(tok);
    if (info == nullptr)
      return fail(error, (tok.empty() ? std::string("empty policy name")
                                      : "unknown policy '" + std::string(tok) + "'") +
                             " in '" + std::string(spec) +
                             "'; valid policies: " + policy_names());
    for (const PolicyInfo* s : seen) {
      if (s == info)
        return fail(error, "policy '" + std::string(tok) + "' given twice in '" +
                               std::string(spec) + "'");
      if (!info->group.empty() && s->group == info->group)
        return fail(error, "policies '" + std::string(s->name) + "' and '" +
                               std::string(tok) + "' both set " +
                               std::string(info->group) + "; choose one");
    }
    seen.push_back(info);
    info->apply(*out, *mm);
    if (plus == std::string_view::npos) break;
    rest.remove_prefix(plus + 1);
  }
  return validate_policies(*out, profile, error);
}

std::string describe(const PolicySet& p) {
  std::string s;
  auto line = [&s](std::string_view k, std::string_view v) {
    s += k;
    s += " = ";
    s += v;
    s += '\n';
  };
  line("futex_return_to_cache", p.futex_return_to_cache ? "true" : "false");
  line("node_alloc", node_alloc_name(p.node_alloc));
  line("bulk_refill", std::to_string(p.bulk_refill));
  line("prefill", prefill_name(p.prefill));
  line("prefill_max", std::to_string(p.prefill_max));
  line("slab_prime", p.slab_prime ? "true" : "false");
  line("waitv_account", waitv_name(p.waitv_account));
  line("memcg_batch_charge", p.memcg_batch_charge ? "true" : "false");
  line("slab_nomerge", p.slab_nomerge ? "true" : "false");
  if (p.debug_bug != DebugBug::none) line("debug_bug", "set");
  return s;
}

}  // namespace simcache::iou
