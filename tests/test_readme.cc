// README.md and docs/ are executed: the README's lists of policies,
// kernel profiles, scenarios, presets and knobs are generated from the
// tables of record (between markers); output they quote under an
// "output of" marker is what that command prints now; every scenario
// command in a code block runs.
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
TEST_CASE("docs: quoted output is what the command prints now", "[docs][readme]") {
  std::string readme;  // README.md and every docs/*.md
  readme += read_text(repo_file("README.md"));
  for (const auto& e : std::filesystem::directory_iterator(repo_file("docs")))
    if (e.path().extension() == ".md") readme += read_text(e.path().string());
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
  CHECK(quotes >= 3);
}

// The prose under the grow-only quote restates two of its figures:
// prefill's change on the 4096-slot registration that installs 64 (to
// the percent) and the idle nodes prefill leaves.
TEST_CASE("README: the grow-only paragraph's figures are the quote's", "[docs][readme]") {
  const std::string readme = read_text(repo_file("README.md"));
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
  const sim::CliOutcome o = sim::run_cli(
      {"--scenario", "sparse4096", "--policy", "unpatched,node-slab+prefill,prefill-grow"});
  std::filesystem::current_path(cwd);
  REQUIRE(o.status == 0);
  const size_t block = o.out.find("register 4096 / install 64");
  REQUIRE(block != std::string::npos);
  const size_t vs = o.out.find("  vs A", block);
  REQUIRE(vs != std::string::npos);
  // "  vs A   +305.1% [+287,+323]   +2.2% [...]": B's change is the first.
  const double b = std::stod(o.out.substr(o.out.find('+', vs)));
  CHECK(readme.find(fmt::format("without prefill's +{:.0f} % on a 4096-slot", b)) !=
        std::string::npos);
  const size_t mem = o.out.find("  memory", vs);
  REQUIRE(mem != std::string::npos);
  // "  memory   1280B/0/45.0K   158K/4032/202K   ...": B's idle nodes.
  std::istringstream line(o.out.substr(mem, o.out.find('\n', mem) - mem));
  std::string word, a_mem, b_mem;
  line >> word >> a_mem >> b_mem;
  const std::string idle = b_mem.substr(b_mem.find('/') + 1, b_mem.rfind('/') - b_mem.find('/') - 1);
  CHECK(idle == "4032");
  CHECK(readme.find("where prefill (B)\nleaves " + idle + " (the memory line") != std::string::npos);
}

namespace {

// Words of a shell line: whitespace-separated, single quotes kept together
// and removed, a trailing "# comment" dropped.
std::vector<std::string> shell_words(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '\'') {
      quoted = !quoted, any = true;
    } else if (!quoted && c == '#' && cur.empty()) {
      break;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (any) out.push_back(cur), cur.clear(), any = false;
    } else {
      cur += c, any = true;
    }
  }
  if (any) out.push_back(cur);
  return out;
}

// Every `simcache --scenario ...` / `simcache --list` / `simcache sweep
// data/...` (a shipped grid) line of a code block
// in `text` that names no placeholder and no file the reader brings.
std::vector<std::vector<std::string>> scenario_commands(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  bool block = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      block = !block;
      continue;
    }
    if (!block || (line.rfind("simcache --scenario ", 0) != 0 && line != "simcache --list" &&
                   line.rfind("simcache sweep data/", 0) != 0))
      continue;
    std::vector<std::string> w = shell_words(line);
    w.erase(w.begin());
    bool runnable = true;
    for (size_t i = 0; i < w.size(); ++i) {
      runnable &= w[i].find('[') == std::string::npos && w[i] != "NAME";
      if (i > 0 && w[i - 1] == "--profile" && w[i].find(".toml") != std::string::npos)
        runnable &= std::filesystem::exists(repo_file(w[i]));
    }
    if (runnable) out.push_back(w);
  }
  return out;
}

}  // namespace

TEST_CASE("docs: every scenario command shown runs", "[slow][docs][readme]") {
  std::vector<std::string> files = {"README.md"};
  for (const auto& e : std::filesystem::directory_iterator(repo_file("docs")))
    if (e.path().extension() == ".md") files.push_back("docs/" + e.path().filename().string());
  const simcache::testing::TempDir tmp("doc_commands");
  size_t ran = 0;
  for (const std::string& f : files) {
    for (std::vector<std::string> args : scenario_commands(read_text(repo_file(f)))) {
      for (size_t i = 0; i + 1 < args.size(); ++i)
        if (args[i] == "--output" || args[i] == "--html" || args[i] == "--plot")
          args[i + 1] = tmp / (args[i].substr(2) + std::to_string(ran));
      std::string cmd;
      for (const std::string& a : args) cmd += " " + a;
      INFO(f << ": simcache" << cmd);
      const std::filesystem::path cwd = std::filesystem::current_path();
      std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
      const sim::CliOutcome o = sim::run_cli(args);
      std::filesystem::current_path(cwd);
      INFO(o.err);
      CHECK(o.status == 0);
      ++ran;
    }
  }
  CHECK(ran >= 8);
  // docs/cli.md's and docs/knobs.md's --policy spellings parse.
  for (const char* f : {"docs/cli.md", "docs/knobs.md"}) {
    const std::string text = read_text(repo_file(f));
    for (size_t at = text.find("`--policy '"); at != std::string::npos;
         at = text.find("`--policy '", at + 1)) {
      const size_t end = text.find("'`", at + 11);
      REQUIRE(end != std::string::npos);
      const std::string spec = text.substr(at + 11, end - at - 11);
      INFO(f << ": --policy '" << spec << "'");
      const sim::CliOutcome o = sim::run_cli({"--scenario", "sparse-fill", "--set", "rounds=1",
                                              "--set", "warmup=0", "--profile", "none",
                                              "--policy", spec, "--dump-config"});
      CHECK(o.status == 0);
    }
  }
}
