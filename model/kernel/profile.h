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

// Every field is a row of kernel_profile.def (type, default, unit, what
// it is, where its values come from).
struct KernelProfile {
  std::string_view name;
  std::string_view summary;
#define KERNEL_FIELD(TYPE, NAME, DEFAULT, ...) TYPE NAME = DEFAULT;
#include "model/kernel/kernel_profile.def"
};

// The fields, in table order: what the run record, the docs' fact table
// and --list print.
enum class KernelFieldType : uint8_t { boolean, u32, gfp, slub_gen, memcg_shape };
struct KernelFieldInfo {
  std::string_view name, unit, label, source;
  KernelFieldType type;
};
std::span<const KernelFieldInfo> kernel_profile_fields();
// Field `i` of `p` as text: true/false, a number, gfp names, v6.18 / 7.x,
// v6_18 / v7_1.
std::string kernel_field_text(const KernelProfile& p, size_t i);

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
