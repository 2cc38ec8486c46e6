// The waiting CPU's idle model (seed 003): the cpuidle state table of a
// machine and the menu governor's choice among its states. Sources for
// every number, and what is not modelled: docs/idle.md.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "model/counters.h"

namespace simcache::iou {

// The states the model knows, one idle_exit_<state> event each
// (model/events_io_uring.def); a machine's table lists the ones it has.
// skx_* are skx_cstates' (Skylake-SP / Cascade Lake), whose exit
// latencies differ from the client parts' and so are priced apart.
enum class IdleState : uint8_t { poll, c1, c1e, c6, c8, c10, skx_c1, skx_c1e, skx_c6 };

struct IdleStateInfo {
  IdleState state;
  std::string_view name;          // as /sys/devices/system/cpu/cpuN/cpuidle/stateK/name
  uint32_t exit_latency_us;       // struct cpuidle_state .exit_latency
  uint32_t target_residency_us;   // .target_residency
  bool usable;                    // false: CPUIDLE_FLAG_UNUSABLE, never registered
};

struct IdleTable {
  std::string_view machine;       // the cost profile's machine
  std::string_view source;        // driver table, file, version
  std::span<const IdleStateInfo> states;  // shallowest first, state 0 = POLL
};

// The table of `machine`, or nullptr: "i7-12700KF" (adl_cstates),
// "cascadelake-w" (skx_cstates).
const IdleTable* idle_table(std::string_view machine);
inline constexpr std::string_view kDefaultIdleMachine = "i7-12700KF";

// What menu_select() reads for one idle entry.
struct GovernorInput {
  uint64_t predicted_ns = 0;      // the predictor's idle duration (its converged value)
  uint32_t nr_iowaiters = 0;      // nr_iowait_cpu(): tasks of this CPU sleeping in iowait
  bool iowait_multiplier = true;  // the kernel has performance_multiplier() (<= v6.12)
  uint64_t latency_req_ns = UINT64_MAX;  // PM QoS CPU latency limit (none by default)
};

struct GovernorChoice {
  size_t index = 0;               // into the table's states
  IdleState state = IdleState::poll;
  uint64_t latency_req_ns = 0;    // the exit-latency limit the choice obeyed
};

// Mirrors menu_select() (drivers/cpuidle/governors/menu.c, v6.1-v6.12 with
// the iowait performance multiplier; v6.13+ after 38f83090f515 without),
// for a first idle entry with the tick still running.
GovernorChoice menu_select(const IdleTable& t, const GovernorInput& in);

// The event that counts one exit from `s`.
Event idle_exit_event(IdleState s);
// Every idle state, in the enum's order.
inline constexpr IdleState kIdleStates[] = {IdleState::poll,   IdleState::c1,
                                            IdleState::c1e,    IdleState::c6,
                                            IdleState::c8,     IdleState::c10,
                                            IdleState::skx_c1, IdleState::skx_c1e,
                                            IdleState::skx_c6};

}  // namespace simcache::iou
