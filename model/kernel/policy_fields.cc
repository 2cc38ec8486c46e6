// The PolicySet field table expanded: names, kinds, value texts, the run
// record, describe() and the copy of mm-layer fields into MmConfig.
#include "model/kernel/policy.h"

#include <fmt/format.h>

#include <charconv>
#include <string>
#include <type_traits>

#include "model/mm/mm_config.h"

namespace simcache::iou {
namespace {

#define ENUM_VALUE(ident, name, meaning) EnumValueInfo{name, meaning},
#define POLICY_ENUM(Type, what, values)                    \
  constexpr EnumValueInfo kValues_##Type[] = {values};     \
  constexpr std::span<const EnumValueInfo> enum_values_of(Type) { return kValues_##Type; }
#include "model/kernel/policy_enums.def"
#undef ENUM_VALUE

template <class T>
constexpr FieldKind kind_of() {
  if constexpr (std::is_same_v<T, bool>) return FieldKind::boolean;
  else if constexpr (std::is_enum_v<T>) return FieldKind::enumeration;
  else return FieldKind::unsigned_int;
}

template <class T>
constexpr std::span<const EnumValueInfo> values_of() {
  if constexpr (std::is_enum_v<T>) return enum_values_of(T{});
  else return {};
}

template <class T>
constexpr uint32_t max_of(uint32_t declared) {
  if constexpr (std::is_same_v<T, bool>) return 1;
  else if constexpr (std::is_enum_v<T>) return static_cast<uint32_t>(enum_values_of(T{}).size() - 1);
  else return declared;
}

template <class T>
constexpr uint32_t min_of(uint32_t declared) {
  if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T>) return 0;
  else return declared;
}

constexpr PolicyFieldInfo kPolicyFields[] = {
#define POLICY_FIELD(Type, name, def, layer, unit, lo, hi, short_name, source, description) \
  PolicyFieldInfo{PolicyFieldId::name, #name, #Type, #layer, description, kind_of<Type>(),   \
                  values_of<Type>(), unit, min_of<Type>(lo), max_of<Type>(hi), short_name,  \
                  source, static_cast<uint32_t>(Type{def})},
#include "model/kernel/policy_fields.def"
};
static_assert(std::size(kPolicyFields) == kNumPolicyFields);

// The table's own rules: a default is in range (or `kernel`), short keys
// are unique and no short key is another field's full name.
constexpr bool knob_table_ok() {
  for (const PolicyFieldInfo& f : kPolicyFields) {
    if (f.min > f.max) return false;
    if (f.def_raw != kFromKernel && (f.def_raw < f.min || f.def_raw > f.max)) return false;
    if (f.def_raw == kFromKernel && f.kind != FieldKind::unsigned_int) return false;
    for (const PolicyFieldInfo& g : kPolicyFields) {
      if (f.short_name.empty() || &f == &g) continue;
      if (f.short_name == g.short_name || f.short_name == g.name) return false;
    }
  }
  return true;
}
static_assert(knob_table_ok(), "model/kernel/policy_fields.def: see knob_table_ok()");

}  // namespace

std::span<const PolicyFieldInfo> policy_fields() { return kPolicyFields; }

const PolicyFieldInfo& policy_field(PolicyFieldId id) {
  return kPolicyFields[static_cast<size_t>(id)];
}

const PolicyFieldInfo* policy_field_by_name(std::string_view name) {
  for (const PolicyFieldInfo& f : kPolicyFields)
    if (f.name == name) return &f;
  return nullptr;
}

uint32_t field_raw(const PolicySet& p, PolicyFieldId id) {
  switch (id) {
#define POLICY_FIELD(Type, name, ...) \
  case PolicyFieldId::name: return static_cast<uint32_t>(p.name);
#include "model/kernel/policy_fields.def"
    case PolicyFieldId::none: break;
  }
  return 0;
}

void set_field_raw(PolicySet& p, PolicyFieldId id, uint32_t raw) {
  switch (id) {
#define POLICY_FIELD(Type, name, ...) \
  case PolicyFieldId::name: p.name = static_cast<Type>(raw); return;
#include "model/kernel/policy_fields.def"
    case PolicyFieldId::none: return;
  }
}

std::string field_value_text(PolicyFieldId id, uint32_t raw) {
  const PolicyFieldInfo& f = policy_field(id);
  switch (f.kind) {
    case FieldKind::boolean: return raw ? "true" : "false";
    case FieldKind::unsigned_int:
      return raw == kFromKernel && f.def_raw == kFromKernel ? "kernel" : std::to_string(raw);
    case FieldKind::enumeration:
      return raw < f.values.size() ? std::string(f.values[raw].name) : "?";
  }
  return "?";
}

bool parse_field_value(const PolicyFieldInfo& f, std::string_view text, uint32_t* raw,
                       std::string* error) {
  auto bad = [&](std::string_view valid) {
    if (error) *error = fmt::format("policy.{} = '{}': expected {}", f.name, text, valid);
    return false;
  };
  switch (f.kind) {
    case FieldKind::boolean:
      if (text == "true" || text == "1") return *raw = 1, true;
      if (text == "false" || text == "0") return *raw = 0, true;
      return bad("true or false");
    case FieldKind::enumeration: {
      std::string names;
      for (size_t i = 0; i < f.values.size(); ++i) {
        if (f.values[i].name == text) return *raw = static_cast<uint32_t>(i), true;
        names += fmt::format("{}{}", i ? ", " : "", f.values[i].name);
      }
      return bad("one of " + names);
    }
    case FieldKind::unsigned_int: {
      const std::string range = fmt::format("{}..{} {}{}", f.min, f.max, f.unit,
                                            f.def_raw == kFromKernel ? " or kernel" : "");
      if (text == "kernel" && f.def_raw == kFromKernel) return *raw = kFromKernel, true;
      uint64_t v = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || v < f.min || v > f.max)
        return bad(range);
      *raw = static_cast<uint32_t>(v);
      return true;
    }
  }
  return bad("?");
}

const PolicyFieldInfo* knob_by_key(std::string_view key) {
  for (const PolicyFieldInfo& f : kPolicyFields)
    if (f.name == key || (!f.short_name.empty() && f.short_name == key)) return &f;
  return nullptr;
}

std::string escape_controls(std::string_view s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max) return out + "...";
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

static bool set_knob_raw(std::string_view name, std::string_view text, PolicySet* p,
                         MmConfig* mm, std::string* error);

bool set_knob(std::string_view name, std::string_view text, PolicySet* p, MmConfig* mm,
              std::string* error) {
  if (!set_knob_raw(name, text, p, mm, error)) {
    if (error) *error = escape_controls(*error);  // the name and value are the user's
    return false;
  }
  return true;
}

static bool set_knob_raw(std::string_view name, std::string_view text, PolicySet* p,
                         MmConfig* mm, std::string* error) {
  const PolicyFieldInfo* f = policy_field_by_name(name);
  if (f == nullptr) {
    if (error) {
      std::string names;
      for (const PolicyFieldInfo& g : kPolicyFields) names += fmt::format("{}{}", names.empty() ? "" : ", ", g.name);
      *error = fmt::format("unknown knob 'policy.{}'; valid knobs: {}", name, names);
    }
    return false;
  }
  uint32_t raw = 0;
  if (!parse_field_value(*f, text, &raw, error)) return false;
  set_field_raw(*p, f->id, raw);
  if (mm) export_to_mm(*p, *mm);
  return true;
}

void export_to_mm(const PolicySet& p, MmConfig& mm) {
#define SIMCACHE_EXPORT_io_uring(Type, name, def)
#define SIMCACHE_EXPORT_memcg(Type, name, def)
#define SIMCACHE_EXPORT_slab(Type, name, def)
#define SIMCACHE_EXPORT_mm(Type, name, def) \
  if (p.name != Type{def}) mm.name = p.name;
#define POLICY_FIELD(Type, name, def, layer, ...) SIMCACHE_EXPORT_##layer(Type, name, def)
#include "model/kernel/policy_fields.def"
#undef SIMCACHE_EXPORT_io_uring
#undef SIMCACHE_EXPORT_memcg
#undef SIMCACHE_EXPORT_slab
#undef SIMCACHE_EXPORT_mm
  // The memcg and slab layers' knobs live in nested MmConfig members
  // under their kernel names; kFromKernel means "leave the kernel's".
  const PolicySet d;
  if (p.memcg_charge_batch != d.memcg_charge_batch) mm.memcg.charge_batch = p.memcg_charge_batch;
  if (p.obj_stock_slots != kFromKernel) mm.memcg.obj_stock_slots = p.obj_stock_slots;
  if (p.obj_stock_refill_keep) mm.memcg.obj_stock_refill_keep = true;
  if (p.slab_sheaf_capacity != kFromKernel) mm.geometry.sheaf_capacity = p.slab_sheaf_capacity;
  if (p.slab_min_partial != kFromKernel) mm.geometry.min_partial = p.slab_min_partial;
  if (p.slab_cpu_partial != kFromKernel) mm.geometry.cpu_partial = p.slab_cpu_partial;
}

std::string knob_spec(const PolicySet& p) {
  const PolicySet d;
  std::string s;
  for (const PolicyFieldInfo& f : kPolicyFields) {
    const uint32_t raw = field_raw(p, f.id);
    if (raw == field_raw(d, f.id)) continue;
    s += fmt::format("{}{}={}", s.empty() ? "" : "+", f.name, field_value_text(f.id, raw));
  }
  return s.empty() ? "unpatched" : s;
}

std::vector<PolicyFieldValue> policy_record(const PolicySet& p) {
  std::vector<PolicyFieldValue> out;
  out.reserve(kNumPolicyFields);
  for (const PolicyFieldInfo& f : kPolicyFields) {
    const uint32_t raw = field_raw(p, f.id);
    out.push_back({&f, raw, field_value_text(f.id, raw)});
  }
  return out;
}

std::string describe(const PolicySet& p) {
  std::string s;
  for (const PolicyFieldValue& v : policy_record(p)) {
    s += v.field->name;
    s += " = ";
    s += v.text;
    s += '\n';
  }
  if (p.debug_bug != DebugBug::none) s += "debug_bug = set\n";
  return s;
}

}  // namespace simcache::iou
