// The discrete-event machine every scenario runs on (docs/engine.md):
// N simulated CPUs, each with a virtual clock and a run queue of tasks
// (SCHED_OTHER = priority 0, SCHED_FIFO 1..99). A task is a step
// function; the machine repeatedly takes the CPU with the smallest clock
// (ties: the lower CPU id), runs its highest-priority ready task for one
// step, and advances that CPU's clock by the price of every event the
// step counts. Shared locks (model/mm/lock_hook.h) record when they are
// free in virtual time; a contended acquisition waits for that, by the
// rules of model/sched/locking.h (spin on !RT, sleep with priority
// inheritance on PREEMPT_RT). Interrupt load on a CPU preempts what runs
// there. Memory: proportional to CPUs, tasks and lock instances.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "model/sched/locking.h"
#include "model/mm/lock_hook.h"
#include "model/types.h"

namespace simcache::sim {

// What a task does after a step.
struct Step {
  enum Kind : uint8_t { kRun, kSleep, kDone } kind = kRun;
  double until = 0;  // kSleep: wake-up time (virtual ns)
  static Step run() { return {kRun, 0}; }
  static Step sleep_until(double t) { return {kSleep, t}; }
  static Step done() { return {kDone, 0}; }
};

// Interrupt load on one CPU: a threaded handler on RT (SCHED_FIFO `prio`),
// a hardirq on !RT. Arrivals every `period_ns` (from `phase_ns`), or, with
// period 0, seeded Poisson at `rate_per_ms`; each runs `dur_ns`. A
// handler whose arrivals pile up while it cannot run runs once for them
// (IRQTF_RUNTHREAD is one flag).
struct IrqLoad {
  int prio = 50;
  double period_ns = 0, phase_ns = 0;
  double rate_per_ms = 0;
  double dur_ns = 0;
};

class Machine final : public LockHook {
 public:
  struct Config {
    uint16_t cpus = 1;
    iou::LockRules rules;
    const double* prices = nullptr;  // kNumEvents ns per event unit; nullptr: clocks stay 0
    uint64_t seed = 1;               // Poisson irq arrivals
  };
  using Body = std::function<Step()>;
  struct TaskStats {
    uint64_t steps = 0;
    uint64_t contended = 0;  // lock acquisitions that waited (every class)
    double wait_ns = 0;      // virtual time spent waiting for locks (every class)
    uint64_t list_contended = 0;  // the same, list_lock only
    double list_wait_ns = 0;
    double list_hold_ns = 0;      // virtual time holding a list_lock (acquired to released)
  };

  // Installs itself as `sink`'s clock, target and lock hook until destroyed.
  Machine(EventSink& sink, const Config& cfg);
  ~Machine() override;
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  // A task on `cpu` at `prio`; `own_counts`: its events go to counters of
  // its own (a background task is not the measured program). Returns its id.
  int spawn(CpuId cpu, int prio, Body body, bool own_counts = false);
  void add_irq(CpuId cpu, const IrqLoad& load);
  // Runs until every task is done.
  void run();

  // The running task's view.
  double now() const;
  CpuId cpu() const { return cur_cpu_; }
  int task() const { return cur_task_; }
  uint16_t cpus() const { return static_cast<uint16_t>(cpus_.size()); }
  double clock(CpuId c) const { return cpus_[c].clock; }
  const TaskStats& stats(int task) const { return tasks_[task].stats; }
  const Counters* own_counts(int task) const { return tasks_[task].counts.get(); }
  uint64_t steps() const { return steps_; }
  // Whether the clock ordered anything: more than one task, or an irq
  // source. A run without either does the same work, event for event,
  // with prices or without (its clock only times what it did).
  bool clock_ordered() const {
    if (tasks_.size() > 1) return true;
    for (const Cpu& c : cpus_)
      if (!c.irqs.empty()) return true;
    return false;
  }
  const iou::LockRules& rules() const { return cfg_.rules; }

  void acquire(LockClass cls, uint32_t id) override;
  void release(LockClass cls, uint32_t id) override;

 private:
  struct Irq {
    IrqLoad load;
    int prio;          // irq_priority() of the rules
    double next;       // next arrival
    std::mt19937_64 rng;
  };
  // What the scheduler reads of a task on every step, in its CPU's run
  // queue (Cpu::tasks, in spawn order); the rest is in TaskRec.
  struct TaskRec;
  struct Sched {
    double wake = 0;
    uint64_t last_run = 0;
    TaskRec* rec = nullptr;  // tasks_[id] (a deque: it stays put)
    int id = 0;
    int prio = 0;
    bool done = false, sleeping = false;
  };
  struct Cpu {
    double clock = 0;
    double next = 0;  // next_time(), cached for the tree
    std::vector<Sched> tasks;
    std::vector<Irq> irqs;
  };
  // What a step uses (body, counts, prio, slot, stats.steps) in the
  // first cache line.
  struct alignas(64) TaskRec {
    Body body;
    std::unique_ptr<Counters> counts;
    int prio;
    uint32_t slot;  // index in its CPU's tasks
    CpuId cpu;
    TaskStats stats;
    uint32_t held[4] = {};  // lock keys held now (nesting is shallow)
    int nheld = 0;
  };
  struct Lock {
    double free_at = 0, acquired = 0;
    int holder_prio = 0;
    std::vector<iou::HoldPreemption> pre;  // preemptions of the current/last hold
  };

  static uint32_t key(LockClass cls, uint32_t id) {
    return id * kNumLockClasses + static_cast<uint32_t>(cls);
  }
  Lock& lock_of(uint32_t k);
  double next_time(const Cpu& c) const;
  void tree_update(CpuId c);
  // Compares as unsigned in the order of the times (-0 as +0), so the
  // tree's selects are integer moves, not branches on a double.
  static uint64_t order_key(double t);
  // The task to run on `c`, nullptr: none.
  Sched* pick_task(Cpu& c);
  void run_one(CpuId c);
  double next_arrival(Irq& q, double after);
  // Runs the interrupt work that has arrived by the CPU's clock and may
  // preempt the running task (priority `running`; the lock rules apply
  // while it holds a lock).
  void catch_up(CpuId c, int running);
  // The CPU is idle (its task sleeps) until `until`: interrupt work that
  // arrives meanwhile runs then; work above `waker` can delay the wake.
  void idle_until(CpuId c, double until, int waker);

  EventSink& sink_;
  Config cfg_;
  std::vector<Cpu> cpus_;
  std::deque<TaskRec> tasks_;  // stable: a running body may spawn
  std::vector<Lock> locks_;
  // Tournament tree over CPUs: leaf = CPU, node = the winner below it with
  // its time inline, so an update walks one path from the leaf carrying
  // the winner in registers and reads only siblings (no chain of loads
  // through the node just written). Padding leaves and CPUs with nothing
  // left to run hold kNever.
  struct Node {
    uint64_t key;  // order_key() of the CPU's next_time()
    uint32_t cpu;
  };
  std::vector<Node> tree_;
  size_t leaves_ = 1;
  CpuId cur_cpu_ = 0;
  int cur_task_ = -1;
  uint64_t steps_ = 0, tick_ = 0;
};

}  // namespace simcache::sim
