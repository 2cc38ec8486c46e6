// The policy table expanded into the registry; the '+' parser, the
// combination checks and the docs' policy section.
#include "model/kernel/policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/mm/mm.h"

namespace simcache::iou {

// A CODE(fn) entry's function, defined in model/kernel/policies/.
#define SET(field, value)
#define CODE(fn) void fn(PolicySet&, MmConfig&);
#define POLICY(name, group, summary, effects) effects
#include "model/kernel/policies.def"
#undef SET
#undef CODE

namespace {

#define SET SIMCACHE_POLICY_SET
#define CODE SIMCACHE_POLICY_CODE
#define POLICY(...) SIMCACHE_POLICY_ROW(__VA_ARGS__),
constexpr PolicyInfo kPolicyTable[] = {
#include "model/kernel/policies.def"
};
#undef SET
#undef CODE

static_assert(check_policy_table(kPolicyTable).what.empty(),
              "model/kernel/policies.def: see check_policy_table() in policy.h");

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool fail(std::string* error, std::string msg) {
  if (error) *error = std::move(msg);
  return false;
}

}  // namespace

PolicyRegistry::PolicyRegistry(std::span<const PolicyInfo> table) : table_(table) {
  const PolicyTableProblem pr = check_policy_table(table);
  if (pr.what.empty()) return;
  std::string where = "policy table entry " + std::to_string(pr.index + 1);
  if (pr.index < table.size()) where += " ('" + std::string(table[pr.index].name) + "')";
  errors_.push_back(where + ": " + std::string(pr.what));
}

const PolicyRegistry& PolicyRegistry::get() {
  static const PolicyRegistry r(kPolicyTable);
  return r;
}

const PolicyInfo* PolicyRegistry::find(std::string_view name) const {
  for (const PolicyInfo& p : table_)
    if (p.name == name) return &p;
  return nullptr;
}

std::string PolicyRegistry::names() const {
  std::vector<std::string_view> names;
  for (const PolicyInfo& p : table_) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  std::string s;
  for (std::string_view n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

std::string policy_names() { return PolicyRegistry::get().names(); }

void apply_policy(const PolicyInfo& info, PolicySet& p, MmConfig& mm) {
  for (const FieldAssign& a : info.sets()) set_field_raw(p, a.field, a.raw);
  if (info.code) info.code(p, mm);
  export_to_mm(p, mm);
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

bool PolicyRegistry::parse(std::string_view spec, const KernelProfile* profile,
                           PolicySet* out, MmConfig* mm, std::string* error) const {
  if (!errors_.empty()) return fail(error, errors_.front());
  std::vector<const PolicyInfo*> seen;
  std::string_view rest = spec;
  while (true) {
    const size_t plus = rest.find('+');
    const std::string_view tok = trim(rest.substr(0, plus));
    const PolicyInfo* info = find(tok);
    if (info == nullptr)
      return fail(error, (tok.empty() ? std::string("empty policy name")
                                      : "unknown policy '" + std::string(tok) + "'") +
                             " in '" + std::string(spec) + "'; valid policies: " + names());
    for (const PolicyInfo* s : seen) {
      if (s == info)
        return fail(error, "policy '" + std::string(tok) + "' given twice in '" +
                               std::string(spec) + "'");
      if (info->group != PolicyFieldId::none && s->group == info->group)
        return fail(error, "policies '" + std::string(s->name) + "' and '" +
                               std::string(tok) + "' both set " +
                               std::string(policy_field(info->group).name) + "; choose one");
    }
    seen.push_back(info);
    apply_policy(*info, *out, *mm);
    if (plus == std::string_view::npos) break;
    rest.remove_prefix(plus + 1);
  }
  return validate_policies(*out, profile, error);
}

bool parse_policies(std::string_view spec, const KernelProfile* profile,
                    PolicySet* out, MmConfig* mm, std::string* error) {
  return PolicyRegistry::get().parse(spec, profile, out, mm, error);
}

namespace {

std::string sets_text(const PolicyInfo& p) {
  std::string s;
  for (const FieldAssign& a : p.sets())
    s += fmt::format("{}`{} = {}`", s.empty() ? "" : ", ", policy_field(a.field).name,
                     field_value_text(a.field, a.raw));
  if (p.code) s += fmt::format("{}code `{}`", s.empty() ? "" : ", ", p.code_name);
  return s.empty() ? "—" : s;
}

std::string type_text(const PolicyFieldInfo& f) {
  if (f.kind != FieldKind::enumeration) return std::string(f.type);
  std::string s;
  for (const EnumValueInfo& v : f.values)
    s += fmt::format("{}{}", s.empty() ? "" : " \\| ", v.name);
  return s;
}

}  // namespace

std::string policy_table_markdown() {
  std::string s = "| name | sets | summary |\n|---|---|---|\n";
  for (const PolicyInfo& p : PolicyRegistry::get().all())
    s += fmt::format("| `{}` | {} | {} |\n", p.name, sets_text(p), p.summary);
  s += "\n| field | type | default | read by | meaning |\n|---|---|---|---|---|\n";
  const PolicySet d;
  for (const PolicyFieldInfo& f : policy_fields())
    s += fmt::format("| `{}` | {} | `{}` | {} | {} |\n", f.name, type_text(f),
                     field_value_text(f.id, field_raw(d, f.id)), f.layer, f.description);
  return s;
}

}  // namespace simcache::iou
