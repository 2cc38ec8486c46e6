// Seed 003's follow-ups (docs/idle.md): which cqring wait sleeps are I/O
// wait on which kernel (8a796565cec3, the gate 7b72d661f1f2, the cached
// task refs it counts, IORING_ENTER_NO_IOWAIT 07754bfd9aee), the iowait
// share the programs report, the cpufreq iowait boost, and the Cascade
// Lake idle table. Every expected value is derived by hand from the rules
// in docs/idle.md, or from counts x the test profile's costs.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "model/io_uring/cqwait.h"
#include "model/kernel/machine.h"
#include "model/kernel/profile.h"
#include "model/sched/cpufreq.h"
#include "model/sched/idle.h"
#include "sim/cost/cost.h"
#include "sim/report/report.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"
#include "test_run_util.h"

using namespace simcache;
using namespace simcache::iou;
using namespace simcache::sim;

namespace {

const KernelProfile& kernel(const char* name) {
  const KernelProfile* k = profile_by_name(name, nullptr);
  REQUIRE(k != nullptr);
  return *k;
}

CqWait waiter(uint32_t inflight, bool cached_refs) {
  CqWait w;
  w.sleep_us = 100;
  w.predicted_us = 100;
  w.inflight = inflight;
  w.cached_refs = cached_refs;
  return w;
}

RunResult run_prog(const std::string& scenario, const std::string& kernel_name,
                   std::vector<std::string> policies,
                   std::vector<std::pair<std::string, std::string>> sets,
                   const std::string& machine = "i7-12700KF") {
  RunRequest req;
  req.scenario = scenario;
  req.kernel = kernel_name;
  req.machine = machine;
  req.policies = std::move(policies);
  req.sets = {{"cycles", "32"}, {"rounds", "2"}, {"warmup", "1"}};
  for (auto& s : sets) req.sets.push_back(std::move(s));
  req.event_ns = event_prices(simcache::testing::test_profile());
  RunResult r;
  std::string err;
  const bool ok = run(req, &r, &err);
  INFO(err);
  REQUIRE(ok);
  return r;
}

const PolicyResult& iowait_col(const RunResult& r, size_t i) { return r.workloads.at(0).policies.at(i); }

int64_t share_ppm(const PolicyResult& p) {
  const auto it = p.metrics.find("iowait_ppm");
  REQUIRE(it != p.metrics.end());
  return it->second;
}

// The share recomputed from the counts: every sleep of these programs is
// alike, so the I/O-wait idle time of a round is (I/O-wait sleeps / all
// sleeps) x the idle events' time (idle_enter, the slept us, the exits),
// over the round's time, all at the test profile's costs.
double expected_share_ppm(const PolicyResult& p) {
  const CostModel& m = simcache::testing::test_profile();
  const Counters& round = p.rounds.back();
  Counters idle;
  for (Event e : {Event::idle_enter, Event::cqwait_sleep_us, Event::idle_exit_poll,
                  Event::idle_exit_c1, Event::idle_exit_c1e, Event::idle_exit_c6,
                  Event::idle_exit_c8, Event::idle_exit_c10, Event::idle_exit_skx_c1,
                  Event::idle_exit_skx_c1e, Event::idle_exit_skx_c6})
    idle.add(e, round[e]);
  const double frac = round[Event::cqwait_sleep]
                          ? static_cast<double>(round[Event::cqwait_iowait]) /
                                static_cast<double>(round[Event::cqwait_sleep])
                          : 0.0;
  return frac * m.time_ns(idle) / m.time_ns(round) * 1e6;
}

}  // namespace

TEST_CASE("iowait: which sleeps are I/O wait, per kernel and waiter", "[iowait]") {
  const PolicySet none;
  // A waiter with a request in flight: I/O wait on every kernel since
  // 8a796565cec3 (all the profiles carry it).
  for (const KernelProfile& k : kernel_profiles()) {
    INFO(k.name);
    CHECK(cqwait_is_iowait(k, none, waiter(1, true)));
  }
  // Nothing in flight and no cached refs: only before the gate.
  for (const char* k : {"v6.1.39", "v6.4.4", "v6.5-rc2"})
    CHECK(cqwait_is_iowait(kernel(k), none, waiter(0, false)));
  for (const char* k : {"v6.1.45", "v6.4.8", "v6.5-rc3", "v6.12", "v6.13", "v6.18", "v7.1"})
    CHECK_FALSE(cqwait_is_iowait(kernel(k), none, waiter(0, false)));
  // Nothing in flight but cached task refs: tctx->inflight counts them, so
  // the gate stays open on every profile (the 2026 fix is in none).
  for (const KernelProfile& k : kernel_profiles()) {
    INFO(k.name);
    CHECK(k.pending_io_counts_cached_refs);
    CHECK(cqwait_is_iowait(k, none, waiter(0, true)));
  }
  // IORING_ENTER_NO_IOWAIT: v6.15+ profiles honour it, whatever is in flight.
  PolicySet no_iowait;
  no_iowait.enter_no_iowait = true;
  for (const char* k : {"v6.18", "v7.1", "v7.2"}) {
    CHECK(kernel(k).enter_no_iowait);
    CHECK_FALSE(cqwait_is_iowait(kernel(k), no_iowait, waiter(1, true)));
  }
  for (const char* k : {"v6.5-rc2", "v6.12", "v6.13"}) {
    CHECK_FALSE(kernel(k).enter_no_iowait);
    PolicySet got;
    MmConfig mm;
    std::string err;
    CHECK_FALSE(parse_policies("no-iowait", &kernel(k), &got, &mm, &err));
    CHECK(err.find("IORING_ENTER_NO_IOWAIT") != std::string::npos);
  }
  // The knob still overrides the kernel (the seed's comparison).
  PolicySet sched, io;
  sched.cqwait_sleep = CqwaitSleep::schedule;
  io.cqwait_sleep = CqwaitSleep::io_schedule;
  CHECK_FALSE(cqwait_is_iowait(kernel("v6.5-rc2"), sched, waiter(1, true)));
  CHECK(cqwait_is_iowait(kernel("v6.18"), io, waiter(0, false)));
}

TEST_CASE("iowait: the era profiles' shares differ as the kernel history says", "[iowait][scenario]") {
  // idle-wait with a task that never submitted: 100% of its sleeps are
  // I/O wait before the gate, none after; with cached refs, all on every
  // profile. The QD-1 read (in flight) is I/O wait everywhere.
  struct Want {
    const char* kernel;
    bool gate;
  };
  for (const Want w : {Want{"v6.1.39", false}, Want{"v6.1.45", true}, Want{"v6.4.4", false},
                       Want{"v6.4.8", true}, Want{"v6.5-rc2", false}, Want{"v6.5-rc3", true},
                       Want{"v6.12", true}, Want{"v6.18", true}}) {
    INFO(w.kernel);
    const RunResult pure = run_prog("idle-wait", w.kernel, {"unpatched"}, {{"submitted", "0"}});
    const PolicyResult& p = iowait_col(pure, 0);
    CHECK(p.timed[Event::cqwait_sleep] == 64);
    CHECK(p.timed[Event::cqwait_iowait] == (w.gate ? 0 : 64));
    CHECK(p.timed[Event::cqwait_iowait_us] == (w.gate ? 0 : 64 * 1000));
    CHECK(share_ppm(p) == Approx(expected_share_ppm(p)).margin(1));
    // The summary's share from the counts (its interval's centre) is the clock's.
    const CostModel& tm = simcache::testing::test_profile();
    CHECK(iowait_share(tm, p.rounds.back()).share * 1e6 == Approx(share_ppm(p)).margin(1));
    if (w.gate) CHECK(share_ppm(p) == 0);
    else CHECK(share_ppm(p) > 990000);  // the waiter's CPU is ~all iowait
    const RunResult refs = run_prog("idle-wait", w.kernel, {"unpatched"}, {{"submitted", "1"}});
    CHECK(iowait_col(refs, 0).timed[Event::cqwait_iowait] == 64);
    CHECK(share_ppm(iowait_col(refs, 0)) == Approx(expected_share_ppm(iowait_col(refs, 0))).margin(1));
    const RunResult read = run_prog("qd1-read", w.kernel, {"unpatched"}, {});
    CHECK(iowait_col(read, 0).timed[Event::cqwait_iowait] == 64);
    CHECK(share_ppm(iowait_col(read, 0)) == Approx(expected_share_ppm(iowait_col(read, 0))).margin(1));
    CHECK(share_ppm(iowait_col(read, 0)) > 0);
    const ShareInterval rs = iowait_share(tm, iowait_col(read, 0).rounds.back());
    CHECK(rs.share * 1e6 == Approx(share_ppm(iowait_col(read, 0))).margin(1));
    CHECK(rs.lo < rs.share);  // the read's CPU work is priced with an sd
    CHECK(rs.hi > rs.share);
  }
  // NO_IOWAIT on a kernel that has it: nothing is I/O wait, in flight or not.
  for (const char* scenario : {"qd1-read", "idle-wait"}) {
    const RunResult r = run_prog(scenario, "v6.18", {"unpatched", "no-iowait"}, {});
    CHECK(iowait_col(r, 0).timed[Event::cqwait_iowait] == 64);
    CHECK(iowait_col(r, 1).timed[Event::cqwait_iowait] == 0);
    CHECK(share_ppm(iowait_col(r, 1)) == 0);
  }
}

TEST_CASE("iowait: the metric needs a priced run", "[iowait][scenario]") {
  RunRequest req;
  req.scenario = "idle-wait";
  req.kernel = "v6.5-rc2";
  req.sets = {{"cycles", "4"}, {"rounds", "1"}, {"warmup", "0"}};
  RunResult r;
  std::string err;
  REQUIRE(run(req, &r, &err));
  CHECK(iowait_col(r, 0).metrics.count("iowait_ppm") == 0);
  CHECK(iowait_col(r, 0).timed[Event::cqwait_iowait] == 4);
}

TEST_CASE("cpufreq: the iowait boost doubles from 1/8, decays and resets", "[iowait][cpufreq]") {
  IowaitBoost b;
  const uint64_t short_gap = 50'000;  // 50 us: within a tick
  CHECK(b.wake(true, short_gap) == 128);
  CHECK(b.wake(true, short_gap) == 256);
  CHECK(b.wake(true, short_gap) == 512);
  CHECK(b.wake(true, short_gap) == 1024);
  CHECK(IowaitBoost::full(b.wake(true, short_gap)));  // stays at the maximum
  CHECK(b.wake(false, short_gap) == 512);              // halves without iowait
  CHECK(b.wake(false, short_gap) == 256);
  CHECK(b.wake(false, short_gap) == 128);
  CHECK(b.wake(false, short_gap) == 0);                // below the minimum: off
  CHECK(b.wake(true, short_gap) == 128);
  CHECK(b.wake(true, short_gap) == 256);
  CHECK(b.wake(true, kTickNs + 1) == 128);  // more than a tick idle: reset to min
  CHECK(b.wake(false, kTickNs + 1) == 0);   // ... or to none
  CHECK(b.wake(true, kTickNs) == 128);      // exactly a tick: no reset, starts
}

TEST_CASE("cpufreq: a boosting governor slows every plain wake, and iowait ones ramp", "[iowait][cpufreq]") {
  // qd1-read, 32 x (1 warm-up + 2 measured) reads of 20 us on v6.5-rc2.
  const RunResult on = run_prog("qd1-read", "v6.5-rc2", {"wait-schedule", "wait-io-schedule"},
                                {{"cpufreq_iowait_boost", "1"}});
  CHECK(iowait_col(on, 0).total[Event::cpufreq_slow_wake] == 96);  // no boost at all
  CHECK(iowait_col(on, 0).total[Event::cpufreq_iowait_boost] == 0);
  // 1/8, 1/4, 1/2, then the maximum: three slow wakes, all in the warm-up.
  CHECK(iowait_col(on, 1).total[Event::cpufreq_slow_wake] == 3);
  CHECK(iowait_col(on, 1).timed[Event::cpufreq_slow_wake] == 0);
  CHECK(iowait_col(on, 1).total[Event::cpufreq_iowait_boost] == 96);
  // Sleeps longer than a tick reset it every time: every wake is slow.
  const RunResult slow = run_prog("qd1-read", "v6.5-rc2", {"wait-io-schedule"},
                                  {{"cpufreq_iowait_boost", "1"}, {"device_us", "1500"}});
  CHECK(iowait_col(slow, 0).total[Event::cpufreq_slow_wake] == 96);
  // Without the machine's boost nothing of it is counted.
  const RunResult off = run_prog("qd1-read", "v6.5-rc2", {"wait-schedule", "wait-io-schedule"}, {});
  for (size_t c = 0; c < 2; ++c) {
    CHECK(iowait_col(off, c).total[Event::cpufreq_slow_wake] == 0);
    CHECK(iowait_col(off, c).total[Event::cpufreq_iowait_boost] == 0);
  }
  // The difference in time is the slow wakes' prior, per read.
  const CostModel& m = simcache::testing::test_profile();
  const WorkloadResult& w = on.workloads.at(0);
  const WorkloadResult& wo = off.workloads.at(0);
  const double extra = policy_time(m, w, w.policies.at(0)).per_op_ns -
                       policy_time(m, wo, wo.policies.at(0)).per_op_ns;
  CHECK(extra == Approx(m.find("cpufreq_slow_wake")->value).epsilon(1e-9));
}

TEST_CASE("idle: the Cascade Lake table (skx_cstates) and menu's choices on it", "[iowait][idle]") {
  const IdleTable* t = idle_table("cascadelake-w");
  REQUIRE(t != nullptr);
  const MachineInfo* m = machine_by_name("cascadelake-w", nullptr);
  REQUIRE(m != nullptr);
  CHECK(m->idle_table == "cascadelake-w");
  CHECK(m->value("cpufreq_iowait_boost") == 0);
  REQUIRE(t->states.size() == 4);
  CHECK(t->states[1].exit_latency_us == 2);
  CHECK(t->states[1].target_residency_us == 2);
  CHECK(t->states[2].exit_latency_us == 10);
  CHECK(t->states[2].target_residency_us == 20);
  CHECK(t->states[3].exit_latency_us == 133);
  CHECK(t->states[3].target_residency_us == 600);
  const KernelProfile& era = kernel("v6.5-rc2");
  const KernelProfile& v618 = kernel("v6.18");
  auto pick = [&](const KernelProfile& k, bool iowait, uint64_t us) {
    return cqwait_idle_choice(k, iowait, us, *t).state;
  };
  // < 2 us: POLL; the multiplier's limit is prediction / 11 on <= v6.12.
  CHECK(pick(era, false, 1) == IdleState::poll);
  CHECK(pick(era, false, 10) == IdleState::skx_c1);   // C1E needs 20 us
  CHECK(pick(era, true, 10) == IdleState::poll);      // limit 909 ns < C1's 2 us
  CHECK(pick(era, false, 80) == IdleState::skx_c1e);
  CHECK(pick(era, true, 80) == IdleState::skx_c1);    // limit 7.3 us < C1E's 10
  CHECK(pick(era, true, 110) == IdleState::skx_c1e);  // limit 10 us
  CHECK(pick(era, false, 600) == IdleState::skx_c6);
  CHECK(pick(era, true, 600) == IdleState::skx_c1e);  // limit 54.5 us < C6's 133
  CHECK(pick(era, true, 1463) == IdleState::skx_c6);  // limit 133 us
  CHECK(pick(v618, true, 10) == IdleState::skx_c1);   // v6.13+: no multiplier
  // The thresholds docs/idle.md states for the Cascade Lake table.
  CHECK(pick(era, true, 21) == IdleState::poll);
  CHECK(pick(era, true, 22) == IdleState::skx_c1);
  CHECK(pick(era, true, 109) == IdleState::skx_c1);
  CHECK(pick(era, true, 1462) == IdleState::skx_c1e);
  CHECK(pick(era, false, 2) == IdleState::skx_c1);
  CHECK(pick(era, false, 19) == IdleState::skx_c1);
  CHECK(pick(era, false, 20) == IdleState::skx_c1e);
  CHECK(pick(era, false, 599) == IdleState::skx_c1e);
  CHECK(idle_exit_event(IdleState::skx_c6) == Event::idle_exit_skx_c6);
  // In the program, on the machine: a 10 us read, schedule() against io_schedule().
  const RunResult r = run_prog("qd1-read", "v6.5-rc2", {"wait-schedule", "wait-io-schedule"},
                               {{"device_us", "10"}}, "cascadelake-w");
  CHECK(iowait_col(r, 0).timed[Event::idle_exit_skx_c1] == 64);
  CHECK(iowait_col(r, 1).timed[Event::idle_exit_poll] == 64);
}

namespace {

// Seed 003's two answers as the tool gives them (the shipped profile, the
// seed's machine): the generated section of docs/idle.md.
std::string answers_markdown() {
  const CostModel& m = simcache::testing::default_profile();
  auto run_on = [&](const std::string& scenario, const char* k, std::vector<std::string> pols,
                    std::vector<std::pair<std::string, std::string>> sets) {
    return simcache::testing::run_priced(scenario, std::move(pols), std::move(sets), m, k,
                                         "cascadelake-w");
  };
  std::string out =
      "003-a: `qd1-read` on `cascadelake-w`, kernel v6.5-rc2 (v6.1.39 and v6.4.4 give the same), "
      "us per read and the io_schedule() column's change with its 90% model interval:\n\n"
      "| device | cpufreq iowait boost | schedule() | io_schedule() | change [90% interval] |\n"
      "|---|---|---|---|---|\n";
  for (int boost : {0, 1})
    for (int dev : {10, 80}) {
      const RunResult r = run_on("qd1-read", "v6.5-rc2", {"wait-schedule", "wait-io-schedule"},
                                 {{"device_us", std::to_string(dev)},
                                  {"cpufreq_iowait_boost", std::to_string(boost)}});
      for (const char* other : {"v6.1.39", "v6.4.4"}) {
        const RunResult o = run_on("qd1-read", other, {"wait-schedule", "wait-io-schedule"},
                                   {{"device_us", std::to_string(dev)},
                                    {"cpufreq_iowait_boost", std::to_string(boost)}});
        for (size_t c = 0; c < 2; ++c) CHECK(iowait_col(o, c).timed.v == iowait_col(r, c).timed.v);
      }
      const WorkloadResult& w = r.workloads.at(0);
      const PolicyTime a = policy_time(m, w, w.policies.at(0));
      const PolicyTime b = policy_time(m, w, w.policies.at(1));
      const EffectInterval e = effect_interval(m, a, b);
      out += fmt::format("| {} us | {} | {:.2f} | {:.2f} | {:+.1f}% [{:+.1f}, {:+.1f}]{} |\n", dev,
                         boost ? "on (prior)" : "off", a.per_op_ns / 1000, b.per_op_ns / 1000,
                         e.effect * 100, e.lo * 100, e.hi * 100, e.prior_based ? "*" : "");
    }
  out +=
      "\n003-b: the `iowait-gate` preset's three waiters per kernel on `cascadelake-w`, "
      "`unpatched`: the share of the waiting CPU's time reported as iowait (`iowait_ppm` / 10^4) "
      "with its 90% model interval:\n\n"
      "| kernel | QD-1 read in flight | nothing in flight, never submitted | nothing in flight, "
      "submitted before |\n|---|---|---|---|\n";
  // docs/idle.md's one command: the eight kernels side by side, one column
  // each, in the preset's three blocks (checked against the runs below).
  const RunResult side = run_on("iowait-gate",
                                "v6.1.39,v6.1.45,v6.4.4,v6.4.8,v6.5-rc2,v6.5-rc3,v6.12,v6.18",
                                {"unpatched"}, {});
  REQUIRE(side.workloads.size() == 3);
  size_t col = 0;
  for (const char* k : {"v6.1.39", "v6.1.45", "v6.4.4", "v6.4.8", "v6.5-rc2", "v6.5-rc3", "v6.12",
                        "v6.18", "v6.18 no-iowait"}) {
    const bool flag = std::string(k).find(' ') != std::string::npos;
    const char* kern = flag ? "v6.18" : k;
    const std::vector<std::string> pol = {flag ? "no-iowait" : "unpatched"};
    const RunResult read = run_on("qd1-read", kern, pol, {{"device_us", "80"}});
    const RunResult pure = run_on("idle-wait", kern, pol, {{"submitted", "0"}});
    const RunResult refs = run_on("idle-wait", kern, pol, {{"submitted", "1"}});
    if (!flag) {
      INFO(k);
      const RunResult* alone[] = {&read, &pure, &refs};
      for (size_t w = 0; w < 3; ++w) {
        const PolicyResult& c = side.workloads[w].policies.at(col);
        CHECK(c.policy == std::string("unpatched@") + k);
        CHECK(c.metrics.at("iowait_ppm") == iowait_col(*alone[w], 0).metrics.at("iowait_ppm"));
        CHECK(c.timed == iowait_col(*alone[w], 0).timed);
      }
      ++col;
    }
    // The share and its interval, as the summary's `iowait %` row has them.
    auto cell = [&](const PolicyResult& p) {
      ShareInterval si;
      REQUIRE(iowait_share(&m, p, &si));
      CHECK(si.share * 1e6 == Approx(share_ppm(p)));
      if (!(si.hi > si.lo)) return fmt::format("{:.1f}%", si.share * 100);
      return fmt::format("{:.1f}% [{:.1f}, {:.1f}]{}", si.share * 100, si.lo * 100, si.hi * 100,
                         si.prior_based ? "*" : "");
    };
    out += fmt::format("| {} | {} | {} | {} |\n", k, cell(iowait_col(read, 0)),
                       cell(iowait_col(pure, 0)), cell(iowait_col(refs, 0)));
  }
  return out;
}

}  // namespace

TEST_CASE("docs/idle.md's seed 003 answers are the tool's", "[iowait][docs]") {
  const std::string path = simcache::testing::repo_file("docs/idle.md");
  std::string doc = simcache::testing::read_text(path);
  const std::string begin =
      "<!-- seed003-answers:begin (generated; tests/test_iowait.cc) -->\n";
  const std::string end = "<!-- seed003-answers:end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  const std::string want = answers_markdown();
  if (const char* u = std::getenv("SIMCACHE_UPDATE_DOCS"); u && std::string(u) == "1") {
    doc.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(path, std::ios::binary) << doc;
    WARN("rewrote the seed 003 answers in " << path);
    return;
  }
  INFO("docs/idle.md's seed 003 answers are stale (a refit of the shipped profile changes them); "
       "review, then regenerate with SIMCACHE_UPDATE_DOCS=1 ./build/tests/simcache_tests '[docs]'");
  CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == want);
}
