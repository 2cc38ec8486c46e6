// The policy table expanded into the registry; the '+' parser, the
// combination checks and the docs' policy section.
#include "model/kernel/policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/mm/mm_config.h"

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
  if (p.waitv_cache_zero && p.waitv_cache_max == 0)
    return fail(error, "waitv_cache_zero needs a WAITV cache (waitv_cache_max > 0, as in "
                       "waitv-cache): it zeroes vectors taken from that cache");
  if (profile == nullptr) return true;
  if (p.obj_stock_slots != kFromKernel && profile->memcg_shape != MemcgShape::v7_1)
    return fail(error, "obj_stock_slots needs a kernel profile with the 7.1+ memcg "
                       "shape (NR_OBJ_STOCK); '" + std::string(profile->name) +
                       "' has a single-slot obj stock");
  if (p.slab_sheaf_capacity != kFromKernel && profile->slub_gen != SlubGen::v7)
    return fail(error, "slab_sheaf_capacity needs a 7.x kernel profile (sheaves); '" +
                       std::string(profile->name) + "' has per-CPU slabs");
  if (p.slab_cpu_partial != kFromKernel && profile->slub_gen != SlubGen::v6_18)
    return fail(error, "slab_cpu_partial needs a v6.18-generation kernel profile; '" +
                       std::string(profile->name) + "' has sheaves, no cpu partial list");
  if (slab && !profile->has_node_cache)
    return fail(error, "node-slab/node-slab-account need a kernel profile with "
                       "a per-ring node cache (v6.18, v7.1, v7.2); '" +
                       std::string(profile->name) + "' has none");
  if (p.slab_prime && !profile->install_allocates_node)
    return fail(error, "slab-prime needs a kernel profile that allocates a node "
                       "per install; '" + std::string(profile->name) +
                       "' allocates none");
  if ((p.prefill != Prefill::off || p.prefill_grow) && !profile->has_node_cache)
    return fail(error, "prefill modes need a kernel profile with a per-ring node cache "
                       "(v6.18, v7.1, v7.2); '" + std::string(profile->name) + "' has none");
  if (p.enter_no_iowait && !profile->enter_no_iowait)
    return fail(error, "no-iowait needs a kernel profile whose io_uring_enter() takes "
                       "IORING_ENTER_NO_IOWAIT (07754bfd9aee, v6.15+); '" +
                       std::string(profile->name) + "' rejects it with -EINVAL");
  if (p.kmalloc_prefill && (profile->has_node_cache || !profile->install_allocates_node))
    return fail(error, "kmalloc-prefill needs a kernel profile that allocates a node "
                       "per install and has no node cache (v6.13); '" +
                       std::string(profile->name) + "' does not");
  return true;
}

namespace {

// Splits at '+' outside parentheses.
std::vector<std::string_view> split_plus(std::string_view spec) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= spec.size(); ++i) {
    if (i == spec.size() || (spec[i] == '+' && depth == 0)) {
      out.push_back(spec.substr(from, i - from));
      from = i + 1;
    } else if (spec[i] == '(') {
      ++depth;
    } else if (spec[i] == ')') {
      --depth;
    }
  }
  return out;
}

// One knob assignment "key=value" (inside NAME(...) keys may be short).
bool apply_assignment(std::string_view a, bool short_ok, std::string_view spec, PolicySet* out,
                      MmConfig* mm, std::string* error) {
  const size_t eq = a.find('=');
  std::string_view key = trim(a.substr(0, eq));
  const std::string_view value = eq == std::string_view::npos ? "" : trim(a.substr(eq + 1));
  if (key.substr(0, 7) == "policy.") key.remove_prefix(7);
  const PolicyFieldInfo* f = short_ok ? knob_by_key(key) : policy_field_by_name(key);
  if (eq == std::string_view::npos || key.empty() || f == nullptr) {
    std::string msg;
    set_knob(key, "", out, mm, &msg);  // the list of knobs
    return fail(error, fmt::format("'{}' in '{}': {}", a, spec,
                                   eq == std::string_view::npos ? "expected key=value" : msg));
  }
  return set_knob(f->name, value, out, mm, error);
}

}  // namespace

bool PolicyRegistry::parse(std::string_view spec, const KernelProfile* profile,
                           PolicySet* out, MmConfig* mm, std::string* error) const {
  if (!errors_.empty()) return fail(error, errors_.front());
  std::vector<const PolicyInfo*> seen;
  for (std::string_view raw : split_plus(spec)) {
    const std::string_view tok = trim(raw);
    const size_t open = tok.find('(');
    // NAME=VALUE: one knob, by its full name.
    if (open == std::string_view::npos && tok.find('=') != std::string_view::npos) {
      if (!apply_assignment(tok, false, spec, out, mm, error)) return false;
      continue;
    }
    const std::string_view name = trim(tok.substr(0, open));
    if (open != std::string_view::npos && tok.back() != ')')
      return fail(error, fmt::format("'{}' in '{}': expected NAME(key=value,...)", tok, spec));
    const PolicyInfo* info = find(name);
    if (info == nullptr)
      return fail(error, (name.empty() ? std::string("empty policy name")
                                       : "unknown policy '" + std::string(name) + "'") +
                             " in '" + std::string(spec) + "'; valid policies: " + names());
    for (const PolicyInfo* s : seen) {
      if (s == info)
        return fail(error, "policy '" + std::string(name) + "' given twice in '" +
                               std::string(spec) + "'");
      for (const FieldAssign& a : info->sets())
        if ((info->group != PolicyFieldId::none && s->group == info->group) ||
            s->sets_field(a.field))
          return fail(error, "policies '" + std::string(s->name) + "' and '" +
                                 std::string(name) + "' both set " +
                                 std::string(policy_field(s->sets_field(a.field) ? a.field
                                                                                 : info->group)
                                                 .name) +
                                 "; choose one");
    }
    seen.push_back(info);
    apply_policy(*info, *out, *mm);
    if (open == std::string_view::npos) continue;
    // NAME(k=v,...): the preset's knobs, by full or short name.
    const std::string_view args = tok.substr(open + 1, tok.size() - open - 2);
    size_t from = 0;
    while (from <= args.size()) {
      const size_t comma = std::min(args.find(',', from), args.size());
      if (!apply_assignment(args.substr(from, comma - from), true, spec, out, mm, error))
        return false;
      from = comma + 1;
    }
  }
  return validate_policies(*out, profile, error);
}

bool parse_policies(std::string_view spec, const KernelProfile* profile,
                    PolicySet* out, MmConfig* mm, std::string* error) {
  if (PolicyRegistry::get().parse(spec, profile, out, mm, error)) return true;
  if (error) *error = escape_controls(*error);  // errors quote the spec, which is the user's
  return false;
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

namespace simcache::iou {

std::string knob_table_markdown() {
  std::string s =
      "| knob | unit | default | valid | key | read by | source | meaning |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const PolicyFieldInfo& f : policy_fields()) {
    std::string valid;
    if (f.kind == FieldKind::unsigned_int)
      valid = fmt::format("{}..{}{}", f.min, f.max, f.def_raw == kFromKernel ? ", `kernel`" : "");
    else
      valid = type_text(f);
    s += fmt::format("| `{}` | {} | `{}` | {} | {} | {} | {} | {} |\n", f.name, f.unit,
                     field_value_text(f.id, f.def_raw), valid,
                     f.short_name.empty() ? "—" : fmt::format("`{}`", f.short_name), f.layer,
                     f.source, f.description);
  }
  return s;
}

}  // namespace simcache::iou
