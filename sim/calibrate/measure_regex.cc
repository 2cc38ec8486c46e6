// RE2 behind the mapping file's patterns (measure.h): linear-time matching
// with no recursion on the input, so user patterns and fields are safe.
#include <re2/re2.h>

#include <fmt/format.h>
#include "sim/calibrate/measure.h"
#include "sim/cost/toml_reader.h"

namespace simcache::sim {

namespace {
// Bounds RE2's compiled program (a pattern needing more is an error, not a
// slow run): ample for mapping.toml's rules.
constexpr int64_t kMaxRegexMemory = 8 << 20;
constexpr size_t kMaxPatternBytes = 1024;
}  // namespace

Regex compile_regex(const std::string& pattern, std::string* error) {
  if (pattern.size() > kMaxPatternBytes) {
    if (error)
      *error = fmt::format("pattern of {} bytes is longer than the limit of {}", pattern.size(),
                           kMaxPatternBytes);
    return nullptr;
  }
  RE2::Options o;
  o.set_case_sensitive(false);
  o.set_log_errors(false);
  o.set_max_mem(kMaxRegexMemory);
  auto re = std::make_shared<const RE2>(pattern, o);
  if (!re->ok()) {
    if (error)
      *error = fmt::format("bad regular expression '{}': {}", escape_line(pattern),
                           escape_line(re->error()));
    return nullptr;
  }
  return re;
}

int regex_groups(const Regex& re) { return re ? re->NumberOfCapturingGroups() : 0; }

bool regex_search(const Regex& re, std::string_view text,
                  std::vector<std::optional<std::string>>* groups) {
  const int n = groups ? re->NumberOfCapturingGroups() + 1 : 0;
  std::vector<re2::StringPiece> sp(static_cast<size_t>(n));
  if (!re->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED,
                 sp.data(), n))
    return false;
  if (groups) {
    groups->assign(static_cast<size_t>(n), std::nullopt);
    for (int i = 0; i < n; ++i)
      if (sp[static_cast<size_t>(i)].data() != nullptr)
        (*groups)[static_cast<size_t>(i)] = std::string(sp[static_cast<size_t>(i)]);
  }
  return true;
}

}  // namespace simcache::sim
