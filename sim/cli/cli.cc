#include "sim/cli/cli.h"

#include <absl/strings/numbers.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/cost/cost.h"
#include "sim/run/engine.h"
#include <fmt/format.h>
#include "sim/calibrate/measure.h"
#include "sim/report/report.h"
#include "sim/run/scenario.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"

namespace simcache::sim {
namespace {

constexpr const char* kUsage =
    "usage: simcache --scenario NAME [--set key=value]... [--policy P[,P]...]\n"
    "                [--kernel K] [--seed N] [--format table|json|csv]\n"
    "                [--output FILE] [--jobs N] [--all-counters]\n"
    "                [--profile NAME|FILE|none] [--measurements FILE|none]\n"
    "                [--mapping FILE] [--explain] [--config run.toml]\n"
    "                [--dump-config] [--verbose|--quiet]\n"
    "       simcache sweep grid.toml [--jobs N] [--shard i/N] [--output FILE]\n"
    "                [--plot FILE.svg] [--html FILE.html]\n"
    "       simcache merge FILE... [--format table|csv|json] [--plot FILE.svg]\n"
    "                [--html FILE.html] [--output FILE]\n"
    "       simcache calibrate --measurements FILE.tsv [--out profile.toml] ...\n"
    "       simcache validate --measurements FILE.tsv [--profile P] ...\n"
    "       simcache geometry-check [--sysfs DIR] [--cpus N] [--kernel K]\n"
    "       simcache --list\n";

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
    {"profile", true, "cost profile: a name in data/profiles, a .toml file, or none"},
    {"measurements", true, "measured rows shown beside the model (TSV), or none"},
    {"mapping", true, "mapping of measured rows to simulations (TOML)"},
    {"explain", false, "break each policy's time per op into its parameters"},
    {"list", false, "list scenarios, presets, policies and kernel profiles"},
    {"config", true, "read flags from a TOML run configuration (docs/knobs.md)"},
    {"dump-config", false, "print the resolved configuration as TOML and exit"},
    {"verbose", false, "log what is resolved and run (stderr)"},
    {"quiet", false, "only errors on stderr"},
    {"help", false, "this text"},
};

std::string list_text() {
  std::string out = "scenarios:\n";
  const auto& reg = ScenarioRegistry::get();
  for (const auto& p : reg.presets())
    out += fmt::format("  {:<20} preset: {}\n", p.name, p.summary);
  // One line per scenario: name, what it replays, parameters = defaults.
  for (const auto& s : reg.all()) {
    std::string params;
    for (const auto& p : s.params) params += fmt::format(" {}={}", p.name, p.def);
    out += fmt::format("  {:<20} {} [per {}; {}]\n", s.name, s.summary, s.op_unit,
                       params.empty() ? "no parameters" : params.substr(1));
  }
  out += "  (every scenario also takes cpus=20 nodes=1 cpu=2 kworker_cpu=3 cgroup=1)\n";
  out += "policies (combine with +):\n";
  // The baseline (the table's first entry), then the others by name.
  const auto& preg = iou::PolicyRegistry::get();
  std::vector<const iou::PolicyInfo*> pols;
  for (const auto& p : preg.all().subspan(1)) pols.push_back(&p);
  std::sort(pols.begin(), pols.end(), [](auto* a, auto* b) { return a->name < b->name; });
  pols.insert(pols.begin(), &preg.baseline());
  for (const auto* p : pols) out += fmt::format("  {:<22} {}\n", p->name, p->summary);
  out += "knobs (--set policy.NAME=VALUE, or NAME(key=value) after a policy; docs/knobs.md):\n";
  for (const iou::PolicyFieldInfo& f : iou::policy_fields()) {
    std::string range;
    if (f.kind == iou::FieldKind::unsigned_int)
      range = fmt::format("{}..{} {}", f.min, f.max, f.unit);
    else
      for (const iou::EnumValueInfo& e : f.values) range += (range.empty() ? "" : "|") + std::string(e.name);
    if (f.kind == iou::FieldKind::boolean) range = "true|false";
    out += fmt::format("  {:<22} {} = {} ({})\n", f.name, "default",
                       iou::field_value_text(f.id, f.def_raw), range);
  }
  out += "kernels:\n";
  for (const auto& k : iou::kernel_profiles())
    out += fmt::format("  {:<20} {}{}\n", k.name, k.summary,
                       k.name == iou::kDefaultProfile ? " (default)" : "");
  out += "cost profiles (--profile):\n";
  const std::string def = find_data_file("profiles/" + std::string(kDefaultCostProfile) + ".toml");
  std::vector<std::string> names;
  std::error_code ec;
  if (!def.empty())
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(def).parent_path(), ec))
      if (e.path().extension() == ".toml" && e.path().stem() != "mapping")
        names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  for (const std::string& n : names)
    out += fmt::format("  {:<20} {}{}\n", n, "data/profiles/" + n + ".toml",
                       n == kDefaultCostProfile ? " (default)" : "");
  return out;
}

bool build_request(const ParsedFlags& f, RunRequest* req, std::string* error) {
  auto v = f.v;
  req->scenario = v["scenario"];
  for (const auto& [k, val] : f.sets) {
    if (k.rfind("policy.", 0) == 0) req->knobs.emplace_back(k.substr(7), val);
    else req->sets.emplace_back(k, val);
  }
  if (v.count("kernel")) req->kernel = v["kernel"];
  if (v.count("policy")) {
    for (const std::string& p : split_policy_columns(v["policy"])) {
      if (p.empty()) return *error = "--policy: empty policy name in the list", false;
      req->policies.emplace_back(p);
    }
    if (req->policies.size() > 8) return *error = "--policy: at most 8 columns", false;
  }
  if (v.count("seed") && !absl::SimpleAtoi(v["seed"], &req->seed))
    return *error = fmt::format("--seed '{}': not a non-negative integer", v["seed"]), false;
  return parse_jobs(f, &req->jobs, error);
}

// The cost profile of a report run: --profile, or the built-in default
// (a warning, not an error, if the data directory is missing).
bool load_cost(const ParsedFlags& f, CostModel* m, bool* have, std::string* warning,
               std::string* error) {
  auto it = f.v.find("profile");
  const std::string spec = it == f.v.end() ? std::string(kDefaultCostProfile) : it->second;
  *have = false;
  if (spec == "none") return true;
  if (!resolve_profile(spec, m, error)) {
    if (it != f.v.end()) return false;
    *warning = fmt::format("simcache: warning: {}; times omitted\n", *error);
    return true;
  }
  *have = true;
  return true;
}

// Measured rows shown beside the model: --measurements, or the shipped
// rows, data/measurements/calibration.tsv. Rows no rule maps are left out.
bool load_measured(const ParsedFlags& f, std::vector<MeasuredPoint>* pts, std::string* file,
                   std::string* error) {
  auto it = f.v.find("measurements");
  std::string path = it == f.v.end() ? find_data_file("measurements/calibration.tsv") : it->second;
  if (path.empty() || path == "none") return true;
  auto mit = f.v.find("mapping");
  const std::string mpath =
      mit == f.v.end() ? find_data_file("profiles/mapping.toml") : mit->second;
  if (mpath.empty()) return *error = "no mapping file found (pass --mapping FILE)", false;
  Mapping map;
  std::vector<MeasuredRow> rows;
  std::vector<MappedRow> mapped;
  std::vector<std::string> skipped;
  if (!load_mapping(mpath, &map, error) || !read_measurements(path, &rows, error)) return false;
  std::string ignored;
  map_rows(map, rows, &mapped, &skipped, &ignored);
  *pts = measured_points(mapped, map.fit);
  *file = path;
  return true;
}

CliOutcome run_report(const ParsedFlags& f) {
  auto v = f.v;
  if (!v.count("scenario")) return cli_fail(fmt::format("--scenario is required\n{}", kUsage));
  RunRequest req;
  std::string error, warning;
  if (!build_request(f, &req, &error)) return cli_fail(error);
  if (v.count("dump-config")) {
    std::string toml;
    if (!dump_config(f, req, &toml, &error)) return cli_fail(error);
    return {0, toml, ""};
  }
  log_request(req);
  const std::string format = v.count("format") ? v["format"] : "table";
  if (format != "table" && format != "json" && format != "csv")
    return cli_fail(fmt::format("--format '{}': expected table, json or csv", format));
  CostModel cost;
  bool have_cost = false;
  if (!load_cost(f, &cost, &have_cost, &warning, &error)) return cli_fail(error);
  std::vector<MeasuredPoint> measured;
  ReportOptions ro;
  if (have_cost && !load_measured(f, &measured, &ro.measured_file, &error)) return cli_fail(error);
  if (v.count("explain") && !have_cost)
    return cli_fail("--explain needs a cost profile (it splits the time per operation)");
  if (v.count("quiet")) warning.clear();
  RunResult result;
  if (!run(req, &result, &error)) return cli_fail(error);
  ro.all_counters = v.count("all-counters") > 0;
  ro.explain = v.count("explain") > 0;
  if (have_cost) ro.cost = &cost;
  if (!measured.empty()) ro.measured = &measured;
  const std::string text = format == "json"  ? format_json(result, ro)
                           : format == "csv" ? format_csv(result, ro)
                                             : format_table(result, ro);
  if (v.count("output")) {
    if (!write_file_atomic(v["output"], text, &error)) return cli_fail(error);
    return {0, "", warning};
  }
  return {0, text, warning};
}

}  // namespace

CliOutcome cli_fail(const std::string& msg) { return {2, "", "simcache: " + msg + "\n"}; }

bool parse_flags(const std::vector<std::string>& args, size_t start, std::span<const Flag> flags,
                 std::string_view usage, ParsedFlags* out, std::string* error) {
  for (size_t i = start; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0)
      return *error = fmt::format("unexpected argument '{}'\n{}", a, usage), false;
    a = a.substr(2);
    std::string value;
    const size_t eq = a.find('=');
    const bool has_eq = eq != std::string::npos;
    if (has_eq) value = a.substr(eq + 1), a = a.substr(0, eq);
    const Flag* f = nullptr;
    for (const Flag& k : flags)
      if (k.name == a) f = &k;
    if (!f) return *error = fmt::format("unknown flag '--{}'\n{}", a, usage), false;
    if (f->takes_value && !has_eq) {
      if (i + 1 >= args.size()) return *error = fmt::format("flag '--{}' needs a value", a), false;
      value = args[++i];
    }
    if (!f->takes_value && has_eq)
      return *error = fmt::format("flag '--{}' takes no value", a), false;
    if (a == "set") {
      const size_t e = value.find('=');
      if (e == std::string::npos || e == 0)
        return *error = fmt::format("--set '{}': expected key=value", value), false;
      out->sets.emplace_back(value.substr(0, e), value.substr(e + 1));
    } else {
      out->v[a] = value;  // the last one wins
    }
  }
  return true;
}

bool parse_jobs(const ParsedFlags& f, int* jobs, std::string* error) {
  auto it = f.v.find("jobs");
  if (it == f.v.end()) return true;
  if (!absl::SimpleAtoi(it->second, jobs) || *jobs < 1 || *jobs > 256)
    return *error = fmt::format("--jobs '{}': expected 1..256", it->second), false;
  return true;
}

bool write_file_atomic(const std::string& path, const std::string& data, std::string* error) {
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
  if (!args.empty() && args[0] == "sweep") return run_sweep_cli(args);
  if (!args.empty() && args[0] == "merge") return run_merge_cli(args);
  if (!args.empty() && args[0] == "calibrate") return run_calibrate_cli(args);
  if (!args.empty() && args[0] == "validate") return run_validate_cli(args);
  if (!args.empty() && (args[0] == "geometry-check" || args[0] == "check-geometry"))
    return run_geometry_cli(args);
  ParsedFlags f;
  std::string error;
  if (!parse_flags(args, 0, kFlags, kUsage, &f, &error)) return cli_fail(error);
  if (f.v.count("help")) return {0, kUsage, ""};
  if (f.v.count("list")) return {0, list_text(), ""};
  setup_logging(f);
  if (f.v.count("config")) {
    ParsedFlags merged;
    if (!load_config(f.v["config"], &merged, &error)) return cli_fail(error);
    overlay_flags(f, &merged);
    return run_report(merged);
  }
  return run_report(f);
}

}  // namespace simcache::sim

namespace simcache::sim {

std::vector<std::string> split_policy_columns(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t from = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      out.push_back(s.substr(from, i - from));
      from = i + 1;
    } else if (s[i] == '(') {
      ++depth;
    } else if (s[i] == ')') {
      --depth;
    }
  }
  return out;
}

}  // namespace simcache::sim
