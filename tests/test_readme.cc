// README.md is executed: its lists of policies, kernel profiles,
// scenarios, presets and knobs are generated from the tables of record
// (between markers), and the output it quotes is what the command above
// the quote prints now.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "sim/cli/cli.h"
#include "sim/run/scenario.h"
#include "test_cost_util.h"

using namespace simcache;
using simcache::testing::read_text;
using simcache::testing::repo_file;

namespace {

// "- key: `a`, `b`, ...;" folded at 76 columns, continuation indented 2.
std::string item(const std::string& key, const std::vector<std::string>& names, const char* end) {
  std::string out, line = "- " + key + ":";
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string word = names[i] + (i + 1 < names.size() ? "," : end);
    if (line.size() + 1 + word.size() > 76) out += line + "\n", line = " ";
    line += " " + word;
  }
  return out + line + "\n";
}

std::string lists() {
  std::vector<std::string> pol, ker, scen, pre, knobs;
  for (const iou::PolicyInfo& p : iou::PolicyRegistry::get().all())
    if (p.nr_assigns || p.code) pol.push_back("`" + std::string(p.name) + "`");
  for (const iou::KernelProfile& k : iou::kernel_profiles())
    ker.push_back("`" + std::string(k.name) + "`" +
                  (k.name == iou::kDefaultProfile ? " (default)" : ""));
  for (const sim::ScenarioInfo& s : sim::ScenarioRegistry::get().all())
    scen.push_back("`" + std::string(s.name) + "`");
  for (const sim::PresetInfo& p : sim::ScenarioRegistry::get().presets())
    pre.push_back("`" + std::string(p.name) + "`");
  for (const iou::PolicyFieldInfo& f : iou::policy_fields())
    knobs.push_back("`" + std::string(f.name) + "`");
  return item(fmt::format("the {} policies under discussion (docs/scenarios.md)", pol.size()), pol,
              ";") +
         item(fmt::format("{} kernel profiles", ker.size()), ker, ";") +
         item(fmt::format("{} scenarios", scen.size()), scen, ";") +
         item(fmt::format("{} presets", pre.size()), pre, ";") +
         item(fmt::format("{} knobs (docs/knobs.md)", knobs.size()), knobs, ";");
}

std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const size_t a = text.find(begin), b = text.find(end);
  if (a == std::string::npos || b == std::string::npos || b < a) return "(markers missing)";
  return text.substr(a + begin.size() + 1, b - a - begin.size() - 1);
}

std::vector<std::string> split_args(const std::string& cmd) {
  std::vector<std::string> out;
  std::istringstream in(cmd);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

TEST_CASE("README: the lists are the tables of record", "[docs][readme]") {
  const std::string readme = read_text(repo_file("README.md"));
  const std::string want = lists();
  const std::string got =
      between(readme, "<!-- lists:begin (generated from the tables of record; tests/test_readme.cc) -->",
              "<!-- lists:end -->");
  if (got != want) {
    const std::string path = (std::filesystem::temp_directory_path() / "readme-lists.md").string();
    std::ofstream(path) << want;
    FAIL_CHECK("README.md's lists are stale; the generated ones are in " << path);
  }
}

// Each quote: "<!-- output of: simcache ARGS -->", then a fenced block
// whose lines must each be a line of that command's output, in order.
TEST_CASE("README: quoted output is what the command prints now", "[docs][readme]") {
  const std::string readme = read_text(repo_file("README.md"));
  const std::string mark = "<!-- output of: simcache ";
  size_t quotes = 0;
  for (size_t at = readme.find(mark); at != std::string::npos; at = readme.find(mark, at + 1)) {
    ++quotes;
    const size_t end = readme.find(" -->", at);
    REQUIRE(end != std::string::npos);
    const std::string cmd = readme.substr(at + mark.size(), end - at - mark.size());
    INFO("simcache " << cmd);
    const size_t open = readme.find("```\n", end);
    const size_t close = readme.find("```\n", open + 4);
    REQUIRE(close != std::string::npos);
    const std::string quote = readme.substr(open + 4, close - open - 4);
    const std::filesystem::path cwd = std::filesystem::current_path();
    std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
    const sim::CliOutcome o = sim::run_cli(split_args(cmd));
    std::filesystem::current_path(cwd);
    REQUIRE(o.status == 0);
    std::istringstream q(quote);
    size_t from = 0;
    for (std::string line; std::getline(q, line);) {
      if (line.empty() || line == "...") continue;
      INFO(line);
      const size_t hit = o.out.find("\n" + line + "\n", from);
      CHECK(hit != std::string::npos);
      if (hit != std::string::npos) from = hit + 1;
    }
  }
  CHECK(quotes >= 1);
}
