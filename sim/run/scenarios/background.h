// The workload mix seed 001 asks about, shared by rt-arm and arm-fail:
// background users of one kmalloc size class on every CPU (bursts of
// kmallocs then as many kfrees, arriving seeded-Poisson), optional irq
// load on the background CPUs, and the measured loop's lock waits.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sim/run/machine.h"
#include "sim/run/scenario.h"

namespace simcache::sim {

// The mix's parameters, in this order: bg_per_cpu (default `per_cpu`),
// bg_rate_per_ms, bg_burst, bg_size, bg_prio, bg_loop_cpu, irq_period_ns,
// irq_dur_ns, irq_prio.
std::vector<ParamSpec> background_params(int64_t per_cpu);

// True when `p` asks for background tasks or irq load: the loop must then
// yield between operations so they interleave.
bool background_wanted(const Params& p);

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
};

// Every background task of a run. The tasks point into it: it must stay
// where it is until the machine has run them to the end.
struct BackgroundMix {
  Env* e = nullptr;
  Recorder* rec = nullptr;
  bool stop = false;  // the loop is done: free what is held and end
  int k_kmalloc = 0, k_kfree = 0;  // their latency kinds
  std::vector<BackgroundUser> users;
};

// Spawns the background tasks and irq load `p` asks for on every CPU
// (the loop's CPU `loop_cpu` only with bg_loop_cpu=1; never irq load).
// Their events count into their own counters, not the loop's.
void spawn_background(BackgroundMix& mix, Env& e, const Params& p, Recorder& rec,
                      CpuId loop_cpu);

// Their list_lock waits over the whole run (theirs is not a timed region):
// metrics bg_list_lock_waits and bg_list_lock_wait_ns.
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
