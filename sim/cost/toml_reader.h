// Strict reading of simcache's TOML files (cost profiles, the measurement
// mapping): every error is one line naming the file, the line and the
// field.
#pragma once

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

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
  // toml++ 3.3 reaches __builtin_unreachable() (undefined behaviour; the
  // fuzzer found it four ways) when it asks whether a character in some
  // non-ASCII ranges is whitespace. It asks wherever whitespace may stand
  // outside strings (a bare value such as 2"x is scanned to its end, quotes
  // and all), right after a backslash in a multi-line basic string, and at
  // the first character after a line-ending backslash. So such a character
  // is refused in those places, before the parser sees it, as a syntax
  // error. The scan follows TOML's grammar as far as it decides what is a
  // string: a quote opens one only where a key or a value begins; strings
  // end as TOML says (escapes, the up to two extra quotes a multi-line
  // string may end with). Where the scan is unsure, the text counts as
  // outside a string, so the worst it does is refuse a file that is not
  // TOML anyway.
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
    const auto non_ascii = [&](size_t i) { return static_cast<unsigned char>(t[i]) >= 0x80; };
    const auto refuse = [&](const char* where) {
      *error = fmt::format("{}:{}: syntax: a non-ASCII character {}", escape_line(path), line,
                           where);
      return false;
    };
    // Skips the string opening at i (a quote); false if it holds a
    // character the parser would test for whitespace.
    const auto skip_string = [&](size_t& i) {
      const char q = t[i];
      if (t.substr(i, 3) == std::string(3, q)) {
        for (i += 3; i < t.size();) {
          if (t[i] == q) {
            size_t run = 0;
            while (i + run < t.size() && t[i + run] == q) ++run;
            if (run >= 3) {  // the delimiter, after at most two quotes of content
              i += std::min<size_t>(run, 5);
              return true;
            }
            i += run;
          } else if (q == '"' && t[i] == '\\') {
            // An escape, or a line-ending backslash and the whitespace it trims.
            size_t j = i + 1;
            while (j < t.size() && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r' || t[j] == '\n'))
              line += t[j++] == '\n';
            if (j < t.size() && non_ascii(j))
              return refuse("after a backslash in a multi-line string");
            i = j == i + 1 ? i + 2 : j;
          } else {
            line += t[i++] == '\n';
          }
        }
        return true;
      }
      for (++i; i < t.size() && t[i] != '\n';) {
        if (t[i] == q) {
          ++i;
          break;
        }
        i += q == '"' && t[i] == '\\' && i + 1 < t.size() && t[i + 1] != '\n' ? 2 : 1;
      }
      return true;
    };
    // A bare value (number, date, boolean; or anything the scan does not
    // know) runs to a value terminator, quotes included.
    const auto skip_bare = [&](size_t& i) {
      for (; i < t.size() && std::string_view(" \t\r\n]},#").find(t[i]) == std::string_view::npos;
           ++i)
        if (non_ascii(i)) return refuse("outside a string or comment");
      return true;
    };
    enum class In { top, array, table };
    enum class Want { key, value, after };
    std::vector<In> nest{In::top};
    Want want = Want::key;
    line = 1;
    for (size_t i = 0; i < t.size();) {
      const char c = t[i];
      if (c == '\n') {
        ++line, ++i;
        if (nest.size() == 1) want = Want::key;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
      } else if (c == '#') {
        while (i < t.size() && t[i] != '\n') ++i;
      } else if ((c == '"' || c == '\'') && want != Want::after) {
        if (!skip_string(i)) return false;
        if (want == Want::value) want = Want::after;  // a key's quoted part: still a key
      } else if (want == Want::key) {
        if (c == '=') {
          want = Want::value;
        } else if (c == ']') {  // a table header's end
          want = Want::after;
        } else if (c == '}' && nest.back() == In::table) {  // {}
          nest.pop_back(), want = Want::after;
        } else if (non_ascii(i)) {
          return refuse("outside a string or comment");
        }
        ++i;  // a bare key's character, a dot, a header's [
      } else if (want == Want::value && c == '[') {
        nest.push_back(In::array), ++i;
      } else if (want == Want::value && c == '{') {
        nest.push_back(In::table), want = Want::key, ++i;
      } else if (c == ',' && nest.back() != In::top) {
        want = nest.back() == In::array ? Want::value : Want::key, ++i;
      } else if ((c == ']' && nest.back() == In::array) || (c == '}' && nest.back() == In::table)) {
        nest.pop_back(), want = Want::after, ++i;
      } else if (c == ']' || c == '}' || c == ',') {
        ++i;  // a header's second ]; or not TOML, which the parser says
      } else {
        if (!skip_bare(i)) return false;
        want = Want::after;
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
