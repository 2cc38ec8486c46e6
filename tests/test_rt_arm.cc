// The rt-arm scenario on the many-CPU machine, and the engine's promise
// that single-task scenarios count exactly as before.
#include <catch2/catch.hpp>

#include "sim/cost/cost.h"
#include "sim/run/engine.h"

using namespace simcache;
using namespace simcache::sim;

namespace {

RunResult run_ok(RunRequest req) {
  RunResult r;
  std::string err;
  INFO(err);
  REQUIRE(run(req, &r, &err));
  return r;
}

RunRequest rt_arm(std::vector<std::pair<std::string, std::string>> sets, bool priced = true) {
  RunRequest req;
  req.scenario = "rt-arm-loop";
  req.policies = {"unpatched", "futex-return-to-cache"};
  req.sets = {{"cpus", "4"}, {"cpu", "0"}, {"kworker_cpu", "1"}, {"messages", "600"}};
  for (auto& kv : sets) req.sets.push_back(kv);
  if (priced) req.event_ns = event_prices(prior_model());
  return req;
}

const LatencyHist* lat(const PolicyResult& p, const std::string& kind) {
  for (const OpLatency& l : p.latency)
    if (l.kind == kind) return &l.hist;
  return nullptr;
}

}  // namespace

TEST_CASE("rt-arm: the patch removes the failed arms' kmalloc/kfree", "[rt_arm]") {
  const RunResult r = run_ok(rt_arm({{"fail_permille", "500"}, {"bg_per_cpu", "0"}}));
  const PolicyResult& un = r.workloads[0].policies[0];
  const PolicyResult& fix = r.workloads[0].policies[1];
  CHECK(un.timed_ops == 600);
  CHECK(un.timed[Event::futex_wait_arm_fail] == 300);
  CHECK(fix.timed[Event::futex_wait_arm_fail] == 300);
  CHECK(un.timed[Event::futex_arm_fail_kfree] == 300);
  CHECK(fix.timed[Event::futex_arm_fail_kfree] == 0);
  CHECK(un.timed[Event::kmalloc] > fix.timed[Event::kmalloc]);
  // Alone on the machine, nothing contends.
  CHECK(un.timed[Event::list_lock_contended] == 0);
  CHECK(un.metrics.at("list_lock_waits") == 0);
  const LatencyHist* w = lat(un, "futex_wait");
  REQUIRE(w);
  CHECK(w->count() == 600);
  REQUIRE(lat(fix, "futex_wait"));
  // The patched loop does less work per arm on average.
  CHECK(lat(fix, "futex_wait")->mean_ns() < w->mean_ns());
}

TEST_CASE("rt-arm: background users of kmalloc-192 contend on the list_lock", "[rt_arm]") {
  const RunResult r = run_ok(rt_arm({{"fail_permille", "1000"}, {"bg_per_cpu", "4"},
                                     {"bg_rate_per_ms", "200"}, {"bg_burst", "128"}}));
  const PolicyResult& un = r.workloads[0].policies[0];
  // Their events are their own: the loop's counts do not include them.
  const RunResult alone = run_ok(rt_arm({{"fail_permille", "1000"}, {"bg_per_cpu", "0"}}));
  CHECK(un.timed[Event::futex_wait] == alone.workloads[0].policies[0].timed[Event::futex_wait]);
  CHECK(un.timed[Event::kmalloc] == alone.workloads[0].policies[0].timed[Event::kmalloc]);
  REQUIRE(lat(un, "kmalloc"));
  CHECK(lat(un, "kmalloc")->count() > 0);
  // Bursts of 128 run the CPU slabs dry: the background tasks meet on
  // the node list_lock, and each wait is real time.
  CHECK(un.metrics.at("bg_list_lock_waits") > 0);
  CHECK(un.metrics.at("bg_list_lock_wait_ns") > un.metrics.at("bg_list_lock_waits"));
  // The loop's own kmalloc/kfree pairs stay on its CPU slab (fast path):
  // in this mix it never takes the list_lock.
  CHECK(un.metrics.at("list_lock_waits") == 0);
  CHECK(un.kasan.empty());
}

TEST_CASE("rt-arm: counts-only runs record no latency and see no contention", "[rt_arm]") {
  const RunResult r =
      run_ok(rt_arm({{"bg_per_cpu", "2"}, {"bg_rate_per_ms", "400"}}, /*priced=*/false));
  for (const PolicyResult& p : r.workloads[0].policies) {
    CHECK(p.latency.empty());
    CHECK(p.total[Event::list_lock_contended] == 0);
    CHECK(p.metrics.at("list_lock_wait_ns") == 0);
  }
}

TEST_CASE("rt-arm: RT counts the CPU slab local lock on every fast path", "[rt_arm][rt]") {
  const RunResult nrt = run_ok(rt_arm({{"bg_per_cpu", "0"}, {"rt", "0"}}));
  const RunResult rt = run_ok(rt_arm({{"bg_per_cpu", "0"}, {"rt", "1"}}));
  const PolicyResult& a = nrt.workloads[0].policies[0];
  const PolicyResult& b = rt.workloads[0].policies[0];
  CHECK(a.timed[Event::cpu_slab_local_lock] == 0);
  // One per fast-path call (a bulk free's run takes it once).
  CHECK(b.timed[Event::cpu_slab_local_lock] <=
        b.timed[Event::slab_alloc_fast] + b.timed[Event::slab_free_fast]);
  CHECK(b.timed[Event::cpu_slab_local_lock] >= b.timed[Event::slab_alloc_fast]);
  CHECK(b.timed[Event::cpu_slab_local_lock] > 0);
  // Same work otherwise.
  CHECK(a.timed[Event::kmalloc] == b.timed[Event::kmalloc]);
}

TEST_CASE("rt-arm: the same seed gives the same histograms at 1 and 2 jobs", "[rt_arm][threads]") {
  RunRequest req = rt_arm({{"bg_per_cpu", "2"}, {"bg_rate_per_ms", "300"}, {"rt", "1"},
                           {"irq_period_ns", "7000"}, {"irq_dur_ns", "2000"}});
  req.seed = 5;
  req.jobs = 1;
  const RunResult a = run_ok(req);
  req.jobs = 2;
  const RunResult b = run_ok(req);
  for (size_t k = 0; k < 2; ++k) {
    const PolicyResult& x = a.workloads[0].policies[k];
    const PolicyResult& y = b.workloads[0].policies[k];
    REQUIRE(x.latency.size() == y.latency.size());
    REQUIRE_FALSE(x.latency.empty());
    for (size_t i = 0; i < x.latency.size(); ++i) {
      CHECK(x.latency[i].kind == y.latency[i].kind);
      CHECK(x.latency[i].hist == y.latency[i].hist);
    }
    CHECK(x.total == y.total);
    CHECK(x.metrics == y.metrics);
  }
}

TEST_CASE("engine: a single-task scenario counts the same priced or not", "[rt_arm]") {
  // Prices only move the clocks: every count of arm-fail and sparse-fill
  // is the same with them, and times stay counts x cost.
  for (const char* sc : {"arm-fail", "sparse-fill"}) {
    INFO(sc);
    RunRequest req;
    req.scenario = sc;
    if (std::string(sc) == "sparse-fill")
      req.sets = {{"slots", "256"}, {"installs", "256"}, {"rounds", "1"}, {"warmup", "0"}};
    else
      req.sets = {{"fail_permille", "390"}, {"cycles", "100"}};
    const RunResult plain = run_ok(req);
    req.event_ns = event_prices(prior_model());
    const RunResult priced = run_ok(req);
    const PolicyResult& a = plain.workloads[0].policies[0];
    const PolicyResult& b = priced.workloads[0].policies[0];
    CHECK(a.total == b.total);
    CHECK(a.timed == b.timed);
    CHECK(a.latency.empty());
    CHECK_FALSE(b.latency.empty());
    CHECK(b.total[Event::list_lock_contended] == 0);
    // An operation's latency is the price of what it counted: with one
    // task the sum over operations cannot exceed the timed region's time.
    double sum = 0;
    for (const OpLatency& l : b.latency) sum += l.hist.mean_ns() * static_cast<double>(l.hist.count());
    CHECK(sum <= prior_model().time_ns(b.timed) * 1.04);
    CHECK(sum > 0);
  }
}

namespace {

RunRequest arm_fail(std::vector<std::pair<std::string, std::string>> sets, bool priced = true) {
  RunRequest req;
  req.scenario = "arm-fail";
  req.policies = {"unpatched", "futex-return-to-cache"};
  req.sets = {{"cpus", "4"}, {"cpu", "0"}, {"kworker_cpu", "1"}, {"cycles", "100"},
              {"fail_permille", "390"}};
  for (auto& kv : sets) req.sets.push_back(kv);
  if (priced) req.event_ns = event_prices(prior_model());
  return req;
}

}  // namespace

TEST_CASE("arm-fail: the default mix is the single-step loop with exact counts", "[rt_arm][arm_fail]") {
  // 100 cycles x 32 waits, 390 per 1000 failing by error diffusion: 1248.
  const RunResult r = run_ok(arm_fail({}));
  const PolicyResult& un = r.workloads[0].policies[0];
  const PolicyResult& fix = r.workloads[0].policies[1];
  CHECK(un.timed_ops == 3200);
  CHECK(un.timed[Event::futex_wait_arm_fail] == 1248);
  CHECK(fix.timed[Event::futex_wait_arm_fail] == 1248);
  CHECK(un.timed[Event::futex_arm_fail_kfree] == 1248);
  CHECK(fix.timed[Event::futex_arm_fail_kfree] == 0);
  CHECK(lat(un, "futex_wake")->count() == 3200 - 1248);
  // No background users: no lock metrics, no background latency kinds.
  CHECK(un.metrics.count("list_lock_waits") == 0);
  CHECK(lat(un, "kmalloc") == nullptr);
  // Spelling the defaults out changes nothing.
  const RunResult same = run_ok(arm_fail({{"bg_per_cpu", "0"}, {"bg_rate_per_ms", "100"},
                                          {"loop_prio", "0"}, {"rt", "0"}}));
  CHECK(same.workloads[0].policies[0].total == un.total);
  CHECK(same.workloads[0].policies[1].total == fix.total);
}

TEST_CASE("arm-fail: background users interleave and the loop keeps its own counts",
          "[rt_arm][arm_fail]") {
  const RunResult alone = run_ok(arm_fail({}));
  const RunResult mix = run_ok(arm_fail({{"fail_permille", "390"}, {"bg_per_cpu", "4"},
                                         {"bg_rate_per_ms", "2000"}, {"bg_burst", "128"}}));
  for (size_t k = 0; k < 2; ++k) {
    INFO(k);
    const PolicyResult& a = alone.workloads[0].policies[k];
    const PolicyResult& b = mix.workloads[0].policies[k];
    CHECK(b.timed_ops == a.timed_ops);
    for (Event ev : {Event::futex_wait, Event::futex_wake, Event::futex_wait_arm_fail,
                     Event::futex_arm_fail_kfree, Event::kmalloc, Event::kfree})
      CHECK(b.timed[ev] == a.timed[ev]);
    // The background tasks ran (their own latency kind) and met on the
    // node list_lock: each wait is real time.
    REQUIRE(lat(b, "kmalloc"));
    CHECK(lat(b, "kmalloc")->count() > 0);
    CHECK(b.metrics.at("bg_list_lock_waits") > 0);
    CHECK(b.metrics.at("bg_list_lock_wait_ns") > b.metrics.at("bg_list_lock_waits"));
    CHECK(b.metrics.count("list_lock_waits") == 1);
    CHECK(b.kasan.empty());
  }
}

TEST_CASE("arm-fail: the mix is deterministic at 1 and 2 jobs", "[rt_arm][arm_fail][threads]") {
  RunRequest req = arm_fail({{"bg_per_cpu", "2"}, {"bg_rate_per_ms", "500"}, {"rt", "1"}});
  req.seed = 9;
  req.jobs = 1;
  const RunResult a = run_ok(req);
  req.jobs = 2;
  const RunResult b = run_ok(req);
  for (size_t k = 0; k < 2; ++k) {
    const PolicyResult& x = a.workloads[0].policies[k];
    const PolicyResult& y = b.workloads[0].policies[k];
    REQUIRE(x.latency.size() == y.latency.size());
    for (size_t i = 0; i < x.latency.size(); ++i) CHECK(x.latency[i].hist == y.latency[i].hist);
    CHECK(x.total == y.total);
    CHECK(x.metrics == y.metrics);
  }
}
