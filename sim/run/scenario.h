// Scenario drivers and presets, registered by name. A driver replays one
// measurement program of docs/workloads.md on a simulated kernel; a
// preset is a list of drivers with fixed parameters (sparse4096).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/run/result.h"
#include "model/io_uring/io_uring_mm.h"
#include "model/mm/mm.h"

namespace simcache::sim {

class Machine;  // sim/run/machine.h
struct BackgroundTrace;  // sim/run/scenarios/background.h

struct ParamSpec {
  std::string_view name;
  int64_t def;
  int64_t min, max;
  std::string_view help;
};
using Params = std::map<std::string, int64_t>;

// Marks rounds and timed regions as the real program does, snapshotting
// the event counters at each boundary. Counting never stops: `total`
// covers set-up, untimed work and teardown.
class Recorder {
 public:
  explicit Recorder(Mm& mm) : mm_(mm) {}
  void begin_round(bool measured);
  // Off: the timed regions record their event counts only; timed_caches,
  // round_min, round_max, timed_sites and timed_batches stay empty
  // (RunConfig::timed_views).
  void set_timed_views(bool on) { timed_views_ = on; }
  // Off (the default): snapshot_caches() records nothing, and every
  // Snapshot::caches stays empty (RunConfig::snapshot_caches).
  void set_snapshot_caches(bool on) { snapshot_caches_ = on; }
  // A timed region; `phase` names the part of the operation it times
  // ("registration", "fill", ...). The phases of a round partition its
  // timed region, so their counts sum exactly to it.
  void timed_begin(std::string_view phase = "");
  void timed_end();
  void end_round(uint64_t ops);  // `ops` operations were timed this round
  void metric(const std::string& name, int64_t value) { metrics_[name] = value; }
  // An operation that failed with `err` ("ENOMEM": an op file's or a
  // trace's allocation that returned NULL); reported beside the io_uring
  // model's failures (PolicyResult::failures).
  void failure(std::string_view err) { ++failures_[std::string(err)]; }
  // Operation latency in virtual time (the running CPU's clock, which the
  // machine advances by each counted event's price and by lock waits).
  // op_kind() names a kind once (index, in first-use order); op_end()
  // records now() - start when inside a measured round's timed region of
  // a priced run. Kinds that recorded nothing are left out of the result.
  int op_kind(std::string_view kind);
  double now() const { return mm_.events().now(); }
  void op_end(int kind, double start) {
    if (measured_ && in_timed_ && mm_.events().priced()) lat_[kind].add_ns(now() - start);
  }
  bool measured() const { return measured_; }
  // What the run reports is read off the clock (a share of the CPU's
  // wall time): without prices it is not what a priced run reports
  // (PolicyResult::needs_clock).
  void mark_needs_clock() { needs_clock_ = true; }
  // Records (replaces) the ring of `st.role` in snapshot `name`, and the
  // snapshot's memory split.
  void snapshot(const std::string& name, const RingState& st, const MemorySplit& mem);
  // Records every cache's state in snapshot `name` (which must exist).
  void snapshot_caches(const std::string& name);
  void finish(PolicyResult* out) const;

  // One measured round as end_round() folded it in: what a steady-state
  // check (sim/run/steady.h) compares between rounds and folds in again
  // for the rounds it computes. Kept only after keep_rounds().
  struct RoundRecord {
    Counters timed;
    std::vector<uint64_t> stats;  // [cache][item] deltas of the timed regions
    std::vector<std::pair<std::string, Counters>> phases;
    CallSiteCounts sites;
    BatchHists batches;
    uint64_t ops = 0;
    std::map<std::string, int64_t> metrics;  // as the round left them
    bool operator==(const RoundRecord&) const = default;
  };
  void keep_rounds(bool on = true) { keep_rounds_ = on; }
  const RoundRecord& last_round() const { return last_; }
  // Folds in `r` as end_round() would have for a simulated round.
  void repeat_round(const RoundRecord& r);
  // An operation failed (failure()) at some point of the run.
  bool any_failure() const { return !failures_.empty(); }

 private:
  Mm& mm_;
  bool measured_ = false, in_timed_ = false, needs_clock_ = false, keep_rounds_ = false;
  RoundRecord last_;
  uint64_t computed_rounds_ = 0;  // repeat_round()s
  CallSiteCounts round_sites_start_;  // keep_rounds(): timed_sites_ at begin_round()
  BatchHists round_batches_start_;
  Counters round_, mark_, timed_sum_;
  std::string phase_;
  std::vector<std::pair<std::string, Counters>> phase_round_, phase_sum_;  // operation order
  RoundLog rounds_;
  // Per-cache stat sums [cache][item] at the mark, and the round's and the
  // timed regions' deltas.
  std::vector<uint64_t> mark_stats_, round_stats_, timed_stats_;
  std::vector<uint64_t> now_stats_;  // timed_end()'s sums, kept to spare an allocation
  bool timed_views_ = true, snapshot_caches_ = false;
  // The smallest and largest round delta of each [cache][item], folded
  // round by round: memory follows the caches, not the rounds run.
  std::vector<uint64_t> round_min_, round_max_;
  uint64_t folded_rounds_ = 0;
  CallSiteCounts mark_sites_, timed_sites_;
  BatchHists mark_batches_, timed_batches_;
  std::vector<Snapshot> snapshots_;
  uint64_t ops_per_round_ = 0, total_ops_ = 0;
  std::map<std::string, int64_t> metrics_;
  std::map<std::string, uint64_t> failures_;
  Latencies lat_;
};

// The simulated machine a driver runs on: the mm model, the io_uring
// layer over it, and the tasks of the measurement program.
struct Env {
  Mm& mm;
  iou::MmIoUring& io;
  Task submitter;  // the pinned benchmark task (CPU, memcg)
  Task kworker;    // where ring teardown runs (iou_exit, root cgroup)
  uint64_t seed;
  // The machine the driver runs on (as its first task): a driver that
  // models other CPUs' work spawns tasks on it. nullptr outside the engine.
  Machine* machine = nullptr;
  // The run's recorder, for helpers that time operations (op latency).
  Recorder* rec = nullptr;
  // RunRequest::bg_trace: replayed as the background users, or nullptr.
  const BackgroundTrace* bg_trace = nullptr;
  // Rounds found steady may be computed instead of simulated
  // (RunConfig::steady, sim/run/steady.h).
  bool steady = false;
};

using DriverFn = void (*)(Env&, const Params&, Recorder&);

// The operations a driver's parameters ask for, counted before it runs
// (every round, warm-up and smoke included; each allocation, free, SQE or
// wait one operation, roughly): what the work budget is held against.
// Saturates at UINT64_MAX.
using WorkFn = uint64_t (*)(const Params&);

// Whether, with these parameters, the driver runs as one task on a
// machine with no irq source and its plain table shows nothing read off
// the clock (the teardown timeline's metrics are detail views): its
// counts are the same with prices on the clock or without, so a plain
// table prices it after the fact (sim/cli/cli.cc). nullptr: never.
using OneTaskFn = bool (*)(const Params&);
inline bool always_one_task(const Params&) { return true; }

struct ScenarioInfo {
  std::string_view name;
  std::string_view summary;
  std::string_view op_unit;    // what one timed operation is
  std::string_view time_unit;  // "ns" or "us" per operation in reports
  std::vector<ParamSpec> params;
  DriverFn run;
  std::vector<std::string> policies = {};  // default columns (empty: "unpatched")
  WorkFn work = nullptr;                   // add() requires one
  OneTaskFn one_task = nullptr;            // add()'s
};

// a x b x ..., saturating at UINT64_MAX (work estimates).
uint64_t work_product(std::initializer_list<int64_t> factors);

// One row group of a preset: a driver with parameter overrides.
struct PresetItem {
  std::string label;
  std::string scenario;
  Params set;
  std::vector<std::string> policies;  // empty: the preset's columns
  std::string note;                   // one line under the block
};
struct PresetInfo {
  std::string_view name;
  std::string_view summary;
  std::vector<std::string> policies;  // default policy columns
  std::vector<PresetItem> items;
};

class ScenarioRegistry {
 public:
  static ScenarioRegistry& get();
  // Every driver states its work (the budget is checked before a run).
  void add(ScenarioInfo info, WorkFn work, OneTaskFn one_task = nullptr);
  void add_preset(PresetInfo info);
  const ScenarioInfo* find(std::string_view name) const;
  const PresetInfo* find_preset(std::string_view name) const;
  std::span<const ScenarioInfo> all() const { return scenarios_; }
  std::span<const PresetInfo> presets() const { return presets_; }
  std::string names() const;  // every scenario and preset, comma-separated

 private:
  std::vector<ScenarioInfo> scenarios_;
  std::vector<PresetInfo> presets_;
};

// Each driver file defines one of these; ScenarioRegistry::get() calls
// every function listed in scenarios/scenarios.def once. (Explicit calls,
// not static registrars: the drivers live in a static library.)
#define SIMCACHE_SCENARIO(fn) void fn(ScenarioRegistry& r);
#include "sim/run/scenarios/scenarios.def"
#undef SIMCACHE_SCENARIO

// Resolves defaults, preset overrides and user `key=value` settings.
// Unknown keys and out-of-range values are errors naming the key and the
// valid choices.
bool resolve_params(const ScenarioInfo& s, const Params& preset,
                    const std::vector<std::pair<std::string, std::string>>& user,
                    Params* out, std::string* error);

}  // namespace simcache::sim
