#include "sim/calibrate/host_slab.h"

#include <sys/utsname.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <algorithm>

#include <fmt/format.h>
#include "model/kernel/profile.h"
#include "sim/io/input.h"

namespace simcache::sim {
namespace fs = std::filesystem;
namespace {
// The first line of a small kernel file, through the one input door.
bool first_line(const std::string& path, std::string* line, std::string* error) {
  if (!read_input(path, "the kernel file", line, error)) return false;
  line->resize(std::min(line->size(), line->find('\n')));
  return true;
}
}  // namespace

bool host_slab_readable(const std::string& root, std::string* why) {
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec) return *why = fmt::format("{}: cannot list: {}", root, ec.message()), false;
  std::string text, error;
  int order = -1;
  if (!first_line(root + "/kmalloc-64/order", &text, &error) ||
      std::from_chars(text.data(), text.data() + text.size(), order).ec != std::errc())
    return *why = fmt::format("{}/kmalloc-64/order: not readable", root), false;
  return true;
}

bool read_host_cache(const std::string& root, const std::string& name, HostCache* out,
                     std::string* error) {
  *out = HostCache{};
  out->name = name;
  std::error_code ec;
  const fs::path dir = fs::path(root) / name;
  if (!fs::is_directory(dir, ec)) return true;  // follows an alias symlink
  out->present = true;
  for (const char* file : kHostGeometryFiles) {
    const fs::path p = dir / file;
    if (!fs::exists(p, ec)) continue;
    std::string text;
    if (!first_line(p.string(), &text, error)) return false;
    int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, e] = std::from_chars(text.data(), end, v);
    if (e != std::errc() || (ptr != end && *ptr != ' ')) {  // "5" or "120 C0=..."
      *error = fmt::format("{}: '{}' is not a number", p.string(), text);
      return false;
    }
    out->fields[file] = v;
  }
  return true;
}

bool read_cpu_count(const std::string& path, int* cpus, std::string* error) {
  std::string text;
  if (!first_line(path, &text, error)) return false;
  int n = 0;
  const char* s = text.c_str();
  while (*s) {
    char* end;
    const long a = std::strtol(s, &end, 10);
    if (end == s) return *error = fmt::format("{}: '{}' is not a cpu list", path, text), false;
    long b = a;
    if (*end == '-') b = std::strtol(end + 1, &end, 10);
    n += static_cast<int>(b - a + 1);
    s = *end == ',' ? end + 1 : end;
  }
  if (n < 1) return *error = fmt::format("{}: '{}' lists no CPU", path, text), false;
  *cpus = n;
  return true;
}

std::string host_kernel_release() {
  struct utsname u {};
  return uname(&u) == 0 ? u.release : "";
}

std::string nearest_kernel_profile(const std::string& release) {
  auto version = [](std::string_view s) {
    int major = 0, minor = 0;
    if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
    auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), major);
    if (e == std::errc() && p < s.data() + s.size() && *p == '.')
      std::from_chars(p + 1, s.data() + s.size(), minor);
    return major * 100 + minor;
  };
  const int want = version(release);
  std::string best;
  int dist = 1 << 30;
  for (const auto& p : iou::kernel_profiles()) {  // oldest first: ties keep the older
    const int d = std::abs(version(p.name) - want);
    if (d < dist) dist = d, best = std::string(p.name);
  }
  return best;
}

}  // namespace simcache::sim
