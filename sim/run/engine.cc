#include "sim/run/engine.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include <fmt/format.h>
#include "sim/run/machine.h"
#include "sim/run/scenario.h"
#include "sim/run/scenarios/background.h"
#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/slub.h"

namespace simcache::sim {

// The machine parameters every scenario takes (see engine.h): the field
// rows of model/kernel/machine.def, defaulting to the machine's row.
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

namespace {

ScenarioInfo with_machine(const ScenarioInfo& s, const iou::MachineInfo& m) {
  ScenarioInfo out = s;
  for (const ParamSpec& p : machine_params(m)) out.params.push_back(p);
  return out;
}

// A policy column, parsed once where the run is resolved: its policy set
// and the mm configuration the kernel profile and the column imply. Jobs
// hold these typed values; nothing below parses a string.
struct Column {
  std::string spec;
  iou::PolicySet ps;
  MmConfig mc;
};
using Columns = std::map<std::string, Column>;  // by spec; stable addresses

bool parse_column(const std::string& spec, const iou::KernelProfile& profile, Columns* cols,
                  std::string* error) {
  if (cols->count(spec)) return true;
  Column c;
  c.spec = spec;
  iou::apply_profile(profile, c.mc);
  if (!iou::parse_policies(spec, &profile, &c.ps, &c.mc, error)) return false;
  cols->emplace(spec, std::move(c));
  return true;
}

// The machine of one job, typed once from its resolved parameters (the
// machine.def fields, and the scenario's `rt` and `pi` where it has them).
struct JobMachine {
  uint16_t cpus = 0;
  uint8_t nodes = 0;
  CpuId cpu = 0, kworker_cpu = 0;
  bool cgroup = true;
  bool preempt_rt = false;  // a scenario with an `rt` parameter: PREEMPT_RT when 1
  bool pi = true;           // priority inheritance on rt_mutex (its `pi` parameter)
  const iou::IdleTable* idle = nullptr;
};

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
  return j;
}

struct Job {
  const ScenarioInfo* info;
  Params params;
  const Column* col;
  PolicyResult* out;
  const CustomWorkload* custom = nullptr;
  std::string error = {};  // custom: why the run failed
  JobMachine m = {};
};

std::vector<CacheStats> cache_stats(const Mm& mm) {
  std::vector<CacheStats> out;
  for (CacheId s : mm.caches()) {
    CacheStats cs;
    cs.stat.resize(kNumSlubStats);
    uint64_t any = 0;
    for (size_t i = 0; i < kNumSlubStats; ++i) {
      cs.stat[i] = mm.stat(s, static_cast<SlubStat>(i));
      any |= cs.stat[i];
    }
    if (!any) continue;
    cs.info = mm.info(s);
    cs.per_cpu.resize(size_t{mm.config().nr_cpus} * kNumSlubStats);
    for (CpuId c = 0; c < mm.config().nr_cpus; ++c)
      for (size_t i = 0; i < kNumSlubStats; ++i)
        cs.per_cpu[c * kNumSlubStats + i] = mm.stat_cpu(s, static_cast<SlubStat>(i), c);
    cs.name = cs.info.name;
    out.push_back(std::move(cs));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> config_record(const iou::PolicySet& ps,
                                                               const MmConfig& mc) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const iou::PolicyFieldValue& f : iou::policy_record(ps))
    out.emplace_back("policy." + std::string(f.field->name), f.text);
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  out.emplace_back("mm.gen", mc.gen == SlubGen::v6_18 ? "v6.18" : "7.x");
  out.emplace_back("mm.nr_cpus", std::to_string(mc.nr_cpus));
  out.emplace_back("mm.nr_nodes", std::to_string(mc.nr_nodes));
  out.emplace_back("mm.random_kmalloc_caches", b(mc.random_kmalloc_caches));
  out.emplace_back("mm.slab_nomerge", b(mc.slab_nomerge));
  out.emplace_back("mm.hardened_usercopy", b(mc.hardened_usercopy));
  out.emplace_back("mm.memcg_batch_charge", b(mc.memcg_batch_charge));
  out.emplace_back("mm.memcg.kmem_online", b(mc.memcg.kmem_online));
  out.emplace_back("mm.memcg.charge_batch", std::to_string(mc.memcg.charge_batch));
  if (mc.preempt_rt) out.emplace_back("mm.preempt_rt", b(mc.preempt_rt));
  return out;
}

// Every field of the profile, in kernel_profile.def's order.
std::vector<std::pair<std::string, std::string>> profile_record(const iou::KernelProfile& k) {
  std::vector<std::pair<std::string, std::string>> out = {{"name", std::string(k.name)}};
  const auto fields = iou::kernel_profile_fields();
  for (size_t i = 0; i < fields.size(); ++i)
    out.emplace_back(std::string(fields[i].name), iou::kernel_field_text(k, i));
  return out;
}

// The machine a run modelled: its row's name, idle table and source.
std::vector<std::pair<std::string, std::string>> machine_record(const iou::MachineInfo& m) {
  return {{"name", std::string(m.name)},
          {"idle_table", m.idle_table.empty() ? "none" : std::string(m.idle_table)},
          {"source", std::string(m.source)}};
}

// --fail: each point's injection, its draws seeded per point from the run's seed.
void inject_faults(Mm& mm, const RunRequest& req) {
  for (size_t i = 0; i < req.faults.size(); ++i) {
    const RunRequest::Fault& f = req.faults[i];
    if (f.nth)
      mm.faults().fail_nth(f.point, f.nth, f.nth);
    else
      mm.faults().fail_random(f.point, f.prob, req.seed * 1000003 + i);
  }
}

// The machine of one column: the mm's CPUs, the lock rules of the kernel
// (a scenario's `rt` and `pi` parameters) and the run's prices.
Machine::Config machine_config(const JobMachine& jm, const MmConfig& mc, const RunRequest& req) {
  Machine::Config m;
  m.cpus = mc.nr_cpus;
  m.rules.preempt_rt = mc.preempt_rt;
  m.rules.pi = jm.pi;
  m.prices = req.event_ns.size() == kNumEvents ? req.event_ns.data() : nullptr;
  m.seed = req.seed;
  return m;
}

void run_job(Job& j, const iou::KernelProfile& profile, const RunRequest& req) {
  const uint64_t seed = req.seed;
  MmConfig mc = j.col->mc;  // the profile's and the column's
  mc.nr_cpus = j.m.cpus;
  mc.nr_nodes = j.m.nodes;
  const iou::PolicySet& ps = j.col->ps;
  mc.random_kmalloc_seed = seed * 0x9e3779b97f4a7c15ull + 1;
  mc.call_sites = req.call_sites;
  mc.preempt_rt = j.m.preempt_rt;
  Mm mm(mc);
  const MemcgId user = j.m.cgroup ? mm.memcg().create(kRootMemcg) : kRootMemcg;
  iou::MmIoUring io(mm, profile, ps);
  io.set_idle_table(j.m.idle);
  inject_faults(mm, req);
  Machine machine(mm.events(), machine_config(j.m, mc, req));
  Recorder rec(mm);
  Env env{mm, io, Task{j.m.cpu, user, 0}, Task{j.m.kworker_cpu, kRootMemcg, 0}, seed, &machine,
          &rec, req.bg_trace.get()};
  std::function<void()> at_end;
  // The program is the first task, on the submitter's CPU (SCHED_OTHER); a
  // driver that needs more tasks spawns them from it.
  machine.spawn(env.submitter.cpu, iou::kSchedOther, [&] {
    if (j.custom) j.custom->run(env, j.params, rec, &at_end, &j.error);
    else j.info->run(env, j.params, rec);
    return Step::done();
  });
  machine.run();
  PolicyResult& r = *j.out;
  r.policy = j.col->spec;
  r.config = config_record(ps, mc);
  rec.finish(&r);
  r.caches = cache_stats(mm);
  for (const RunRequest::Fault& f : req.faults)
    r.faults_injected[std::string(fault_point_name(f.point))] = mm.faults().injected(f.point);
  for (const auto& [err, n] : io.failures()) r.failures[iou::errno_name(err)] += n;
  for (CacheId s : mm.caches()) r.slab_state.push_back(mm.info(s));
  if (at_end) at_end();
  mm.faults().clear();
  io.exit_all(env.kworker);
  mm.check_leaks();
  if (std::string bad = mm.slub().check_invariants(); !bad.empty())
    r.kasan.push_back({"model-invariant", kNull, "", bad, ""});
  r.kasan.insert(r.kasan.begin(), mm.kasan_reports().begin(), mm.kasan_reports().end());
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
  return true;
}

void run_jobs(std::vector<Job>& jobs, const iou::KernelProfile& profile, const RunRequest& req) {
  const int nthreads = std::max(1, std::min<int>(req.jobs, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) run_job(jobs[i], profile, req);
  };
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

}  // namespace

bool run(const RunRequest& req, RunResult* out, std::string* error) {
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  const iou::KernelProfile* profile = iou::profile_by_name(req.kernel, error);
  if (!profile) return false;
  const iou::MachineInfo* machine = iou::machine_by_name(req.machine, error);
  if (!machine) return false;
  std::vector<PresetItem> items;
  std::vector<std::string> policies = req.policies;
  if (const PresetInfo* p = reg.find_preset(req.scenario)) {
    items = p->items;
    if (policies.empty()) policies = p->policies;
  } else if (const ScenarioInfo* s = reg.find(req.scenario)) {
    items.push_back({std::string(req.scenario), std::string(req.scenario), {}, {}, ""});
    if (policies.empty()) policies = s->policies;
  } else {
    *error = fmt::format("unknown scenario '{}' (valid: {})", req.scenario, reg.names());
    return false;
  }
  if (policies.empty()) policies.push_back("unpatched");
  for (PresetItem& item : items) {
    // A preset item with a pair of its own (a hypothesis) keeps it under
    // --policy: its label and note speak of those columns.
    if (item.policies.empty()) item.policies = policies;
    for (std::string& pol : item.policies)
      for (const auto& [k, v] : req.knobs) pol += "+" + k + "=" + v;
  }
  for (std::string& pol : policies)
    for (const auto& [k, v] : req.knobs) pol += "+" + k + "=" + v;
  Columns cols;  // every column parsed once, before running anything
  for (const PresetItem& item : items)
    for (const std::string& pol : item.policies)
      if (!parse_column(pol, *profile, &cols, error)) return false;
  out->scenario = req.scenario;
  out->kernel = std::string(profile->name);
  out->seed = req.seed;
  out->version = SIMCACHE_VERSION;
  out->policies = policies;
  out->record.kernel_profile = profile_record(*profile);
  out->record.machine = machine_record(*machine);
  out->workloads.clear();
  std::vector<Job> jobs;
  out->workloads.reserve(items.size());
  if (!req.background_trace.empty() && !req.bg_trace)
    return *error = fmt::format("background trace '{}' was not loaded",
                                  iou::escape_controls(req.background_trace)),
           false;
  for (const PresetItem& item : items) {
    ScenarioInfo full = with_machine(*reg.find(item.scenario), *machine);
    if (req.bg_trace && !with_background_trace(&full, req.scenario, error)) return false;
    WorkloadResult w;
    w.scenario = item.scenario;
    w.label = item.label;
    Params params;
    if (!resolve_params(full, item.set, req.sets, &params, error)) return false;
    if (!check_machine(params, error)) return false;
    if (req.bg_trace && !check_background_trace(params, error)) return false;
    w.params = params;
    // A preset's label names its own parameters; one the user overrode is
    // stated with the value actually used.
    std::string over;
    for (const auto& [k, v] : item.set)
      if (params.at(k) != v) over += fmt::format("{}{}={}", over.empty() ? "" : " ", k, params.at(k));
    if (!over.empty()) w.label += " [set " + over + "]";
    if (req.bg_trace) w.label += " [background trace " + iou::escape_controls(req.bg_trace->file) + "]";
    w.op_unit = std::string(full.op_unit);
    w.time_unit = std::string(full.time_unit);
    w.note = item.note;
    w.policies.resize(item.policies.size());
    out->workloads.push_back(std::move(w));
  }
  // The work budget, before anything runs: every column of every item.
  uint64_t work = 0;
  size_t columns = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    columns += items[i].policies.size();
    const uint64_t w = work_product(
        {static_cast<int64_t>(std::min<uint64_t>(reg.find(items[i].scenario)->work(
                                                     out->workloads[i].params),
                                                 INT64_MAX)),
         static_cast<int64_t>(items[i].policies.size())});
    work = w > UINT64_MAX - work ? UINT64_MAX : work + w;
  }
  if (work > req.max_work)
    return *error = fmt::format("the run asks for {} operations ({} column(s) of {} workload(s)); "
                                "the work budget is {} (--max-work N raises it)",
                                work == UINT64_MAX ? "more than 2^64" : std::to_string(work),
                                columns, items.size(), req.max_work),
           false;
  for (size_t i = 0; i < items.size(); ++i) {
    const ScenarioInfo* info = reg.find(items[i].scenario);
    for (size_t k = 0; k < items[i].policies.size(); ++k)
      jobs.push_back({info, out->workloads[i].params, &cols.at(items[i].policies[k]),
                      &out->workloads[i].policies[k], nullptr, {},
                      job_machine(out->workloads[i].params, *machine)});
  }
  // A run is a pure function of (scenario, parameters, policy, kernel,
  // seed): a job equal to an earlier one (presets repeat base columns) is
  // run once and its result copied.
  std::vector<Job> unique;
  std::vector<std::pair<size_t, size_t>> copies;  // (job, unique index)
  for (size_t i = 0; i < jobs.size(); ++i) {
    size_t u = 0;
    while (u < unique.size() && !(unique[u].info == jobs[i].info &&
                                  unique[u].col == jobs[i].col &&
                                  unique[u].params == jobs[i].params))
      ++u;
    if (u == unique.size()) unique.push_back(jobs[i]);
    else copies.emplace_back(i, u);
  }
  run_jobs(unique, *profile, req);
  for (const auto& [i, u] : copies) *jobs[i].out = *unique[u].out;
  return true;
}

bool run_custom(const RunRequest& req, const CustomWorkload& w, RunResult* out,
                std::string* error) {
  const iou::KernelProfile* profile = iou::profile_by_name(req.kernel, error);
  if (!profile) return false;
  if (req.bg_trace || !req.background_trace.empty())
    return *error = fmt::format("a background trace needs background users: '{}' has none", w.name),
           false;
  std::vector<std::string> policies = req.policies;
  if (policies.empty()) policies.push_back("unpatched");
  Columns cols;
  for (const std::string& pol : policies)
    if (!parse_column(pol, *profile, &cols, error)) return false;
  const iou::MachineInfo* machine = iou::machine_by_name(req.machine, error);
  if (!machine) return false;
  ScenarioInfo info{w.name, "", w.op_unit, w.time_unit, w.params, nullptr};
  info = with_machine(info, *machine);
  Params params;
  if (!resolve_params(info, {}, req.sets, &params, error) || !check_machine(params, error))
    return false;
  out->scenario = w.name;
  out->kernel = std::string(profile->name);
  out->seed = req.seed;
  out->version = SIMCACHE_VERSION;
  out->policies = policies;
  out->record.kernel_profile = profile_record(*profile);
  out->record.machine = machine_record(*machine);
  out->workloads.assign(1, WorkloadResult{});
  WorkloadResult& wr = out->workloads[0];
  wr.scenario = w.name;
  wr.label = w.label;
  wr.params = params;
  wr.op_unit = w.op_unit;
  wr.time_unit = w.time_unit;
  wr.policies.resize(policies.size());
  std::vector<Job> jobs;
  for (size_t k = 0; k < policies.size(); ++k)
    jobs.push_back({nullptr, params, &cols.at(policies[k]), &wr.policies[k], &w, {},
                    job_machine(params, *machine)});
  run_jobs(jobs, *profile, req);
  for (const Job& j : jobs)
    if (!j.error.empty()) return *error = j.error, false;
  return true;
}

}  // namespace simcache::sim
