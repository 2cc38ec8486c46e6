// The wait idle model (seed 003): the menu governor's choice among the
// i7-12700KF's states, and its counts in waitv / wait-wake. Every expected
// state below is derived by hand from docs/idle.md's table and rule.
#include <catch2/catch.hpp>

#include <set>

#include "model/io_uring/cqwait.h"
#include "model/sched/idle.h"
#include "model/kernel/profile.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::iou;
using namespace simcache::sim;

namespace {

IdleState pick(const char* kernel, uint64_t predicted_us, bool iowait) {
  const KernelProfile* k = profile_by_name(kernel, nullptr);
  REQUIRE(k != nullptr);
  PolicySet pol;
  pol.cqwait_sleep = iowait ? CqwaitSleep::io_schedule : CqwaitSleep::schedule;
  return cqwait_idle_choice(*k, pol, predicted_us).state;
}

RunResult run_wait(const std::string& kernel, int64_t delay_us, int64_t predict_us = 0,
                   std::vector<std::string> policies = {"wait-schedule", "wait-io-schedule"},
                   const std::string& scenario = "wait-wake") {
  RunRequest req;
  req.scenario = scenario;
  req.policies = std::move(policies);
  req.kernel = kernel;
  req.sets = {{"vectors", "1"}, {"cycles", "64"}, {"rounds", "3"}, {"warmup", "1"},
              {"smoke", "0"}, {"wake_delay_us", std::to_string(delay_us)},
              {"predict_us", std::to_string(predict_us)}};
  RunResult r;
  std::string err;
  const bool ok = run(req, &r, &err);
  INFO(err);
  REQUIRE(ok);
  return r;
}

const PolicyResult& idle_col(const RunResult& r, size_t i) { return r.workloads.at(0).policies.at(i); }

// Names of the events whose counts differ between two counter blocks.
std::set<std::string> differing(const Counters& a, const Counters& b) {
  std::set<std::string> out;
  for (size_t i = 0; i < kNumEvents; ++i)
    if (a.v[i] != b.v[i]) out.insert(std::string(kEventInfo[i].name));
  return out;
}

const std::set<std::string> kIdleEvents = {
    "cqwait_sleep", "cqwait_iowait", "cqwait_sleep_us", "idle_enter", "idle_exit_poll",
    "idle_exit_c1", "idle_exit_c1e", "idle_exit_c6", "idle_exit_c8", "idle_exit_c10",
    "cqwait_wakeup", "cqwait_iowait_us", "cpufreq_iowait_boost", "cpufreq_slow_wake",
    "idle_exit_skx_c1", "idle_exit_skx_c1e", "idle_exit_skx_c6"};

}  // namespace

TEST_CASE("idle: the i7-12700KF table is adl_cstates with POLL, C1 unusable", "[idle]") {
  const IdleTable* t = idle_table("i7-12700KF");
  REQUIRE(t != nullptr);
  REQUIRE(t->states.size() == 6);
  CHECK(t->states[0].name == "POLL");
  CHECK_FALSE(t->states[1].usable);  // C1: CPUIDLE_FLAG_UNUSABLE
  CHECK(t->states[3].exit_latency_us == 220);
  CHECK(t->states[3].target_residency_us == 600);
  CHECK(t->states[5].exit_latency_us == 680);
  CHECK(t->states[5].target_residency_us == 2000);
  CHECK(idle_table("no-such-machine") == nullptr);
}

TEST_CASE("idle: menu picks by target residency, limited by exit latency x (1 + 10 iowait)",
          "[idle][governor]") {
  // Below C1E's 4 us residency: POLL either way.
  CHECK(pick("v6.4.4", 3, false) == IdleState::poll);
  CHECK(pick("v6.4.4", 3, true) == IdleState::poll);
  // 4..599 us: C1E (C6 needs 600 us); iowait changes nothing.
  CHECK(pick("v6.4.4", 4, false) == IdleState::c1e);
  CHECK(pick("v6.4.4", 50, false) == IdleState::c1e);
  CHECK(pick("v6.4.4", 50, true) == IdleState::c1e);
  CHECK(pick("v6.4.4", 599, false) == IdleState::c1e);
  // Without iowait the limit is the prediction itself: C6 at 600, C8 at 800,
  // C10 at 2000 (target residency <= prediction, exit latency far below).
  CHECK(pick("v6.4.4", 600, false) == IdleState::c6);
  CHECK(pick("v6.4.4", 1000, false) == IdleState::c8);
  CHECK(pick("v6.4.4", 2000, false) == IdleState::c10);
  // With one iowaiter the limit is prediction / 11: C6's 220 us exit needs
  // 2420 us, C8's 280 needs 3080, C10's 680 needs 7480.
  CHECK(pick("v6.4.4", 1000, true) == IdleState::c1e);
  CHECK(pick("v6.4.4", 2419, true) == IdleState::c1e);
  CHECK(pick("v6.4.4", 2420, true) == IdleState::c6);
  CHECK(pick("v6.4.4", 3079, true) == IdleState::c6);
  CHECK(pick("v6.4.4", 3080, true) == IdleState::c8);
  CHECK(pick("v6.4.4", 7479, true) == IdleState::c8);
  CHECK(pick("v6.4.4", 7480, true) == IdleState::c10);
  // The same rule on every kernel up to v6.12; from v6.13 (38f83090f515)
  // iowait no longer matters.
  for (const char* k : {"v6.1.39", "v6.5-rc2", "v6.12"})
    CHECK(pick(k, 1000, true) == IdleState::c1e);
  for (const char* k : {"v6.13", "v6.18", "v7.1"}) {
    CHECK(pick(k, 1000, true) == IdleState::c8);
    CHECK(pick(k, 2000, true) == IdleState::c10);
  }
}

TEST_CASE("idle: a PM QoS limit caps the state below the governor's", "[idle][governor]") {
  GovernorInput in;
  in.predicted_ns = 5'000'000;
  in.iowait_multiplier = false;
  CHECK(menu_select(*idle_table("i7-12700KF"), in).state == IdleState::c10);
  in.latency_req_ns = 250'000;  // C6's 220 us fits, C8's 280 does not
  CHECK(menu_select(*idle_table("i7-12700KF"), in).state == IdleState::c6);
  in.latency_req_ns = 1'000;    // below C1E's exit latency: state 0
  CHECK(menu_select(*idle_table("i7-12700KF"), in).state == IdleState::poll);
}

TEST_CASE("idle: the era profiles sleep as I/O wait and keep menu's multiplier",
          "[idle][profile]") {
  for (const char* k : {"v6.1.39", "v6.4.4", "v6.5-rc2"}) {
    const KernelProfile* p = profile_by_name(k, nullptr);
    REQUIRE(p != nullptr);
    CHECK(p->cqwait_iowait);
    CHECK(p->menu_iowait_multiplier);
    CHECK(cqwait_is_iowait(*p, PolicySet{}));
  }
  CHECK(profile_by_name("v6.12", nullptr)->menu_iowait_multiplier);
  CHECK_FALSE(profile_by_name("v6.13", nullptr)->menu_iowait_multiplier);
  CHECK_FALSE(profile_by_name("v6.18", nullptr)->menu_iowait_multiplier);
}

TEST_CASE("idle: wait-wake counts one sleep, entry, exit and wake per cycle, exactly",
          "[idle][scenario]") {
  // 1 vector, 64 cycles x 3 measured rounds = 192 timed sleeps of 1000 us;
  // the warm-up round adds 64 more to the total.
  const RunResult r = run_wait("v6.4.4", 1000);
  const Counters& s = idle_col(r, 0).timed;  // wait-schedule: C8
  const Counters& io = idle_col(r, 1).timed; // wait-io-schedule: C1E
  CHECK(s[Event::cqwait_sleep] == 192);
  CHECK(s[Event::cqwait_sleep_us] == 192000);
  CHECK(s[Event::idle_enter] == 192);
  CHECK(s[Event::cqwait_wakeup] == 192);
  CHECK(s[Event::cqwait_iowait] == 0);
  CHECK(s[Event::idle_exit_c8] == 192);
  CHECK(s[Event::idle_exit_c1e] == 0);
  CHECK(io[Event::cqwait_iowait] == 192);
  CHECK(io[Event::idle_exit_c1e] == 192);
  CHECK(io[Event::idle_exit_c8] == 0);
  CHECK(idle_col(r, 0).total[Event::cqwait_sleep] == 256);
  // Schedule and io_schedule differ only in the iowait mark and the state.
  CHECK(differing(s, io) ==
        std::set<std::string>{"cqwait_iowait", "cqwait_iowait_us", "idle_exit_c1e", "idle_exit_c8"});
  // At 50 us both pick C1E, and on v6.18 the multiplier is gone: only the
  // iowait mark differs.
  for (const auto& [kernel, delay] : {std::pair{"v6.4.4", 50}, std::pair{"v6.18", 1000}}) {
    const RunResult q = run_wait(kernel, delay);
    INFO(kernel << " " << delay);
    CHECK(differing(idle_col(q, 0).timed, idle_col(q, 1).timed) ==
          std::set<std::string>{"cqwait_iowait", "cqwait_iowait_us"});
  }
  // A mispredicted 50 us sleep (predicted 2000 us): C10 against C1E.
  const RunResult m = run_wait("v6.4.4", 50, 2000);
  CHECK(idle_col(m, 0).timed[Event::idle_exit_c10] == 192);
  CHECK(idle_col(m, 1).timed[Event::idle_exit_c1e] == 192);
  CHECK(idle_col(m, 0).timed[Event::cqwait_sleep_us] == 192 * 50);
}

TEST_CASE("idle: wake_delay_us=0 changes no count, and a delay only adds idle events",
          "[idle][scenario]") {
  for (const char* scenario : {"waitv", "wait-wake"}) {
    INFO(scenario);
    const RunResult zero = run_wait("v6.4.4", 0, 0, {"unpatched", "wait-schedule"}, scenario);
    const RunResult none = [&] {  // the same program without the new parameters
      RunRequest req;
      req.scenario = scenario;
      req.policies = {"unpatched", "wait-schedule"};
      req.kernel = "v6.4.4";
      req.sets = {{"vectors", "1"}, {"cycles", "64"}, {"rounds", "3"}, {"warmup", "1"},
                  {"smoke", "0"}};
      RunResult r;
      std::string err;
      REQUIRE(run(req, &r, &err));
      return r;
    }();
    for (size_t c = 0; c < 2; ++c) {
      CHECK(differing(idle_col(zero, c).total, idle_col(none, c).total).empty());
      for (const std::string& e : kIdleEvents) {
        Event ev;
        REQUIRE(event_by_name(e, &ev));
        CHECK(idle_col(zero, c).total[ev] == 0);
      }
    }
    // The policy is inert without a sleep.
    CHECK(differing(idle_col(zero, 0).total, idle_col(zero, 1).total).empty());
    // A sleep adds exactly the idle events and nothing else.
    const RunResult slept = run_wait("v6.4.4", 1000, 0, {"unpatched", "wait-schedule"}, scenario);
    std::set<std::string> d = differing(idle_col(zero, 0).total, idle_col(slept, 0).total);
    for (const std::string& e : d) CHECK(kIdleEvents.count(e) == 1);
    CHECK(d.count("cqwait_sleep") == 1);
  }
}

TEST_CASE("idle: the time difference is the two states' exit costs, per pair",
          "[idle][cost]") {
  const CostModel& m = simcache::testing::test_profile();
  const RunResult r = run_wait("v6.4.4", 1000);
  const WorkloadResult& w = r.workloads.at(0);
  const double s = policy_time(m, w, w.policies.at(0)).per_op_ns;
  const double io = policy_time(m, w, w.policies.at(1)).per_op_ns;
  const auto value = [&](const char* name) {
    for (const CostParam& p : m.params)
      if (p.name == name) return p.value;
    FAIL("no cost parameter " << name);
    return 0.0;
  };
  // One sleep per pair (vectors = 1): C8's exit against C1E's.
  CHECK(s - io == Approx(value("idle_exit_c8") - value("idle_exit_c1e")).epsilon(1e-9));
  // The sleep itself is in both: a pair is at least the 1000 us slept.
  CHECK(io > 1'000'000.0);
  CHECK(s > io);
}
