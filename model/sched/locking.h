// Lock semantics of the kernel configuration, as pure rules the machine
// (sim/run/machine.h) applies: who spins, who sleeps, who may preempt a
// lock holder, and when a priority-inheriting holder releases.
// Priorities: 0 = SCHED_OTHER, 1..99 = SCHED_FIFO (higher runs first);
// kHardIrqPrio = a hardirq handler (above every task).
#pragma once

#include <cstdint>
#include <span>

namespace simcache::iou {

inline constexpr int kSchedOther = 0;
inline constexpr int kMaxRtPrio = 99;
inline constexpr int kHardIrqPrio = 1000;

struct LockRules {
  bool preempt_rt = false;  // CONFIG_PREEMPT_RT
  bool pi = true;           // rt_mutex priority inheritance (RT only; off: a what-if)
};

// Whether a waiter for a contended spinlock_t spins on its CPU (interrupts
// off, nothing else runs there): !RT raw spinning; RT: it sleeps in
// rt_spin_lock() (rtlock_slowlock()), its CPU free for other work.
bool waiter_spins(const LockRules& r);

// The priority an interrupt handler runs at: !RT hardirq context (above
// every task); RT: forced-threaded, an irq thread at its SCHED_FIFO
// priority (irq/NN-name, default 50).
int irq_priority(const LockRules& r, int thread_prio);

// Whether work at `intruder` priority preempts a task running at
// `effective` priority while it holds a spinlock_t: !RT: nothing does
// (spin_lock_irqsave disables interrupts and preemption; the work runs
// at the unlock); RT: strictly higher priority does (rt_spin_lock only
// disables migration).
bool preempts_holder(const LockRules& r, int intruder, int effective);
// The same outside any lock: strictly higher priority (a hardirq always).
bool preempts_task(int intruder, int running);

// rt_mutex_adjust_prio(): the holder runs at max(own, top waiter) while
// the waiter blocks (with PI), else at its own priority.
int effective_priority(const LockRules& r, int own, int top_waiter);

// One piece of higher-priority work that ran on the holder's CPU while it
// held the lock: arrival time, duration, priority (in arrival order).
struct HoldPreemption {
  double at, dur;
  int prio;
};

// The release time a waiter sees (mirrors rt_mutex PI, kernel/locking/
// rtmutex.c, v6.18): the holder acquired at `acquire` and did `work` ns
// of its own inside the lock; the preemptions recorded while it held it
// at its own priority are `pre`. From `block` (the waiter's blocking
// time) the holder runs at effective_priority(own, waiter), so a
// preemption arriving after `block` delays the release only if it still
// preempts at that priority (and arrives before the release so far).
double release_time(const LockRules& r, double acquire, double work, int own,
                    std::span<const HoldPreemption> pre, double block, int waiter);

}  // namespace simcache::iou
