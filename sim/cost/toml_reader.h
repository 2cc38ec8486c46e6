// Strict reading of simcache's TOML files (cost profiles, the measurement
// mapping): every error is one line naming the file, the line and the
// field.
#pragma once

#include <toml++/toml.h>

#include <cmath>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include "model/kernel/policy.h"
#include "sim/io/input.h"

namespace simcache::sim {

// A user string made safe for a one-line message: control characters
// (newline, tab, ESC, ...) and DEL become \n, \t, \xNN; at most `max`
// bytes are kept (iou::escape_controls, the one escaper).
inline std::string escape_line(std::string_view s, size_t max = 200) {
  return iou::escape_controls(s, max);
}

struct TomlReader {
  std::string path;
  std::string* error;
  bool required_nonempty = false;  // a required string may not be ""

  static std::string one_line(std::string_view s) { return escape_line(s, 400); }
  // toml::parse() with the syntax error turned into file:line: message.
  bool parse(std::string_view text, toml::table* out) const {
    if (!ascii_outside_strings(text)) return false;
    try {
      *out = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
      *error = fmt::format("{}:{}: syntax: {}", escape_line(path), e.source().begin.line,
                           one_line(e.description()));
      return false;
    }
    return true;
  }
  // TOML allows a non-ASCII character only inside a string or a comment.
  // toml++ 3.3 reaches __builtin_unreachable() (undefined behaviour; a
  // fuzzer found it) when it meets U+00A1..U+0499 where whitespace may
  // stand, so such a character is refused here, before the parser sees it,
  // as the syntax error it is.
  bool ascii_outside_strings(std::string_view t) const {
    size_t line = 1;
    // A raw control character is not TOML anywhere (strings and comments
    // included), and would let the parser and this scan disagree on where
    // a string ends.
    for (size_t i = 0; i < t.size(); ++i) {
      const auto u = static_cast<unsigned char>(t[i]);
      if (u == '\n') ++line;
      if ((u < 0x20 && u != '\t' && u != '\n' && u != '\r') || u == 0x7f) {
        *error = fmt::format("{}:{}: syntax: control character U+{:04X}", escape_line(path),
                             line, static_cast<unsigned>(u));
        return false;
      }
    }
    line = 1;
    for (size_t i = 0; i < t.size();) {
      const char c = t[i];
      if (c == '\n') {
        ++line, ++i;
      } else if (c == '#') {
        while (i < t.size() && t[i] != '\n') ++i;
      } else if (c == '"' || c == '\'') {
        const bool multi = t.substr(i, 3) == std::string(3, c);
        const size_t open = multi ? 3 : 1;
        i += open;
        while (i < t.size()) {
          if (c == '"' && t[i] == '\\') {
            i += 2;
          } else if (t.substr(i, open) == std::string(open, c)) {
            i += open;
            break;
          } else if (t[i] == '\n') {
            if (!multi) break;  // an unterminated one-line string: the parser says so
            ++line, ++i;
          } else {
            ++i;
          }
        }
      } else if (static_cast<unsigned char>(c) >= 0x80) {
        *error = fmt::format("{}:{}: syntax: a non-ASCII character outside a string or comment",
                             escape_line(path), line);
        return false;
      } else {
        ++i;
      }
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
