// The PolicySet field table expanded: names, kinds, value texts, the run
// record, describe() and the copy of mm-layer fields into MmConfig.
#include "model/kernel/policy.h"

#include <string>
#include <type_traits>

#include "model/mm/mm.h"

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

constexpr PolicyFieldInfo kFields[] = {
#define POLICY_FIELD(Type, name, def, layer, description)                         \
  PolicyFieldInfo{PolicyFieldId::name, #name,       #Type, #layer, description, \
                  kind_of<Type>(),     values_of<Type>()},
#include "model/kernel/policy_fields.def"
};
static_assert(std::size(kFields) == kNumPolicyFields);

}  // namespace

std::span<const PolicyFieldInfo> policy_fields() { return kFields; }

const PolicyFieldInfo& policy_field(PolicyFieldId id) {
  return kFields[static_cast<size_t>(id)];
}

const PolicyFieldInfo* policy_field_by_name(std::string_view name) {
  for (const PolicyFieldInfo& f : kFields)
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
    case FieldKind::unsigned_int: return std::to_string(raw);
    case FieldKind::enumeration:
      return raw < f.values.size() ? std::string(f.values[raw].name) : "?";
  }
  return "?";
}

void export_to_mm(const PolicySet& p, MmConfig& mm) {
#define SIMCACHE_EXPORT_io_uring(Type, name, def)
#define SIMCACHE_EXPORT_mm(Type, name, def) \
  if (p.name != Type{def}) mm.name = p.name;
#define POLICY_FIELD(Type, name, def, layer, description) \
  SIMCACHE_EXPORT_##layer(Type, name, def)
#include "model/kernel/policy_fields.def"
#undef SIMCACHE_EXPORT_io_uring
#undef SIMCACHE_EXPORT_mm
}

std::vector<PolicyFieldValue> policy_record(const PolicySet& p) {
  std::vector<PolicyFieldValue> out;
  out.reserve(kNumPolicyFields);
  for (const PolicyFieldInfo& f : kFields) {
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
