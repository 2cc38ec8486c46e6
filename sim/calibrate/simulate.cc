// Simulating the mapped rows of calibrate and validate: the work budget
// and the progress callback (docs/calibration.md, "Work budget").
#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include "sim/calibrate/calibrate.h"
#include "sim/run/engine.h"
#include "sim/run/scenario.h"

namespace simcache::sim {
namespace {

constexpr uint64_t kSaturated = std::numeric_limits<uint64_t>::max();

// What one simulation of a (scenario, parameters, kernel) with its
// policies gave: per-op counts by (policy, phase), failures by policy,
// the measured rounds it computed.
struct RunOutcome {
  std::vector<std::tuple<std::string, std::string, PerOpCounts>> counts;
  std::vector<std::pair<std::string, std::map<std::string, uint64_t>>> failures;
  uint64_t computed_rounds = 0;
};

// The simulations this process has run, remembered. A simulation's
// counts are a function of its configuration alone (the same config
// and seed give the same counts: docs/reliability.md, "`--seed`"), so a
// process that simulates the same configurations again (validate
// --fit-on where both files share them, the tests' commands on one
// sitting) runs each once. The key holds everything run() is given
// here; the job count is in it too, so that a comparison across job
// counts still simulates both. Bounded: past kMaxRemembered runs the
// oldest is forgotten (a run keeps about 1.2 KB per policy and phase,
// so a few megabytes at most).
class RunMemo {
 public:
  using Key = std::tuple<std::string, Params, std::string, std::vector<std::string>, int, bool>;
  static constexpr size_t kMaxRemembered = 512;

  bool find(const Key& k, RunOutcome* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(k);
    if (it == runs_.end()) return false;
    *out = it->second;
    return true;
  }
  void keep(const Key& k, const RunOutcome& v) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!runs_.emplace(k, v).second) return;
    order_.push_back(k);
    if (order_.size() > kMaxRemembered) {
      runs_.erase(order_.front());
      order_.pop_front();
    }
  }
  void forget() {
    std::lock_guard<std::mutex> lock(mu_);
    runs_.clear();
    order_.clear();
  }

 private:
  std::mutex mu_;
  std::map<Key, RunOutcome> runs_;
  std::deque<Key> order_;  // oldest first
};

RunMemo& run_memo() {
  static RunMemo memo;
  return memo;
}

uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}
uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}

int64_t param(const Params& p, const char* name, int64_t dflt) {
  auto it = p.find(name);
  return it == p.end() ? dflt : it->second;
}

// Every parameter of the row's simulation, defaults filled in.
bool resolved_params(const MappedRow& r, Params* out, std::string* error) {
  const ScenarioInfo* s = ScenarioRegistry::get().find(r.scenario);
  if (!s) return *error = fmt::format("unknown scenario '{}'", r.scenario), false;
  ScenarioInfo info = *s;
  for (const ParamSpec& p : machine_params()) info.params.push_back(p);
  std::vector<std::pair<std::string, std::string>> sets;
  for (const auto& [k, v] : r.params) sets.emplace_back(k, std::to_string(v));
  return resolve_params(info, {}, sets, out, error);
}

// The measured repeats of a simulation: `rounds`, or lifecycle's groups x
// ops; 0 when it has none.
uint64_t measured_repeats(const Params& p) {
  if (p.count("rounds")) return static_cast<uint64_t>(std::max<int64_t>(0, p.at("rounds")));
  if (p.count("groups") && p.count("ops"))
    return sat_mul(static_cast<uint64_t>(std::max<int64_t>(0, p.at("groups"))),
                   static_cast<uint64_t>(std::max<int64_t>(0, p.at("ops"))));
  return 0;
}

}  // namespace

bool has_work_entry(std::string_view scenario) {
  const ScenarioInfo* s = ScenarioRegistry::get().find(scenario);
  return s && s->work;
}

bool row_work(const MappedRow& r, RowWork* out, std::string* error) {
  Params p;
  if (!resolved_params(r, &p, error)) return false;
  RowWork w;
  // The driver's own count (ScenarioInfo::work, the scenario run's budget
  // too), split into rounds and what one round asks for.
  const ScenarioInfo* info = ScenarioRegistry::get().find(r.scenario);
  w.what = "operations";
  uint64_t rounds = 0;
  for (const char* k : {"smoke", "warmup"})
    rounds = sat_add(rounds, static_cast<uint64_t>(std::max<int64_t>(0, param(p, k, 0))));
  rounds = sat_add(rounds, measured_repeats(p));
  w.rounds = std::max<uint64_t>(1, rounds);
  w.work = info && info->work ? info->work(p) : kSaturated;
  w.per_round = w.work == kSaturated ? kSaturated : w.work / w.rounds;
  *out = w;
  return true;
}

void forget_simulations() { run_memo().forget(); }

bool simulate_rows(const std::vector<MappedRow>& rows, int jobs, std::vector<PerOpCounts>* per_op,
                   std::string* error, std::vector<RowFailure>* failed,
                   const SimulateOptions& o) {
  // The budget first: a row beyond it costs no simulation of any row.
  for (const MappedRow& r : rows) {
    RowWork w;
    std::string err;
    if (!row_work(r, &w, &err))
      return *error = fmt::format("{}: shape: {}", r.row.where("shape"), err), false;
    if (w.work > o.max_work)
      return *error = fmt::format(
                 "{}: shape: row {} asks for {} {} ({} per round x {} rounds, smoke and "
                 "warm-up included); the budget is {} (--max-work N raises it)",
                 r.row.where("shape"), r.row.id,
                 w.work == kSaturated ? std::string("more than 2^64") : std::to_string(w.work),
                 w.what, w.per_round, w.rounds, o.max_work),
             false;
  }
  using Key = std::tuple<std::string, Params, std::string>;
  std::map<Key, std::vector<std::string>> runs;
  std::map<Key, size_t> rows_of;
  for (const MappedRow& r : rows) {
    const Key k{r.scenario, r.params, r.kernel};
    ++rows_of[k];
    auto& pols = runs[k];
    if (std::find(pols.begin(), pols.end(), r.policy) == pols.end()) pols.push_back(r.policy);
  }
  // (run, policy, phase) -> per-op counts; phase "" is the whole timed region.
  std::map<std::tuple<Key, std::string, std::string>, PerOpCounts> done;
  std::map<std::pair<Key, std::string>, std::map<std::string, uint64_t>> failures;
  size_t rows_done = 0;
  for (const auto& [key, pols] : runs) {
    const RunMemo::Key mkey{std::get<0>(key), std::get<1>(key), std::get<2>(key), pols, jobs,
                            o.full};
    RunOutcome got;
    if (!run_memo().find(mkey, &got)) {
      RunRequest req;
      req.scenario = std::get<0>(key);
      req.kernel = std::get<2>(key);
      req.policies = pols;
      req.jobs = jobs;
      // Only the event counts are read: no call-site scopes, no timed
      // views beyond the counts (the counts are the same without them),
      // except in the tests' reference (SimulateOptions::full).
      req.call_sites = o.full;
      req.timed_views = o.full;
      for (const auto& [k, v] : std::get<1>(key)) req.sets.emplace_back(k, std::to_string(v));
      RunConfig cfg;
      if (!resolve_run(req, &cfg, error)) return false;
      cfg.steady = !o.full && runs_as_one_task(cfg);  // the engine adds: no faults
      RunResult res;
      run(cfg, &res);
      if (o.simulated) ++*o.simulated;
      for (const PolicyResult& p : res.workloads.at(0).policies) {
        got.computed_rounds += p.computed_rounds;
        if (!p.failures.empty()) got.failures.emplace_back(p.policy, p.failures);
        if (!p.timed_ops) continue;
        auto per_op = [&](const Counters& cnt) {
          PerOpCounts c{};
          for (size_t e = 0; e < kNumEvents; ++e)
            c[e] = static_cast<double>(cnt.v[e]) / static_cast<double>(p.timed_ops);
          return c;
        };
        got.counts.emplace_back(p.policy, "", per_op(p.timed));
        for (const auto& [name, cnt] : p.phases) got.counts.emplace_back(p.policy, name, per_op(cnt));
      }
      run_memo().keep(mkey, got);
    }
    if (o.computed_rounds) *o.computed_rounds += got.computed_rounds;
    for (auto& [policy, f] : got.failures) failures[{key, policy}] = std::move(f);
    for (auto& [policy, phase, c] : got.counts) done[{key, policy, phase}] = c;
    rows_done += rows_of[key];
    if (o.progress) o.progress(rows_done, rows.size());
  }
  per_op->clear();
  for (const MappedRow& r : rows) {
    auto it = done.find({{r.scenario, r.params, r.kernel}, r.policy, r.phase});
    if (it == done.end()) {
      *error = r.phase.empty()
                   ? fmt::format("{}: shape: the simulation of this row times no operation",
                                 r.row.where("shape"))
                   : fmt::format("{}: metric: the simulation times no phase '{}'",
                                 r.row.where("metric"), r.phase);
      return false;
    }
    per_op->push_back(it->second);
  }
  if (failed) {
    failed->clear();
    for (size_t i = 0; i < rows.size(); ++i) {
      const MappedRow& r = rows[i];
      auto f = failures.find({{r.scenario, r.params, r.kernel}, r.policy});
      if (f != failures.end()) failed->push_back({i, f->second});
    }
  }
  return true;
}

}  // namespace simcache::sim
