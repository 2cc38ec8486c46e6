// The kernel profiles (facts per version), built at compile time from the
// rows of kernel_profile.def; where each value comes from is that table's
// source column and docs/model-io_uring.md, "Profiles".
#include "model/kernel/profile.h"

#include <array>

#include "model/gfp.h"
#include "model/kernel/policy.h"
#include "model/mm/mm_config.h"

namespace simcache::iou {
namespace {

// The rows of kernel_profile.def: a base and the fields a row sets.
using Setter = void (*)(KernelProfile&);
struct Row {
  std::string_view name, base, summary;
  Setter set;
};

#define SET(FIELD, VALUE) p.FIELD = decltype(p.FIELD){VALUE};
#define KERNEL_PROFILE(NAME, BASE, SUMMARY, ...) \
  Row{NAME, BASE, SUMMARY, [](KernelProfile& p) constexpr { (void)p; __VA_ARGS__ }},
constexpr Row kRows[] = {
#include "model/kernel/kernel_profile.def"
};
#undef SET
constexpr size_t kNumProfiles = std::size(kRows);

constexpr size_t row_of(std::string_view name) {
  for (size_t i = 0; i < kNumProfiles; ++i)
    if (kRows[i].name == name) return i;
  return kNumProfiles;
}

// A row's values: its base's (recursively), then its SETs. Evaluated at
// compile time, so a bad base is a compile error.
constexpr KernelProfile build(size_t i, size_t depth = 0) {
  if (depth > kNumProfiles) throw "kernel_profile.def: circular base";
  KernelProfile p{};
  if (!kRows[i].base.empty()) {
    const size_t b = row_of(kRows[i].base);
    if (b == kNumProfiles) throw "kernel_profile.def: unknown base";
    p = build(b, depth + 1);
  }
  p.name = kRows[i].name;
  p.summary = kRows[i].summary;
  kRows[i].set(p);
  return p;
}

constexpr std::array<KernelProfile, kNumProfiles> kProfiles = [] {
  std::array<KernelProfile, kNumProfiles> out{};
  for (size_t i = 0; i < kNumProfiles; ++i) {
    if (row_of(kRows[i].name) != i) throw "kernel_profile.def: duplicate name";
    out[i] = build(i);
  }
  return out;
}();

constexpr KernelFieldType type_of(std::string_view t) {
  return t == "bool"      ? KernelFieldType::boolean
         : t == "gfp_t"   ? KernelFieldType::gfp
         : t == "SlubGen" ? KernelFieldType::slub_gen
         : t == "MemcgShape" ? KernelFieldType::memcg_shape
         : t == "uint32_t"   ? KernelFieldType::u32
                             : throw "kernel_profile.def: unknown field type";
}

#define KERNEL_FIELD(TYPE, NAME, DEFAULT, UNIT, LABEL, SOURCE) \
  KernelFieldInfo{#NAME, UNIT, LABEL, SOURCE, type_of(#TYPE)},
constexpr KernelFieldInfo kKernelFields[] = {
#include "model/kernel/kernel_profile.def"
};

std::string text_of(bool v, KernelFieldType) { return v ? "true" : "false"; }
std::string text_of(uint32_t v, KernelFieldType t) {
  return t == KernelFieldType::gfp ? format_gfp(v) : std::to_string(v);
}
std::string text_of(SlubGen v, KernelFieldType) { return v == SlubGen::v6_18 ? "v6.18" : "7.x"; }
std::string text_of(MemcgShape v, KernelFieldType) {
  return v == MemcgShape::v6_18 ? "v6_18" : "v7_1";
}

}  // namespace

std::span<const KernelFieldInfo> kernel_profile_fields() { return kKernelFields; }

std::string kernel_field_text(const KernelProfile& p, size_t i) {
  size_t k = 0;
#define KERNEL_FIELD(TYPE, NAME, ...) \
  if (i == k++) return text_of(p.NAME, kKernelFields[i].type);
#include "model/kernel/kernel_profile.def"
  return "";
}

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
