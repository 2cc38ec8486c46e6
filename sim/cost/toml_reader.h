// Strict reading of simcache's TOML files (cost profiles, the measurement
// mapping): every error is one line naming the file, the line and the
// field.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include "model/kernel/policy.h"

namespace simcache::sim {

// A user string made safe for a one-line message: control characters
// (newline, tab, ESC, ...) and DEL become \n, \t, \xNN; at most `max`
// bytes are kept (iou::escape_controls, the one escaper).
inline std::string escape_line(std::string_view s, size_t max = 200) {
  return iou::escape_controls(s, max);
}

// Profile files are small; anything larger is not a profile.
inline constexpr size_t kMaxProfileBytes = 1u << 20;

// Reads a whole input file of at most `max` bytes (a larger one, or an
// endless one like /dev/zero, is an error, not an allocation failure).
// Directories are refused; pipes and FIFOs are read like files.
inline bool read_capped_file(const std::string& path, size_t max, std::string_view what,
                             std::string* out, std::string* error) {
  const std::string name = escape_line(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = fmt::format("{}: cannot read {}: {}", name, what, std::strerror(errno));
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    *error = fmt::format("{}: cannot read {}: is a directory", name, what);
    return false;
  }
  out->clear();
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = fmt::format("{}: cannot read {}: {}", name, what, std::strerror(errno));
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    if (out->size() + static_cast<size_t>(n) > max) {
      ::close(fd);
      out->clear();
      *error = fmt::format("{}: {} is larger than the limit of {} bytes", name, what, max);
      return false;
    }
    out->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

struct TomlReader {
  std::string path;
  std::string* error;
  bool required_nonempty = false;  // a required string may not be ""

  static std::string one_line(std::string_view s) { return escape_line(s, 400); }
  // toml::parse() with the syntax error turned into file:line: message.
  bool parse(std::string_view text, toml::table* out) const {
    try {
      *out = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      *error = fmt::format("{}:{}: syntax: {}", escape_line(path), e.source().begin.line,
                           one_line(e.description()));
      return false;
    }
    return true;
  }
  bool fail(const toml::node* n, const std::string& field, const std::string& msg) const {
    *error = fmt::format("{}:{}: {}: {}", escape_line(path), n ? n->source().begin.line : 0,
                         escape_line(field), one_line(msg));
    return false;
  }
  bool keys(const toml::table& t, const std::set<std::string>& allowed,
            const std::string& where) const {
    for (const auto& [k, v] : t)
      if (!allowed.count(std::string(k.str())))
        return fail(&v, where + std::string(k.str()), "unknown field");
    return true;
  }
  bool str(const toml::table& t, const char* key, const std::string& where, bool required,
           std::string* out) const {
    const toml::node* n = t.get(key);
    if (!n) return required ? fail(&t, where + key, "missing") : true;
    if (!n->is_string()) return fail(n, where + key, "expected a string");
    *out = n->value<std::string>().value_or("");
    if (required && required_nonempty && out->empty())
      return fail(n, where + key, "must not be empty");
    return true;
  }
  bool num(const toml::table& t, const char* key, const std::string& where, bool required,
           double lo, double hi, double* out) const {
    const toml::node* n = t.get(key);
    if (!n) return required ? fail(&t, where + key, "missing") : true;
    if (!n->is_number()) return fail(n, where + key, "expected a number");
    const double v = n->value<double>().value_or(NAN);
    if (!std::isfinite(v) || v < lo || v > hi)
      return fail(n, where + key, fmt::format("{} is outside [{}, {}]", v, lo, hi));
    *out = v;
    return true;
  }
};

}  // namespace simcache::sim
