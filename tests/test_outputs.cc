// Kernel-native outputs: snapshots of ring caches (hand-derived counts for
// the RFC's fresh-ring shapes), call-site counts, per-cache timed stats,
// /proc/slabinfo (written and read back), the sysfs tree, bpftrace
// histograms, KASAN report text, CSV quoting and table layout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/io_uring/io_uring_mm.h"
#include "test_run_util.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "sim/cli/cli.h"
#include "sim/report/kernel_formats.h"
#include "sim/report/report.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;

namespace {

PolicyResult fresh_fill(const std::string& policy, int64_t slots, int64_t installs) {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {policy};
  req.sets = {{"slots", std::to_string(slots)}, {"installs", std::to_string(installs)},
              {"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}};
  RunResult r;
  std::string err;
  REQUIRE(run(req, &r, &err));
  return r.workloads.at(0).policies.at(0);
}

const RingState& ring(const PolicyResult& p, const std::string& snap, const std::string& role) {
  for (const Snapshot& s : p.snapshots)
    if (s.name == snap)
      for (const RingState& r : s.rings)
        if (r.role == role) return r;
  FAIL("no snapshot " << snap << " / " << role);
  static RingState none;
  return none;
}

struct Want {
  uint32_t reg_cached, reg_cap, fill_cached, unreg_cached, teardown_freed;
};

// The RFC's evidence shapes, derived by hand from the code paths:
// unpatched: a 128-entry node cache, filled only by unregister's puts;
// bulk refill (batch 32): misses come in batches of 32, N is a multiple of
// 32, so the fill leaves nothing cached; prefill: registration fills
// min(S, 4096) (growing the cache to that), the fill takes N of them, and
// an 8192 fill refills the other 4096 in batches of 32.
Want expected(const std::string& policy, uint32_t s, uint32_t n) {
  if (policy == "unpatched" || policy == "node-slab+bulk-refill")
    return {0, 128, 0, std::min(n, 128u), std::min(n, 128u)};
  const uint32_t cap = std::max(128u, std::min(s, 4096u));
  const uint32_t left = n <= cap ? cap - n : 0;
  return {cap, cap, left, std::min(cap, left + n), std::min(cap, left + n)};
}

PolicyResult run_one(const std::string& scenario, const std::string& policy,
                     std::vector<std::pair<std::string, std::string>> sets) {
  RunRequest req;
  req.scenario = scenario;
  req.policies = {policy};
  req.sets = std::move(sets);
  RunResult r;
  std::string err;
  REQUIRE(run(req, &r, &err));
  return r.workloads.at(0).policies.at(0);
}

}  // namespace

TEST_CASE("snapshots: ring caches after registration, fill, unregister and teardown",
          "[outputs][snapshot]") {
  const std::pair<uint32_t, uint32_t> shapes[] = {
      {128, 128}, {4096, 4096}, {4096, 64}, {4096, 0}, {8192, 8192}};
  for (const char* policy :
       {"unpatched", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill"}) {
    for (auto [s, n] : shapes) {
      INFO(policy << " S/N " << s << "/" << n);
      const PolicyResult p = fresh_fill(policy, s, n);
      const Want w = expected(policy, s, n);
      CHECK(ring(p, "registration", "target").nodes_cached == w.reg_cached);
      CHECK(ring(p, "registration", "target").node_capacity == w.reg_cap);
      CHECK(ring(p, "fill", "target").nodes_cached == w.fill_cached);
      CHECK(ring(p, "fill", "target").table_nodes == n);
      CHECK(ring(p, "unregister", "target").nodes_cached == w.unreg_cached);
      CHECK(ring(p, "unregister", "target").table_nodes == 0);
      CHECK(ring(p, "teardown", "target").teardown_freed == w.teardown_freed);
      CHECK_FALSE(ring(p, "teardown", "target").live);
      // The source's one node: unpatched allocates it alone; bulk refill
      // brings 31 more into the source's cache, all freed at its teardown.
      const bool bulk = std::string(policy) != "unpatched";
      CHECK(ring(p, "fill", "source").nodes_cached == (bulk ? 31u : 0u));
      CHECK(ring(p, "fill", "source").table_nodes == 1);
      CHECK(ring(p, "teardown", "source").teardown_freed == (bulk ? 32u : 1u));
    }
  }
}

// Every cache's state at a snapshot is taken only for a run that asks
// (--slabinfo-at); the ring states and counts are the same either way.
TEST_CASE("snapshots: cache states only when the run asks for them", "[outputs][snapshot]") {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"node-slab+bulk-refill"};
  req.sets = {{"slots", "4096"}, {"installs", "64"}, {"rounds", "2"}, {"warmup", "0"}};
  RunResult off, on;
  std::string err;
  REQUIRE(run(req, &off, &err));
  req.snapshot_caches = true;
  REQUIRE(run(req, &on, &err));
  const PolicyResult& a = off.workloads.at(0).policies.at(0);
  const PolicyResult& b = on.workloads.at(0).policies.at(0);
  REQUIRE(a.snapshots.size() == 4);
  REQUIRE(b.snapshots.size() == 4);
  for (size_t i = 0; i < a.snapshots.size(); ++i) {
    INFO(a.snapshots[i].name);
    CHECK(a.snapshots[i].caches.empty());
    CHECK(b.snapshots[i].caches.size() == b.slab_state.size());
    CHECK(a.snapshots[i].rings.size() == b.snapshots[i].rings.size());
    CHECK(a.snapshots[i].memory.slab_page_bytes == b.snapshots[i].memory.slab_page_bytes);
  }
  CHECK(a.total == b.total);
  CHECK(a.timed == b.timed);
}

// The timed regions' per-cache, call-site and batch views are taken only
// for an output that shows them (the plain table runs without them:
// sim/cli/cli.cc); the counts are the same either way.
TEST_CASE("timed views: per-cache, call-site and batch deltas only when asked for",
          "[outputs][snapshot]") {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"node-slab+bulk-refill"};
  req.sets = {{"slots", "4096"}, {"installs", "64"}, {"rounds", "2"}, {"warmup", "0"}};
  RunResult on, off;
  std::string err;
  REQUIRE(run(req, &on, &err));
  req.timed_views = false;
  REQUIRE(run(req, &off, &err));
  const PolicyResult& a = on.workloads.at(0).policies.at(0);
  const PolicyResult& b = off.workloads.at(0).policies.at(0);
  CHECK_FALSE(a.timed_caches.empty());
  CHECK(b.timed_caches.empty());
  CHECK_FALSE(a.round_max.empty());
  CHECK(b.round_max.empty());
  CHECK(a.timed_sites.calls_of(CallSite::io_msg_send_fd) == 128);  // 64 installs, 2 rounds
  CHECK(b.timed_sites.calls_of(CallSite::io_msg_send_fd) == 0);
  CHECK(a.total == b.total);
  CHECK(a.timed == b.timed);
  CHECK(a.rounds == b.rounds);
  CHECK(a.total_sites == b.total_sites);  // the whole run's are kept
}

// serial and paced lifecycle operations register and fill a fresh ring
// each, so their snapshots have the shapes of a fresh sparse-fill round.
// With two operations, serial's first ring closes inside the second
// operation and the second after the last: both recorded as "teardown".
TEST_CASE("snapshots: lifecycle serial and paced operations", "[outputs][snapshot]") {
  for (const char* mode : {"0", "1"})
    for (const char* policy :
         {"unpatched", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill"})
      for (auto [s, n] : {std::pair<uint32_t, uint32_t>{4096, 4096}, {4096, 64}}) {
        INFO("mode " << mode << " " << policy << " S/N " << s << "/" << n);
        const PolicyResult p =
            run_one("lifecycle", policy,
                    {{"mode", mode}, {"slots", std::to_string(s)}, {"installs", std::to_string(n)},
                     {"ops", "2"}, {"groups", "1"}, {"warmup", "0"}});
        const Want w = expected(policy, s, n);
        CHECK(ring(p, "registration", "target").nodes_cached == w.reg_cached);
        CHECK(ring(p, "registration", "target").node_capacity == w.reg_cap);
        CHECK(ring(p, "fill", "target").nodes_cached == w.fill_cached);
        CHECK(ring(p, "fill", "target").table_nodes == n);
        CHECK(ring(p, "unregister", "target").nodes_cached == w.unreg_cached);
        CHECK(ring(p, "unregister", "target").table_nodes == 0);
        CHECK(ring(p, "teardown", "target").teardown_freed == w.teardown_freed);
        CHECK(ring(p, "fill", "source").table_nodes == 1);
        // the source's node: bulk refill brings 31 more (as in sparse-fill)
        CHECK(ring(p, "teardown", "source").teardown_freed ==
              (std::string(policy) == "unpatched" ? 1u : 32u));
        std::vector<std::string> names;
        for (const Snapshot& sn : p.snapshots) names.push_back(sn.name);
        CHECK(names == std::vector<std::string>{"registration", "fill", "unregister", "teardown"});
      }
}

// reuse: one ring, its N files removed and re-installed each operation.
// Unpatched and bulk refill (cache of 128): the removal parks 128 nodes
// and frees the rest; the refill takes the 128 back and allocates the
// rest (bulk: 3968 = 124 x 32, nothing left over). Prefill (cache of
// 4096): the removal parks all 4096, the refill takes them all. At
// teardown the table's nodes go back to the cache and the cache is freed.
TEST_CASE("snapshots: lifecycle reuse removal and refill", "[outputs][snapshot]") {
  for (const char* policy : {"unpatched", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill"}) {
    INFO(policy);
    const PolicyResult p =
        run_one("lifecycle", policy,
                {{"mode", "2"}, {"slots", "4096"}, {"installs", "4096"}, {"ops", "2"},
                 {"groups", "1"}, {"warmup", "1"}});
    const uint32_t cap = std::string(policy).find("prefill") != std::string::npos ? 4096 : 128;
    CHECK(ring(p, "removal", "target").nodes_cached == cap);
    CHECK(ring(p, "removal", "target").table_nodes == 0);
    CHECK(ring(p, "refill", "target").nodes_cached == 0);
    CHECK(ring(p, "refill", "target").table_nodes == 4096);
    CHECK(ring(p, "teardown", "target").teardown_freed == cap);
    CHECK_FALSE(ring(p, "teardown", "target").live);
  }
}

// cold: a fresh 128-slot table; warm: the first fill's unregister parked
// 128 nodes, which the re-registered table's fill takes (all hits);
// primed: one install's node parked, and the ring's first use done before
// the timed fill (1 hit, 127 misses). Prefill fills the 128-entry cache
// at registration every way.
TEST_CASE("snapshots: node-cache cold, warm and primed fills", "[outputs][snapshot]") {
  for (const char* policy : {"unpatched", "node-slab+bulk-refill+prefill"})
    for (const char* warm : {"0", "1", "2"}) {
      INFO(policy << " warm=" << warm);
      const PolicyResult p = run_one("node-cache-coldwarm", policy,
                                     {{"warm", warm}, {"rounds", "2"}, {"warmup", "0"}});
      const bool unpatched = std::string(policy) == "unpatched";
      const uint32_t parked = !unpatched ? 128u : std::string(warm) == "1" ? 128u
                              : std::string(warm) == "2"                  ? 1u
                                                                          : 0u;
      CHECK(ring(p, "registration", "target").nodes_cached == parked);
      // Two measured rounds, no warm-up: cold, each target ring's first use
      // and the source's (its first round) fall in the timed fill.
      CHECK(p.timed[Event::ring_first_use] == (std::string(warm) == "0" ? 3u : 0u));
      if (unpatched) CHECK(p.timed[Event::io_cache_get] == 2 * parked);
      CHECK(ring(p, "registration", "target").node_capacity == 128);
      CHECK(ring(p, "fill", "target").nodes_cached == 0);
      CHECK(ring(p, "fill", "target").table_nodes == 128);
      CHECK(ring(p, "unregister", "target").nodes_cached == 128);
      CHECK(ring(p, "teardown", "target").teardown_freed == 128);
      CHECK(ring(p, "teardown", "source").teardown_freed ==
            (std::string(policy) == "unpatched" ? 1u : 32u));
    }
}

TEST_CASE("snapshots: memory split into payload, pointer arrays and slab pages",
          "[outputs][snapshot]") {
  const PolicyResult p = fresh_fill("unpatched", 4096, 4096);
  const Snapshot* fill = nullptr;
  for (const Snapshot& s : p.snapshots)
    if (s.name == "fill") fill = &s;
  REQUIRE(fill);
  // 4096 target nodes + the source's one, 32-byte kmalloc-32 slots.
  CHECK(fill->memory.payload_bytes == 4097 * 32);
  // Each ring: 7 caches' entries arrays (apoll 32, netmsg/rw/cmd 128, futex
  // 32, node/imu 128; 6.18 has no msg_cache) + nodes array.
  CHECK(fill->memory.pointer_array_bytes == 2 * (32 + 128 * 3 + 32 + 128 + 128) * 8 +
                                                 (4096 + 1) * 8);
  CHECK(fill->memory.slab_page_bytes > 0);
  CHECK(p.memory_peak.payload_bytes == fill->memory.payload_bytes);
  CHECK(fill->memory.memcg_charged_bytes % 4096 == 0);
}

TEST_CASE("call sites: counts by site, nested events and callers", "[outputs][sites]") {
  const PolicyResult p = fresh_fill("unpatched", 4096, 4096);
  const CallSiteCounts& t = p.timed_sites;
  CHECK(t.calls_of(CallSite::io_rsrc_node_alloc) == 4096);
  CHECK(t.calls_of(CallSite::io_msg_send_fd) == 4096);
  // Every miss of the fill comes from io_rsrc_node_alloc.
  CHECK(t.calls_from(static_cast<size_t>(CallSite::io_rsrc_node_alloc),
                     CallSite::io_cache_alloc_new) == 4096);
  CHECK(t.calls_from(kTopCaller, CallSite::io_cache_alloc_new) == 0);
  // allocate_slab nested under io_rsrc_node_alloc: the 4096 / 128 new
  // kmalloc-32 slabs of a fresh fill; the other two are io_kiocb slabs of
  // the request refills, and io_msg_send_fd holds both.
  CHECK(t.under(CallSite::io_rsrc_node_alloc)[Event::allocate_slab] == 32);
  CHECK(t.under(CallSite::io_alloc_req_refill)[Event::allocate_slab] == 2);
  CHECK(t.under(CallSite::io_msg_send_fd)[Event::allocate_slab] == p.timed[Event::allocate_slab]);
  CHECK(t.under(CallSite::io_cache_alloc_new)[Event::kmalloc] == 4096);
  // The whole run: registration allocates under io_sqe_files_register.
  CHECK(p.total_sites.calls_of(CallSite::io_sqe_files_register) == 2);
  CHECK(p.total_sites.under(CallSite::io_ring_ctx_free)[Event::kfree] > 0);
}

TEST_CASE("per-cache stats of the timed region", "[outputs][slab]") {
  const PolicyResult p = fresh_fill("unpatched", 4096, 4096);
  const CacheStats* k32 = nullptr;
  for (const CacheStats& cs : p.timed_caches)
    if (cs.name == "kmalloc-32") k32 = &cs;
  REQUIRE(k32);
  CHECK(k32->stat[size_t(SlubStat::ALLOC_SLAB)] == 32);  // 4096 / 128 per slab
  uint64_t slabs = 0;
  for (const CacheStats& cs : p.timed_caches) slabs += cs.stat[size_t(SlubStat::ALLOC_SLAB)];
  CHECK(slabs == p.timed[Event::allocate_slab]);
  CHECK(k32->stat[size_t(SlubStat::ALLOC_FASTPATH)] + k32->stat[size_t(SlubStat::ALLOC_SLOWPATH)] ==
        4096);
  // One round: its smallest and largest delta are the timed ones.
  REQUIRE(p.round_max.size() == p.timed_caches.size());
  REQUIRE(p.round_min.size() == p.round_max.size());
  for (size_t c = 0; c < p.round_max.size(); ++c) {
    CHECK(p.round_max[c].stat == p.timed_caches[c].stat);
    CHECK(p.round_min[c].stat == p.timed_caches[c].stat);
  }
}

// Four rounds of 256 installs on a fresh 256-slot table: the first takes
// 2 new kmalloc-32 slabs (256 / 128); each later round's fill runs after
// the previous ring's teardown freed its 256 nodes, whose 2 slabs stay
// (2 < min_partial 5), so it takes none. A round's deltas are folded
// into the minimum and maximum, not kept.
TEST_CASE("per-cache stats: per-round minimum and maximum", "[outputs][slab]") {
  const PolicyResult p = run_one("sparse-fill", "unpatched",
                                 {{"slots", "256"}, {"installs", "256"}, {"rounds", "4"},
                                  {"warmup", "0"}, {"smoke", "0"}});
  size_t k = p.round_max.size();
  for (size_t c = 0; c < p.round_max.size(); ++c)
    if (p.round_max[c].name == "kmalloc-32") k = c;
  REQUIRE(k < p.round_max.size());
  CHECK(p.round_max[k].stat[size_t(SlubStat::ALLOC_SLAB)] == 2);
  CHECK(p.round_min[k].stat[size_t(SlubStat::ALLOC_SLAB)] == 0);
  for (const CacheStats& cs : p.timed_caches)
    if (cs.name == "kmalloc-32") CHECK(cs.stat[size_t(SlubStat::ALLOC_SLAB)] == 2);
  RunResult r;
  r.workloads.push_back(WorkloadResult{"sparse-fill", "x", {}, "install", "ns", "", {p}, {}});
  const auto j = nlohmann::json::parse(format_json(r));
  const auto& range = j["workloads"][0]["policies"][0]["timed"]["slab_per_round"];
  CHECK(range["kmalloc-32"]["alloc_slab"] == nlohmann::json({{"min", 0}, {"max", 2}}));
  CHECK_FALSE(j["workloads"][0]["policies"][0]["rounds"][0].contains("slab"));
}

// slabinfo -r: Full = slabs - partial - cpu_slabs, as tools/mm/slabinfo.c
// reads the 6.18 cpu_slabs file (CPUs with a CPU slab plus per-CPU
// partial slabs). 200 kmalloc(24) on CPU 0: S1 used up, S2 the CPU slab
// (cpu_slabs 1, S1 full). A free of an S1 object on CPU 1 makes S1 a
// partial slab of CPU 1 (put_cpu_partial()): cpu_slabs 2, no full slab.
// 7.x has no cpu_slabs file: slabinfo reads 0.
TEST_CASE("slabinfo -r: CPU slabs and per-CPU partial slabs", "[outputs][slabinfo]") {
  MmConfig cfg;
  Mm mm(cfg);
  std::vector<Ptr> v;
  for (int i = 0; i < 200; ++i) v.push_back(mm.kmalloc(24, GFP_KERNEL, Task{0, kRootMemcg, 1}));
  const CacheId k32 = mm.find_cache("kmalloc-32");
  CHECK(mm.info(k32).has_cpu_slabs);
  CHECK(mm.info(k32).slabs == 2);
  CHECK(mm.info(k32).cpu_slabs == 1);
  mm.kfree(v[0], Task{1, kRootMemcg, 1});
  CacheStats cs;
  cs.info = mm.info(k32);
  cs.stat.assign(kNumSlubStats, 0);
  CHECK(cs.info.cpu_slabs == 2);
  CHECK(cs.info.partial == 0);
  const std::string text = format_slabinfo_report(cs);
  CHECK(text.find("SlabObj:      32  Full   :       0 ") != std::string::npos);
  CHECK(text.find("Loss   :       0  CpuSlab:       2 ") != std::string::npos);
  MmConfig c7;
  c7.gen = SlubGen::v7;
  Mm mm7(c7);
  mm7.kfree(mm7.kmalloc(24, GFP_KERNEL, Task{0, kRootMemcg, 1}), Task{0, kRootMemcg, 1});
  CHECK_FALSE(mm7.info(mm7.find_cache("kmalloc-32")).has_cpu_slabs);
  CHECK(mm7.info(mm7.find_cache("kmalloc-32")).cpu_slabs == 0);
}

// slabinfo -r's Slab Deactivation table. 200 kmalloc(24) on CPU 0: the
// 129th finds its CPU slab S1 used up (deactivate_bypass); shrink_all()
// flushes the CPU slab S2 with 72 objects in use, its free objects on the
// CPU freelist, to the head of the node's partial list (deactivate_to_head).
// The model never counts alloc_node_mismatch, and the line says so. 7.x has
// no CPU slab: no table.
TEST_CASE("slabinfo -r: the Slab Deactivation table", "[outputs][slabinfo]") {
  MmConfig cfg;
  Mm mm(cfg);
  std::vector<Ptr> v;
  for (int i = 0; i < 200; ++i) v.push_back(mm.kmalloc(24, GFP_KERNEL, Task{0, kRootMemcg, 1}));
  mm.shrink_all();
  const CacheId k32 = mm.find_cache("kmalloc-32");
  CacheStats cs;
  cs.info = mm.info(k32);
  for (size_t i = 0; i < kNumSlubStats; ++i) cs.stat.push_back(mm.stat(k32, SlubStat(i)));
  CHECK(mm.stat(k32, SlubStat::DEACTIVATE_BYPASS) == 1);
  CHECK(mm.stat(k32, SlubStat::DEACTIVATE_TO_HEAD) == 1);
  const std::string text = format_slabinfo_report(cs);
  const std::string want =
      "\nSlab Deactivation             Occurrences %\n"
      "-------------------------------------------------\n"
      "Slab full                           0    0%\n"
      "Slab empty                          0    0%\n"
      "Moved to head of partial list       1   50%\n"
      "Moved to tail of partial list       0    0%\n"
      "Deactivation bypass                 1   50%\n"
      "Refilled from foreign frees         0    0%\n"
      "Node mismatch                 not counted (allocations name no node)\n";
  CHECK(text.size() >= want.size());
  CHECK(text.substr(text.size() - std::min(text.size(), want.size())) == want);
  // "not counted" holds while no model source counts the item.
  namespace t = simcache::testing;
  for (const auto& e : std::filesystem::directory_iterator(t::repo_file("model/mm")))
    CHECK(t::read_text(e.path().string()).find("SlubStat::ALLOC_NODE_MISMATCH") ==
          std::string::npos);
  for (Ptr p : v) mm.kfree(p, Task{0, kRootMemcg, 1});
  MmConfig c7;
  c7.gen = SlubGen::v7;
  Mm mm7(c7);
  std::vector<Ptr> v7;
  for (int i = 0; i < 200; ++i) v7.push_back(mm7.kmalloc(24, GFP_KERNEL, Task{0, kRootMemcg, 1}));
  mm7.shrink_all();
  const CacheId k7 = mm7.find_cache("kmalloc-32");
  CacheStats cs7;
  cs7.info = mm7.info(k7);
  for (size_t i = 0; i < kNumSlubStats; ++i) cs7.stat.push_back(mm7.stat(k7, SlubStat(i)));
  CHECK(format_slabinfo_report(cs7).find("Slab Deactivation") == std::string::npos);
  for (Ptr p : v7) mm7.kfree(p, Task{0, kRootMemcg, 1});
}

TEST_CASE("batch histograms: bulk refills of 32", "[outputs][hist]") {
  const PolicyResult p = fresh_fill("node-slab+bulk-refill", 4096, 4096);
  const auto& h = p.timed_batches.h[size_t(Batch::io_cache_bulk_refill)];
  CHECK(h[6] == 128);  // [32, 64)
  const std::string text = format_log2_hist(h);
  CHECK(text == "[32, 64)             128 |" + std::string(52, '@') + "|\n");
  std::array<uint64_t, kLog2Buckets> b{};
  b[0] = 1, b[1] = 2, b[3] = 4, b[11] = 1;
  const std::string t2 = format_log2_hist(b);
  CHECK(t2.find("[0]                    1 |@@@@@@@@@@@@@ ") == 0);
  CHECK(t2.find("[4, 8)                 4 |" + std::string(52, '@') + "|\n") != std::string::npos);
  CHECK(t2.find("[1K, 2K)               1 |") != std::string::npos);
  CHECK(format_log2_hist({}).empty());
}

TEST_CASE("slabinfo: written in the kernel's 2.1 layout and read back", "[outputs][slabinfo]") {
  const PolicyResult p = fresh_fill("unpatched", 128, 128);
  const std::string text = format_slabinfo(p.slab_state);
  CHECK(text.rfind("slabinfo - version: 2.1\n# name            <active_objs> <num_objs>", 0) == 0);
  std::vector<SlabinfoRow> rows;
  std::string err;
  REQUIRE(parse_slabinfo(text, "model", &rows, &err));
  REQUIRE(rows.size() == p.slab_state.size());
  CHECK(rows.back().name == p.slab_state.front().name);  // newest first
  for (const SlabinfoRow& r : rows) {
    if (r.name != "kmalloc-32") continue;
    CHECK(r.objsize == 32);
    CHECK(r.objperslab == 128);
    CHECK(r.pagesperslab == 1);
    CHECK(r.num_objs == r.num_slabs * 128);
  }
  CHECK_FALSE(parse_slabinfo("slabinfo - version: 2.1\nbad line\n", "f.txt", &rows, &err));
  CHECK(err == "f.txt:2: malformed slabinfo line");
  CHECK_FALSE(parse_slabinfo("hello\n", "g", &rows, &err));
  CHECK(err == "g:1: not /proc/slabinfo version 2.1");
  // An indented '#' line is a comment too (fuzz_slabinfo found that the
  // reader took it for a cache the writer would then print as a comment).
  REQUIRE(parse_slabinfo("slabinfo - version: 2.1\n    #kmalloc-1k 32 32 1024 32 8 : tunables 0 0 0"
                         " : slabdata 1 1 0\nkmalloc-512 0 0 512 32 4 : tunables 0 0 0 : slabdata"
                         " 0 0 0\n   \n\t#x 1 1 8 1 1 : tunables 0 0 0 : slabdata 1 1 0\n",
                         "h", &rows, &err));
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "kmalloc-512");
}

// Hidden: run by the slabinfo_host ctest (tests/host_tests.cmake) on a
// machine that exposes /proc/slabinfo; it fails, never skips, without it.
TEST_CASE("slabinfo host: geometry agrees with the running kernel", "[.][host-slabinfo]") {
  std::ifstream f("/proc/slabinfo");
  REQUIRE(f);
  std::stringstream ss;
  ss << f.rdbuf();
  std::vector<SlabinfoRow> host;
  std::string err;
  REQUIRE(parse_slabinfo(ss.str(), "/proc/slabinfo", &host, &err));
  int cpus = 0;
  {
    std::ifstream c("/sys/devices/system/cpu/present");
    std::string list;
    REQUIRE(std::getline(c, list));
    for (const std::string& part : std::vector<std::string>{list}) {
      const size_t dash = part.find('-');
      cpus = dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part) + 1;
    }
  }
  RunRequest req;
  req.scenario = "sparse-fill";
  req.sets = {{"cpus", std::to_string(cpus)}, {"cpu", "0"}, {"kworker_cpu", "0"},
              {"slots", "8"}, {"installs", "8"}, {"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}};
  RunResult r;
  REQUIRE(run(req, &r, &err));
  std::vector<SlabinfoRow> model;
  REQUIRE(parse_slabinfo(format_slabinfo(r.workloads[0].policies[0].slab_state), "model", &model,
                         &err));
  int both = 0;
  for (const SlabinfoRow& m : model) {
    if (m.name.rfind("kmalloc-", 0) != 0) continue;
    for (const SlabinfoRow& h : host) {
      if (h.name != m.name) continue;
      INFO(m.name);
      CHECK(m.objsize == h.objsize);
      CHECK(m.objperslab == h.objperslab);
      CHECK(m.pagesperslab == h.pagesperslab);
      ++both;
    }
  }
  CHECK(both >= 10);
}

TEST_CASE("sysfs: the tree's files, stat format and alias links", "[outputs][sysfs]") {
  PolicyResult p = fresh_fill("unpatched", 128, 128);
  const auto dir = std::filesystem::temp_directory_path() / "simcache_sysfs_test";
  std::filesystem::remove_all(dir);
  std::string err;
  REQUIRE(write_sysfs(dir.string(), p, 1, "{}\n", &err));
  auto read = [&](const std::string& rel) {
    std::ifstream f(dir / rel);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  CHECK(read("kmalloc-32/objs_per_slab") == "128\n");
  CHECK(read("kmalloc-32/order") == "0\n");
  const std::string fast = read("kmalloc-32/alloc_fastpath");
  CHECK(fast.find(" C2=") != std::string::npos);  // the benchmark task's CPU
  CHECK(fast.back() == '\n');
  // 6.18's cpu_slabs file, as show_slab_objects(SO_CPU) prints it: the
  // benchmark CPU's slab at least
  uint64_t cpu_slabs = 0;
  for (const CacheInfo& c : p.slab_state)
    if (c.name == "kmalloc-32") cpu_slabs = c.cpu_slabs;
  CHECK(cpu_slabs >= 1);
  CHECK(read("kmalloc-32/cpu_slabs") == fmt::format("{} N0={}\n", cpu_slabs, cpu_slabs));
  CHECK_FALSE(write_sysfs(dir.string(), p, 1, "{}\n", &err));  // never overwrites
  std::filesystem::remove_all(dir);
  CacheInfo merged;
  merged.name = "io_rsrc_node";
  merged.aliases = {"other"};
  merged.slab_size = 32;
  merged.flags = SLAB_ACCOUNT;
  CHECK(sysfs_unique_id(merged) == ":A-0000032");
  merged.flags = 0;
  CHECK(sysfs_unique_id(merged) == ":0000032");
}

TEST_CASE("KASAN: reports read like the kernel's", "[outputs][kasan]") {
  testing::RealKernel k("v6.18", "unpatched", iou::DebugBug::double_put_node);
  Mm& mm = *k.mm;
  iou::MmIoUring& io = *k.io;
  const Task app{2, kRootMemcg, 0}, kw{3, kRootMemcg, 0};
  const int src = io.ring_create(app), dst = io.ring_create(app);
  io.files_register(src, 1);
  io.files_register_sparse(dst, 256);
  for (int i = 0; i < 200; ++i) io.msg_ring_send_fd(src, dst, 0, iou::IORING_FILE_INDEX_ALLOC, false);
  io.files_update_remove(dst, 0, 200);
  io.exit_all(kw);
  const KasanReport* df = nullptr;
  for (const KasanReport& k : mm.kasan_reports())
    if (k.kind == "double-free") df = &k;
  REQUIRE(df);
  CHECK(df->where == "io_free_rsrc_node");
  const std::string text = format_kasan(*df);
  CHECK(text.find("BUG: KASAN: double-free in io_free_rsrc_node\n") != std::string::npos);
  CHECK(text.find("Allocated by task on cpu 2 at op ") != std::string::npos);
  CHECK(text.find("\n io_cache_alloc_new\n") != std::string::npos);
  CHECK(text.find("Freed by task on cpu 2") != std::string::npos);
  CHECK(text.find(" which belongs to the cache kmalloc-32") != std::string::npos);
}

TEST_CASE("CSV: RFC 4180 quoting and context columns", "[outputs][csv]") {
  const CliOutcome o = run_cli({"--scenario", "sparse-fill", "--set", "slots=8", "--set",
                                "installs=8", "--set", "rounds=1", "--set", "warmup=0", "--set",
                                "smoke=0", "--profile", "none", "--format", "csv"});
  REQUIRE(o.status == 0);
  CHECK(o.out.rfind("simcache,git_commit,scenario,kernel,seed,cost_profile,workload,params,"
                    "policy,scope,name,value\r\n", 0) == 0);
  // The command line holds spaces only; the params field holds spaces and
  // no comma: neither is quoted. A label with a comma would be.
  CHECK(o.out.find(",record,command_line,simcache --scenario sparse-fill --set slots=8") !=
        std::string::npos);
  CHECK(o.out.find(",sparse-fill,cgroup=1 cpu=2 cpufreq_iowait_boost=0 cpus=20 ") != std::string::npos);
  CHECK(o.out.find("\n") == o.out.find("\r\n") + 1);
}

TEST_CASE("table: labels state overridden parameters, wide runs wrap into blocks",
          "[outputs][table]") {
  const CliOutcome o = run_cli({"--scenario", "sparse-fill", "--policy",
                                "unpatched,node-slab,node-slab+bulk-refill,slab-prime,"
                                "node-slab-account,node-slab+bulk-refill+prefill",
                                "--set", "slots=64", "--set", "installs=64", "--set",
                                "rounds=1", "--set", "warmup=0", "--profile", "none", "--counts"});
  REQUIRE(o.status == 0);
  std::istringstream in(o.out);
  size_t widest = 0, heads = 0;
  for (std::string line; std::getline(in, line);) {
    widest = std::max(widest, line.size());
    heads += line.find_first_not_of(' ') != std::string::npos &&
             line.find_first_not_of(' ') > 20 && line.back() >= 'A' && line.back() <= 'H' &&
             line.find("  ") != std::string::npos;
  }
  CHECK(widest <= 80);
  CHECK(heads >= 2);  // the six columns did not fit in one block
  CHECK(o.out.find("(-100.0%)") != std::string::npos);  // LKP-style change
  RunRequest req;
  req.scenario = "sparse4096";
  req.sets = {{"slots", "1024"}, {"installs", "1024"}};
  RunResult r;
  std::string err;
  REQUIRE(run(req, &r, &err));
  CHECK(r.workloads[0].label == "first fill, 4096 slots [set installs=1024 slots=1024]");
}

// Seed 004's slab-prime diagnostic allocates through io_rsrc_node_alloc():
// every priming allocation is one call of that site, made from the
// io_rsrc_slab_prime scope, and the site's calls equal the event's count.
TEST_CASE("call sites: slab-prime's node allocations are io_rsrc_node_alloc calls",
          "[outputs][sites][seed004]") {
  const CliOutcome o = run_cli({"--scenario", "sparse-fill", "--policy", "slab-prime",
                                "--kernel", "v6.18", "--set", "slots=256", "--set",
                                "installs=256", "--set", "rounds=1", "--set", "warmup=0",
                                "--profile", "none", "--counts", "--format", "json"});
  REQUIRE(o.status == 0);
  const auto j = nlohmann::json::parse(o.out);
  const auto& t = j["workloads"][0]["policies"][0]["total"];
  const auto& site = t["sites"]["io_rsrc_node_alloc"];
  // 256 slots at 128 objects a page: a partial page's remainder plus
  // fresh pages until 256 can be freed back.
  CHECK(t["slab_prime_alloc"].get<uint64_t>() > 256);
  CHECK(site["calls"] == t["io_rsrc_node_alloc"]);
  CHECK(site["callers"]["io_rsrc_slab_prime"] == t["slab_prime_alloc"]);
  // Each call allocates one node (kmalloc-32, node-slab off): nothing else.
  CHECK(site["nested"]["kmalloc"] == t["io_rsrc_node_alloc"]);
  // The priming itself still frees the spares and allocates nothing else.
  const auto& prime = t["sites"]["io_rsrc_slab_prime"];
  CHECK(prime["nested"]["kmalloc"] == t["slab_prime_alloc"]);
  CHECK(prime["nested"]["kfree"].get<uint64_t>() ==
        t["slab_prime_alloc"].get<uint64_t>() - t["slab_prime_anchor"].get<uint64_t>());
}

// --no-sites: the same counts, no views by call site. A plain table
// needs none, so it runs without them by default: byte-identical.
TEST_CASE("call sites: --no-sites leaves counts alone and the site views empty",
          "[outputs][sites]") {
  const std::vector<std::string> base = {"--scenario", "sparse-fill", "--set", "slots=256",
                                         "--set", "installs=256", "--set", "rounds=2",
                                         "--set", "warmup=0", "--profile", "none", "--counts"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    const CliOutcome o = run_cli(a);
    REQUIRE(o.status == 0);
    return o.out;
  };
  const auto on = nlohmann::json::parse(with({"--format", "json"}));
  const auto off = nlohmann::json::parse(with({"--format", "json", "--no-sites"}));
  const auto& a = on["workloads"][0]["policies"][0];
  const auto& b = off["workloads"][0]["policies"][0];
  CHECK(a["timed"]["sites"]["io_rsrc_node_alloc"]["calls"] == 512);
  CHECK(b["timed"]["sites"].empty());
  CHECK(b["total"]["sites"].empty());
  auto counts = [](nlohmann::json t) {
    t.erase("sites");
    return t;
  };
  CHECK(counts(a["timed"]) == counts(b["timed"]));
  CHECK(counts(a["total"]) == counts(b["total"]));
  CHECK(a["rounds"] == b["rounds"]);
  CHECK(a["snapshots"] == b["snapshots"]);
  // The summary, then the details past the record's command line.
  auto body = [](std::string t) {
    const size_t cmd = t.find("  command: "), cols = t.find("  A = unpatched");
    REQUIRE(cmd != std::string::npos);
    REQUIRE(cols != std::string::npos);
    return t.substr(0, cmd) + t.substr(cols);
  };
  CHECK(body(with({})) == body(with({"--no-sites"})));
  // A single task has no latency block: the request gets the line that
  // says so, and nothing else changes.
  const std::string why =
      "  no latency block: one task, nothing contends (its latency\n"
      "  is its events x their prices, the same for every operation\n"
      "  of a kind; --explain splits it)\n";
  std::string hist = body(with({"--latency-hist"}));
  const size_t at = hist.find(why);
  REQUIRE(at != std::string::npos);
  CHECK(hist.erase(at, why.size()) == body(with({})));
}

TEST_CASE("an overflowing CQE whose entry cannot be allocated is lost, counted, and nothing leaks",
          "[outputs][io_uring]") {
  // 256 polls parked against a 128-entry CQ ring: 128 overflow at the
  // ring's exit. The 13th slab allocation and every one after fails
  // (fault injection), so some io_alloc_ocqe() calls fail: each lost CQE
  // counts in cqe_overflow_dropped, and every entry made is freed.
  const CliOutcome o = run_cli({"--scenario", "poll-refill", "--set", "qd=64", "--set", "burst=64",
                                "--set", "recycle=4", "--set", "total=256", "--fail",
                                "slab=nth:13", "--format", "json", "--profile", "none"});
  REQUIRE(o.status == 0);
  const auto t = nlohmann::json::parse(o.out)["workloads"][0]["policies"][0]["total"];
  CHECK(t["cqe_overflow"] == 128);
  CHECK(t["cqe_overflow_dropped"] == 10);
  CHECK(t["alloc_failed"] == 10);
  CHECK(t["kmalloc"].get<int64_t>() - t["alloc_failed"].get<int64_t>() == t["kfree"].get<int64_t>());
}

TEST_CASE("kernels side by side: each column is matched to measurements on its own kernel",
          "[outputs]") {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.kernel = "v6.12,v6.13";
  req.sets = {{"slots", "64"}, {"installs", "64"}, {"rounds", "1"}, {"warmup", "0"}};
  RunResult r;
  std::string err;
  REQUIRE(run(req, &r, &err));
  const WorkloadResult& w = r.workloads.at(0);
  REQUIRE(w.policies.size() == 2);
  std::vector<MeasuredPoint> rows = {
      {"sparse-fill", {{"slots", 64}}, "v6.13", "unpatched", 120.0, {"X-13"}},
      {"sparse-fill", {{"slots", 64}}, "v6.12", "unpatched", 100.0, {"X-12"}},
  };
  ReportOptions o;
  o.measured = &rows;
  const MeasuredPoint* a = find_measured(o, w, w.policies[0]);
  const MeasuredPoint* b = find_measured(o, w, w.policies[1]);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->ids.at(0) == "X-12");
  CHECK(b->ids.at(0) == "X-13");
  rows.pop_back();  // no v6.12 row: column A has no measurement
  CHECK(find_measured(o, w, w.policies[0]) == nullptr);
  // JSON names each column's kernel, and the run's kernels at its head.
  const nlohmann::json j = nlohmann::json::parse(format_json(r, o));
  CHECK(j.at("kernel") == "v6.12,v6.13");
  CHECK(j.at("workloads").at(0).at("policies").at(0).at("kernel") == "v6.12");
  CHECK(j.at("workloads").at(0).at("policies").at(1).at("policy") == "unpatched@v6.13");
  CHECK(j.at("workloads").at(0).at("policies").at(1).at("kernel") == "v6.13");
  // The record carries every column kernel's profile.
  const auto& rec = j.at("record");
  CHECK(rec.at("kernel_profile").at("name") == "v6.12");
  REQUIRE(rec.at("kernel_profiles").size() == 2);
  CHECK(rec.at("kernel_profiles").at(1).at("name") == "v6.13");
  CHECK(rec.at("kernel_profiles").at(1).at("install_allocates_node") == true);
  CHECK(rec.at("kernel_profiles").at(0).at("install_allocates_node") == false);
  // So does CSV, every kernel's under its name (kernel.<field>: the first's).
  const std::string csv = format_csv(r, o);
  CHECK(csv.find(",record,kernel.name,v6.12\r\n") != std::string::npos);
  CHECK(csv.find(",record,kernel_profiles[v6.12].install_allocates_node,false\r\n") !=
        std::string::npos);
  CHECK(csv.find(",record,kernel_profiles[v6.13].install_allocates_node,true\r\n") !=
        std::string::npos);
  CHECK(csv.find(",record,kernel_profiles[v6.13].name,v6.13\r\n") != std::string::npos);
  // A run on one kernel has no kernel_profiles lines.
  {
    RunRequest one = req;
    one.kernel = "v6.13";
    RunResult r1;
    REQUIRE(run(one, &r1, &err));
    CHECK(format_csv(r1, o).find("kernel_profiles.") == std::string::npos);
  }
  // Each column's resolved configuration is its own kernel's, as a run on
  // that kernel alone writes it (defaults that stand for a profile value).
  for (const char* k : {"v6.12", "v6.13"}) {
    RunRequest alone = req;
    alone.kernel = k;
    RunResult ra;
    REQUIRE(run(alone, &ra, &err));
    const auto ja = nlohmann::json::parse(format_json(ra, o));
    const size_t c = std::string(k) == "v6.12" ? 0 : 1;
    CHECK(j.at("workloads").at(0).at("policies").at(c).at("config") ==
          ja.at("workloads").at(0).at("policies").at(0).at("config"));
  }
  {
    RunRequest w = req;
    w.scenario = "waitv";
    w.sets = {{"rounds", "1"}, {"warmup", "0"}};
    w.kernel = "v6.18,v7.1";
    RunResult rw;
    REQUIRE(run(w, &rw, &err));
    const auto jw = nlohmann::json::parse(format_json(rw, o));
    const auto& cfg71 = jw.at("workloads").at(0).at("policies").at(1).at("config");
    CHECK(cfg71.at("policy.waitv_account") == "account");  // v7.1's GFP_KERNEL_ACCOUNT
    CHECK(jw.at("workloads").at(0).at("policies").at(0).at("config").at("policy.waitv_account") ==
          "noaccount");
  }
  // One kernel: no list.
  RunRequest one = req;
  one.kernel = "v6.13";
  RunResult r1;
  REQUIRE(run(one, &r1, &err));
  CHECK_FALSE(nlohmann::json::parse(format_json(r1, o)).at("record").contains("kernel_profiles"));
}
