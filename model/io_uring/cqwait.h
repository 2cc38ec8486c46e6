// The cqring wait (io_uring/io_uring.c io_cqring_wait(), seed 003): the
// waiter sleeps until its CQEs arrive, its CPU goes idle in the state the
// menu governor picks, and the waker's try_to_wake_up() brings it back.
#pragma once

#include "model/io_uring/io_kernel.h"
#include "model/sched/cpufreq.h"
#include "model/sched/idle.h"

namespace simcache::iou {

// What the waiting task brings to one cqring wait (the inputs of
// current_pending_io() and of the enter flags).
struct CqWait {
  uint64_t sleep_us = 0;      // how long it sleeps before the wake (0: no sleep)
  uint64_t predicted_us = 0;  // the idle governor's prediction of it
  // Requests of this task in flight while it waits (a read, an armed
  // FUTEX_WAIT or poll): tctx->inflight net of the cached refs.
  uint32_t inflight = 1;
  // The task has submitted before, so its tctx holds cached task refs
  // (io_get_task_refs() -> io_task_refs_refill() adds them to
  // tctx->inflight): what current_pending_io() reads until the 2026 fix.
  bool cached_refs = true;
};

// Mirrors the in_iowait decision of io_cqring_wait_schedule() for one
// sleep: the cqwait_sleep knob overrides; otherwise the profile's kernel
// (8a796565cec3 sets it on every sleep; from 7b72d661f1f2 only when
// current_pending_io(); from 07754bfd9aee not with IORING_ENTER_NO_IOWAIT).
inline bool cqwait_is_iowait(const KernelProfile& p, const PolicySet& pol, const CqWait& w = {}) {
  if (pol.cqwait_sleep == CqwaitSleep::schedule) return false;
  if (pol.cqwait_sleep == CqwaitSleep::io_schedule) return true;
  if (!p.cqwait_iowait) return false;
  if (pol.enter_no_iowait && p.enter_no_iowait) return false;
  if (!p.cqwait_iowait_gate) return true;
  return w.inflight > 0 || (p.pending_io_counts_cached_refs && w.cached_refs);
}

// The state the waiting CPU enters for a sleep the governor predicts to be
// `predicted_us` long (menu_select(), the profile's governor rule), with
// `iowait` tasks of its CPU in I/O wait (0 or 1).
inline GovernorChoice cqwait_idle_choice(const KernelProfile& p, bool iowait,
                                         uint64_t predicted_us,
                                         const IdleTable& t = *idle_table(kDefaultIdleMachine)) {
  GovernorInput in;
  in.predicted_ns = predicted_us * 1000;
  in.nr_iowaiters = iowait ? 1 : 0;
  in.iowait_multiplier = p.menu_iowait_multiplier;
  return menu_select(t, in);
}
inline GovernorChoice cqwait_idle_choice(const KernelProfile& p, const PolicySet& pol,
                                         uint64_t predicted_us,
                                         const IdleTable& t = *idle_table(kDefaultIdleMachine)) {
  return cqwait_idle_choice(p, cqwait_is_iowait(p, pol), predicted_us, t);
}

// Mirrors io_cqring_wait_schedule() (v6.1-v6.18) for one sleep of
// `w.sleep_us` ending in a wake; the idle task runs menu_select() for a
// sleep predicted `w.predicted_us` long. A sleep of 0 is no sleep: the
// CQEs were there (io_should_wake()) and nothing counts. The CPU is idle
// from idle_enter to its state's exit; an I/O-wait sleep's idle time is
// what /proc/stat reports as iowait (k.iowait_ns adds it up, priced).
// With the machine's cpufreq iowait boost on, the governor's update at the
// wake-up (cpufreq.h) decides whether the work after it runs at the full
// boost; every wake-up that does not counts cpufreq_slow_wake.

// The counts of `c` that an I/O-wait sleep's idle time is made of (what
// k.iowait_ns adds up for one, from the clock): idle_enter, the slept
// microseconds, the I/O-wait marks and each idle state's exit.
inline Counters cqwait_idle_counts(const Counters& c) {
  Counters out;
  for (Event e : {Event::idle_enter, Event::cqwait_sleep_us, Event::cqwait_iowait,
                  Event::cqwait_iowait_us})
    out.add(e, c[e]);
  for (IdleState s : kIdleStates) out.add(idle_exit_event(s), c[idle_exit_event(s)]);
  return out;
}

template <IoAllocator A>
void io_cqring_wait_sleep(IoKernel<A>& k, const CqWait& w) {
  if (w.sleep_us == 0) return;
  const bool iowait = cqwait_is_iowait(k.profile, k.policy, w);
  ev(k.mm, Event::cqwait_sleep);
  const double idle0 = io_clock(k.mm);
  if (k.idle) ev(k.mm, Event::idle_enter);
  ev(k.mm, Event::cqwait_sleep_us, w.sleep_us);
  if (iowait) {
    ev(k.mm, Event::cqwait_iowait);
    ev(k.mm, Event::cqwait_iowait_us, w.sleep_us);
  }
  if (k.idle) {  // a machine without an idle table: no state to price
    const GovernorChoice c = cqwait_idle_choice(k.profile, iowait, w.predicted_us, *k.idle);
    ev(k.mm, idle_exit_event(c.state));
  }
  if (iowait) k.iowait_ns += io_clock(k.mm) - idle0;
  ev(k.mm, Event::cqwait_wakeup);
  if (k.cpufreq_iowait_boost) {
    const uint32_t b = k.freq_boost.wake(iowait, w.sleep_us * 1000);
    if (iowait) ev(k.mm, Event::cpufreq_iowait_boost);
    if (!IowaitBoost::full(b)) ev(k.mm, Event::cpufreq_slow_wake);
  }
}

// The v6.1-v6.18 programs' form: the waiter has requests in flight.
template <IoAllocator A>
void io_cqring_wait_sleep(IoKernel<A>& k, uint64_t sleep_us, uint64_t predicted_us) {
  CqWait w;
  w.sleep_us = sleep_us;
  w.predicted_us = predicted_us;
  io_cqring_wait_sleep(k, w);
}

}  // namespace simcache::iou
