// The cqring wait (io_uring/io_uring.c io_cqring_wait(), seed 003): the
// waiter sleeps until its CQEs arrive, its CPU goes idle in the state the
// menu governor picks, and the waker's try_to_wake_up() brings it back.
#pragma once

#include "model/io_uring/io_kernel.h"
#include "model/sched/idle.h"

namespace simcache::iou {

// Whether the sleep counts as I/O wait: the cqwait_sleep knob, or the
// profile (io_schedule_prepare() from 8a796565cec3 on).
inline bool cqwait_is_iowait(const KernelProfile& p, const PolicySet& pol) {
  if (pol.cqwait_sleep == CqwaitSleep::schedule) return false;
  if (pol.cqwait_sleep == CqwaitSleep::io_schedule) return true;
  return p.cqwait_iowait;
}

// The state the waiting CPU enters for a sleep the governor predicts to be
// `predicted_us` long (menu_select(), the profile's governor rule).
inline GovernorChoice cqwait_idle_choice(const KernelProfile& p, const PolicySet& pol,
                                         uint64_t predicted_us,
                                         const IdleTable& t = *idle_table(kDefaultIdleMachine)) {
  GovernorInput in;
  in.predicted_ns = predicted_us * 1000;
  in.nr_iowaiters = cqwait_is_iowait(p, pol) ? 1 : 0;
  in.iowait_multiplier = p.menu_iowait_multiplier;
  return menu_select(t, in);
}

// Mirrors io_cqring_wait_schedule() (v6.1-v6.18) for one sleep of
// `sleep_us` ending in a wake from another CPU; the idle task runs
// menu_select() for a sleep predicted `predicted_us` long. A sleep of 0
// is no sleep: the CQEs were there (io_should_wake()) and nothing counts.
template <IoAllocator A>
void io_cqring_wait_sleep(IoKernel<A>& k, uint64_t sleep_us, uint64_t predicted_us) {
  if (sleep_us == 0) return;
  ev(k.mm, Event::cqwait_sleep);
  if (cqwait_is_iowait(k.profile, k.policy)) ev(k.mm, Event::cqwait_iowait);
  ev(k.mm, Event::cqwait_sleep_us, sleep_us);
  if (k.idle) {  // a machine without an idle table: no state to price
    const GovernorChoice c = cqwait_idle_choice(k.profile, k.policy, predicted_us, *k.idle);
    ev(k.mm, Event::idle_enter);
    ev(k.mm, idle_exit_event(c.state));
  }
  ev(k.mm, Event::cqwait_wakeup);
}

}  // namespace simcache::iou
