// The counts time depends on, as exact counts: lifecycle phases that
// partition the timed interval, reuse removals of the slots the installs
// took, the idle gap of paced operations, per-slot registration work,
// v6.12's per-ring node, the v6.13 kmalloc-prefill diagnostic, and the
// remote-object count at the mm facade.
#include <catch2/catch.hpp>
#include <tuple>

#include "model/mm/mm.h"
#include "sim/cost/cost.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"
#include "test_run_util.h"
#include "sim/run/scenarios/common.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::Sets;
using simcache::testing::col;
using simcache::testing::run_ok;
using simcache::testing::run_priced;

namespace {
const Counters& phase(const PolicyResult& p, const std::string& name) {
  for (const auto& [k, c] : p.phases)
    if (k == name) return c;
  FAIL("no phase " << name);
  static const Counters none;
  return none;
}
uint64_t per_op(const PolicyResult& p, Event e) { return p.timed[e] / p.timed_ops; }
}  // namespace

TEST_CASE("lifecycle phases partition the timed interval exactly", "[timing][phases]") {
  const CostModel& m = simcache::testing::test_profile();
  for (const char* mode : {"0", "1", "2"}) {
    const RunResult r = run_ok("lifecycle", {"unpatched", "node-slab+bulk-refill+prefill"},
                               {{"mode", mode}, {"groups", "1"}, {"ops", "3"}, {"installs", "64"}});
    for (const PolicyResult& p : r.workloads[0].policies) {
      INFO("mode " << mode << " " << p.policy);
      REQUIRE(p.phases.size() == 2);
      const std::string first = mode[0] == '2' ? "removal" : "registration";
      const std::string second = mode[0] == '2' ? "refill" : "fill";
      CHECK(p.phases[0].first == first);
      CHECK(p.phases[1].first == second);
      Counters sum;
      for (const auto& [name, c] : p.phases) sum += c;
      CHECK(sum == p.timed);
      // And so do their times: the same counts priced by the same costs.
      const PolicyTime t = policy_time(m, r.workloads[0], p);
      double ns = 0;
      for (const PolicyTime::Phase& f : t.phases) ns += f.per_op_ns;
      CHECK(ns == Approx(t.per_op_ns).epsilon(1e-12));
    }
  }
}

TEST_CASE("reuse removes exactly the slots the installs took", "[timing][rsrc]") {
  // reuse-4096-64: 64 installs into a 4096-slot table. The allocation
  // hint moves on after every install, so the refill's files land above
  // the removed ones; removing [0, 64) would miss 63 of them. Removing
  // what the CQEs reported frees one node per removal, every cycle.
  const RunResult r = run_ok("lifecycle", {"unpatched"},
                             {{"mode", "2"}, {"groups", "1"}, {"ops", "4"}, {"installs", "64"}});
  const PolicyResult& u = col(r, 0);
  CHECK(u.timed_ops == 4);
  CHECK(per_op(u, Event::files_update_entry) == 64);
  CHECK(per_op(u, Event::io_free_rsrc_node) == 64);
  CHECK(per_op(u, Event::fixed_file_install) == 64);
  CHECK(u.timed[Event::file_alloc_enfile] == 0);
}

TEST_CASE("the first operation after a paced sleep pays one idle gap", "[timing][rsrc]") {
  for (const char* mode : {"0", "1", "2"}) {
    const RunResult r = run_ok("lifecycle", {"unpatched"},
                               {{"mode", mode}, {"groups", "1"}, {"ops", "3"}, {"installs", "64"}});
    INFO("mode " << mode);
    CHECK(col(r, 0).timed[Event::idle_gap] == (mode[0] == '1' ? 3u : 0u));
  }
  // and, per slot of the table it registers, a cold slot, all in its
  // registration phase
  for (const char* slots : {"128", "4096"}) {
    for (const char* mode : {"0", "1"}) {
      const RunResult r = run_ok("lifecycle", {"unpatched"},
                                 {{"mode", mode}, {"groups", "1"}, {"ops", "3"}, {"installs", "64"},
                                  {"slots", slots}});
      INFO("mode " << mode << " slots " << slots);
      const uint64_t want = mode[0] == '1' ? 3 * std::stoull(slots) : 0;
      CHECK(col(r, 0).timed[Event::idle_cold_slot] == want);
      CHECK(phase(col(r, 0), "registration")[Event::idle_cold_slot] == want);
    }
  }
}

TEST_CASE("after a paced sleep the first batch of installs starts cold", "[timing][rsrc]") {
  // min(installs, qd) cold installs per paced operation, all in its fill
  // phase; serial and reuse operations and the registration count none.
  for (const char* mode : {"0", "1", "2"}) {
    for (const auto& [installs, qd, cold] :
         {std::tuple{"64", "64", 64u}, std::tuple{"200", "64", 64u}, std::tuple{"40", "64", 40u},
          std::tuple{"200", "16", 16u}, std::tuple{"0", "64", 0u}}) {
      const RunResult r =
          run_ok("lifecycle", {"unpatched"},
                 {{"mode", mode}, {"groups", "1"}, {"ops", "3"}, {"installs", installs},
                  {"qd", qd}, {"slots", "256"}});
      INFO("mode " << mode << " installs " << installs << " qd " << qd);
      const PolicyResult& u = col(r, 0);
      const uint64_t want = mode[0] == '1' ? 3 * cold : 0;
      CHECK(u.timed[Event::idle_cold_install] == want);
      // Every install of a paced operation runs on a core still ramping up.
      const uint64_t slow = mode[0] == '1' ? 3 * std::stoull(installs) : 0;
      CHECK(u.timed[Event::idle_slow_install] == slow);
      if (mode[0] != '2') {
        CHECK(phase(u, "fill")[Event::idle_slow_install] == slow);
        CHECK(phase(u, "fill")[Event::idle_cold_install] == want);
        CHECK(phase(u, "registration")[Event::idle_cold_install] == 0);
      }
    }
  }
  // The paced fill phase as sparse-fill rounds (idle=1): the same batch.
  for (const char* idle : {"0", "1"}) {
    const RunResult r = run_ok("sparse-fill", {"unpatched"},
                               {{"idle", idle}, {"rounds", "2"}, {"warmup", "0"}, {"smoke", "0"},
                                {"slots", "256"}, {"installs", "100"}, {"qd", "32"}});
    INFO("idle " << idle);
    CHECK(col(r, 0).timed[Event::idle_cold_install] == (idle[0] == '1' ? 64u : 0u));
    CHECK(col(r, 0).timed[Event::idle_slow_install] == (idle[0] == '1' ? 200u : 0u));
  }
}

TEST_CASE("registration counts its table's slots", "[timing][rsrc]") {
  for (const char* slots : {"128", "4096", "8192"}) {
    const RunResult r = run_ok("lifecycle", {"unpatched"},
                               {{"mode", "1"}, {"groups", "1"}, {"ops", "2"}, {"slots", slots},
                                {"installs", "64"}});
    INFO(slots);
    const PolicyResult& u = col(r, 0);
    CHECK(per_op(u, Event::file_table_slot) == std::stoull(slots));
    CHECK(phase(u, "registration")[Event::file_table_slot] == 2 * std::stoull(slots));
    CHECK(phase(u, "fill")[Event::file_table_slot] == 0);
  }
}

TEST_CASE("v6.12: one rsrc node per ring plus one per unregister quiesce", "[timing][rsrc]") {
  const RunResult r = run_ok("sparse-fill", {"unpatched"},
                             {{"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}}, "v6.12");
  const PolicyResult& u = col(r, 0);
  // Two rings (source and target), each: a node at set-up, a switch at
  // its one unregister (target: explicit; source: at ring exit), its last
  // node freed with the ring. Installs take none.
  CHECK(u.total[Event::io_rsrc_node_alloc] == 4);
  CHECK(u.total[Event::io_free_rsrc_node] == 4);
  CHECK(u.timed[Event::io_rsrc_node_alloc] == 0);
}

TEST_CASE("v6.12: the node switch and the ring's last node open the node call sites",
          "[timing][rsrc][sites]") {
  const RunResult r = run_ok("sparse-fill", {"unpatched"},
                             {{"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}}, "v6.12");
  const PolicyResult& u = col(r, 0);
  const CallSiteCounts& s = u.total_sites;
  // Each io_rsrc_node_alloc / io_free_rsrc_node event is one call of its
  // site, and the site holds the node's kzalloc / kfree.
  CHECK(s.calls_of(CallSite::io_rsrc_node_alloc) == 4);
  CHECK(s.calls_of(CallSite::io_free_rsrc_node) == 4);
  CHECK(s.under(CallSite::io_rsrc_node_alloc)[Event::kmalloc] == 4);
  CHECK(s.under(CallSite::io_free_rsrc_node)[Event::kfree] == 4);
  // From ring set-up, the unregister quiesce and the ring's free.
  CHECK(s.calls_from(static_cast<size_t>(CallSite::io_ring_ctx_alloc),
                     CallSite::io_rsrc_node_alloc) == 2);
  CHECK(s.calls_from(static_cast<size_t>(CallSite::io_sqe_files_unregister),
                     CallSite::io_rsrc_node_alloc) == 2);
  CHECK(s.calls_from(static_cast<size_t>(CallSite::io_sqe_files_unregister),
                     CallSite::io_free_rsrc_node) == 2);
  CHECK(s.calls_from(static_cast<size_t>(CallSite::io_ring_ctx_free),
                     CallSite::io_free_rsrc_node) == 2);
}

TEST_CASE("kmalloc-prefill: 4096 kzalloc'd nodes serve the v6.13 first fill", "[timing][rsrc]") {
  const Sets one = {{"rounds", "2"}, {"warmup", "0"}, {"smoke", "0"}};
  const RunResult r = run_ok("sparse-fill", {"unpatched", "kmalloc-prefill"}, one, "v6.13");
  const PolicyResult& u = col(r, 0);
  const PolicyResult& p = col(r, 1);
  CHECK(per_op(u, Event::kmalloc) == 1);  // kzalloc per install on the child
  CHECK(p.timed[Event::kmalloc] == 0);     // every install takes a stashed node
  CHECK(p.timed[Event::io_cache_get] == p.timed_ops);
  CHECK(p.total[Event::io_cache_prefill] == 2 * 4096);
  Sets big = one;
  big.push_back({"slots", "8192"});
  big.push_back({"installs", "8192"});
  const RunResult b = run_ok("sparse-fill", {"kmalloc-prefill"}, big, "v6.13");
  CHECK(col(b, 0).timed[Event::kmalloc] == 2 * 4096);  // beyond the 4096 stashed
  std::string err;
  RunRequest bad;
  bad.scenario = "sparse-fill";
  bad.policies = {"kmalloc-prefill"};
  bad.kernel = "v6.18";
  RunResult out;
  CHECK_FALSE(run(bad, &out, &err));
  CHECK(err.find("kmalloc-prefill") != std::string::npos);
}

TEST_CASE("slab_alloc_remote counts objects last freed on another CPU", "[timing][mm]") {
  MmConfig cfg;
  Mm mm(cfg);
  const Task a{0, kRootMemcg, 1}, b{1, kRootMemcg, 2};
  const Ptr first = mm.kmalloc(24, GFP_KERNEL, a);
  std::vector<Ptr> mine;
  for (int i = 0; i < 10; ++i) mine.push_back(mm.kmalloc(24, GFP_KERNEL, a));
  for (Ptr p : mine) mm.kfree(p, a);  // freed where they are reused: local
  mm.kfree(first, b);                 // freed on CPU 1
  bool seen = false;
  std::vector<Ptr> again;
  for (int i = 0; i < 1024 && !seen; ++i) {
    again.push_back(mm.kmalloc(24, GFP_KERNEL, a));
    seen = again.back() == first;
  }
  REQUIRE(seen);
  CHECK(mm.events()[Event::slab_alloc_remote] == 1);
  for (Ptr p : again) mm.kfree(p, a);
}

TEST_CASE("remote-object tracking stays proportional to existing slabs", "[timing][mm]") {
  // 40 cycles of 4096 objects allocated on CPU 0 and freed on CPU 1, each
  // followed by a shrink that discards the empty slabs: 163,840 frees, but
  // the tracking (per-object slots in the slabs' metadata, reused with
  // the slab slots) holds at most about two cycles' worth of objects.
  MmConfig cfg;
  Mm mm(cfg);
  const Task a{0, kRootMemcg, 1}, b{1, kRootMemcg, 2};
  std::vector<Ptr> v(4096);
  size_t most = 0;
  for (int cycle = 0; cycle < 40; ++cycle) {
    for (Ptr& p : v) p = mm.kmalloc(24, GFP_KERNEL, a);
    for (Ptr p : v) mm.kfree(p, b);
    mm.shrink_all();
    most = std::max(most, mm.remote_tracked());
  }
  // The slabs really are discarded (their objects' pointers never come
  // back), so tracking keyed by pointer that is never pruned would hold
  // all 163,840.
  CHECK(mm.events()[Event::free_slab] >= 39 * 32);
  CHECK(most <= 3 * 4096);
}

TEST_CASE("sparse-fill verifies every installed slot untimed", "[timing][rsrc]") {
  // One 256-slot smoke round, 1 warm-up and 2 measured rounds of 100
  // installs: 256 + 3 x 100 reads, none in the timed region, and the
  // timed counts are the same with verify=0.
  const auto run = [](const char* verify) {
    return run_ok("sparse-fill", {"unpatched"},
                  {{"verify", verify}, {"rounds", "2"}, {"warmup", "1"}, {"smoke", "1"},
                   {"slots", "128"}, {"installs", "100"}});
  };
  const RunResult on = run("1"), off = run("0");
  CHECK(col(on, 0).total[Event::read_fixed] == 256 + 3 * 100);
  CHECK(col(on, 0).total[Event::iowq_punt] == 256 + 3 * 100);
  CHECK(col(on, 0).total[Event::io_worker_create] == 1);
  CHECK(col(on, 0).timed[Event::read_fixed] == 0);
  CHECK(col(off, 0).total[Event::read_fixed] == 0);
  for (size_t e = 0; e < kNumEvents; ++e) {
    INFO(kEventInfo[e].name);
    CHECK(col(on, 0).timed.v[e] == col(off, 0).timed.v[e]);
  }
  // So a lifecycle's fill phase, which the mapping reads as sparse-fill
  // with verify=0 (the kit's lifecycle reads nothing back), counts as F0
  // would: serial (teardown pending) and paced (teardown done, after a
  // sleep), as the kit's calibration suite has them.
  for (const auto& [lag, idle, slots, installs] :
       {std::tuple{"1", "0", "1024", "1024"}, std::tuple{"0", "1", "4096", "64"}}) {
    INFO("teardown_lag=" << lag << " idle=" << idle);
    const auto fill = [&](const char* verify) {
      return run_ok("sparse-fill", {"unpatched"},
                    {{"verify", verify}, {"teardown_lag", lag}, {"idle", idle}, {"smoke", "0"},
                     {"rounds", "4"}, {"slots", slots}, {"installs", installs}, {"cpus", "2"},
                     {"cpu", "1"}, {"kworker_cpu", "0"}, {"cgroup", "1"}});
    };
    const RunResult read_back = fill("1"), none = fill("0");
    CHECK(col(read_back, 0).total[Event::read_fixed] > 0);
    for (size_t e = 0; e < kNumEvents; ++e) {
      INFO(kEventInfo[e].name);
      CHECK(col(read_back, 0).timed.v[e] == col(none, 0).timed.v[e]);
    }
  }
}

namespace {
int64_t metric_of(const PolicyResult& p, const std::string& k) {
  const auto it = p.metrics.find(k);
  REQUIRE(it != p.metrics.end());
  return it->second;
}
}  // namespace

TEST_CASE("teardown against the clock: node-cache frees a grace period after the close",
          "[timing][rsrc]") {
  const CostModel& m = simcache::testing::test_profile();
  const std::vector<std::string> pols = {"unpatched", "node-slab+bulk-refill+prefill"};
  const Sets serial = {{"groups", "2"}};
  auto with = [](Sets s, const char* k, const char* v) {
    s.push_back({k, v});
    return s;
  };
  const RunResult fast = run_priced("lifecycle", pols, with(serial, "rcu_gp_us", "1"), m);
  const RunResult slow = run_priced("lifecycle", pols, with(serial, "rcu_gp_us", "1000000"), m);
  const RunResult deflt = run_priced("lifecycle", pols, serial, m);
  for (size_t c = 0; c < 2; ++c) {
    INFO(pols[c]);
    // The grace period moves no count: the teardowns run where the driver runs them.
    CHECK(col(fast, c).total == col(slow, c).total);
    CHECK(col(fast, c).timed == col(deflt, c).timed);
    // A grace period longer than the run: every free falls after the last operation.
    CHECK(metric_of(col(slow, c), "ops_overlapping_node_free") == 0);
    CHECK(metric_of(col(slow, c), "node_frees_during_ops") == 0);
    // The default: a few operations meet a burst, never more than ran.
    CHECK(metric_of(col(deflt, c), "ops_overlapping_node_free") > 0);
    CHECK(metric_of(col(deflt, c), "ops_overlapping_node_free") <= 64);
  }
  // A 1 us grace period: the previous ring's teardown runs at once on its
  // kworker. The prefilled cache's 4096 nodes take long enough to free that
  // every measured operation's registration meets them; the unpatched
  // cache's few nodes are gone before the next ring is even created.
  CHECK(metric_of(col(fast, 1), "ops_overlapping_node_free") == 64);
  CHECK(metric_of(col(fast, 1), "node_frees_during_ops") > 32 * 4096);
  CHECK(metric_of(col(fast, 1), "node_frees_during_ops") <= 64 * 4096);
  CHECK(metric_of(col(fast, 0), "ops_overlapping_node_free") == 0);
  // Bursts: at the default, the prefilled caches release far more nodes
  // beside the operations than the unpatched ones.
  CHECK(metric_of(col(deflt, 1), "node_frees_during_ops") >
        10 * metric_of(col(deflt, 0), "node_frees_during_ops"));
  // Paced: the 50 ms sleep after each close outlasts two grace periods.
  const RunResult paced = run_priced("lifecycle", pols, with(serial, "mode", "1"), m);
  for (size_t c = 0; c < 2; ++c) CHECK(metric_of(col(paced, c), "ops_overlapping_node_free") == 0);
  // Unpriced: no clock, no metric.
  const RunResult counts = run_ok("lifecycle", pols, serial);
  CHECK(col(counts, 1).metrics.count("ops_overlapping_node_free") == 0);
  CHECK(col(counts, 1).total == col(deflt, 1).total);
  // sparse-fill places its teardowns too; with a 1 us grace period and the
  // teardown lag, the prefilled ring's free meets the next round's fill.
  const RunResult f0 = run_priced("sparse-fill", pols, {{"rcu_gp_us", "1"}}, m);
  CHECK(metric_of(col(f0, 1), "ops_overlapping_node_free") > 0);
  CHECK(metric_of(col(f0, 1), "ops_overlapping_node_free") <= 15);
}

TEST_CASE("docs/model-io_uring.md's teardown-clock figures are the tool's", "[timing][docs]") {
  // The shipped profile, as the doc's command runs it.
  const CostModel& m = simcache::testing::default_profile();
  const RunResult r = run_priced("lifecycle", {"unpatched", "node-slab+bulk-refill+prefill"},
                                 {{"groups", "2"}}, m);
  // Three significant figures: the node counts follow the shipped
  // profile's times, which move by a node or two with each refit.
  auto thousands = [](int64_t v) {
    int64_t unit = 1;
    while (v / unit >= 1000) unit *= 10;
    v = (v + unit / 2) / unit * unit;
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
  };
  const std::string want =
      "so " + std::to_string(metric_of(col(r, 0), "ops_overlapping_node_free")) +
      " of them (unpatched) or " +
      std::to_string(metric_of(col(r, 1), "ops_overlapping_node_free")) +
      " (prefill) meet a\nburst, but the prefill bursts release about " +
      thousands(metric_of(col(r, 1), "node_frees_during_ops")) + " nodes during them against\n" +
      thousands(metric_of(col(r, 0), "node_frees_during_ops")) + " unpatched.";
  const std::string doc =
      simcache::testing::read_text(simcache::testing::repo_file("docs/model-io_uring.md"));
  INFO(want);
  CHECK(doc.find(want) != std::string::npos);
}

TEST_CASE("teardown against the clock: the grace-period rule", "[timing][rsrc]") {
  // Grace periods of 8 us back to back: [0, 8), [8, 16), ... A ring closed
  // at 3 us waits for the one that starts at 8 us, freed at 16 us; closed
  // on a boundary, the next one (a grace period that starts after it).
  CHECK(TeardownClock::free_start(3000, 8000, false) == 16000);
  CHECK(TeardownClock::free_start(8000, 8000, false) == 24000);
  CHECK(TeardownClock::free_start(15999, 8000, false) == 24000);
  // DEFER_TASKRUN: synchronize_rcu() before io_ring_ctx_free(), one more.
  CHECK(TeardownClock::free_start(3000, 8000, true) == 24000);
  // Never before the close plus one full grace period.
  for (double t : {0.0, 1.0, 7999.0, 123456.0})
    CHECK(TeardownClock::free_start(t, 8000, false) >= t + 8000);
}
