// Runs a scenario or preset for each policy column on a fresh simulated
// kernel and collects the results. Deterministic: the same request gives
// the same RunResult, whatever --jobs is.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/run/result.h"
#include "sim/run/scenario.h"
#include "model/kernel/machine.h"
#include "model/mm/fault.h"

namespace simcache::sim {

// 10^9 operations: about a minute of simulation (docs/reliability.md).
inline constexpr uint64_t kDefaultMaxWork = 1000000000;

struct RunRequest {
  std::string scenario;
  std::vector<std::pair<std::string, std::string>> sets;  // --set key=value
  std::vector<std::string> policies;  // empty: the preset's, or "unpatched"
  // --set policy.NAME=VALUE: appended to every column as "+NAME=VALUE".
  std::vector<std::pair<std::string, std::string>> knobs;
  std::string kernel = "v6.18";
  // The machine row (model/kernel/machine.def) whose values are the
  // machine parameters' defaults, and whose idle table the wait model uses.
  std::string machine = "i7-12700KF";
  // The work budget: the operations every column of every workload asks
  // for together (ScenarioInfo::work), checked before anything runs.
  uint64_t max_work = kDefaultMaxWork;
  uint64_t seed = 1;
  int jobs = 1;  // worker threads (results do not depend on it)
  // Allocation failures injected at each point (--fail), for robustness
  // runs: with probability `prob` (draws seeded from `seed`), or on every
  // `nth` call when nth > 0.
  struct Fault {
    FaultPoint point;
    double prob = 0;
    uint64_t nth = 0;
  };
  std::vector<Fault> faults;
  // Call-site scopes (MmConfig::call_sites): off leaves the counts alone
  // and the views by call site empty (--no-sites).
  bool call_sites = true;
  // ns per event unit, kNumEvents of them (sim/cost event_prices()): the
  // machine advances each CPU's virtual clock by them as events are
  // counted. Empty: clocks stay at 0 (counts only), so nothing contends
  // and no latency is recorded.
  std::vector<double> event_ns;
  // --background-trace: a kmem trace replayed as the background users of
  // the drivers that have them (docs/engine.md); `background_trace` names
  // the file, `bg_trace` is what sim/replay's load_background_trace() read
  // from it (run() refuses a name without it, and a driver without
  // background load).
  std::string background_trace;
  std::shared_ptr<const BackgroundTrace> bg_trace;
};

// Parameters every scenario accepts (the machine and its tasks).
// cpus: present CPUs (geometry); cpu: the benchmark's CPU; kworker_cpu:
// where ring teardown runs; cgroup: 1 = the task is in a non-root memcg;
// nodes: NUMA nodes. `seed` drives every random choice of the model: the
// --fail probability draws (one generator per point and column) and the
// boot's random_kmalloc_seed (CONFIG_RANDOM_KMALLOC_CACHES).
bool run(const RunRequest& req, RunResult* out, std::string* error);
// A workload that is not a registered driver (an op file, a trace), run
// for every policy column like a scenario. `run` may fail (bad input found
// while running): the first failing column's error is returned.
struct CustomWorkload {
  std::string name, label, op_unit = "op", time_unit = "ns";
  std::vector<ParamSpec> params;  // besides machine_params()
  // `at_end`, if set, runs after the counts are taken and before the
  // end-of-run teardown and leak check (a trace's objects still live when
  // the capture ended are not leaks).
  std::function<bool(Env&, const Params&, Recorder&, std::function<void()>* at_end,
                     std::string*)>
      run;
};
bool run_custom(const RunRequest& req, const CustomWorkload& w, RunResult* out,
                std::string* error);
// Those parameters (a mapping rule may set them: a host's CPU count).
// The default machine's (i7-12700KF); machine_params(m): machine m's.
const std::vector<ParamSpec>& machine_params();
std::vector<ParamSpec> machine_params(const iou::MachineInfo& m);

}  // namespace simcache::sim
