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

namespace {

struct Job {
  const RunWorkload* w;
  const RunColumn* col;
  PolicyResult* out;
  const CustomWorkload* custom = nullptr;
  std::string error = {};  // custom: why the run failed
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
void inject_faults(Mm& mm, const RunConfig& cfg) {
  for (size_t i = 0; i < cfg.faults.size(); ++i) {
    const RunRequest::Fault& f = cfg.faults[i];
    if (f.nth)
      mm.faults().fail_nth(f.point, f.nth, f.nth);
    else
      mm.faults().fail_random(f.point, f.prob, cfg.seed * 1000003 + i);
  }
}

// The machine of one column: the mm's CPUs, the lock rules of the kernel
// (a scenario's `rt` and `pi` parameters) and the run's prices.
Machine::Config machine_config(const JobMachine& jm, const MmConfig& mc, const RunConfig& cfg) {
  Machine::Config m;
  m.cpus = mc.nr_cpus;
  m.rules.preempt_rt = mc.preempt_rt;
  m.rules.pi = jm.pi;
  m.prices = cfg.event_ns.size() == kNumEvents ? cfg.event_ns.data() : nullptr;
  m.seed = cfg.seed;
  return m;
}

void run_job(Job& j, const RunConfig& cfg, bool steady) {
  const uint64_t seed = cfg.seed;
  const JobMachine& jm = j.w->machine;
  MmConfig mc = j.col->mc;  // the profile's and the column's
  mc.nr_cpus = jm.cpus;
  mc.nr_nodes = jm.nodes;
  mc.pcp_high_min = jm.pcp_high_min;
  mc.pcp_high_max = jm.pcp_high_max;
  iou::PolicySet ps = j.col->ps;
  if (cfg.debug_bug != iou::DebugBug::none) ps.debug_bug = cfg.debug_bug;
  mc.random_kmalloc_seed = seed * 0x9e3779b97f4a7c15ull + 1;
  mc.call_sites = cfg.call_sites;
  mc.preempt_rt = jm.preempt_rt;
  Mm mm(mc);
  const MemcgId user = jm.cgroup ? mm.memcg().create(kRootMemcg) : kRootMemcg;
  iou::MmIoUring io(mm, *j.col->kernel, ps);
  io.set_idle_table(jm.idle);
  io.set_cpufreq_iowait_boost(jm.cpufreq_iowait_boost);
  io.set_llc_kib(jm.llc_kib);
  inject_faults(mm, cfg);
  Machine machine(mm.events(), machine_config(jm, mc, cfg));
  Recorder rec(mm);
  rec.set_timed_views(cfg.timed_views);
  rec.set_snapshot_caches(cfg.snapshot_caches);
  Env env{mm, io, Task{jm.cpu, user, 0}, Task{jm.kworker_cpu, kRootMemcg, 0}, seed, &machine,
          &rec, cfg.bg_trace.get(), steady};
  std::function<void()> at_end;
  // The program is the first task, on the submitter's CPU (SCHED_OTHER); a
  // driver that needs more tasks spawns them from it.
  machine.spawn(env.submitter.cpu, iou::kSchedOther, [&] {
    if (j.custom) j.custom->run(env, j.w->params, rec, &at_end, &j.error);
    else j.w->info->run(env, j.w->params, rec);
    return Step::done();
  });
  machine.run();
  PolicyResult& r = *j.out;
  r.needs_clock = machine.clock_ordered();
  r.policy = j.col->spec;
  r.kernel = std::string(j.col->kernel->name);
  r.config = config_record(ps, mc);
  rec.finish(&r);
  r.caches = cache_stats(mm);
  for (const RunRequest::Fault& f : cfg.faults)
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

void run_jobs(std::vector<Job>& jobs, const RunConfig& cfg) {
  const int nthreads = std::max(1, std::min<int>(cfg.jobs, static_cast<int>(jobs.size())));
  std::vector<std::thread> pool;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      run_job(jobs[i], cfg, cfg.steady && cfg.faults.empty());
      // A report names its object's history, whose sequence numbers the
      // computed rounds did not advance: such a run is simulated in full.
      if (jobs[i].out->computed_rounds && !jobs[i].out->kasan.empty()) {
        *jobs[i].out = PolicyResult{};
        jobs[i].error.clear();
        run_job(jobs[i], cfg, false);
      }
    }
  };
  for (int t = 1; t < nthreads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

// The result's head: what every output names, from the resolved configuration.
void result_head(const RunConfig& cfg, RunResult* out) {
  out->scenario = cfg.scenario;
  // The kernels the columns run on, in first-use order (the run's own
  // when no column names another).
  std::vector<const iou::KernelProfile*> used;
  for (const RunWorkload& rw : cfg.workloads)
    for (const RunColumn* c : rw.columns)
      if (std::find(used.begin(), used.end(), c->kernel) == used.end()) used.push_back(c->kernel);
  if (used.empty()) used = cfg.kernels;
  out->kernel = kernel_names(used);
  out->seed = cfg.seed;
  out->version = SIMCACHE_VERSION;
  out->policies = cfg.policies;
  out->record.kernel_profile = profile_record(*used[0]);
  out->record.kernel_profiles.clear();
  if (used.size() > 1)
    for (const iou::KernelProfile* k : used) out->record.kernel_profiles.push_back(profile_record(*k));
  out->record.machine = machine_record(*cfg.machine);
  out->workloads.clear();
  out->workloads.reserve(cfg.workloads.size());
  for (const RunWorkload& rw : cfg.workloads) {
    WorkloadResult w;
    w.scenario = rw.scenario;
    w.label = rw.label;
    w.params = rw.params;
    w.op_unit = rw.op_unit;
    w.time_unit = rw.time_unit;
    w.note = rw.note;
    w.policies.resize(rw.columns.size());
    out->workloads.push_back(std::move(w));
  }
}

}  // namespace

void run(const RunConfig& cfg, RunResult* out) {
  result_head(cfg, out);
  std::vector<Job> jobs;
  for (size_t i = 0; i < cfg.workloads.size(); ++i)
    for (size_t k = 0; k < cfg.workloads[i].columns.size(); ++k)
      jobs.push_back({&cfg.workloads[i], cfg.workloads[i].columns[k],
                      &out->workloads[i].policies[k]});
  // A run is a pure function of (scenario, parameters, policy, kernel,
  // seed): a job equal to an earlier one (presets repeat base columns) is
  // run once and its result copied.
  std::vector<Job> unique;
  std::vector<std::pair<size_t, size_t>> copies;  // (job, unique index)
  for (size_t i = 0; i < jobs.size(); ++i) {
    size_t u = 0;
    while (u < unique.size() && !(unique[u].w->info == jobs[i].w->info &&
                                  unique[u].col == jobs[i].col &&
                                  unique[u].w->params == jobs[i].w->params))
      ++u;
    if (u == unique.size()) unique.push_back(jobs[i]);
    else copies.emplace_back(i, u);
  }
  run_jobs(unique, cfg);
  for (const auto& [i, u] : copies) *jobs[i].out = *unique[u].out;
}

bool run(const RunRequest& req, RunResult* out, std::string* error) {
  RunConfig cfg;
  if (!resolve_run(req, &cfg, error)) return false;
  run(cfg, out);
  return true;
}

bool run_custom(const RunRequest& req, const CustomWorkload& w, RunResult* out,
                std::string* error) {
  RunConfig cfg;
  if (!resolve_custom(req, w.name, w.params, &cfg, error)) return false;
  RunWorkload& rw = cfg.workloads[0];
  rw.label = w.label;
  rw.op_unit = w.op_unit;
  rw.time_unit = w.time_unit;
  result_head(cfg, out);
  std::vector<Job> jobs;
  for (size_t k = 0; k < rw.columns.size(); ++k)
    jobs.push_back({&rw, rw.columns[k], &out->workloads[0].policies[k], &w});
  run_jobs(jobs, cfg);
  for (const Job& j : jobs)
    if (!j.error.empty()) return *error = j.error, false;
  return true;
}

}  // namespace simcache::sim
