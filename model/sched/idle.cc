// Idle state tables and the menu governor's choice (seed 003). The numbers
// and the rule are the kernel's; where each comes from: docs/idle.md.
#include "model/sched/idle.h"

#include <algorithm>
#include <array>

namespace simcache::iou {
namespace {

// adl_cstates (drivers/idle/intel_idle.c, since v5.18; unchanged through
// v6.1-v6.5 and later) for INTEL_FAM6_ALDERLAKE, the i7-12700KF, plus the
// POLL state the cpuidle core registers as state 0. C1 is marked
// CPUIDLE_FLAG_UNUSABLE (C1E promotion on by default), so it is never
// registered.
constexpr std::array<IdleStateInfo, 6> kAdlStates = {{
    {IdleState::poll, "POLL", 0, 0, true},
    {IdleState::c1, "C1", 1, 1, false},
    {IdleState::c1e, "C1E", 2, 4, true},
    {IdleState::c6, "C6", 220, 600, true},
    {IdleState::c8, "C8", 280, 800, true},
    {IdleState::c10, "C10", 680, 2000, true},
}};

// skx_cstates (drivers/idle/intel_idle.c; the same values from v4.14 to
// v6.5 and later) for INTEL_FAM6_SKYLAKE_X, model 0x55, which covers
// Cascade Lake (stepping 5-7) and its Xeon W-2200 workstation parts; plus
// POLL. idle_cpu_skx disables C1E promotion, so C1 is a state of its own;
// it uses ACPI _CST (use_acpi): C1E is CPUIDLE_FLAG_ALWAYS_ENABLE, and the
// model assumes the firmware lists C1 and C6 too (docs/idle.md).
constexpr std::array<IdleStateInfo, 4> kSkxStates = {{
    {IdleState::poll, "POLL", 0, 0, true},
    {IdleState::skx_c1, "C1", 2, 2, true},
    {IdleState::skx_c1e, "C1E", 10, 20, true},
    {IdleState::skx_c6, "C6", 133, 600, true},
}};

constexpr IdleTable kTables[] = {
    {"i7-12700KF", "intel_idle.c adl_cstates (v5.18+, as in v6.1-v6.5) + cpuidle POLL",
     kAdlStates},
    {"cascadelake-w", "intel_idle.c skx_cstates (SKYLAKE_X = Cascade Lake; v6.1-v6.5) + cpuidle POLL",
     kSkxStates},
};

constexpr uint64_t kNsPerUs = 1000;

}  // namespace

const IdleTable* idle_table(std::string_view machine) {
  for (const IdleTable& t : kTables)
    if (t.machine == machine) return &t;
  return nullptr;
}

GovernorChoice menu_select(const IdleTable& t, const GovernorInput& in) {
  GovernorChoice c;
  uint64_t latency_req = in.latency_req_ns;
  // menu_select()'s shortcut: state 0 when the sleep is shorter than state
  // 1's target residency or the limit is below its exit latency.
  const IdleStateInfo* s1 = nullptr;
  for (size_t i = 1; i < t.states.size() && s1 == nullptr; ++i)
    if (t.states[i].usable) s1 = &t.states[i];
  if (s1 == nullptr || latency_req == 0 ||
      in.predicted_ns < s1->target_residency_us * kNsPerUs ||
      latency_req < s1->exit_latency_us * kNsPerUs) {
    c.latency_req_ns = latency_req;
    return c;
  }
  // The tick is running: performance_multiplier() = 1 + 10 * nr_iowaiters
  // divides the prediction into the latency limit (v6.13+: divisor 1).
  const uint64_t mult = in.iowait_multiplier ? 1 + 10 * uint64_t{in.nr_iowaiters} : 1;
  latency_req = std::min(latency_req, in.predicted_ns / mult);
  c.latency_req_ns = latency_req;
  for (size_t i = 0; i < t.states.size(); ++i) {
    const IdleStateInfo& s = t.states[i];
    if (!s.usable) continue;
    if (s.target_residency_us * kNsPerUs > in.predicted_ns) break;
    if (s.exit_latency_us * kNsPerUs > latency_req) break;
    c.index = i;
    c.state = s.state;
  }
  return c;
}

Event idle_exit_event(IdleState s) {
  switch (s) {
    case IdleState::poll: return Event::idle_exit_poll;
    case IdleState::c1: return Event::idle_exit_c1;
    case IdleState::c1e: return Event::idle_exit_c1e;
    case IdleState::c6: return Event::idle_exit_c6;
    case IdleState::c8: return Event::idle_exit_c8;
    case IdleState::c10: return Event::idle_exit_c10;
    case IdleState::skx_c1: return Event::idle_exit_skx_c1;
    case IdleState::skx_c1e: return Event::idle_exit_skx_c1e;
    case IdleState::skx_c6: return Event::idle_exit_skx_c6;
  }
  return Event::idle_exit_poll;
}

}  // namespace simcache::iou
