// The running kernel as the model needs to see it: the geometry files of
// /sys/kernel/slab/<cache>/ (the kernel's own slab_attr show functions:
// order_show(), objs_per_slab_show(), min_partial_show(),
// cpu_partial_show(), sheaf_capacity_show()), the present CPU count that
// calculate_order() used at boot, and the release. Read-only; every path
// is a parameter so tests can point it at a fake tree.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace simcache::sim {

// The geometry files the model derives (model/mm/geometry.h), in report order.
inline constexpr const char* kHostGeometryFiles[] = {"order", "objs_per_slab", "min_partial",
                                                     "cpu_partial", "sheaf_capacity"};

struct HostCache {
  std::string name;
  bool present = false;                   // the directory (or its alias link) exists
  std::map<std::string, int64_t> fields;  // file -> value; a file absent here is absent there
};

// False, with the reason, if `root` (normally /sys/kernel/slab) cannot be
// listed or has no readable kmalloc cache.
bool host_slab_readable(const std::string& root, std::string* why);
// Reads one cache's geometry files. A missing cache is not an error
// (present = false); an unreadable or malformed file is ("PATH: ...").
bool read_host_cache(const std::string& root, const std::string& name, HostCache* out,
                     std::string* error);
// CPUs in a kernel cpu list file ("0-1,4" -> 3; /sys/devices/system/cpu/present).
bool read_cpu_count(const std::string& path, int* cpus, std::string* error);
// uname -r.
std::string host_kernel_release();
// The simcache kernel profile nearest to a release ("6.18.44-x" -> "v6.18";
// distance in major*100 + minor, the older one on a tie).
std::string nearest_kernel_profile(const std::string& release);

}  // namespace simcache::sim
