// The cpufreq iowait boost (seed 003): when a task that slept in I/O wait
// is enqueued, the scheduler passes SCHED_CPUFREQ_IOWAIT to the governor
// (enqueue_task_fair(): p->in_iowait), and schedutil
// (kernel/sched/cpufreq_schedutil.c: sugov_iowait_boost(),
// sugov_iowait_apply(), sugov_iowait_reset()) or intel_pstate without HWP
// (drivers/cpufreq/intel_pstate.c: intel_pstate_update_util(),
// cpu->iowait_boost) raises the CPU's frequency request: the boost starts
// at 1/8 of the maximum (IOWAIT_BOOST_MIN = SCHED_CAPACITY_SCALE / 8;
// ONE_EIGHTH_FP) and doubles on each further iowait wake-up, up to the
// maximum; an update without one halves it (dropped below the minimum);
// more than a tick since the CPU's last update resets it (to the minimum
// for an iowait wake-up, else to none). Where each rule comes from and
// what the model leaves out (HWP's hwp_dynamic_boost, the rate limit,
// PELT utilisation): docs/idle.md, "The cpufreq iowait boost".
#pragma once

#include <algorithm>
#include <cstdint>

namespace simcache::iou {

inline constexpr uint32_t kCapacityScale = 1024;              // SCHED_CAPACITY_SCALE
inline constexpr uint32_t kIowaitBoostMin = kCapacityScale / 8;  // IOWAIT_BOOST_MIN
// TICK_NSEC at CONFIG_HZ=1000 (the x86_64 defconfig and Fedora's; a 250 Hz
// kernel resets only after 4 ms): the reset rule's threshold.
inline constexpr uint64_t kTickNs = 1000000;

// One CPU's boost state, as sugov_cpu keeps it.
struct IowaitBoost {
  uint32_t boost = 0;  // of kCapacityScale; 0 = no boost

  // The governor's update at a wake-up `since_last_ns` after the CPU's
  // previous update (the sleep: the tick is stopped in idle), for a task
  // that slept as I/O wait (`iowait`) or not. Returns the boost the work
  // after the wake-up runs at (of kCapacityScale).
  uint32_t wake(bool iowait, uint64_t since_last_ns) {
    if (since_last_ns > kTickNs) {  // sugov_iowait_reset()
      boost = iowait ? kIowaitBoostMin : 0;
      return boost;
    }
    if (iowait) {  // sugov_iowait_boost(): double, or start at the minimum
      boost = boost ? std::min(2 * boost, kCapacityScale) : kIowaitBoostMin;
      return boost;
    }
    // sugov_iowait_apply() without a pending boost: halve, drop below min.
    boost >>= 1;
    if (boost < kIowaitBoostMin) boost = 0;
    return boost;
  }
  // Whether the work after a wake-up at `b` runs at the maximum request.
  static bool full(uint32_t b) { return b >= kCapacityScale; }
};

}  // namespace simcache::iou
