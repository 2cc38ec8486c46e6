// libFuzzer target: the /proc/slabinfo reader (sim/report/kernel_formats.h)
// on arbitrary bytes. It must return true or false with a one-line
// "FILE:LINE: ..." error, never crash; what it accepts must survive a
// write-read round trip through format_slabinfo().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sim/report/kernel_formats.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<SlabinfoRow> rows;
  std::string err;
  if (!parse_slabinfo(text, "fuzz", &rows, &err)) {
    if (err.rfind("fuzz:", 0) != 0 || err.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  std::vector<simcache::CacheInfo> caches;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    if (it->name.empty() || it->pagesperslab == 0 ||
        (it->pagesperslab & (it->pagesperslab - 1)) || it->pagesperslab > (1u << 30))
      return 0;  // not a shape the writer produces
    simcache::CacheInfo c;
    c.name = it->name;
    c.objects = it->active_objs;
    c.total_objects = it->num_objs;
    c.slab_size = it->objsize;
    c.objs_per_slab = it->objperslab;
    c.order = static_cast<uint32_t>(__builtin_ctz(it->pagesperslab));
    c.slabs = it->num_slabs;
    caches.push_back(c);
  }
  std::vector<SlabinfoRow> again;
  if (!parse_slabinfo(format_slabinfo(caches), "round-trip", &again, &err)) std::abort();
  if (again.size() != rows.size()) std::abort();
  return 0;
}
