#include "model/sched/locking.h"

#include <algorithm>

namespace simcache::iou {

// mirrors spin_lock() (kernel/locking/spinlock.c) vs rt_spin_lock()
// (kernel/locking/spinlock_rt.c), v6.18.
bool waiter_spins(const LockRules& r) { return !r.preempt_rt; }

// mirrors force_irqthreads() on PREEMPT_RT (kernel/irq/manage.c), v6.18.
int irq_priority(const LockRules& r, int thread_prio) {
  return r.preempt_rt ? std::clamp(thread_prio, 1, kMaxRtPrio) : kHardIrqPrio;
}

// mirrors spin_lock_irqsave() (!RT: local_irq_save + preempt_disable) and
// rt_spin_lock() (RT: migrate_disable only), v6.18.
bool preempts_holder(const LockRules& r, int intruder, int effective) {
  return r.preempt_rt && intruder > effective;
}

// mirrors check_preempt_curr() across scheduling classes (rt > fair), v6.18.
bool preempts_task(int intruder, int running) { return intruder > running; }

// mirrors rt_mutex_adjust_prio() / rt_mutex_setprio(), v6.18.
int effective_priority(const LockRules& r, int own, int top_waiter) {
  return r.preempt_rt && r.pi ? std::max(own, top_waiter) : own;
}

// mirrors the PI boost of task_blocks_on_rt_mutex(), v6.18: the waiter's
// wait is the holder's own work plus whatever still preempts it.
double release_time(const LockRules& r, double acquire, double work, int own,
                    std::span<const HoldPreemption> pre, double block, int waiter) {
  const int boosted = effective_priority(r, own, waiter);
  double rel = acquire + work;
  for (const HoldPreemption& p : pre) {
    if (p.at >= rel) break;  // arrives after the release: runs after it
    const int at_prio = p.at < block ? own : boosted;
    if (preempts_holder(r, p.prio, at_prio)) rel += p.dur;
  }
  return rel;
}

}  // namespace simcache::iou
