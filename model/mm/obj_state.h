// What a slab object is to the model (free, cached per CPU, allocated,
// parked in a caller's mempool) and the KASAN-style report the model
// files when a caller breaks the rules. SLUB keeps both; the facade and
// the layers above read them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "model/types.h"

namespace simcache {

enum class ObjState : uint8_t {
  kFree = 0,        // on a slab freelist
  kCpuFreelist,     // 6.18: on a kmem_cache_cpu lockless freelist
  kInSheaf,         // 7.x: in a per-CPU or barn sheaf
  kAllocated,       // owned by a caller
  kMempool,         // allocated but parked in a caller's cache (poisoned)
};
std::string_view obj_state_name(ObjState s);

struct KasanReport {
  std::string kind;     // "double-free", "invalid-free", "wrong-cache-free",
                        // "use-after-put", "leak", "memcg-imbalance"
  Ptr ptr = kNull;
  std::string cache;
  std::string detail;   // the object's history in kernel-report style
  std::string where;    // innermost call-site scope when reported ("" if none)
};

}  // namespace simcache
