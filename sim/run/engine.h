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
#include "sim/run/run_config.h"
#include "sim/run/scenario.h"
#include "model/kernel/machine.h"
#include "model/mm/fault.h"

namespace simcache::sim {

// Parameters every scenario accepts (the machine and its tasks).
// cpus: present CPUs (geometry); cpu: the benchmark's CPU; kworker_cpu:
// where ring teardown runs; cgroup: 1 = the task is in a non-root memcg;
// nodes: NUMA nodes. `seed` drives every random choice of the model: the
// --fail probability draws (one generator per point and column) and the
// boot's random_kmalloc_seed (CONFIG_RANDOM_KMALLOC_CACHES).
// run(config): executes a resolved configuration (it cannot fail);
// run(request): resolve_run() then run(config).
void run(const RunConfig& cfg, RunResult* out);
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

}  // namespace simcache::sim
