// Run configurations: a TOML file with the command line's flags as keys,
// scenario parameters under [set] and knobs under [knobs]; --dump-config
// writes the resolved request back with toml++'s formatter.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "sim/cli/cli.h"
#include "sim/cost/toml_reader.h"
#include "sim/run/engine.h"
#include "sim/run/scenario.h"
#include "sim/run/scenarios/background.h"

namespace simcache::sim {
namespace {

// Flags a config may hold: every flag of the report run (commands.cc)
// but these, which say what to do with a configuration, not how to run.
// Those taking a value are strings (seed and jobs: integers), those taking
// none booleans; policy, set, fail and background-trace have their own
// shapes (below).
bool not_a_key(std::string_view flag) {
  return flag == "list" || flag == "config" || flag == "dump-config";
}
const Flag* flag_of(std::string_view key) {
  for (const Flag& f : report_flags())
    if (f.name == key && !not_a_key(key)) return &f;
  return nullptr;
}

// seed: an integer, or (above INT64_MAX, which TOML integers cannot hold)
// a string of decimal digits; --dump-config writes it so.
bool read_seed(const TomlReader& r, const toml::node& v, ParsedFlags* out) {
  const char* kWant =
      "expected a non-negative integer (0..18446744073709551615; above 9223372036854775807 as a "
      "string of digits, \"18446744073709551615\")";
  uint64_t seed = 0;
  if (v.is_integer()) {
    if (*v.value<int64_t>() < 0) return r.fail(&v, "seed", kWant);
    seed = static_cast<uint64_t>(*v.value<int64_t>());
  } else if (v.is_string()) {
    const std::string s = *v.value<std::string>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seed);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return r.fail(&v, "seed", fmt::format("{}, not '{}'", kWant, s));
  } else {
    return r.fail(&v, "seed", kWant);
  }
  out->v["seed"] = std::to_string(seed);
  return true;
}

// fail: a string or an array of strings, each a --fail spec.
bool read_fail(const TomlReader& r, const toml::node& v, ParsedFlags* out) {
  std::vector<const toml::node*> specs;
  if (const toml::array* a = v.as_array()) {
    for (const toml::node& e : *a) specs.push_back(&e);
  } else {
    specs.push_back(&v);
  }
  out->fails.clear();
  for (const toml::node* e : specs) {
    if (!e->is_string()) return r.fail(e, "fail", "expected a string or an array of strings");
    RunRequest::Fault fault{};
    std::string why;
    if (!parse_fault(*e->value<std::string>(), &fault, &why)) return r.fail(e, "fail", why);
    out->fails.push_back(*e->value<std::string>());
  }
  return true;
}

// A scalar TOML value as the command line would spell it.
bool scalar_text(const toml::node& n, std::string* out) {
  if (n.is_string()) *out = *n.value<std::string>();
  else if (n.is_integer()) *out = std::to_string(*n.value<int64_t>());
  else if (n.is_boolean()) *out = *n.value<bool>() ? "true" : "false";
  else return false;
  return true;
}

bool read_pairs(const TomlReader& r, const toml::node& n, const std::string& section,
                const std::string& prefix, ParsedFlags* out) {
  const toml::table* t = n.as_table();
  if (!t) return r.fail(&n, section, "expected a table");
  for (const auto& [k, v] : *t) {
    std::string text;
    if (!scalar_text(v, &text))
      return r.fail(&v, section + "." + std::string(k.str()),
                    "expected an integer, a string or a boolean");
    out->sets.emplace_back(prefix + std::string(k.str()), text);
    if (section == "set")
      out->origin["set." + std::string(k.str())] =
          fmt::format("{}:{}", escape_line(r.path), v.source().begin.line);
  }
  return true;
}

bool read_policy(const TomlReader& r, const toml::node& n, ParsedFlags* out) {
  if (n.is_string()) {
    out->v["policy"] = *n.value<std::string>();
    return true;
  }
  const toml::array* a = n.as_array();
  if (!a || a->empty()) return r.fail(&n, "policy", "expected a string or an array of strings");
  std::string joined;
  for (const toml::node& e : *a) {
    if (!e.is_string()) return r.fail(&e, "policy", "expected an array of strings");
    joined += (joined.empty() ? "" : ",") + *e.value<std::string>();
  }
  out->v["policy"] = joined;
  return true;
}

// The values a config can be wrong about before anything runs are
// checked here, so the error names the file and the line.
bool check_value(const TomlReader& r, const std::string& key, const toml::node& v,
                 const ParsedFlags& f) {
  std::string why;
  if (key == "policy")
    for (const std::string& col : split_policy_columns(f.v.at("policy"))) {
      iou::PolicySet p;
      MmConfig mm;
      std::string_view policy;
      const iou::KernelProfile* kernel = nullptr;
      if (!split_column(col, &policy, &kernel, &why) ||
          !iou::parse_policies(policy, kernel, &p, &mm, &why))
        return r.fail(&v, key, why);
    }
  if (key == "knobs")
    for (const auto& [k, node] : *v.as_table()) {
      iou::PolicySet p;
      const std::string want = "policy." + std::string(k.str());  // clang 14: no binding captures
      const auto it = std::find_if(f.sets.begin(), f.sets.end(),
                                   [&](const auto& s) { return s.first == want; });
      if (!iou::set_knob(k.str(), it->second, &p, nullptr, &why))
        return r.fail(&node, "knobs." + std::string(k.str()), why);
    }
  std::vector<const iou::KernelProfile*> kernels;
  if (key == "kernel" && !resolve_kernels(f.v.at("kernel"), &kernels, &why))
    return r.fail(&v, key, why);
  uint64_t max_work = 0;
  uint32_t seeds = 0;
  if (key == "max-work" && !(why = max_work_error(f.v.at(key), &max_work)).empty())
    return r.fail(&v, key, why);
  if (key == "seeds" && !(why = seeds_error(f.v.at(key), &seeds)).empty())
    return r.fail(&v, key, why);
  if (key == "machine" && !iou::machine_by_name(f.v.at("machine"), &why)) return r.fail(&v, key, why);
  if (key == "scenario") {
    const ScenarioRegistry& reg = ScenarioRegistry::get();
    const std::string& s = f.v.at("scenario");
    if (!reg.find(s) && !reg.find_preset(s))
      return r.fail(&v, key, fmt::format("unknown scenario '{}' (valid: {})", s, reg.names()));
  }
  return true;
}

// [background] trace = "FILE": --background-trace.
bool read_background(const TomlReader& r, const toml::node& n, ParsedFlags* out) {
  const toml::table* t = n.as_table();
  if (!t) return r.fail(&n, "background", "expected a table");
  for (const auto& [k, v] : *t) {
    const std::string key = "background." + std::string(k.str());
    if (k.str() != "trace") return r.fail(&v, key, "unknown field (the table takes 'trace')");
    if (!v.is_string() || v.value<std::string>()->empty())
      return r.fail(&v, key, "expected a file name");
    out->v["background-trace"] = *v.value<std::string>();
  }
  return true;
}

bool read_key(const TomlReader& r, const std::string& key, const toml::node& v, ParsedFlags* out) {
  if (key == "background") return read_background(r, v, out);
  if (key == "policy") return read_policy(r, v, out) && check_value(r, key, v, *out);
  if (key == "set") return read_pairs(r, v, "set", "", out);
  if (key == "knobs")
    return read_pairs(r, v, "knobs", "policy.", out) && check_value(r, key, v, *out);
  if (key == "resolved") return true;  // written by --dump-config for the record
  if (key == "seed") return read_seed(r, v, out);
  if (key == "fail") return read_fail(r, v, out);
  const Flag* flag = flag_of(key);
  if (key == "background-trace") flag = nullptr;  // [background] trace
  if (flag && key == "jobs") {
    if (!v.is_integer() || *v.value<int64_t>() < 1 || *v.value<int64_t>() > 256)
      return r.fail(&v, key, "expected an integer in 1..256");
    out->v[key] = std::to_string(*v.value<int64_t>());
    return true;
  }
  if (flag && flag->takes == Takes::value) {
    if (!v.is_string()) return r.fail(&v, key, "expected a string");
    out->v[key] = *v.value<std::string>();
    return check_value(r, key, v, *out);
  }
  if (flag && flag->takes == Takes::nothing) {
    if (!v.is_boolean()) return r.fail(&v, key, "expected true or false");
    if (*v.value<bool>()) out->v[key] = "";
    else out->v.erase(key);
    return true;
  }
  return r.fail(&v, key, "unknown field (see docs/knobs.md, run configurations)");
}

}  // namespace

bool load_config(const std::string& path, ParsedFlags* out, std::string* error) {
  std::string text;
  if (!read_input(path, "the run configuration", &text, error)) return false;
  TomlReader r{path, error};
  toml::table t;
  if (!r.parse(text, &t)) return false;
  for (const auto& [k, v] : t)
    if (!read_key(r, std::string(k.str()), v, out)) return false;
  return true;
}

void overlay_flags(const ParsedFlags& cli, ParsedFlags* base) {
  for (const auto& [k, v] : cli.v)
    if (k != "config") base->v[k] = v;
  for (const auto& [k, v] : cli.sets) {
    const std::string& key = k;  // clang 14: no binding captures
    std::erase_if(base->sets, [&](const auto& s) { return s.first == key; });
    base->origin.erase("set." + k);
    base->sets.emplace_back(k, v);
  }
  if (!cli.fails.empty()) base->fails = cli.fails;  // the command line's list wins
}

bool check_config_sets(const ParsedFlags& f, std::string* error) {
  if (f.origin.empty()) return true;
  const auto sit = f.v.find("scenario");
  if (sit == f.v.end()) return true;  // "--scenario is required" comes next
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  std::vector<const ScenarioInfo*> targets;  // a preset: each item's scenario
  if (const ScenarioInfo* s = reg.find(sit->second)) targets.push_back(s);
  else if (const PresetInfo* p = reg.find_preset(sit->second))
    for (const PresetItem& item : p->items) targets.push_back(reg.find(item.scenario));
  const bool bg = f.v.count("background-trace") > 0;
  for (const auto& [k, v] : f.sets) {
    const auto where = f.origin.find("set." + k);
    if (where == f.origin.end()) continue;  // from the command line
    for (const ScenarioInfo* s : targets) {
      if (!s) continue;
      ScenarioInfo full = *s;
      for (const ParamSpec& p : machine_params()) full.params.push_back(p);
      if (bg && takes_background(full))
        for (const ParamSpec& p : background_trace_params()) full.params.push_back(p);
      Params params;
      std::string why;
      if (!resolve_params(full, {}, {{k, v}}, &params, &why))
        return *error = fmt::format("{}: set.{}: {}", where->second, escape_line(k),
                                    TomlReader::one_line(why)),
               false;
    }
  }
  return true;
}

namespace {

// The value of one --set for the dump: an integer if it reads as one.
void put_scalar(toml::table& t, const std::string& k, const std::string& v) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && end == v.data() + v.size() && !v.empty()) t.insert_or_assign(k, n);
  else if (v == "true" || v == "false") t.insert_or_assign(k, v == "true");
  else t.insert_or_assign(k, v);
}

// Every parameter of a plain scenario, defaults included; for a preset,
// what the user set (each item has its own).
bool resolved_params(const RunRequest& req, toml::table* out, std::string* error) {
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  const ScenarioInfo* s = reg.find(req.scenario);
  if (!s) {
    if (!reg.find_preset(req.scenario))
      return *error = fmt::format("unknown scenario '{}' (valid: {})", escape_line(req.scenario),
                                  reg.names()),
             false;
    for (const auto& [k, v] : req.sets) put_scalar(*out, k, v);
    return true;
  }
  ScenarioInfo full = *s;
  const iou::MachineInfo* machine = iou::machine_by_name(req.machine, error);
  if (!machine) return false;
  for (const ParamSpec& p : machine_params(*machine)) full.params.push_back(p);
  if (!req.background_trace.empty() && takes_background(full))
    for (const ParamSpec& p : background_trace_params()) full.params.push_back(p);
  Params params;
  if (!resolve_params(full, {}, req.sets, &params, error)) return false;
  for (const auto& [k, v] : params) out->insert_or_assign(k, v);
  return true;
}

}  // namespace

bool dump_config(const ParsedFlags& f, const RunRequest& req, std::string* out,
                 std::string* error) {
  toml::table t;
  t.insert_or_assign("scenario", req.scenario);
  t.insert_or_assign("kernel", req.kernel);
  // TOML integers are signed 64-bit: a larger seed is written as a string.
  if (req.seed <= static_cast<uint64_t>(INT64_MAX))
    t.insert_or_assign("seed", static_cast<int64_t>(req.seed));
  else
    t.insert_or_assign("seed", std::to_string(req.seed));
  t.insert_or_assign("jobs", static_cast<int64_t>(req.jobs));
  // Every other flag the command line gave, as it gave it.
  for (const Flag& fl : report_flags()) {
    const std::string k(fl.name);
    if (not_a_key(k) || !f.v.count(k)) continue;
    if (k == "scenario" || k == "kernel" || k == "seed" || k == "jobs" || k == "policy" ||
        k == "background-trace")
      continue;  // resolved above or below
    if (fl.takes == Takes::nothing) t.insert_or_assign(k, true);
    else if (fl.takes == Takes::value) t.insert_or_assign(k, f.v.at(k));
  }
  if (!f.fails.empty()) {
    toml::array fails;
    for (const std::string& spec : f.fails) fails.push_back(spec);
    t.insert_or_assign("fail", fails);
  }
  // The columns as resolve_run() picks them (a preset's items may name their own).
  const std::vector<std::string> cols =
      req.policies.empty() ? default_columns(req.scenario) : req.policies;
  toml::array pol, resolved_cols;
  std::vector<const iou::KernelProfile*> kernels;
  if (!resolve_kernels(req.kernel, &kernels, error)) return false;
  for (const std::string& c : cols) pol.push_back(c);
  // Each column as the run has it (every kernel's, knobs appended), parsed
  // on its own kernel.
  for (const std::string& spec : column_specs(cols, req, kernels)) {
    std::string_view policy;
    const iou::KernelProfile* profile = nullptr;
    if (!split_column(spec, &policy, &profile, error)) return false;
    iou::PolicySet ps;
    MmConfig mc;
    if (!iou::parse_policies(policy, profile ? profile : kernels[0], &ps, &mc, error)) return false;
    resolved_cols.push_back(iou::knob_spec(ps) + spec.substr(policy.size()));
  }
  if (!req.policies.empty() || ScenarioRegistry::get().find(req.scenario))
    t.insert_or_assign("policy", pol);  // a preset without --policy keeps its own
  toml::table set, knobs;
  if (!resolved_params(req, &set, error)) return false;
  for (const auto& [k, v] : req.knobs) put_scalar(knobs, k, v);
  t.insert_or_assign("set", set);
  if (!knobs.empty()) t.insert_or_assign("knobs", knobs);
  if (!req.background_trace.empty())
    t.insert_or_assign("background", toml::table{{"trace", req.background_trace}});
  toml::table resolved;
  resolved.insert_or_assign("columns", resolved_cols);
  resolved.insert_or_assign("version", std::string(SIMCACHE_VERSION));
  t.insert_or_assign("resolved", resolved);
  std::ostringstream os;
  os << toml::toml_formatter(t) << "\n";
  *out = os.str();
  return true;
}

void setup_logging(const ParsedFlags& f) {
  static const auto logger = [] {
    auto l = spdlog::stderr_color_mt("simcache");
    l->set_pattern("simcache: %l: %v");
    return l;
  }();
  spdlog::set_default_logger(logger);
  spdlog::set_level(f.v.count("verbose") ? spdlog::level::debug
                    : f.v.count("quiet") ? spdlog::level::err
                                         : spdlog::level::warn);
}

void log_request(const RunRequest& req) {
  std::string cols;
  for (const std::string& p : req.policies) cols += (cols.empty() ? "" : ", ") + p;
  spdlog::debug("scenario {} on {}, seed {}, {} job(s), columns: {}", req.scenario, req.kernel,
                req.seed, req.jobs, cols.empty() ? "(the preset's)" : cols);
  for (const auto& [k, v] : req.knobs) spdlog::debug("knob policy.{} = {}", k, v);
}

}  // namespace simcache::sim
