// A run's configuration, resolved once (docs/architecture.md, "Tables of
// record"). The command line, a --config file and each sweep point give a
// RunRequest: names and strings as the user spelled them. resolve_run()
// turns it into a RunConfig: the kernel profile row, the machine row, each
// workload's parameters (machine.def fields included, range-checked), the
// machine of each workload typed once, and every policy column parsed into
// its PolicySet and MmConfig. The engine executes a RunConfig and never
// parses a string; --dump-config writes one back.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/fault.h"
#include "model/mm/mm_config.h"
#include "sim/run/scenario.h"

namespace simcache::sim {

struct BackgroundTrace;

// 10^9 operations: about a minute of simulation (docs/reliability.md).
inline constexpr uint64_t kDefaultMaxWork = 1000000000;
// --seeds: fewer than 5 cannot bound the median of the seeds' estimates
// at 90 % (0.5^4 = 6.25 % > 5 % of 4 seeds fall on one side of it).
inline constexpr uint32_t kMinSeeds = 5, kMaxSeeds = 64;

// Policy columns a run reports side by side (the report names them A..H).
inline constexpr size_t kMaxColumns = 8;

// What the user asked for, as spelled (the CLI, a --config file, a sweep
// point). resolve_run() checks every name and number in it.
struct RunRequest {
  std::string scenario;
  std::vector<std::pair<std::string, std::string>> sets;  // --set key=value
  std::vector<std::string> policies;  // empty: the preset's, or "unpatched"
  // --set policy.NAME=VALUE: appended to every column as "+NAME=VALUE".
  std::vector<std::pair<std::string, std::string>> knobs;
  // A kernel profile, or several separated by commas: each policy column
  // then runs on every one of them in turn ("POLICY@KERNEL" columns,
  // kernel-major), so one table sets kernels side by side.
  std::string kernel = "v6.18";
  // The machine row (model/kernel/machine.def) whose values are the
  // machine parameters' defaults, and whose idle table the wait model uses.
  std::string machine = "i7-12700KF";
  // The work budget: the operations every column of every workload asks
  // for together (ScenarioInfo::work), checked before anything runs.
  uint64_t max_work = kDefaultMaxWork;
  uint64_t seed = 1;
  // --seeds N: the latency is pooled over seeds seed..seed+N-1, its
  // percentile intervals taken over them too (1, or kMinSeeds..kMaxSeeds).
  uint32_t seeds = 1;
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
  // The timed regions' views beyond their event counts: per-cache SLUB
  // stat deltas (PolicyResult::timed_caches, round_min/round_max), counts
  // by call site and batch sizes (timed_sites, timed_batches). Off for a
  // caller that reads only event counts (calibrate's and validate's
  // simulations, sim/calibrate/simulate.cc); the counts are the same.
  bool timed_views = true;
  // Every cache's state in each ring snapshot (Snapshot::caches): only
  // --slabinfo-at reads it, and taking it at every snapshot of every
  // round is a twentieth of sparse4096's work. Off, the snapshots keep
  // their ring states and memory split; the counts are the same.
  bool snapshot_caches = false;
  // ns per event unit, kNumEvents of them (sim/cost event_prices()): the
  // machine advances each CPU's virtual clock by them as events are
  // counted. Empty: clocks stay at 0 (counts only), so nothing contends
  // and no latency is recorded.
  std::vector<double> event_ns;
  // --background-trace: a kmem trace replayed as the background users of
  // the drivers that have them (docs/engine.md); `background_trace` names
  // the file, `bg_trace` is what sim/replay's load_background_trace() read
  // from it (resolve_run() refuses a name without it, and a driver without
  // background load).
  std::string background_trace;
  std::shared_ptr<const BackgroundTrace> bg_trace;
};

// A policy column, parsed once: its policy set and the mm configuration
// the kernel profile and the column imply.
struct RunColumn {
  // As the user (or the preset) spelled it, knobs appended, then "@KERNEL"
  // when the column names its own kernel profile.
  std::string spec;
  const iou::KernelProfile* kernel = nullptr;  // the column's profile
  iou::PolicySet ps;
  MmConfig mc;
};

// The machine of one workload, typed once from its resolved parameters
// (the machine.def fields, and the scenario's `rt` and `pi` where it has
// them).
struct JobMachine {
  uint16_t cpus = 0;
  uint8_t nodes = 0;
  CpuId cpu = 0, kworker_cpu = 0;
  bool cgroup = true;
  bool preempt_rt = false;  // a scenario with an `rt` parameter: PREEMPT_RT when 1
  bool pi = true;           // priority inheritance on rt_mutex (its `pi` parameter)
  const iou::IdleTable* idle = nullptr;
  bool cpufreq_iowait_boost = false;  // machine.def cpufreq_iowait_boost
  uint32_t llc_kib = 0;               // machine.def llc_kib
  uint32_t pcp_high_min = 0, pcp_high_max = 0;  // machine.def: the per-CPU page lists' high mark
};

// One row group: a driver, its resolved parameters and its columns.
struct RunWorkload {
  const ScenarioInfo* info = nullptr;  // the registry's driver
  std::string scenario, label, note, op_unit, time_unit;
  Params params;  // every parameter, defaults included
  JobMachine machine;
  std::vector<const RunColumn*> columns;  // into RunConfig::columns
};

struct RunConfig {
  std::string scenario;  // the scenario or preset name
  const iou::KernelProfile* kernel = nullptr;  // the first of `kernels`
  std::vector<const iou::KernelProfile*> kernels;  // RunRequest::kernel's, in order
  const iou::MachineInfo* machine = nullptr;
  // The columns the run reports, in order (a preset's items may name
  // their own), each spelled with the knobs appended.
  std::vector<std::string> policies;
  std::map<std::string, RunColumn> columns;  // by spec; stable addresses
  std::vector<RunWorkload> workloads;
  uint64_t seed = 1;
  uint64_t work = 0;  // the operations every column of every workload asks for
  int jobs = 1;
  std::vector<RunRequest::Fault> faults;
  bool call_sites = true;
  bool timed_views = true;  // RunRequest::timed_views
  bool snapshot_caches = false;  // RunRequest::snapshot_caches
  std::vector<double> event_ns;
  // Steady measured rounds may be computed instead of simulated
  // (sim/run/steady.h): only for outputs that need no round's ids,
  // histories or whole-run statistics (sim/cli/cli.cc), never with
  // fault injection.
  bool steady = false;
  // A seeded bug every column runs with (tests of the model's KASAN
  // through the engine only; PolicySet::debug_bug).
  iou::DebugBug debug_bug = iou::DebugBug::none;
  std::shared_ptr<const BackgroundTrace> bg_trace;
  // What the user asked for, kept for --dump-config and the record.
  RunRequest request;
};

// Every workload's driver runs as one task with nothing it reports read
// off the clock (ScenarioInfo::one_task, for its parameters), and no
// background trace adds tasks: a plain table of the run may be priced
// after the fact (sim/cli/cli.cc; a driver that turns out otherwise says
// so in PolicyResult::needs_clock, and the run is redone priced).
bool runs_as_one_task(const RunConfig& cfg);

// Resolves `req`: unknown names, parameters out of their ranges, columns
// that do not parse for the kernel, a machine the parameters contradict
// and a run over its work budget are errors (one line each).
bool resolve_run(const RunRequest& req, RunConfig* out, std::string* error);

// A workload that is not a registered driver (an op file, a trace), with
// its own parameters besides the machine's: one workload, no preset items.
bool resolve_custom(const RunRequest& req, const std::string& name,
                    const std::vector<ParamSpec>& params, RunConfig* out, std::string* error);

// RunRequest::kernel: one profile name or several separated by commas
// (each known, none twice).
bool resolve_kernels(std::string_view names, std::vector<const iou::KernelProfile*>* out,
                     std::string* error);
// The columns of `policies` with the request's knobs: each policy as it
// is on one kernel; on several, each on every kernel in turn, kernel-major
// ("POLICY@KERNEL"; a policy that names its own kernel keeps it, once).
std::vector<std::string> column_specs(const std::vector<std::string>& policies,
                                      const RunRequest& req,
                                      const std::vector<const iou::KernelProfile*>& kernels);
// A column spec "POLICY" or "POLICY@KERNEL": the policy part, and the
// profile the spec names after its '@' (nullptr when it names none).
// False, with the reason, on an unknown kernel.
bool split_column(std::string_view spec, std::string_view* policy,
                  const iou::KernelProfile** kernel, std::string* error);
// The kernel names of a run, comma-separated (RunResult::kernel).
std::string kernel_names(const std::vector<const iou::KernelProfile*>& kernels);

// The machine parameters every scenario takes: the field rows of
// model/kernel/machine.def. The default machine's (i7-12700KF), or
// machine m's (a mapping rule may set them: a host's CPU count).
const std::vector<ParamSpec>& machine_params();
std::vector<ParamSpec> machine_params(const iou::MachineInfo& m);

// The machine of a workload from its resolved parameters.
JobMachine job_machine(const Params& p, const iou::MachineInfo& m);
// The machine parameters' checks across fields: the CPUs named exist,
// no more nodes than CPUs, the per-CPU page lists' high mark's most not
// below its least. false with one line in *error.
bool check_machine(const Params& p, std::string* error);

// A preset's or scenario's default columns (empty: "unpatched"), as
// resolve_run() picks them when the request names none.
std::vector<std::string> default_columns(std::string_view scenario);

}  // namespace simcache::sim
