// The gfp flag names show_gfp_flags() prints, for the model's gfp bits:
// the trace and op-file parsers read them, the run record and the kernel
// profiles' fact table print them.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "model/types.h"

namespace simcache {

struct GfpName {
  std::string_view name;
  gfp_t bits;
};
// Composite names first, as the kernel prints them.
std::span<const GfpName> gfp_names();
// "GFP_KERNEL|__GFP_ZERO"; "0" for none.
std::string format_gfp(gfp_t g);

}  // namespace simcache
