#include "cli.h"

#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine.h"
#include "fmt/format.h"
#include "report.h"
#include "scenario.h"
#include "simcache/io_uring/policy.h"
#include "simcache/io_uring/profile.h"

namespace simcache::sim {
namespace {

constexpr const char* kUsage =
    "usage: simcache --scenario NAME [--set key=value]... [--policy P[,P]...]\n"
    "                [--kernel K] [--seed N] [--format table|json|csv]\n"
    "                [--output FILE] [--jobs N] [--all-counters]\n"
    "       simcache --list\n";

struct Flag {
  std::string_view name;
  bool takes_value;
  std::string_view help;
};
constexpr Flag kFlags[] = {
    {"scenario", true, "scenario or preset to run"},
    {"set", true, "scenario parameter key=value (repeatable)"},
    {"policy", true, "policy columns, comma-separated; each may combine with +"},
    {"kernel", true, "kernel profile"},
    {"seed", true, "seed (recorded in every output)"},
    {"format", true, "table, json or csv"},
    {"output", true, "write the report to FILE instead of stdout"},
    {"jobs", true, "worker threads (output does not depend on it)"},
    {"all-counters", false, "table: every non-zero counter"},
    {"list", false, "list scenarios, presets, policies and kernel profiles"},
    {"help", false, "this text"},
};

std::string list_text() {
  std::string out = "scenarios:\n";
  const auto& reg = ScenarioRegistry::get();
  for (const auto& p : reg.presets())
    out += fmt::format("  {:<20} preset: {}\n", p.name, p.summary);
  for (const auto& s : reg.all()) {
    out += fmt::format("  {:<20} {}\n", s.name, s.summary);
    std::string params;
    for (const auto& p : s.params) params += fmt::format(" {}={}", p.name, p.def);
    out += fmt::format("  {:<20}  params:{}\n", "", params);
  }
  out += fmt::format("  {:<20}  machine params (all scenarios): cpus=20 nodes=1 cpu=2 "
                     "kworker_cpu=3 cgroup=1\n", "");
  out += "policies:\n";
  for (const auto& p : iou::PolicyRegistry::get().all())
    out += fmt::format("  {:<20} {}\n", p.name, p.summary);
  out += "kernels:\n";
  for (const auto& k : iou::kernel_profiles())
    out += fmt::format("  {:<20} {}{}\n", k.name, k.summary,
                       k.name == iou::kDefaultProfile ? " (default)" : "");
  return out;
}

CliOutcome fail(std::string msg) { return {2, "", "simcache: " + msg + "\n"}; }

}  // namespace

bool write_file_atomic(const std::string& path, const std::string& data,
                       std::string* error) {
  const std::string tmp = path + ".tmp~";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      *error = fmt::format("--output: cannot write '{}'", path);
      return false;
    }
    f << data;
    f.close();
    if (!f) {
      std::remove(tmp.c_str());
      *error = fmt::format("--output: error writing '{}'", path);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    *error = fmt::format("--output: cannot replace '{}': {}", path, ec.message());
    return false;
  }
  return true;
}

CliOutcome run_cli(const std::vector<std::string>& args) {
  std::map<std::string, std::string> v;
  std::vector<std::pair<std::string, std::string>> sets;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0) return fail(fmt::format("unexpected argument '{}'\n{}", a, kUsage));
    a = a.substr(2);
    std::string value;
    const size_t eq = a.find('=');
    const bool has_eq = eq != std::string::npos;
    if (has_eq) value = a.substr(eq + 1), a = a.substr(0, eq);
    const Flag* f = nullptr;
    for (const Flag& k : kFlags)
      if (k.name == a) f = &k;
    if (!f) return fail(fmt::format("unknown flag '--{}'\n{}", a, kUsage));
    if (f->takes_value && !has_eq) {
      if (i + 1 >= args.size()) return fail(fmt::format("flag '--{}' needs a value", a));
      value = args[++i];
    }
    if (!f->takes_value && has_eq) return fail(fmt::format("flag '--{}' takes no value", a));
    if (a == "set") {
      const size_t e = value.find('=');
      if (e == std::string::npos || e == 0)
        return fail(fmt::format("--set '{}': expected key=value", value));
      sets.emplace_back(value.substr(0, e), value.substr(e + 1));
    } else {
      v[a] = value;
    }
  }
  if (v.count("help")) return {0, kUsage, ""};
  if (v.count("list")) return {0, list_text(), ""};
  if (!v.count("scenario")) return fail(fmt::format("--scenario is required\n{}", kUsage));
  RunRequest req;
  req.scenario = v["scenario"];
  req.sets = sets;
  if (v.count("kernel")) req.kernel = v["kernel"];
  if (v.count("policy")) {
    const std::vector<std::string> cols = absl::StrSplit(v["policy"], ',');
    for (const std::string& p : cols) {
      if (p.empty()) return fail("--policy: empty policy name in the list");
      req.policies.emplace_back(p);
    }
    if (req.policies.size() > 8) return fail("--policy: at most 8 columns");
  }
  if (v.count("seed") && !absl::SimpleAtoi(v["seed"], &req.seed))
    return fail(fmt::format("--seed '{}': not a non-negative integer", v["seed"]));
  if (v.count("jobs") && (!absl::SimpleAtoi(v["jobs"], &req.jobs) || req.jobs < 1 || req.jobs > 256))
    return fail(fmt::format("--jobs '{}': expected 1..256", v["jobs"]));
  const std::string format = v.count("format") ? v["format"] : "table";
  if (format != "table" && format != "json" && format != "csv")
    return fail(fmt::format("--format '{}': expected table, json or csv", format));
  RunResult result;
  std::string error;
  if (!run(req, &result, &error)) return fail(error);
  ReportOptions ro;
  ro.all_counters = v.count("all-counters") > 0;
  const std::string text = format == "json" ? format_json(result, ro)
                           : format == "csv" ? format_csv(result, ro)
                                             : format_table(result, ro);
  if (v.count("output")) {
    if (!write_file_atomic(v["output"], text, &error)) return fail(error);
    return {0, "", ""};
  }
  return {0, text, ""};
}

}  // namespace simcache::sim
