#include "model/gfp.h"

namespace simcache {
namespace {

// The gfp names show_gfp_flags() prints that change what the model does;
// composite names first, as the kernel prints them.
constexpr GfpName kGfp[] = {
    {"GFP_KERNEL_ACCOUNT", GFP_KERNEL_ACCOUNT},
    {"GFP_KERNEL", GFP_KERNEL},
    {"GFP_ATOMIC", GFP_ATOMIC},
    {"GFP_NOWAIT", GFP_NOWAIT},
    {"GFP_NOFS", GFP_KERNEL},
    {"GFP_NOIO", GFP_KERNEL},
    {"GFP_USER", GFP_KERNEL},
    {"GFP_HIGHUSER", GFP_KERNEL},
    {"GFP_HIGHUSER_MOVABLE", GFP_KERNEL},
    {"GFP_TRANSHUGE", GFP_KERNEL},
    {"GFP_TRANSHUGE_LIGHT", 0},
    {"GFP_DMA", __GFP_DMA},
    {"__GFP_DMA", __GFP_DMA},
    {"__GFP_RECLAIMABLE", __GFP_RECLAIMABLE},
    {"__GFP_ACCOUNT", __GFP_ACCOUNT},
    {"__GFP_ZERO", __GFP_ZERO},
    {"__GFP_NOWARN", __GFP_NOWARN},
    {"__GFP_DIRECT_RECLAIM", __GFP_DIRECT_RECLAIM},
    {"__GFP_KSWAPD_RECLAIM", __GFP_KSWAPD_RECLAIM},
    {"__GFP_RECLAIM", __GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM},
    {"__GFP_THISNODE", __GFP_THISNODE},
    {"__GFP_NOFAIL", __GFP_NOFAIL},
    {"__GFP_NORETRY", __GFP_NORETRY},
    {"__GFP_NOMEMALLOC", __GFP_NOMEMALLOC},
    {"__GFP_HIGH", __GFP_HIGH},
    {"__GFP_COMP", __GFP_COMP},
    {"__GFP_NO_OBJ_EXT", __GFP_NO_OBJ_EXT},
};

}  // namespace

std::span<const GfpName> gfp_names() { return kGfp; }

std::string format_gfp(gfp_t g) {
  std::string out;
  gfp_t left = g;
  for (const GfpName& n : kGfp) {
    if (n.bits == 0 || (left & n.bits) != n.bits) continue;
    out += (out.empty() ? "" : "|") + std::string(n.name);
    left &= ~n.bits;
  }
  return out.empty() ? "0" : out;
}

}  // namespace simcache
