#include "sim/run/run_config.h"

#include <algorithm>

#include <fmt/format.h>
#include "sim/run/scenarios/background.h"

namespace simcache::sim {

std::vector<ParamSpec> machine_params(const iou::MachineInfo& m) {
  std::vector<ParamSpec> p;
  const auto fields = iou::machine_fields();
  for (size_t i = 0; i < fields.size(); ++i)
    p.push_back({fields[i].name, m.values[i], fields[i].min, fields[i].max, fields[i].help});
  return p;
}

const std::vector<ParamSpec>& machine_params() {
  static const std::vector<ParamSpec> p =
      machine_params(*iou::machine_by_name(iou::kDefaultMachine, nullptr));
  return p;
}

JobMachine job_machine(const Params& p, const iou::MachineInfo& m) {
  JobMachine j;
  j.cpus = static_cast<uint16_t>(p.at("cpus"));  // ranges: machine.def, checked at resolve
  j.nodes = static_cast<uint8_t>(p.at("nodes"));
  j.cpu = static_cast<CpuId>(p.at("cpu"));
  j.kworker_cpu = static_cast<CpuId>(p.at("kworker_cpu"));
  j.cgroup = p.at("cgroup") != 0;
  j.preempt_rt = p.count("rt") && p.at("rt");
  j.pi = !p.count("pi") || p.at("pi");
  j.idle = m.idle_table.empty() ? nullptr : iou::idle_table(m.idle_table);
  j.cpufreq_iowait_boost = p.at("cpufreq_iowait_boost") != 0;
  j.llc_kib = static_cast<uint32_t>(p.at("llc_kib"));
  j.pcp_high_min = static_cast<uint32_t>(p.at("pcp_high_min"));
  j.pcp_high_max = static_cast<uint32_t>(p.at("pcp_high_max"));
  return j;
}

bool check_machine(const Params& p, std::string* error) {
  const int64_t cpus = p.at("cpus");
  for (const char* k : {"cpu", "kworker_cpu"}) {
    if (p.at(k) >= cpus) {
      *error = fmt::format("parameter '{}' = {} must be below cpus = {}", k, p.at(k), cpus);
      return false;
    }
  }
  if (p.at("nodes") > cpus) {
    *error = fmt::format("parameter 'nodes' = {} exceeds cpus = {}", p.at("nodes"), cpus);
    return false;
  }
  if (p.at("pcp_high_max") < p.at("pcp_high_min")) {
    *error = fmt::format("parameter 'pcp_high_max' = {} is below pcp_high_min = {}",
                         p.at("pcp_high_max"), p.at("pcp_high_min"));
    return false;
  }
  return true;
}

std::vector<std::string> default_columns(std::string_view scenario) {
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  std::vector<std::string> cols;
  if (const PresetInfo* p = reg.find_preset(scenario)) cols = p->policies;
  else if (const ScenarioInfo* s = reg.find(scenario)) cols = s->policies;
  if (cols.empty()) cols.push_back("unpatched");
  return cols;
}

namespace {

ScenarioInfo with_machine(const ScenarioInfo& s, const iou::MachineInfo& m) {
  ScenarioInfo out = s;
  for (const ParamSpec& p : machine_params(m)) out.params.push_back(p);
  return out;
}

// A column "POLICY" runs on the run's kernel; "POLICY@KERNEL" on its own.
const RunColumn* parse_column(const std::string& spec, RunConfig* cfg, std::string* error) {
  if (auto it = cfg->columns.find(spec); it != cfg->columns.end()) return &it->second;
  RunColumn c;
  c.spec = spec;
  std::string_view policy;
  if (!split_column(spec, &policy, &c.kernel, error)) return nullptr;
  if (!c.kernel) c.kernel = cfg->kernel;
  iou::apply_profile(*c.kernel, c.mc);
  if (!iou::parse_policies(policy, c.kernel, &c.ps, &c.mc, error)) return nullptr;
  return &cfg->columns.emplace(spec, std::move(c)).first->second;
}

// The column of policy `pol` with the run's knobs, on `kernel` (nullptr:
// the run's only kernel). A policy that names its own kernel keeps it.
std::string column_spec(const std::string& pol,
                        const std::vector<std::pair<std::string, std::string>>& knobs,
                        const iou::KernelProfile* kernel) {
  const size_t at = pol.rfind('@');
  std::string spec = pol.substr(0, at);
  for (const auto& [k, v] : knobs) spec += "+" + k + "=" + v;
  if (at != std::string::npos) spec += pol.substr(at);
  else if (kernel) spec += "@" + std::string(kernel->name);
  return spec;
}

std::vector<std::string> columns_on(const std::vector<std::string>& policies,
                                    const RunRequest& req, const RunConfig& cfg) {
  return column_specs(policies, req, cfg.kernels);
}

bool check_columns(const std::vector<std::string>& specs, const RunConfig& cfg,
                   std::string* error) {
  if (specs.size() <= kMaxColumns) return true;
  *error = fmt::format("{} columns{}; at most {}", specs.size(),
                       cfg.kernels.size() > 1
                           ? fmt::format(" on {} kernels", cfg.kernels.size())
                           : "",
                       kMaxColumns);
  return false;
}

// A background trace: only for a driver with background users, and it
// adds bg_trace_speed to its parameters.
bool with_background_trace(ScenarioInfo* s, std::string_view asked, std::string* error) {
  if (takes_background(*s)) {
    const std::vector<ParamSpec>& extra = background_trace_params();
    s->params.insert(s->params.end(), extra.begin(), extra.end());
    return true;
  }
  std::string valid;
  for (const ScenarioInfo& i : ScenarioRegistry::get().all())
    if (takes_background(i)) valid += fmt::format("{}{}", valid.empty() ? "" : ", ", i.name);
  const std::string what = asked == s->name
                               ? fmt::format("scenario '{}'", asked)
                               : fmt::format("preset '{}' (its driver '{}')", asked, s->name);
  *error = fmt::format("a background trace needs background users: {} has none (drivers that "
                       "do: {})", what, valid);
  return false;
}


// The request's scalars, carried over as they are.
void copy_scalars(const RunRequest& req, RunConfig* out) {
  out->scenario = req.scenario;
  out->seed = req.seed;
  out->jobs = req.jobs;
  out->faults = req.faults;
  out->call_sites = req.call_sites;
  out->timed_views = req.timed_views;
  out->snapshot_caches = req.snapshot_caches;
  out->event_ns = req.event_ns;
  out->bg_trace = req.bg_trace;
  out->request = req;
}

}  // namespace

std::vector<std::string> column_specs(const std::vector<std::string>& policies,
                                      const RunRequest& req,
                                      const std::vector<const iou::KernelProfile*>& kernels) {
  std::vector<std::string> out;
  if (kernels.size() <= 1) {
    for (const std::string& pol : policies) out.push_back(column_spec(pol, req.knobs, nullptr));
    return out;
  }
  for (const iou::KernelProfile* k : kernels)
    for (const std::string& pol : policies) {
      std::string spec = column_spec(pol, req.knobs, k);
      if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(std::move(spec));
    }
  return out;
}

bool split_column(std::string_view spec, std::string_view* policy,
                  const iou::KernelProfile** kernel, std::string* error) {
  const size_t at = spec.rfind('@');
  *policy = spec.substr(0, at);
  *kernel = nullptr;
  if (at == std::string_view::npos) return true;
  std::string why;
  if ((*kernel = iou::profile_by_name(spec.substr(at + 1), &why))) return true;
  *error = fmt::format("column '{}': {}", iou::escape_controls(spec), why);
  return false;
}

bool resolve_kernels(std::string_view names, std::vector<const iou::KernelProfile*>* out,
                     std::string* error) {
  out->clear();
  for (size_t from = 0, to = 0; from <= names.size(); from = to + 1) {
    to = std::min(names.find(',', from), names.size());
    const std::string_view name = names.substr(from, to - from);
    const iou::KernelProfile* k = iou::profile_by_name(name, error);
    if (!k) return false;
    if (std::find(out->begin(), out->end(), k) != out->end())
      return *error = fmt::format("kernel '{}' is named twice", k->name), false;
    out->push_back(k);
  }
  return true;
}

std::string kernel_names(const std::vector<const iou::KernelProfile*>& kernels) {
  std::string s;
  for (const iou::KernelProfile* k : kernels) s += (s.empty() ? "" : ",") + std::string(k->name);
  return s;
}

bool resolve_run(const RunRequest& req, RunConfig* out, std::string* error) {
  *out = RunConfig{};
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  if (!resolve_kernels(req.kernel, &out->kernels, error)) return false;
  out->kernel = out->kernels[0];
  if (!(out->machine = iou::machine_by_name(req.machine, error))) return false;
  copy_scalars(req, out);
  std::vector<PresetItem> items;
  if (const PresetInfo* p = reg.find_preset(req.scenario)) {
    items = p->items;
  } else if (reg.find(req.scenario)) {
    items.push_back({std::string(req.scenario), std::string(req.scenario), {}, {}, ""});
  } else {
    *error = fmt::format("unknown scenario '{}' (valid: {})", req.scenario, reg.names());
    return false;
  }
  const std::vector<std::string> policies =
      req.policies.empty() ? default_columns(req.scenario) : req.policies;
  // A preset item with a pair of its own (a hypothesis) keeps it under
  // --policy: its label and note speak of those columns.
  for (PresetItem& item : items)
    if (item.policies.empty()) item.policies = policies;
  out->policies = columns_on(policies, req, *out);
  if (!check_columns(out->policies, *out, error)) return false;
  if (!req.background_trace.empty() && !req.bg_trace)
    return *error = fmt::format("background trace '{}' was not loaded",
                                iou::escape_controls(req.background_trace)),
           false;
  // Every column parsed once, before anything is resolved further.
  std::vector<std::vector<const RunColumn*>> item_cols(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::vector<std::string> specs = columns_on(items[i].policies, req, *out);
    if (!check_columns(specs, *out, error)) return false;
    for (const std::string& spec : specs) {
      const RunColumn* c = parse_column(spec, out, error);
      if (!c) return false;
      item_cols[i].push_back(c);
    }
  }
  uint64_t columns = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const PresetItem& item = items[i];
    RunWorkload w;
    w.info = reg.find(item.scenario);
    ScenarioInfo full = with_machine(*w.info, *out->machine);
    if (req.bg_trace && !with_background_trace(&full, req.scenario, error)) return false;
    w.scenario = item.scenario;
    w.label = item.label;
    if (!resolve_params(full, item.set, req.sets, &w.params, error)) return false;
    if (!check_machine(w.params, error)) return false;
    if (req.bg_trace && !check_background_trace(w.params, error)) return false;
    // A preset's label names its own parameters; one the user overrode is
    // stated with the value actually used.
    std::string over;
    for (const auto& [k, v] : item.set)
      if (w.params.at(k) != v)
        over += fmt::format("{}{}={}", over.empty() ? "" : " ", k, w.params.at(k));
    if (!over.empty()) w.label += " [set " + over + "]";
    if (req.bg_trace)
      w.label += " [background trace " + iou::escape_controls(req.bg_trace->file) + "]";
    w.op_unit = std::string(full.op_unit);
    w.time_unit = std::string(full.time_unit);
    w.note = item.note;
    w.machine = job_machine(w.params, *out->machine);
    w.columns = item_cols[i];
    // The work budget: every column of every item, checked before anything runs.
    const uint64_t per = std::min<uint64_t>(w.info->work(w.params), INT64_MAX);
    const uint64_t wk =
        work_product({static_cast<int64_t>(per), static_cast<int64_t>(w.columns.size())});
    out->work = wk > UINT64_MAX - out->work ? UINT64_MAX : out->work + wk;
    columns += w.columns.size();
    out->workloads.push_back(std::move(w));
  }
  // --seeds N runs every column N times.
  out->work = req.seeds > 1 && out->work > UINT64_MAX / req.seeds ? UINT64_MAX
                                                                 : out->work * std::max(req.seeds, 1u);
  if (out->work > req.max_work)
    return *error = fmt::format("the run asks for {} operations ({} column(s) of {} workload(s){}); "
                                "the work budget is {} (--max-work N raises it)",
                                out->work == UINT64_MAX ? "more than 2^64"
                                                        : std::to_string(out->work),
                                columns, items.size(),
                                req.seeds > 1 ? fmt::format(", {} seeds", req.seeds) : "",
                                req.max_work),
           false;
  return true;
}

bool resolve_custom(const RunRequest& req, const std::string& name,
                    const std::vector<ParamSpec>& params, RunConfig* out, std::string* error) {
  *out = RunConfig{};
  if (!resolve_kernels(req.kernel, &out->kernels, error)) return false;
  out->kernel = out->kernels[0];
  if (req.bg_trace || !req.background_trace.empty())
    return *error = fmt::format("a background trace needs background users: '{}' has none", name),
           false;
  std::vector<std::string> policies = req.policies;
  if (policies.empty()) policies.push_back("unpatched");
  copy_scalars(req, out);
  RunWorkload w;
  out->policies = columns_on(policies, req, *out);
  if (!check_columns(out->policies, *out, error)) return false;
  for (const std::string& spec : out->policies) {
    const RunColumn* c = parse_column(spec, out, error);
    if (!c) return false;
    w.columns.push_back(c);
  }
  if (!(out->machine = iou::machine_by_name(req.machine, error))) return false;
  ScenarioInfo info{name, "", "op", "ns", params, nullptr};
  info = with_machine(info, *out->machine);
  if (!resolve_params(info, {}, req.sets, &w.params, error) || !check_machine(w.params, error))
    return false;
  w.scenario = name;
  w.machine = job_machine(w.params, *out->machine);
  out->workloads.push_back(std::move(w));
  return true;
}

bool runs_as_one_task(const RunConfig& cfg) {
  if (cfg.bg_trace) return false;
  for (const RunWorkload& w : cfg.workloads)
    if (!w.info || !w.info->one_task || !w.info->one_task(w.params)) return false;
  return true;
}

}  // namespace simcache::sim
