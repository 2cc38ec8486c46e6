// Cache policies: plain data whose defaults are the unpatched kernel (the
// null baseline). Three tables of record, all expanded here and in
// policy.cc / policy_fields.cc:
//   policy_enums.def   the value sets of the enumerated fields
//   policy_fields.def  the PolicySet fields (type, default, reader, meaning)
//   policies.def       the named policies (name, group, summary, the
//                      fields each sets, code only where one needs some)
// Names combine with '+' ("node-slab+bulk-refill+prefill"). The io_uring
// model reads the PolicySet fields at its seams; no policy code runs per
// operation.
#pragma once

#include <array>
#include <cstddef>
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
// IO_REQ_ALLOC_BATCH (io_uring/io_uring.c): requests per bulk refill, and
// the largest batch the req_alloc_batch knob accepts (a stack array).
inline constexpr uint32_t IO_REQ_ALLOC_BATCH = 8;
inline constexpr uint32_t kMaxReqAllocBatch = 64;
// A uint32_t knob whose default is "what the kernel profile or the cache
// geometry says"; printed and parsed as `kernel`.
inline constexpr uint32_t kFromKernel = 0xffffffffu;
// IO_FUTEX_ALLOC_CACHE_MAX (io_uring/futex.c): the waitv-cache policy's
// size, the futex_cache's size in every profile.
inline constexpr uint32_t IO_FUTEX_ALLOC_CACHE_MAX_DEFAULT = 32;

#define ENUM_VALUE(ident, name, meaning) ident,
#define POLICY_ENUM(Type, what, values) enum class Type : uint8_t { values };
#include "model/kernel/policy_enums.def"
#undef ENUM_VALUE

// Deliberate bugs for tests of the model's own KASAN; not configuration,
// so neither a policy nor a field of the table.
enum class DebugBug : uint8_t {
  none,
  double_put_node,     // FILES_UPDATE removal puts the old node twice
  leak_node,           // FILES_UPDATE removal forgets the old node
  use_after_put_node,  // FILES_UPDATE removal touches the node after putting it
  leak_node_cache,     // ring teardown forgets the nodes parked in its node_cache
};

struct PolicySet {
#define POLICY_FIELD(Type, name, def, ...) Type name = def;
#include "model/kernel/policy_fields.def"
  DebugBug debug_bug = DebugBug::none;  // tests only
};

// One id per row of policy_fields.def, in order; `none` is the baseline's
// group.
enum class PolicyFieldId : uint8_t {
#define POLICY_FIELD(Type, name, ...) name,
#include "model/kernel/policy_fields.def"
  none,
};
inline constexpr size_t kNumPolicyFields = static_cast<size_t>(PolicyFieldId::none);

enum class FieldKind : uint8_t { boolean, unsigned_int, enumeration };

struct EnumValueInfo {
  std::string_view name;     // printed, and what a parser accepts
  std::string_view meaning;
};

struct PolicyFieldInfo {
  PolicyFieldId id;
  std::string_view name;         // "node_alloc"
  std::string_view type;         // "bool", "uint32_t", "NodeAlloc"
  std::string_view layer;        // "io_uring", "mm", "memcg" or "slab"
  std::string_view description;
  FieldKind kind;
  std::span<const EnumValueInfo> values;  // enumeration only, in enum order
  std::string_view unit;         // "entries", "-" for bool and enum
  uint32_t min = 0, max = 0;     // the valid raw range (bool 0..1, enum 0..n-1)
  std::string_view short_name;   // key accepted in NAME(key=value), or ""
  std::string_view source;       // the kernel constant and file, or the RFC
  uint32_t def_raw = 0;          // the default (kFromKernel: `kernel`)
};

// The rows of policy_fields.def, in order (index = PolicyFieldId).
std::span<const PolicyFieldInfo> policy_fields();
const PolicyFieldInfo& policy_field(PolicyFieldId id);
const PolicyFieldInfo* policy_field_by_name(std::string_view name);

// A field's value as an unsigned number (bool 0/1, enum index) and back.
uint32_t field_raw(const PolicySet& p, PolicyFieldId id);
void set_field_raw(PolicySet& p, PolicyFieldId id, uint32_t raw);
// How a raw value prints: "true", "32", "slab", "kernel".
std::string field_value_text(PolicyFieldId id, uint32_t raw);
// Parses a value for field `f` ("true", "256", "optin", "kernel" where
// the default is kFromKernel) and checks its range. On error returns false
// with a one-line message naming the field, the value and what is valid.
bool parse_field_value(const PolicyFieldInfo& f, std::string_view text, uint32_t* raw,
                       std::string* error);
// Sets field `name` (the full name) from text: parse_field_value() plus
// export_to_mm(). The knob form of --set policy.NAME=VALUE.
bool set_knob(std::string_view name, std::string_view text, PolicySet* p, MmConfig* mm,
              std::string* error);
// `s` with control bytes written as \n, \r, \t or \xNN, so an error that
// quotes user text stays one line. Applying it twice changes nothing more.
// With `max`: once the output reaches `max` bytes, the rest becomes "...".
std::string escape_controls(std::string_view s, size_t max = SIZE_MAX);
// The field `key` names inside a policy's parentheses: its full name or
// its short name. Null if none.
const PolicyFieldInfo* knob_by_key(std::string_view key);

// Copies every mm-layer field that differs from its default into the
// MmConfig member of the same name.
void export_to_mm(const PolicySet& p, MmConfig& mm);

// One row of the run record: every field, in table order, with its value.
struct PolicyFieldValue {
  const PolicyFieldInfo* field;
  uint32_t raw;
  std::string text;
};
std::vector<PolicyFieldValue> policy_record(const PolicySet& p);

// One line per field ("node_alloc = slab"), for printing the resolved
// configuration.
std::string describe(const PolicySet& p);

// ---- The policy table ----

struct FieldAssign {
  PolicyFieldId field;
  uint32_t raw;
};

using PolicyCodeFn = void (*)(PolicySet&, MmConfig&);
inline constexpr size_t kMaxPolicyAssigns = 4;

// One row of policies.def, built by SIMCACHE_POLICY_ROW below.
struct PolicyInfo {
  std::string_view name;     // "node-slab"
  PolicyFieldId group;       // two policies of one group conflict
  std::string_view summary;  // one line for --list and docs
  std::array<FieldAssign, kMaxPolicyAssigns> assigns{};
  uint8_t nr_assigns = 0;
  PolicyCodeFn code = nullptr;
  std::string_view code_name;

  constexpr PolicyInfo(std::string_view n, PolicyFieldId g, std::string_view s)
      : name(n), group(g), summary(s) {}
  // More than kMaxPolicyAssigns SET()s fail to compile: at() throws, and
  // the table is a constant expression.
  constexpr PolicyInfo set(PolicyFieldId f, uint32_t raw) const {
    PolicyInfo r = *this;
    r.assigns.at(r.nr_assigns++) = FieldAssign{f, raw};
    return r;
  }
  constexpr PolicyInfo with_code(PolicyCodeFn fn, std::string_view fn_name) const {
    PolicyInfo r = *this;
    r.code = fn;
    r.code_name = fn_name;
    return r;
  }
  constexpr std::span<const FieldAssign> sets() const { return {assigns.data(), nr_assigns}; }
  constexpr bool sets_field(PolicyFieldId f) const {
    for (const FieldAssign& a : sets())
      if (a.field == f) return true;
    return false;
  }
};

template <class T>
constexpr uint32_t policy_raw(T v) {
  return static_cast<uint32_t>(v);
}

// The expansion of one policies.def row. Brace-initialising the field's
// own type rejects a value of the wrong enum or a narrowing one.
#define SIMCACHE_POLICY_SET(field, value)                   \
  .set(::simcache::iou::PolicyFieldId::field,               \
       ::simcache::iou::policy_raw(decltype(::simcache::iou::PolicySet::field){value}))
#define SIMCACHE_POLICY_CODE(fn) .with_code(&fn, #fn)
#define SIMCACHE_POLICY_ROW(name, group, summary, effects) \
  ::simcache::iou::PolicyInfo(name, ::simcache::iou::PolicyFieldId::group, summary) effects

// The first problem of a table, or an empty `what`: the baseline (group
// none, no effects) comes first and only there; names are unique, not
// empty and free of '+', ',' and blanks; a policy's group is one of the
// fields it sets; no field is set twice by one policy.
struct PolicyTableProblem {
  std::string_view what;
  size_t index = 0;  // the offending entry
};

constexpr PolicyTableProblem check_policy_table(std::span<const PolicyInfo> t) {
  if (t.empty()) return {"the table is empty", 0};
  const PolicyInfo& b = t.front();
  if (b.group != PolicyFieldId::none || b.nr_assigns != 0 || b.code != nullptr)
    return {"the first entry must be the baseline: group none, no effects", 0};
  for (size_t i = 0; i < t.size(); ++i) {
    const PolicyInfo& p = t[i];
    if (p.name.empty()) return {"empty name", i};
    if (p.name.find_first_of("+, \t") != std::string_view::npos)
      return {"a name may not contain '+', ',' or blanks", i};
    for (size_t j = 0; j < i; ++j)
      if (t[j].name == p.name) return {"declared twice", i};
    if (i == 0) continue;
    if (p.group == PolicyFieldId::none) return {"only the baseline has group none", i};
    if (!p.sets_field(p.group)) return {"its group is not among the fields it SETs", i};
    for (size_t a = 0; a < p.nr_assigns; ++a)
      for (size_t c = 0; c < a; ++c)
        if (p.assigns[a].field == p.assigns[c].field) return {"sets one field twice", i};
  }
  return {};
}

// Name -> policy, over one table; get() is the table of policies.def
// (checked at compile time too). A table with a problem keeps it as
// errors(), and parse() then fails with it.
class PolicyRegistry {
 public:
  explicit PolicyRegistry(std::span<const PolicyInfo> table);
  static const PolicyRegistry& get();

  const PolicyInfo* find(std::string_view name) const;
  std::span<const PolicyInfo> all() const { return table_; }  // baseline first
  const PolicyInfo& baseline() const { return table_.front(); }
  const std::vector<std::string>& errors() const { return errors_; }

  // Every name, sorted, comma-separated.
  std::string names() const;
  // See parse_policies().
  bool parse(std::string_view spec, const KernelProfile* profile, PolicySet* out,
             MmConfig* mm, std::string* error) const;

 private:
  std::span<const PolicyInfo> table_;
  std::vector<std::string> errors_;
};

// Applies one policy: its SET()s, then its code, then export_to_mm().
void apply_policy(const PolicyInfo& info, PolicySet& p, MmConfig& mm);

// PolicyRegistry::get().names().
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

// The docs' policy section (docs/scenarios.md, between its
// policy-table markers): the policies, then the fields.
std::string policy_table_markdown();
// The knob table of docs/knobs.md (between its knob-table markers): one
// row per field with unit, default, range, short key and source.
std::string knob_table_markdown();
// The spec of a PolicySet relative to the baseline: every field that
// differs from its default as NAME=VALUE joined with '+' ("unpatched" if
// none). parse_policies() of it gives back the same PolicySet.
std::string knob_spec(const PolicySet& p);

}  // namespace simcache::iou
