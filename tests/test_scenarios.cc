// Scenario drivers on the real mm model: the seed threads' claims as
// exact counts, derived by hand in the comments.
#include <catch2/catch.hpp>

#include "sim/run/engine.h"
#include "sim/run/scenario.h"
#include "model/kernel/policy.h"
#include "model/mm/slub.h"
#include "test_cost_util.h"
#include "test_policy_util.h"
#include "test_run_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::maximal_policy;
using simcache::testing::runnable_policies;
using simcache::testing::col;
using simcache::testing::kOneRound;
using simcache::testing::run_ok;


TEST_CASE("seed 001: 100,000 failing waits with return-to-cache do one kmalloc",
          "[scenario][futex]") {
  const RunResult r = run_ok("arm-fail", {"unpatched", "futex-return-to-cache"});
  // 3125 cycles x 32 FUTEX_WAIT, every one failing with -EAGAIN.
  CHECK(col(r, 0).timed[Event::futex_wait_arm_fail] == 100000);
  CHECK(col(r, 0).timed[Event::kmalloc] == 100000);
  CHECK(col(r, 0).timed[Event::kfree] == 100000);
  // The first wait misses the empty cache; every failure returns its data.
  CHECK(col(r, 1).timed[Event::kmalloc] == 1);
  CHECK(col(r, 1).timed[Event::kfree] == 0);
  CHECK(col(r, 1).timed[Event::io_cache_get] == 99999);
}

TEST_CASE("seed 001: 39% failed arms cost 0.39 kmalloc and kfree per message",
          "[scenario][futex]") {
  const RunResult r = run_ok("arm-fail", {"unpatched", "futex-return-to-cache"},
                             {{"fail_permille", "390"}});
  // Failures are spread evenly: exactly 39,000 of 100,000 arms fail and
  // each kfree()s its data. A cycle's 32 gets find the previous cycle's
  // armed (returned) objects cached, so misses = 32 - armed(prev); summed
  // over 3125 cycles with an empty cache at the start that is
  // 100,000 - (61,000 - armed(last)) = 39,000 + 19 = 39,019 (the last
  // cycle, waits 99,968..99,999, has 13 failures, 19 armed).
  CHECK(col(r, 0).timed[Event::futex_wait_arm_fail] == 39000);
  CHECK(col(r, 0).timed[Event::kfree] == 39000);
  CHECK(col(r, 0).timed[Event::kmalloc] == 39019);
  // With the patch a failed arm gives its data straight back, so only
  // waits that are armed at the same time need objects: the cache grows
  // to the largest number armed in one cycle and never misses again.
  int64_t most_armed = 0;
  for (int64_t c = 0, seq = 0; c < 3125; ++c) {
    int64_t armed = 0;
    for (int i = 0; i < 32; ++i, ++seq) armed += !((seq + 1) * 390 / 1000 > seq * 390 / 1000);
    most_armed = std::max(most_armed, armed);
  }
  CHECK(most_armed == 20);
  CHECK(col(r, 1).timed[Event::kfree] == 0);
  CHECK(col(r, 1).timed[Event::kmalloc] == static_cast<uint64_t>(most_armed));
}

TEST_CASE("first fill of 4096 sparse slots on a fresh target ring", "[scenario][rsrc]") {
  const RunResult r = run_ok("sparse-fill", {"unpatched"}, kOneRound);
  const PolicyResult& p = col(r, 0);
  CHECK(p.timed[Event::io_rsrc_node_alloc] == 4096);
  CHECK(p.timed[Event::node_cache_hit] == 0);
  CHECK(p.timed[Event::io_cache_alloc_new] == 4096);
  CHECK(p.timed[Event::kmalloc] == 4096);
  // kmalloc-32 holds 128 objects per order-0 slab. Before the fill, the
  // source ring's one node and the two rings' io_tctx_nodes took the
  // first three objects of CPU 2's first slab: 125 remain, so 4096 - 125 =
  // 3971 objects need ceil(3971/128) = 32 new slabs, 33 in the whole run. (The timed region also holds the
  // source ring's first request-cache refills: 8 bulk calls of 8
  // io_kiocb, 2 slabs of that cache.)
  const CacheStats* k32 = nullptr;
  for (const auto& c : p.caches)
    if (c.name == "kmalloc-32") k32 = &c;
  REQUIRE(k32);
  CHECK(k32->stat[size_t(SlubStat::ALLOC_SLAB)] == 33);
  CHECK(k32->stat[size_t(SlubStat::ALLOC_FASTPATH)] == 4097 + 2 - 33);
  CHECK(p.timed[Event::req_cache_refill] == 8);
  CHECK(p.timed[Event::allocate_slab] == 32 + 2);
  CHECK(p.timed[Event::list_lock] == 0);
}

TEST_CASE("bulk-refill does one bulk call per 32 misses", "[scenario][rsrc]") {
  const RunResult r = run_ok("sparse-fill", {"node-slab+bulk-refill"}, kOneRound);
  const PolicyResult& p = col(r, 0);
  CHECK(p.timed[Event::io_cache_bulk_refill] == 4096 / 32);
  CHECK(p.timed[Event::io_cache_refill_stash] == 128 * 31);
  // + the source ring's first 8 request-cache refills of 8
  CHECK(p.timed[Event::kmem_cache_alloc_bulk] == 128 + 8);
  CHECK(p.timed[Event::bulk_objects] == 4096 + 64);
  CHECK(p.timed[Event::io_cache_alloc_new] == 128);
  CHECK(p.timed[Event::node_cache_hit] == 4096 - 128);
  CHECK(p.timed[Event::kmalloc] == 0);
}

TEST_CASE("prefill: no misses on the install path, 8192 slots fall through to bulk",
          "[scenario][rsrc]") {
  SECTION("4096 slots") {
    const RunResult r = run_ok("sparse-fill", {"node-slab+bulk-refill+prefill"}, kOneRound);
    CHECK(col(r, 0).timed[Event::io_cache_alloc_new] == 0);
    CHECK(col(r, 0).timed[Event::node_cache_hit] == 4096);
    CHECK(col(r, 0).timed[Event::kmem_cache_alloc] == 0);
    CHECK(col(r, 0).timed[Event::io_cache_bulk_refill] == 0);
  }
  SECTION("8192 slots, 8192 installs") {
    auto sets = kOneRound;
    sets.push_back({"slots", "8192"});
    sets.push_back({"installs", "8192"});
    const RunResult r = run_ok("sparse-fill", {"node-slab+bulk-refill+prefill"}, sets);
    // min(8192, 4096) prefilled at registration; the other 4096 installs
    // miss once per 32 and refill in bulk.
    CHECK(col(r, 0).total[Event::io_cache_prefill] >= 4096);
    CHECK(col(r, 0).timed[Event::io_cache_alloc_new] == 128);
    CHECK(col(r, 0).timed[Event::io_cache_bulk_refill] == 128);
    CHECK(col(r, 0).timed[Event::node_cache_hit] == 8192 - 128);
  }
}

TEST_CASE("sparse-fill counts the idle prefilled nodes at any teardown lag",
          "[scenario][rsrc][record]") {
  // 64 installs into 4096 prefilled nodes leave 4032 idle in every round;
  // the previous ring's teardown (teardown_lag=1 runs it inside the next
  // round) drains that ring's cache and is not this ring's traffic.
  for (const char* lag : {"0", "1"}) {
    INFO("teardown_lag=" << lag);
    const RunResult r = run_ok("sparse-fill", {"unpatched", "node-slab+prefill"},
                               {{"installs", "64"}, {"rounds", "3"}, {"warmup", "1"},
                                {"teardown_lag", lag}});
    CHECK(col(r, 1).metrics.at("nodes_unused") == 4032);
    CHECK(col(r, 0).metrics.at("nodes_unused") == 0);
  }
}

TEST_CASE("entries arrays and rings created behind a queued teardown are reported",
          "[scenario][rsrc][record]") {
  // A 6.18 ring sets up its io_alloc_caches with IO_ALLOC_CACHE_MAX (128)
  // pointers each (1 KiB), apoll's with IO_POLL_ALLOC_CACHE_MAX (64);
  // prefill's node cache holds 4096 (32 KiB).
  // Smoke + 1 warm-up + 3 measured rounds: with teardown_lag=1 each ring
  // after the first is created before its predecessor's teardown runs.
  for (const char* lag : {"0", "1"}) {
    INFO("teardown_lag=" << lag);
    const RunResult r = run_ok("sparse-fill", {"unpatched", "node-slab+prefill"},
                               {{"installs", "64"}, {"rounds", "3"}, {"warmup", "1"},
                                {"teardown_lag", lag}});
    CHECK(col(r, 0).metrics.at("entries_bytes_node_cache") == 128 * 8);
    CHECK(col(r, 1).metrics.at("entries_bytes_node_cache") == 4096 * 8);
    const int64_t others = col(r, 0).metrics.at("entries_bytes") - 128 * 8;
    CHECK(others > 0);
    CHECK(others % (128 * 8) == 64 * 8);
    CHECK(col(r, 1).metrics.at("entries_bytes") == others + 4096 * 8);
    // Each cache's own: v6.18 sets up apoll, netmsg, rw, cmd (128
    // pointers each), futex (32), node and imu, and the total is theirs.
    for (size_t c : {0, 1}) {
      int64_t sum = 0;
      for (const auto& [k, v] : col(r, c).metrics)
        if (k.rfind("entries_bytes_", 0) == 0) sum += v;
      CHECK(sum == col(r, c).metrics.at("entries_bytes"));
      CHECK(col(r, c).metrics.at("entries_bytes_netmsg_cache") == 128 * 8);
      CHECK(col(r, c).metrics.at("entries_bytes_futex_cache") == 32 * 8);
      CHECK(col(r, c).metrics.count("entries_bytes_waitv_cache") == 0);  // not set up
    }
    for (size_t c : {0, 1})
      CHECK(col(r, c).metrics.at("rings_created_teardown_queued") == (lag[0] == '1' ? 4 : 0));
  }
  // Serial lifecycle: every operation after the first creates its ring
  // before the previous one's teardown; paced tears down first.
  for (const char* mode : {"0", "1"}) {
    INFO("mode=" << mode);
    const RunResult r = run_ok("lifecycle", {"unpatched"},
                               {{"mode", mode}, {"slots", "256"}, {"installs", "64"},
                                {"groups", "1"}, {"ops", "4"}, {"warmup", "2"}});
    CHECK(col(r, 0).metrics.at("rings_created_teardown_queued") == (mode[0] == '0' ? 5 : 0));
  }
}

TEST_CASE("same-ring remove and refill: the unpatched cache keeps 128 nodes",
          "[scenario][rsrc]") {
  const RunResult r = run_ok("lifecycle", {"unpatched", "node-slab+bulk-refill+prefill"},
                             {{"mode", "2"}, {"groups", "1"}, {"ops", "4"}});
  const PolicyResult& u = col(r, 0);
  const PolicyResult& c = col(r, 1);
  const double ops = double(u.timed_ops);
  // Removal puts 4096 nodes: 128 fit the cache, 3968 are kfree'd; the
  // refill then hits 128 and misses 3968.
  CHECK(u.timed[Event::kfree] / ops == 3968);
  CHECK(u.timed[Event::kmalloc] / ops == 3968);
  CHECK(u.timed[Event::node_cache_hit] / ops == 128);
  // The prefilled cache holds 4096: nothing freed, nothing allocated.
  CHECK(c.timed[Event::kfree] == 0);
  CHECK(c.timed[Event::kmem_cache_free] == 0);
  CHECK(c.timed[Event::io_cache_alloc_new] == 0);
  CHECK(c.timed[Event::node_cache_hit] / ops == 4096);
}

TEST_CASE("WAITV: one allocation and one free per request, accounted when asked",
          "[scenario][futex]") {
  const auto sets = std::vector<std::pair<std::string, std::string>>{
      {"rounds", "1"}, {"warmup", "1"}, {"cycles", "16"}};
  for (const char* kernel : {"v6.18", "v7.1"}) {
    const RunResult r = run_ok("waitv", {"unpatched", "waitv-account", "waitv-noaccount"},
                               sets, kernel);
    INFO(kernel);
    for (size_t i = 0; i < 3; ++i) {
      const PolicyResult& p = col(r, i);
      CHECK(p.timed[Event::futex_waitv] == 128);
      CHECK(p.timed[Event::kmalloc] == 128);
      CHECK(p.timed[Event::kfree] == 128);
    }
    const bool v7 = std::string(kernel) == "v7.1";
    // Accounted allocations go to kmalloc-cg-2k and run the memcg hook.
    CHECK((col(r, 0).timed[Event::memcg_post_alloc_hook] == 128) == v7);
    CHECK(col(r, 1).timed[Event::memcg_post_alloc_hook] == 128);
    CHECK(col(r, 1).timed[Event::memcg_free_hook] == 128);
    CHECK(col(r, 2).timed[Event::memcg_post_alloc_hook] == 0);
  }
}

TEST_CASE("every scenario under every policy ends clean", "[scenario][kasan]") {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      scenarios = {
          {"sparse-fill", {{"rounds", "2"}, {"warmup", "1"}, {"slots", "512"}, {"installs", "300"}}},
          {"node-cache-coldwarm", {{"rounds", "2"}, {"warm", "1"}}},
          {"lifecycle", {{"mode", "0"}, {"groups", "1"}, {"ops", "2"}, {"slots", "300"}, {"installs", "200"}}},
          {"lifecycle", {{"mode", "2"}, {"groups", "1"}, {"ops", "2"}, {"slots", "300"}, {"installs", "200"}}},
          {"waitv", {{"rounds", "1"}, {"warmup", "1"}, {"cycles", "8"}}},
          {"wait-wake", {{"rounds", "1"}, {"warmup", "1"}, {"cycles", "8"}}},
          {"arm-fail", {{"cycles", "20"}, {"fail_permille", "500"}}},
          {"memcg-bulk", {{"iterations", "50"}}},
          {"memcg-single", {{"iterations", "50"}}},
          {"memcg-single", {{"iterations", "50"}, {"kmalloc", "1"}}},
          {"poll-refill", {{"total", "5000"}, {"burst", "512"}, {"recycle", "4"}}},
      };
  // Every policy of the table that can run on the profile (with its
  // prerequisite where it needs one): 49 per scenario today.
  size_t runs = 0;
  for (const iou::KernelProfile& kernel : iou::kernel_profiles()) {
    for (const auto& [name, sets] : scenarios) {
      for (const auto& pol : runnable_policies(kernel)) {
        RunRequest req;
        req.scenario = name;
        req.policies = {pol};
        req.sets = sets;
        req.kernel = kernel.name;
        RunResult r;
        std::string err;
        INFO(kernel.name << " " << name << " " << pol);
        if (!run(req, &r, &err)) FAIL(err);
        ++runs;
        REQUIRE(r.workloads.size() == 1);
        REQUIRE(r.workloads[0].policies.size() == 1);
        uint64_t events = 0;  // it did run
        for (uint64_t v : r.workloads[0].policies[0].total.v) events += v;
        CHECK(events > 0);
        for (const auto& k : r.workloads[0].policies[0].kasan)
          FAIL_CHECK(k.kind << " " << k.cache << ": " << k.detail);
      }
    }
  }
  CHECK(runs >= 49 * scenarios.size());
}

TEST_CASE("allocation failures injected anywhere leave scenarios consistent",
          "[scenario][faults]") {
  // The baseline and both maximal combinations of the policy table.
  const iou::KernelProfile& v618 = *iou::profile_by_name("v6.18", nullptr);
  const std::string base(iou::PolicyRegistry::get().baseline().name);
  for (const std::string& pol : {base, maximal_policy(v618, false), maximal_policy(v618, true)}) {
    for (const char* name : {"sparse-fill", "lifecycle", "waitv", "arm-fail"}) {
      RunRequest req;
      req.scenario = name;
      req.policies = {pol};
      req.sets = {{"rounds", "1"}, {"warmup", "1"}};
      if (std::string(name) == "sparse-fill") req.sets.push_back({"smoke", "0"});
      if (std::string(name) == "lifecycle") req.sets = {{"groups", "1"}, {"ops", "3"}};
      if (std::string(name) == "waitv") req.sets.push_back({"cycles", "32"});
      if (std::string(name) == "arm-fail") req.sets = {{"cycles", "100"}, {"fail_permille", "300"}};
      req.faults = {{FaultPoint::page_alloc, 0.05}, {FaultPoint::slab_alloc, 0.02},
                    {FaultPoint::bulk_short, 0.1}, {FaultPoint::kvmalloc, 0.05},
                    {FaultPoint::memcg_charge, 0.02}};
      RunResult r;
      std::string err;
      REQUIRE(run(req, &r, &err));
      INFO(name << " " << pol);
      const PolicyResult& p = r.workloads[0].policies[0];
      // Every point asked for is reported, and faults were really injected
      // (at least one allocation failed), else this test proves nothing.
      REQUIRE(p.faults_injected.size() == req.faults.size());
      uint64_t injected = 0;
      for (const auto& [point, n] : p.faults_injected) injected += n;
      CHECK(injected > 0);
      CHECK(p.total[Event::alloc_failed] + p.total[Event::memcg_charge_fail] > 0);
      // No KASAN report: end-of-run leak check (objects conserved), memcg
      // balance and the SLUB invariants all passed.
      for (const auto& k : p.kasan) FAIL_CHECK(k.kind << " " << k.cache << ": " << k.detail);
    }
  }
}

TEST_CASE("results do not depend on the number of worker threads", "[scenario]") {
  RunRequest req;
  req.scenario = "sparse4096";
  RunResult a, b;
  std::string err;
  REQUIRE(run(req, &a, &err));
  req.jobs = 4;
  REQUIRE(run(req, &b, &err));
  REQUIRE(a.workloads.size() == b.workloads.size());
  for (size_t i = 0; i < a.workloads.size(); ++i)
    for (size_t k = 0; k < a.workloads[i].policies.size(); ++k) {
      CHECK(a.workloads[i].policies[k].total == b.workloads[i].policies[k].total);
      CHECK(a.workloads[i].policies[k].rounds == b.workloads[i].policies[k].rounds);
    }
}

TEST_CASE("docs/stats.md documents every counter", "[docs]") {
  const std::string text =
      simcache::testing::read_text(simcache::testing::repo_file("docs/stats.md"));
  for (const auto& e : kEventInfo) CHECK(text.find("`" + std::string(e.name) + "`") != std::string::npos);
  for (const auto& s : kSlubStatInfo) CHECK(text.find("`" + std::string(s.sysfs) + "`") != std::string::npos);
}

TEST_CASE("slab-prime on v6.13 keeps one anchor per slab page it primed", "[scenario][rsrc][seed004]") {
  // The seed 004 diagnostic's row says "33 anchors kept". kmalloc-32 holds
  // 128 objects a page. The CPU slab the priming starts on is partial:
  // whatever it still has is one anchor plus spares, and each fresh page
  // one anchor plus 127 spares, until 4,096 spares are freed back.
  const RunResult r = run_ok("sparse-fill", {"slab-prime"}, kOneRound, "v6.13");
  const PolicyResult& p = col(r, 0);
  CHECK(p.total[Event::slab_prime_anchor] == 33);
  CHECK(p.total[Event::slab_prime_alloc] == 4096 + 33);
  CHECK(p.kasan.empty());
}

TEST_CASE("SLUB stat items that are a path of their own are events too", "[scenario][slub]") {
  // Slub::stat() counts them once, as the stat file and as the event the
  // cost layer prices: whole-run sums over the caches equal the events.
  for (const char* kernel : {"v6.18", "v7.1"}) {
    const RunResult r =
        run_ok("sparse-fill", {"unpatched", "node-slab+bulk-refill"}, kOneRound, kernel);
    for (const auto& w : r.workloads)
      for (const PolicyResult& p : w.policies) {
        std::array<uint64_t, kNumEvents> from_stats{};
        for (const CacheStats& c : p.caches)
          for (size_t s = 0; s < kNumSlubStats; ++s) {
            const Event e = Slub::stat_event(static_cast<SlubStat>(s));
            if (e != Event::kCount) from_stats[size_t(e)] += c.stat[s];
          }
        uint64_t bridged = 0;
        for (size_t s = 0; s < kNumSlubStats; ++s) {
          const Event e = Slub::stat_event(static_cast<SlubStat>(s));
          if (e == Event::kCount) continue;
          INFO(kernel << " " << p.policy << " " << kEventInfo[size_t(e)].name);
          CHECK(p.total[e] == from_stats[size_t(e)]);
          bridged += p.total[e];
        }
        INFO(kernel << " " << p.policy);
        CHECK(bridged > 0);
      }
  }
}

TEST_CASE("poll-refill: a ring's polls beyond the cache share are cancelled cold",
          "[scenario][io_uring]") {
  // QD 4096, bursts of 2048, a ring every 32 bursts: 65,536 polls armed a
  // ring, 4 rings for 262,144. A 2,048 KiB share holds 8,192 io_kiocbs of
  // 256 bytes: 57,344 a ring are cold, 229,376 in all. With the i7's
  // 25,600 KiB (102,400 fit) none is, nor with 4,096 armed a ring.
  const auto cold = [](const char* llc, const char* recycle) {
    const RunResult r = run_ok("poll-refill", {"unpatched"},
                               {{"llc_kib", llc}, {"recycle", recycle}, {"total", "262144"}});
    CHECK(col(r, 0).timed[Event::req_cancel] == 262144);
    return col(r, 0).timed[Event::req_cold];
  };
  CHECK(cold("2048", "32") == 229376);
  CHECK(cold("25600", "32") == 0);
  CHECK(cold("2048", "2") == 0);
}

TEST_CASE("poll-refill in the root memcg: the memcg hooks are called and find no objcg",
          "[scenario][io_uring][memcg]") {
  // 65,536 requests in 8,192 bulk refills of 8, and two more accounted
  // objects for each of the 16 rings' set-up: 65,568 objects. In a child
  // memcg each is charged and uncharged. In the root memcg (kmem
  // accounting online) the slabs still carry obj_exts vectors, so
  // __memcg_slab_free_hook() still runs for each object and finds no
  // objcg, and __memcg_slab_post_alloc_hook() runs once a call (a bulk
  // refill is one) and returns.
  const auto timed = [](const char* cgroup) {
    return col(run_ok("poll-refill", {"unpatched"},
                      {{"recycle", "2"}, {"total", "65536"}, {"cgroup", cgroup}}),
               0)
        .timed;
  };
  const Counters child = timed("1"), root = timed("0");
  CHECK(child[Event::ring_create] == 16);
  CHECK(child[Event::memcg_post_alloc_hook] == 65568);
  CHECK(child[Event::memcg_free_hook] == 65568);
  CHECK(child[Event::memcg_free_hook_empty] == 0);
  CHECK(child[Event::memcg_post_alloc_hook_empty] == 0);
  CHECK(root[Event::memcg_post_alloc_hook] == 0);
  CHECK(root[Event::memcg_free_hook] == 0);
  CHECK(root[Event::obj_stock_hit] + root[Event::obj_stock_miss] == 0);
  CHECK(root[Event::memcg_free_hook_empty] == 65568);
  CHECK(root[Event::kmem_cache_alloc_bulk] == 8192);
  CHECK(root[Event::memcg_post_alloc_hook_empty] == 8192 + 32);
  // The page-based charge: each ring's two regions (a compound block
  // each) and its cancel table (256 cache-line buckets, 16 KiB: a large
  // kmalloc), all __GFP_ACCOUNT; __memcg_kmem_charge_page() finds no objcg.
  CHECK(root[Event::memcg_charge_page_empty] == 16 * 3);
  CHECK(child[Event::memcg_charge_page_empty] == 0);
}

TEST_CASE("memcg-single in the root memcg: every free of an accounted object runs the hook",
          "[scenario][memcg]") {
  // 100,000 timed kmem_cache_alloc() + kmem_cache_free() (or kmalloc +
  // kfree of __GFP_ACCOUNT, kmalloc-cg) on one CPU: each free is a fast
  // one (the CPU slab, or room in the main sheaf), but the object's slab
  // carries an obj_exts vector, so memcg_slab_free_hook() goes out of line
  // and passes it; each allocation calls the post-alloc hook, which
  // returns. On both generations, and on 7.x's poll-refill too.
  for (const char* kernel : {"v6.18", "v7.1"})
    for (const char* km : {"0", "1"}) {
      INFO(kernel << " kmalloc=" << km);
      const Counters t =
          col(run_ok("memcg-single", {"unpatched"}, {{"kmalloc", km}, {"cgroup", "0"}}, kernel), 0)
              .timed;
      CHECK(t[Event::memcg_free_hook_empty] == 100000);
      CHECK(t[Event::memcg_post_alloc_hook_empty] == 100000);
      CHECK(t[Event::memcg_free_hook] + t[Event::memcg_post_alloc_hook] == 0);
    }
  CHECK(col(run_ok("poll-refill", {"unpatched"},
                   {{"recycle", "2"}, {"total", "65536"}, {"cgroup", "0"}}, "v7.1"),
            0)
            .timed[Event::memcg_free_hook_empty] == 65568);
}

TEST_CASE("poll-refill: each new ring maps its two regions' pages",
          "[scenario][io_uring]") {
  // A ring of 4,096 SQ entries: the rings region is 37 pages (8,192 CQEs
  // and the 4,096-entry SQ array after the header), the SQEs 64 (each a
  // zeroed order-6 compound: tests/test_mm_invariants.cc). A ring of 256
  // entries: 3 and 4 pages. 65,536 polls at 4,096 a ring is 16 rings
  // either way.
  const auto rings = [](const char* qd, const char* burst, const char* recycle) {
    const RunResult r = run_ok("poll-refill", {"unpatched"},
                               {{"qd", qd}, {"burst", burst}, {"recycle", recycle},
                                {"total", "65536"}});
    return col(r, 0).timed;
  };
  const Counters big = rings("4096", "2048", "2");
  CHECK(big[Event::ring_create] == 16);
  CHECK(big[Event::ring_pages_mapped] == 16 * 101);
  const Counters small = rings("256", "256", "16");
  CHECK(small[Event::ring_create] == 16);
  CHECK(small[Event::ring_pages_mapped] == 16 * 7);
}

TEST_CASE("a serial lifecycle clears a 2,048-slot table in a cold block, other sizes warm",
          "[scenario][rsrc][pages]") {
  // The table array and a new 256-entry ring's two regions are all
  // order-2 blocks only at 2,048 slots (16 KiB): the ring's first region
  // takes the block the last table freed, the table a refill's
  // (model/mm/page_alloc.h). 1,024 slots: a kmalloc-cg-8k object;
  // 4,096: an order-3 block, the same one each time; 8,192: order 4, no
  // per-CPU list.
  for (const char* slots : {"1024", "2048", "4096", "8192"}) {
    INFO(slots);
    const RunResult r = run_ok("lifecycle", {"unpatched"},
                               {{"mode", "0"}, {"slots", slots}, {"installs", "64"},
                                {"groups", "1"}});
    const PolicyResult& c = col(r, 0);
    REQUIRE(c.timed_ops == 32);
    const Counters* reg = nullptr;
    for (const auto& [name, counts] : c.phases)
      if (name == "registration") reg = &counts;
    REQUIRE(reg != nullptr);
    const uint64_t want = std::string(slots) == "2048" ? 32 * 16384 : 0;
    CHECK((*reg)[Event::zero_bytes_cold] == want);
    CHECK(c.timed[Event::zero_bytes_cold] == want);
  }
}
