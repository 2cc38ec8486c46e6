#include "sim/cli/cli.h"

#include <absl/strings/numbers.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <cmath>

#include "sim/cost/cost.h"
#include "sim/cost/shipped.h"
#include "sim/io/input.h"
#include "sim/run/engine.h"
#include "sim/run/extend.h"
#include <fmt/format.h>
#include "sim/calibrate/measure.h"
#include "sim/cost/toml_reader.h"
#include "sim/replay/background_trace.h"
#include "sim/report/report.h"
#include "sim/run/scenario.h"
#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"

namespace simcache::sim {
namespace {

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
  std::string mp;
  for (const ParamSpec& p : machine_params()) mp += fmt::format(" {}={}", p.name, p.def);
  out += fmt::format("  (every scenario also takes the machine's parameters:{})\n", mp);
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
  out += "machines (--machine; the defaults of the machine parameters):\n";
  for (const iou::MachineInfo& m : iou::machines()) {
    std::string vals;
    const auto fields = iou::machine_fields();
    for (size_t i = 0; i < fields.size(); ++i)
      vals += fmt::format("{}{}={}", i ? " " : "", fields[i].name, m.values[i]);
    out += fmt::format("  {:<20} {} [{}; idle {}]{}\n", m.name, m.summary, vals,
                       m.idle_table.empty() ? "none" : m.idle_table,
                       m.name == iou::kDefaultMachine ? " (default)" : "");
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

}  // namespace

// --fail POINT=PROBABILITY or POINT=nth:N. "slab" is slab_alloc.
std::string max_work_error(const std::string& text, uint64_t* out) {
  if (absl::SimpleAtoi(text, out) && *out > 0) return "";
  return fmt::format("'{}': expected an integer in 1..2^64-1", text);
}

std::string seeds_error(const std::string& text, uint32_t* out) {
  if (absl::SimpleAtoi(text, out) && (*out == 1 || (*out >= kMinSeeds && *out <= kMaxSeeds)))
    return "";
  return fmt::format("'{}': expected 1, or an integer in {}..{} (fewer than {} seeds cannot "
                     "bound a percentile over them at 90 %)",
                     text, kMinSeeds, kMaxSeeds, kMinSeeds);
}

bool parse_fault(const std::string& spec, RunRequest::Fault* out, std::string* error) {
  const size_t eq = spec.find('=');
  const std::string point = spec.substr(0, eq), value = eq == std::string::npos ? "" : spec.substr(eq + 1);
  if (eq == std::string::npos || value.empty())
    return *error = fmt::format("--fail '{}': expected POINT=PROBABILITY or POINT=nth:N", spec),
           false;
  if (!fault_point_by_name(point == "slab" ? "slab_alloc" : point, &out->point))
    return *error = fmt::format(
               "--fail '{}': unknown point '{}' (valid: page_alloc, slab, bulk_short, bulk_zero, "
               "kvmalloc, memcg_charge)",
               spec, point),
           false;
  if (value.rfind("nth:", 0) == 0) {
    if (!absl::SimpleAtoi(value.substr(4), &out->nth) || out->nth < 1 || out->nth > (1ull << 40))
      return *error = fmt::format("--fail '{}': nth:N needs N in 1..2^40", spec), false;
    return true;
  }
  if (!absl::SimpleAtod(value, &out->prob) || !std::isfinite(out->prob) || out->prob < 0 ||
      out->prob > 1)
    return *error = fmt::format("--fail '{}': probability must be a number in [0, 1]", spec),
           false;
  return true;
}

namespace {

bool build_request(const ParsedFlags& f, RunRequest* req, std::string* error) {
  auto v = f.v;
  req->scenario = v["scenario"];
  for (const auto& [k, val] : f.sets) {
    if (k.rfind("policy.", 0) == 0) req->knobs.emplace_back(k.substr(7), val);
    else req->sets.emplace_back(k, val);
  }
  if (v.count("kernel")) req->kernel = v["kernel"];
  if (v.count("machine")) {
    req->machine = v["machine"];
    if (!iou::machine_by_name(req->machine, error)) return *error = "--machine: " + *error, false;
  }
  if (v.count("background-trace") && (req->background_trace = v["background-trace"]).empty())
    return *error = "--background-trace: empty file name", false;
  req->call_sites = !v.count("no-sites");
  if (v.count("policy")) {
    for (const std::string& p : split_policy_columns(v["policy"])) {
      if (p.empty()) return *error = "--policy: empty policy name in the list", false;
      req->policies.emplace_back(p);
    }
    if (req->policies.size() > 8) return *error = "--policy: at most 8 columns", false;
  }
  if (v.count("max-work"))
    if (std::string why = max_work_error(v["max-work"], &req->max_work); !why.empty())
      return *error = "--max-work " + why, false;
  if (v.count("seed") && !absl::SimpleAtoi(v["seed"], &req->seed))
    return *error = fmt::format("--seed '{}': expected an integer in 0..2^64-1", v["seed"]), false;
  if (v.count("seeds"))
    if (std::string why = seeds_error(v["seeds"], &req->seeds); !why.empty())
      return *error = "--seeds " + why, false;
  if (req->seeds > 1 && req->seed > UINT64_MAX - req->seeds)
    return *error = fmt::format("--seeds {}: seeds {}.. run past 2^64-1", req->seeds, req->seed),
           false;
  for (const std::string& spec : f.fails) {
    RunRequest::Fault fault{};
    if (!parse_fault(spec, &fault, error)) return false;
    req->faults.push_back(fault);
  }
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
    *warning = cli_warning(*error + "; times omitted");
    return true;
  }
  *have = true;
  *warning += profile_warning(*m);
  return true;
}

// The mapping of measured rows to simulations: --mapping, or the shipped
// one. A --mapping given is read and checked even when nothing uses it
// (--measurements none, --profile none): a broken file is an error either way.
bool load_run_mapping(const ParsedFlags& f, Mapping* map, bool* have, std::string* error) {
  auto mit = f.v.find("mapping");
  *have = false;
  if (mit == f.v.end()) return true;
  if (!load_mapping(mit->second, map, error)) return false;
  *have = true;
  return true;
}

// Measured rows shown beside the model: --measurements, or the shipped
// rows, data/measurements/calibration.tsv. Rows no rule maps are left out.
// The shipped mapping and rows, byte for byte, give their compiled-in
// points (sim/cost/shipped.h): nothing is parsed, mapped or hashed.
bool load_measured(const ParsedFlags& f, Mapping* map, bool have_map, RowStatistic stat,
                   std::vector<MeasuredPoint>* pts, MeasuredFiles* files, std::string* error) {
  auto it = f.v.find("measurements");
  std::string path = it == f.v.end() ? find_data_file("measurements/calibration.tsv") : it->second;
  if (path.empty() || path == "none") return true;
  std::string mpath, mtext;
  const ShippedFile* shipped_map = nullptr;
  if (!have_map) {
    mpath = find_data_file("profiles/mapping.toml");
    if (mpath.empty()) return *error = "no mapping file found (pass --mapping FILE)", false;
    bool bom = false;
    if (!read_input(mpath, "the mapping file", &mtext, error, 0, &bom)) return false;
    shipped_map = shipped_match(mtext, bom);
    if (shipped_map && shipped_map->rel != "profiles/mapping.toml") shipped_map = nullptr;
    if (!shipped_map && !parse_mapping(mtext, mpath, map, error)) return false;
  }
  std::string text;
  bool bom = false;
  if (!read_input(path, "the measurements", &text, error, 0, &bom)) return false;
  const ShippedFile* shipped_rows = InputSource::is_pipe_path(path) ? nullptr : shipped_match(text, bom);
  if (stat == RowStatistic::mean && shipped_map && shipped_rows &&
      shipped_rows->rel == "measurements/calibration.tsv" && shipped_report_points(pts)) {
    *files = {path, std::string(shipped_rows->sha256), std::string(shipped_map->sha256)};
    return true;
  }
  if (shipped_map && !parse_mapping(mtext, mpath, map, error)) return false;
  std::vector<MeasuredRow> rows;
  if (!parse_measurements(text, escape_line(path), &rows, error)) return false;
  *pts = report_points(*map, rows, stat);
  files->file = path;
  return true;
}

// Some column's report depends on its machine's prices (PolicyResult::needs_clock).
bool any_needs_clock(const RunResult& r) {
  for (const WorkloadResult& w : r.workloads)
    for (const PolicyResult& p : w.policies)
      if (p.needs_clock) return true;
  return false;
}

bool any_kasan(const RunResult& r) {
  for (const WorkloadResult& w : r.workloads)
    for (const PolicyResult& p : w.policies)
      if (!p.kasan.empty()) return true;
  return false;
}

// The checks of a report command line that need no file and no run.
bool check_report(const ParsedFlags& f, RunRequest* req, std::string* format, std::string* error) {
  auto it = f.v.find("scenario");
  if (it == f.v.end())
    return *error = "--scenario is required (see --help; --list names them)", false;
  if (!build_request(f, req, error)) return false;
  auto fit = f.v.find("format");
  *format = fit == f.v.end() ? "table" : fit->second;
  if (*format != "table" && *format != "json" && *format != "csv")
    return *error = fmt::format("--format '{}': expected table, json or csv", *format), false;
  return true;
}

CliOutcome run_report(const ParsedFlags& f, const Args& args) {
  auto v = f.v;
  RunRequest req;
  std::string error, warning, format;
  if (!check_report(f, &req, &format, &error)) return cli_fail(error);
  req.snapshot_caches = v.count("slabinfo-at") > 0;  // the only reader of Snapshot::caches
  if (v.count("dump-config")) {
    std::string toml;
    if (!dump_config(f, req, &toml, &error)) return cli_fail(error);
    return {0, toml, ""};
  }
  log_request(req);
  if (!req.background_trace.empty() && !attach_background_trace(&req, &error))
    return cli_fail(error);
  Mapping map;
  bool have_map = false;
  if (!load_run_mapping(f, &map, &have_map, &error)) return cli_fail(error);
  CostModel cost;
  bool have_cost = false;
  if (!load_cost(f, &cost, &have_cost, &warning, &error)) return cli_fail(error);
  if (have_cost) req.event_ns = event_prices(cost);  // the machine's clocks (latency)
  std::vector<MeasuredPoint> measured;
  ReportOptions ro;
  // A --measurements file given is read and checked even when no cost
  // profile uses it (--profile none): a broken file is an error either way.
  MeasuredFiles measured_files;
  // A profile fitted to the rows' median or fastest rounds is shown beside
  // the same figure of them (calibrate --statistic).
  const RowStatistic stat = have_cost ? fitted_statistic(cost) : RowStatistic::mean;
  if ((have_cost || v.count("measurements")) &&
      !load_measured(f, &map, have_map, stat, &measured, &measured_files, &error))
    return cli_fail(error);
  if (stat != RowStatistic::mean) ro.measured_statistic = std::string(row_statistic_name(stat));
  if (!have_cost) measured.clear(), measured_files = {};
  ro.measured_file = measured_files.file;
  if (v.count("explain") && !have_cost)
    return cli_fail("--explain needs a cost profile (it splits the time per operation)");
  const bool extend = v.count("until-separated") > 0;
  if (extend && !have_cost)
    return cli_fail("--until-separated needs a cost profile (latency is in model time)");
  if (req.seeds > 1 && !have_cost)
    return cli_fail("--seeds needs a cost profile (it pools latency, which is in model time)");
  if (v.count("quiet")) warning.clear();
  // The plain table prints no call-site view but KASAN's "in <site>":
  // run without scopes, and again with them only if a report needs one.
  RunConfig cfg;  // resolved once: every name, number and column checked
  if (!resolve_run(req, &cfg, &error)) return cli_fail(error);
  const bool auto_sites =
      cfg.call_sites && format == "table" && !v.count("explain") && !v.count("all") && !extend;
  if (auto_sites) cfg.call_sites = false;
  detail_views(f, &ro);
  // The plain table's times are counts x prices, taken after the run: a
  // run whose drivers say they are one task reading nothing they report
  // off the clock (runs_as_one_task()) runs with no prices on its machine (the
  // same events; pricing each as it happens is a fifth of sparse4096's
  // time); should its clock have ordered tasks after all, or a metric it
  // shows be a share of wall time, it runs again with them. Every
  // output that reads the clock (latency, the teardown timeline's
  // metrics in the detail views, JSON, CSV, --sysfs) keeps it; latency
  // is a detail view, which --until-separated and --seeds turn on. Such a
  // table also shows nothing a computed round leaves out (ring ids,
  // object histories, whole-run statistics): once the measured rounds
  // repeat, the rest are computed (sim/run/steady.h), except with fault
  // injection. --full simulates every round and prices as it goes.
  const bool plain = format == "table" && !table_shows_record(ro) && !v.count("full") &&
                     !v.count("sysfs") && !v.count("slabinfo") && !v.count("slabinfo-report") &&
                     !v.count("hist") && runs_as_one_task(cfg);
  const bool auto_clock = plain && !cfg.event_ns.empty();
  cfg.steady = plain && cfg.faults.empty();
  // Nor does it read the timed regions' per-cache, call-site or batch
  // views (--per-cache, --explain, --hist, JSON and CSV do): each timed
  // boundary would copy every cache's SLUB stats for nothing.
  if (plain) cfg.timed_views = false;
  std::vector<double> prices;
  if (auto_clock) prices.swap(cfg.event_ns);
  RunResult result;
  if (extend) run_until_separated(&cfg, &result);
  else run_pooled(cfg, &result);
  if (auto_clock && any_needs_clock(result)) {
    cfg.event_ns.swap(prices);
    run_pooled(cfg, &result);
  }
  if (auto_sites && any_kasan(result)) {
    cfg.call_sites = true;
    run(cfg, &result);
  }
  fill_run_record(args, have_cost ? &cost : nullptr, &result);
  record_report_inputs(f, measured_files, &result);
  if (have_cost) ro.cost = &cost;
  if (!measured.empty()) ro.measured = &measured;
  std::string text = format == "json"  ? format_json(result, ro)
                     : format == "csv" ? format_csv(result, ro)
                                       : format_table(result, ro);
  if (!kernel_outputs(f, result, &text, &error)) return cli_fail(error);
  const std::string failed = failure_summary(result);
  // A run whose operations failed does not measure what it names: the
  // report is still written, and the status says so unless asked for.
  int status = 0;
  if (!failed.empty() && !v.count("allow-failures") && req.faults.empty()) {
    status = 3;
    warning += "simcache: " +
               escape_line(failed + " (the report marks them; --allow-failures accepts this)", 400) +
               "\n";
  }
  if (v.count("output")) {
    if (!write_file_atomic(v["output"], text, &error)) return cli_fail("--output " + error);
    return {status, "", warning};
  }
  return {status, text, warning};
}

}  // namespace

// "4095 operations failed (sparse-fill A: 4095 x -ENFILE)", or "".
std::string failure_summary(const RunResult& r) {
  uint64_t total = 0;
  std::string where;
  for (const WorkloadResult& w : r.workloads)
    for (size_t i = 0; i < w.policies.size(); ++i)
      for (const auto& [e, n] : w.policies[i].failures) {
        total += n;
        if (where.size() < 200)
          where += fmt::format("{}{} {}: {} x -{}", where.empty() ? "" : "; ", w.label,
                               "ABCDEFGH"[i], n, e);
      }
  return total ? fmt::format("{} operations failed ({})", total, where) : "";
}

CliOutcome cli_fail(const std::string& msg) {
  return {2, "", "simcache: " + escape_line(msg, 1000) + "\n"};
}

std::string cli_warning(const std::string& msg) {
  return "simcache: warning: " + escape_line(msg, 1000) + "\n";
}

std::string profile_warning(const CostModel& m) {
  std::vector<std::string> missing;
  size_t n = 0;
  for (const CostParamSpec& s : default_param_specs()) {
    ++n;
    bool have = false;
    for (const CostParam& p : m.params) have |= p.name == s.name;
    if (!have) missing.emplace_back(s.name);
  }
  if (missing.empty()) return "";
  std::string names;
  for (size_t i = 0; i < missing.size() && i < 8; ++i) names += (i ? ", " : "") + missing[i];
  if (missing.size() > 8) names += ", ...";
  return cli_warning(fmt::format(
      "{}: profile '{}' lacks {} of {} parameters ({}); their events cost 0 ns",
      m.path, m.name, missing.size(), n, names));
}

bool parse_jobs(const ParsedFlags& f, int* jobs, std::string* error) {
  auto it = f.v.find("jobs");
  if (it == f.v.end()) return true;
  if (!absl::SimpleAtoi(it->second, jobs) || *jobs < 1 || *jobs > 256)
    return *error = fmt::format("--jobs '{}': expected 1..256", it->second), false;
  return true;
}

bool parse_report_args(const std::vector<std::string>& args, RunRequest* req, std::string* error) {
  ParsedFlags f;
  const Command* cmd = nullptr;
  std::string format;
  switch (parse_command(args, false, &cmd, &f, error)) {
    case Parsed::run:
      return check_report(f, req, &format, error);
    case Parsed::error:
      return false;
    default:
      return *error = "--help: prints the help, runs nothing", false;
  }
}

// The default command: --list, --config, then the run.
CliOutcome run_report_cli(const ParsedFlags& f, const Args& args) {
  if (f.v.count("list")) return {0, list_text(), ""};
  setup_logging(f);
  if (f.v.count("config")) {
    ParsedFlags merged;
    std::string error;
    if (!load_config(f.v.at("config"), &merged, &error)) return cli_fail(error);
    overlay_flags(f, &merged);
    if (!check_output_flags("", merged, &error)) return cli_fail(error);  // a config's outputs
    if (!check_config_sets(merged, &error)) return cli_fail(error);
    return run_report(merged, args);
  }
  return run_report(f, args);
}

CliOutcome run_cli(const std::vector<std::string>& args) {
  ParsedFlags f;
  const Command* cmd = nullptr;
  std::string text;
  switch (parse_command(args, true, &cmd, &f, &text)) {
    case Parsed::help:
    case Parsed::version:
      return {0, text, ""};
    case Parsed::error:
      return cli_fail(text);
    case Parsed::run:
      break;
  }
  return run_command(*cmd, f, args);
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
