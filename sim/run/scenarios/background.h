// The workload mix seed 001 asks about, shared by rt-arm and arm-fail:
// background users of one kmalloc size class on every CPU (bursts of
// kmallocs then as many kfrees, arriving seeded-Poisson), optional irq
// load on the background CPUs, and the measured loop's lock waits.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "sim/run/machine.h"
#include "sim/run/scenario.h"

namespace simcache::sim {

// A kmem trace as background load (RunRequest::bg_trace, loaded by
// sim/replay/background_trace.h; docs/engine.md "Background load from a
// trace"): per traced CPU, its kmalloc/kmem_cache_alloc and
// kfree/kmem_cache_free events in order. Memory: 16 bytes an event.
struct BgTraceOp {
  static constexpr uint32_t kNoObj = UINT32_MAX;  // a free of an object from before the trace
  uint64_t gap_ns;  // trace time since the CPU's previous event (the first: since the trace began)
  uint32_t size : 31;  // alloc: the size kmalloc routes by (bytes_req, else bytes_alloc)
  uint32_t alloc : 1;
  uint32_t obj;  // the object it allocates or frees (a trace-wide index), or kNoObj
};
struct BgTraceCpu {
  uint32_t cpu = 0;  // as traced
  uint64_t tail_ns = 0;  // from its last event to the trace's last
  std::vector<BgTraceOp> ops;
};
struct BackgroundTrace {
  static constexpr uint64_t kMaxEvents = 1000000;
  static constexpr size_t kMaxCpus = 1024;  // distinct traced CPUs (one task each)
  std::string file;
  std::vector<BgTraceCpu> cpus;  // ascending traced CPU
  uint32_t objects = 0;  // object indices 0..objects-1
  uint64_t events = 0, span_ns = 0;
};

// The mix's parameters, in this order: bg_per_cpu (default `per_cpu`),
// bg_rate_per_ms, bg_burst, bg_size, bg_prio, bg_loop_cpu, irq_period_ns,
// irq_dur_ns, irq_prio.
std::vector<ParamSpec> background_params(int64_t per_cpu);

// With a background trace, the parameters it adds (bg_trace_speed), and
// whether a driver takes background load (it has background_params()).
const std::vector<ParamSpec>& background_trace_params();
bool takes_background(const ScenarioInfo& s);
// A trace needs a background CPU: not cpus=1 with bg_loop_cpu=0.
bool check_background_trace(const Params& p, std::string* error);

// True when `p` asks for background tasks or irq load, or the run has a
// background trace: the loop must then yield between operations so they
// interleave.
bool background_wanted(const Env& e, const Params& p);
// The same from the parameters alone (no background trace).
bool background_params_wanted(const Params& p);

// One background task: bursts of `burst` kmallocs then as many kfrees,
// bursts arriving seeded-Poisson at a mean gap of `mean_gap_ns`.
struct BackgroundUser {
  Task task;
  uint32_t size;
  int64_t burst;
  double mean_gap_ns;
  std::mt19937_64 rng;
  std::vector<Ptr> held;
  int64_t phase = 0;  // 0..burst-1 allocs, burst..2*burst-1 frees
  double next = 0;
  int id = -1;  // its machine task
  uint64_t kmallocs = 0;  // its kmalloc() calls (background load shown)
};

// One task replaying a traced CPU's events (BackgroundTrace), in a loop.
struct TraceUser {
  Task task;
  const BgTraceCpu* cpu;
  size_t i = 0;        // next op
  double next = 0;     // when it is due
  bool wrapped = false;  // `i` went back to 0: its gap includes the previous pass's tail
  int id = -1;
  // Counted while the loop runs (record_background()).
  int64_t events = 0, kmallocs = 0, kfrees = 0, unmatched = 0, missed = 0, passes = 0;
  int64_t pass_frees = 0;  // what a pass's end freed (not trace events)
};

// Every background task of a run. The tasks point into it: it must stay
// where it is until the machine has run them to the end.
struct BackgroundMix {
  Env* e = nullptr;
  Recorder* rec = nullptr;
  bool stop = false;  // the loop is done: free what is held and end
  double stop_ns = 0;  // when it was done (virtual time)
  double stop_lag_ns = 0;  // the latest trace task's end after stop_ns
  int k_kmalloc = 0, k_kfree = 0;  // their latency kinds
  double start_ns = 0;  // when they were spawned (virtual time)
  std::vector<BackgroundUser> users;
  // With a background trace: its tasks, and every traced object's pointer
  // now (kNull: not allocated), shared because a CPU may free another's.
  const BackgroundTrace* trace = nullptr;
  double speed = 1;  // bg_trace_speed / 1000
  std::vector<TraceUser> tracers;
  std::vector<Ptr> objs;
};

// Spawns the background tasks and irq load `p` asks for on every CPU
// (the loop's CPU `loop_cpu` only with bg_loop_cpu=1; never irq load).
// Their events count into their own counters, not the loop's.
void spawn_background(BackgroundMix& mix, Env& e, const Params& p, Recorder& rec,
                      CpuId loop_cpu);

// Their list_lock waits over the whole run (theirs is not a timed region):
// metrics bg_list_lock_waits and bg_list_lock_wait_ns; with a trace, what
// its tasks replayed until the loop was done: bg_trace_events (ops run,
// skipped frees included), bg_trace_kmallocs, bg_trace_kfrees,
// bg_trace_unmatched_frees (objects from before the trace),
// bg_trace_missed_frees (another CPU's object not allocated then),
// bg_trace_passes (completed passes over a CPU's events), bg_trace_pass_frees
// (objects a pass ended holding), bg_trace_tasks.
void record_background(const BackgroundMix& mix, Recorder& rec);

// The measured loop's lock waits over its measured rounds.
struct LoopWaits {
  Machine::TaskStats at0;  // the loop's stats at the round's start
  int64_t waits = 0, all_waits = 0;
  double wait_ns = 0, all_wait_ns = 0;
  void begin(const Machine& m, int task) { at0 = m.stats(task); }
  void end(const Machine& m, int task);
  // Metrics list_lock_waits, list_lock_wait_ns, lock_waits, lock_wait_ns.
  void record(Recorder& rec) const;
};

}  // namespace simcache::sim
