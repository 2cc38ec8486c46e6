// simcache geometry-check: the geometry the model derives
// (model/mm/geometry.h) for every cache it creates, against the running
// kernel's /sys/kernel/slab/<cache>/ at the host's CPU count. Exit 0 when
// every compared file agrees, 1 on a mismatch, 77 when the sysfs tree
// cannot be read (ctest SKIP_RETURN_CODE), 2 on a bad flag.
#include <charconv>

#include <fmt/format.h>
#include "model/io_uring/io_uring_mm.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"
#include "sim/calibrate/host_slab.h"
#include "sim/cli/cli.h"

namespace simcache::sim {
namespace {

int64_t model_field(const CacheInfo& c, std::string_view f) {
  if (f == "order") return c.order;
  if (f == "objs_per_slab") return c.objs_per_slab;
  if (f == "min_partial") return c.min_partial;
  if (f == "cpu_partial") return c.cpu_partial;
  return c.sheaf_capacity;
}

// The caches a booted model kernel has: kmalloc caches and io_uring_init()'s.
std::vector<CacheInfo> model_caches(const iou::KernelProfile& prof, int cpus) {
  MmConfig mc;
  iou::apply_profile(prof, mc);
  mc.nr_cpus = static_cast<uint16_t>(cpus);
  mc.track_history = false;
  iou::PolicySet ps;
  std::string err;
  iou::parse_policies("unpatched", &prof, &ps, &mc, &err);
  Mm mm(mc);
  iou::MmIoUring io(mm, prof, ps);
  std::vector<CacheInfo> out;
  for (CacheId s : mm.caches()) out.push_back(mm.info(s));
  return out;
}

}  // namespace

CliOutcome run_geometry_cli(const ParsedFlags& f, const Args&) {
  std::string error;
  const std::string root = f.v.count("sysfs") ? f.v.at("sysfs") : "/sys/kernel/slab";
  int cpus = 0;
  if (f.v.count("cpus")) {
    const std::string& s = f.v.at("cpus");
    auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), cpus);
    if (e != std::errc() || p != s.data() + s.size() || cpus < 1 || cpus > 1024)
      return cli_fail(fmt::format("--cpus: '{}' is not a CPU count in [1, 1024]", s));
  } else if (!read_cpu_count("/sys/devices/system/cpu/present", &cpus, &error)) {
    return {77, "", fmt::format("simcache geometry-check: SKIPPED: {}\n", error)};
  }
  const std::string release = host_kernel_release();
  const std::string kname = f.v.count("kernel") ? f.v.at("kernel") : nearest_kernel_profile(release);
  const iou::KernelProfile* prof = iou::profile_by_name(kname, &error);
  if (!prof) return cli_fail("--kernel: " + error);
  if (!host_slab_readable(root, &error))
    return {77, "", fmt::format("simcache geometry-check: SKIPPED: {}\n", error)};
  std::string out = fmt::format(
      "simcache geometry-check: model profile {} at {} CPUs against {} (kernel {})\n",
      prof->name, cpus, root, release);
  int compared = 0, absent = 0, fields = 0, bad = 0;
  for (const CacheInfo& c : model_caches(*prof, cpus)) {
    HostCache h;
    if (!read_host_cache(root, c.name, &h, &error))
      return {77, out, "simcache geometry-check: SKIPPED: " + error + "\n"};
    if (!h.present) {
      ++absent;
      if (f.v.count("verbose")) out += fmt::format("  {:<22} absent on the host\n", c.name);
      continue;
    }
    ++compared;
    std::string line;
    for (const char* file : kHostGeometryFiles) {
      auto it = h.fields.find(file);
      if (it == h.fields.end()) continue;
      ++fields;
      const int64_t m = model_field(c, file);
      const bool ok = m == it->second;
      bad += !ok;
      line += fmt::format(" {}={}{}", file, m,
                          ok ? "" : fmt::format(" (host {}) MISMATCH", it->second));
    }
    if (f.v.count("verbose") || line.find("MISMATCH") != std::string::npos)
      out += fmt::format("  {:<22}{}\n", c.name, line);
  }
  out += fmt::format("{} caches compared ({} absent on the host), {} files, {} mismatch{}\n",
                     compared, absent, fields, bad, bad == 1 ? "" : "es");
  return {bad ? 1 : 0, out, ""};
}

}  // namespace simcache::sim
