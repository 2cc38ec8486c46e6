// Knobs (policy_fields.def): each changes what it should and nothing
// else, named policies are presets of knob values count for count, range
// errors are one line with exit 2, and the three seed questions' new
// policies as exact counts.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "model/io_uring/io_uring_mm.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"
#include "sim/cli/cli.h"
#include "sim/run/engine.h"
#include "test_policy_util.h"
#include "test_run_util.h"

using namespace simcache;
using namespace simcache::sim;
using namespace simcache::iou;
using Catch::Matchers::Contains;
using simcache::testing::col;
using simcache::testing::kOneRound;
using simcache::testing::run_ok;
using simcache::testing::Sets;

namespace {

// A valid value other than the default, as text.
std::string other_value(const PolicyFieldInfo& f) {
  switch (f.kind) {
    case FieldKind::boolean: return f.def_raw ? "false" : "true";
    case FieldKind::enumeration: return std::string(f.values[f.def_raw == 0 ? 1 : 0].name);
    case FieldKind::unsigned_int: return std::to_string(f.def_raw == f.min ? f.min + 1 : f.min);
  }
  return "";
}

}  // namespace

TEST_CASE("knobs: every row has a unit, a range and a source, NAME=V sets that field only",
          "[knobs]") {
  for (const PolicyFieldInfo& f : policy_fields()) {
    INFO(f.name);
    CHECK_FALSE(f.unit.empty());
    CHECK_FALSE(f.source.empty());
    CHECK(f.min <= f.max);
    PolicySet p, base;
    MmConfig mm;
    std::string err;
    // A knob validate_policies() refuses alone needs another first:
    // bulk_refill a dedicated slab, waitv_cache_zero a WAITV cache.
    std::string prefix;
    if (!parse_policies(std::string(f.name) + "=" + other_value(f), nullptr, &p, &mm, &err)) {
      const std::string need = f.name == "waitv_cache_zero" ? "waitv_cache_max=32" : "node_alloc=slab";
      prefix = need + "+";
      REQUIRE(parse_policies(need, nullptr, &base, &mm, &err));
    }
    p = PolicySet{};
    REQUIRE(parse_policies(prefix + std::string(f.name) + "=" + other_value(f), nullptr, &p, &mm,
                           &err));
    for (const PolicyFieldInfo& g : policy_fields())
      CHECK((field_raw(p, g.id) != field_raw(base, g.id)) == (g.id == f.id));
    // One past the range (or a word that is no value) is refused, naming the knob.
    const std::string bad =
        f.kind == FieldKind::unsigned_int ? std::to_string(uint64_t{f.max} + 1) : "bogus";
    PolicySet q;
    CHECK_FALSE(parse_policies(std::string(f.name) + "=" + bad, nullptr, &q, &mm, &err));
    CHECK_THAT(err, Contains("policy." + std::string(f.name) + " = '" + bad + "': expected"));
    CHECK(err.find('\n') == std::string::npos);
  }
}

TEST_CASE("knobs: a default from the kernel prints and parses as `kernel`", "[knobs]") {
  const PolicyFieldInfo& f = *policy_field_by_name("slab_min_partial");
  CHECK(f.def_raw == kFromKernel);
  CHECK(field_value_text(f.id, f.def_raw) == "kernel");
  uint32_t raw = 0;
  REQUIRE(parse_field_value(f, "kernel", &raw, nullptr));
  CHECK(raw == kFromKernel);
  // A knob with a fixed default has no `kernel` spelling.
  std::string err;
  CHECK_FALSE(parse_field_value(*policy_field_by_name("req_alloc_batch"), "kernel", &raw, &err));
  CHECK(err == "policy.req_alloc_batch = 'kernel': expected 1..64 objects");
  CHECK(knob_spec(PolicySet{}) == "unpatched");
}

TEST_CASE("knobs: NAME(key=value) takes short and full keys, --set policy.K=V the same",
          "[knobs]") {
  PolicySet a, b, c;
  MmConfig mm;
  std::string err;
  REQUIRE(parse_policies("node-slab+prefill(max=256)", nullptr, &a, &mm, &err));
  REQUIRE(parse_policies("node-slab+prefill(prefill_max=256)", nullptr, &b, &mm, &err));
  REQUIRE(parse_policies("node-slab+prefill+policy.prefill_max=256", nullptr, &c, &mm, &err));
  CHECK(a.prefill_max == 256);
  CHECK(knob_spec(a) == "node_alloc=slab+prefill=always+prefill_max=256");
  CHECK(knob_spec(b) == knob_spec(a));
  CHECK(knob_spec(c) == knob_spec(a));
  CHECK_FALSE(parse_policies("prefill(bogus=1)+node-slab", nullptr, &a, &mm, &err));
  CHECK_THAT(err, Contains("unknown knob 'policy.bogus'"));
  CHECK_FALSE(parse_policies("node-slab+prefill(max=256", nullptr, &a, &mm, &err));
  CHECK_THAT(err, Contains("expected NAME(key=value,...)"));
  CHECK(split_policy_columns("prefill(max=1,mode=lazy)+node-slab,unpatched") ==
        std::vector<std::string>{"prefill(max=1,mode=lazy)+node-slab", "unpatched"});
  // The CLI: out of range is one line and exit 2.
  const CliOutcome o = run_cli({"--scenario", "sparse-fill", "--policy", "node-slab+prefill",
                                "--set", "policy.prefill_max=0"});
  CHECK(o.status == 2);
  CHECK(o.err == "simcache: policy.prefill_max = '0': expected 1..1048576 entries\n");
}

TEST_CASE("knobs: every named policy equals its knob spelling, count for count",
          "[knobs][presets]") {
  const KernelProfile& k = *profile_by_name("v6.18", nullptr);
  for (const std::string& spec : simcache::testing::runnable_policies(k)) {
    PolicySet p;
    MmConfig mm;
    REQUIRE(parse_policies(spec, &k, &p, &mm, nullptr));
    const std::string knobs = knob_spec(p);
    INFO(spec << " = " << knobs);
    const RunResult r = run_ok("sparse-fill", {spec, knobs}, kOneRound);
    CHECK(col(r, 0).total == col(r, 1).total);
    CHECK(col(r, 0).metrics == col(r, 1).metrics);
  }
}

TEST_CASE("knobs: refill batch 16 doubles the bulk calls of a first fill of 4096",
          "[knobs][rsrc]") {
  const RunResult r =
      run_ok("sparse-fill", {"node-slab+bulk-refill", "node-slab+bulk-refill(batch=16)"}, kOneRound);
  CHECK(col(r, 0).timed[Event::io_cache_bulk_refill] == 4096 / 32);
  CHECK(col(r, 1).timed[Event::io_cache_bulk_refill] == 4096 / 16);
  CHECK(col(r, 1).timed[Event::io_cache_refill_stash] == 256 * 15);
  CHECK(col(r, 1).timed[Event::node_cache_hit] == 4096 - 256);
}

TEST_CASE("knobs: the cache sizes and the request batch reach the ring", "[knobs][io_uring]") {
  const KernelProfile& k = *profile_by_name("v6.18", nullptr);
  PolicySet p;
  MmConfig mc;
  apply_profile(k, mc);
  REQUIRE(parse_policies("io_alloc_cache_max=64+futex_cache_max=8+req_alloc_batch=16", &k, &p,
                         &mc, nullptr));
  Mm mm(mc);
  MmIoUring io(mm, k, p);
  const Task t{2, kRootMemcg, 0};
  const int r = io.ring_create(t);
  REQUIRE(r >= 0);
  CHECK(io.ring(r).node_cache.max_cached == 64);
  CHECK(io.ring(r).rw_cache.max_cached == 64);
  CHECK(io.ring(r).msg_cache.max_cached == 0);  // no msg_cache on 6.18
  CHECK(io.ring(r).apoll_cache.max_cached == IO_POLL_ALLOC_CACHE_MAX);  // not IO_ALLOC_CACHE_MAX
  CHECK(io.ring(r).futex_cache.max_cached == 8);
  const uint64_t before = mm.events()[Event::req_cache_refill];
  CHECK(io.io_uring_enter(r, 32) == 32);
  CHECK(mm.events()[Event::req_cache_refill] - before == 32 / 16);
  io.exit_all(t);
}

TEST_CASE("knobs: memcg and geometry knobs reach the mm layer, where they apply",
          "[knobs][mm]") {
  const KernelProfile& v618 = *profile_by_name("v6.18", nullptr);
  const KernelProfile& v71 = *profile_by_name("v7.1", nullptr);
  PolicySet p;
  MmConfig mc;
  std::string err;
  REQUIRE(parse_policies("memcg_charge_batch=16+slab_min_partial=0+slab_cpu_partial=13+"
                         "random_kmalloc_caches=true",
                         &v618, &p, &mc, &err));
  CHECK(mc.memcg.charge_batch == 16);
  CHECK(mc.random_kmalloc_caches);
  {
    Mm mm(mc);
    const CacheInfo ci = mm.info(mm.find_cache("kmalloc-32"));
    CHECK(ci.min_partial == 0);
    CHECK(ci.cpu_partial == 13);
  }
  CHECK_FALSE(parse_policies("slab_sheaf_capacity=4", &v618, &p, &mc, &err));
  CHECK_THAT(err, Contains("needs a 7.x kernel profile"));
  CHECK_FALSE(parse_policies("obj_stock_slots=2", &v618, &p, &mc, &err));
  CHECK_THAT(err, Contains("7.1+ memcg shape"));
  PolicySet q;
  MmConfig m7;
  apply_profile(v71, m7);
  REQUIRE(parse_policies("slab_sheaf_capacity=4+obj_stock_slots=2", &v71, &q, &m7, &err));
  CHECK(m7.memcg.obj_stock_slots == 2);
  Mm mm(m7);
  CHECK(mm.info(mm.find_cache("kmalloc-32")).sheaf_capacity == 4);
  CHECK_FALSE(parse_policies("slab_cpu_partial=4", &v71, &q, &m7, &err));
}

TEST_CASE("seed 004: grow-only prefill keeps the refill gain and leaves no idle node",
          "[knobs][rsrc][seed004]") {
  const RunResult r = run_ok("sparse-fill", {"node-slab+prefill", "prefill-grow",
                                             "node-slab+prefill-lazy"}, kOneRound);
  // Grow-only: no node is allocated ahead of need; every install misses.
  CHECK(col(r, 1).timed[Event::io_cache_prefill] == 0);
  CHECK(col(r, 1).timed[Event::io_cache_alloc_new] == 4096);
  CHECK(col(r, 1).metrics.at("nodes_unused") == 0);
  // The grown array: 4096 pointers, kept after the round.
  CHECK(col(r, 1).metrics.at("bytes_retained") == col(r, 0).metrics.at("bytes_retained"));
  // Lazy: the first miss bulk-fills the 4096 (one kvmalloc, one bulk call of 4096).
  CHECK(col(r, 2).timed[Event::io_cache_prefill] == 4096);
  CHECK(col(r, 2).timed[Event::kvmalloc] == 1);
  CHECK(col(r, 2).timed[Event::node_cache_hit] == 4096);
  CHECK(col(r, 2).timed[Event::bulk_objects] == col(r, 0).timed[Event::bulk_objects] + 4096);
  // Same-ring remove+refill (lifecycle mode 2): the grown array keeps all
  // 4096 removed nodes, as the full prefill does.
  const RunResult l = run_ok("lifecycle", {"unpatched", "prefill-grow"},
                             {{"mode", "2"}, {"groups", "1"}, {"warmup", "0"}});
  CHECK(col(l, 0).timed[Event::node_cache_hit] < col(l, 1).timed[Event::node_cache_hit]);
  CHECK(col(l, 1).timed[Event::io_cache_alloc_new] == 0);
}

TEST_CASE("seed 000: a per-ring WAITV cache allocates once per vector in flight",
          "[knobs][futex][seed000]") {
  const RunResult r = run_ok("waitv", {"waitv-account", "waitv-cache", "waitv-cache(nr=4)"},
                             {{"rounds", "1"}, {"warmup", "0"}});
  // 512 cycles x 8 WAITV of 8 entries; 8 are in flight, so the cache
  // misses 8 times (the first cycle) and recycles the rest.
  CHECK(col(r, 0).timed[Event::futexv_alloc_account] == 4096);
  CHECK(col(r, 1).timed[Event::futexv_alloc_account] == 8);
  CHECK(col(r, 1).timed[Event::io_cache_get] == 4096 - 8);
  CHECK(col(r, 1).timed[Event::io_cache_put] == 4096);
  CHECK(col(r, 1).timed[Event::memcg_free_hook] == 0);
  // What it keeps: 8 cached io_futexv_data of 8 + 8 x 160 bytes
  // (kmalloc-cg-2k) and its 32-entry array, beside node_cache's and
  // futex_cache's arrays (128 + 32 entries).
  CHECK(col(r, 0).metrics.at("bytes_retained") == (128 + 32) * 8);
  CHECK(col(r, 1).metrics.at("bytes_retained") == (128 + 32) * 8 + 32 * 8 + 8 * 2048);
  // Vectors of 8 do not fit elements sized for 4: every WAITV kmallocs.
  CHECK(col(r, 2).timed[Event::futexv_alloc_account] == 4096);
  CHECK(col(r, 2).timed[Event::io_cache_get] == 0);
  PolicySet p;
  MmConfig mm;
  std::string err;
  CHECK_FALSE(parse_policies("waitv-cache+waitv-noaccount", nullptr, &p, &mm, &err));
  CHECK(err == "policies 'waitv-cache' and 'waitv-noaccount' both set waitv_account; choose one");
}

TEST_CASE("seed 002: a batched free hook uncharges once per run of a bulk free",
          "[knobs][memcg][seed002]") {
  const RunResult r = run_ok("memcg-bulk", {"unpatched", "memcg-batch-free"},
                             {{"iterations", "100"}});
  // 100 x free_bulk(32) of one memcg on one node: 100 runs, and every
  // object still passes the hook (its slot is cleared).
  CHECK(col(r, 0).timed[Event::memcg_batch_run] == 0);
  CHECK(col(r, 1).timed[Event::memcg_batch_run] == 100);
  CHECK(col(r, 1).timed[Event::memcg_free_hook] == 3200);
  // A run of 32 x 264 bytes overflows the obj stock at once: each free
  // uncharges pages and the next bulk allocation misses the stock.
  CHECK(col(r, 0).timed[Event::obj_stock_miss] == 200);
  CHECK(col(r, 1).timed[Event::obj_stock_miss] == 300);
  CHECK(col(r, 0).timed[Event::memcg_uncharge_pages] == 200);
  CHECK(col(r, 1).timed[Event::memcg_uncharge_pages] == 100);
  CHECK(col(r, 1).timed[Event::memcg_vmstat_flush] == 250);
}

TEST_CASE("seed 002: a single accounted allocation is a batched run of one", "[knobs][memcg][seed002]") {
  // The thread's single-allocation question: 1000 pairs of one object,
  // through the cache and through kmalloc(GFP_KERNEL_ACCOUNT).
  for (const char* km : {"0", "1"}) {
    INFO("kmalloc=" << km);
    const RunResult r = run_ok("memcg-single", {"unpatched", "memcg-batch-charge"},
                               {{"iterations", "1000"}, {"kmalloc", km}});
    REQUIRE(r.workloads[0].op_unit == "object");
    for (int c : {0, 1}) {
      CHECK(col(r, c).timed_ops == 1000);
      CHECK(col(r, c).timed[Event::memcg_post_alloc_hook] == 1000);
      CHECK(col(r, c).timed[Event::memcg_free_hook] == 1000);
      CHECK(col(r, c).timed[km[0] == '1' ? Event::kmalloc : Event::kmem_cache_alloc] == 1000);
      CHECK(col(r, c).timed[km[0] == '1' ? Event::kmem_cache_alloc : Event::kmalloc] == 0);
      CHECK(col(r, c).kasan.empty());
    }
    // The batched hook's whole cost to a single object: one run each.
    CHECK(col(r, 0).timed[Event::memcg_batch_run] == 0);
    CHECK(col(r, 1).timed[Event::memcg_batch_run] == 1000);
    // Everything else is the same path.
    for (size_t e = 0; e < kNumEvents; ++e)
      if (static_cast<Event>(e) != Event::memcg_batch_run)
        CHECK(col(r, 0).timed.v[e] == col(r, 1).timed.v[e]);
  }
}

TEST_CASE("seed 002-d: kfree_bulk sorted by cache, and kfree_rcu's batches", "[knobs][memcg][seed002]") {
  // 100 iterations of 32 objects from 4 SLAB_ACCOUNT caches, interleaved
  // a b c d a b ...: the next object of a slab is 4 places on, past the
  // 3-miss look-ahead, so unsorted kfree_bulk() frees one object a group.
  const testing::Sets four = {{"iterations", "100"}, {"caches", "4"}, {"free", "1"}};
  const testing::Sets rcu = {{"iterations", "100"}, {"caches", "4"}, {"free", "2"}};
  {
    // 7.x: no cache, no sheaves: every object to __slab_free(); sorted,
    // each cache's 8 go into its main sheaf (no list_lock at all).
    const RunResult r = run_ok("memcg-bulk", {"unpatched", "kfree-bulk-sort"}, four, "v7.1");
    for (int c : {0, 1}) {
      CHECK(col(r, c).timed[Event::kfree_bulk] == 100);
      CHECK(col(r, c).timed[Event::memcg_free_hook] == 3200);
    }
    CHECK(col(r, 0).timed[Event::kmem_cache_free_bulk] == 100);
    CHECK(col(r, 1).timed[Event::kmem_cache_free_bulk] == 400);  // one per cache
    CHECK(col(r, 0).timed[Event::kfree_bulk_sort] == 0);
    CHECK(col(r, 1).timed[Event::kfree_bulk_sort] == 3200);
    CHECK(col(r, 0).timed[Event::slab_free_fast] == 0);
    CHECK(col(r, 1).timed[Event::slab_free_fast] == 3200);
    CHECK(col(r, 0).timed[Event::list_lock] == 1200);
    CHECK(col(r, 1).timed[Event::list_lock] == 0);
  }
  {
    // kfree_rcu() on 6.18: a grace period every 16 iterations (512
    // objects: two kfree_bulk() pages, 507 + 5) six times, then one for
    // the last 4 iterations (128): 13 kfree_bulk() calls, all timed.
    const RunResult r = run_ok("memcg-bulk", {"unpatched", "kfree-bulk-sort"}, rcu, "v6.18");
    for (int c : {0, 1}) {
      CHECK(col(r, c).timed[Event::kfree_rcu] == 3200);
      CHECK(col(r, c).timed[Event::kfree_bulk] == 13);
      CHECK(col(r, c).timed[Event::memcg_free_hook] == 3200);
    }
    CHECK(col(r, 1).timed[Event::kmem_cache_free_bulk] == 52);  // 13 x 4 caches
    // The objects are no longer on the CPU slabs when the batch runs:
    // unsorted, most groups are one object and go to __slab_free();
    // sorted, one group per slab.
    CHECK(col(r, 0).timed[Event::slab_free_slow] == 2755);
    CHECK(col(r, 1).timed[Event::slab_free_slow] == 85);
    CHECK(col(r, 0).timed[Event::list_lock] == 85);
    CHECK(col(r, 1).timed[Event::list_lock] == 0);
  }
  {
    // 7.x: kfree_rcu() objects wait in the caches' rcu_free sheaves, so
    // kfree_bulk() never runs and the sort changes nothing.
    const RunResult r = run_ok("memcg-bulk", {"unpatched", "kfree-bulk-sort"}, rcu, "v7.1");
    for (int c : {0, 1}) {
      CHECK(col(r, c).timed[Event::kfree_rcu_sheaf] == 3200);
      CHECK(col(r, c).timed[Event::kfree_bulk] == 0);
    }
    for (size_t e = 0; e < kNumEvents; ++e) CHECK(col(r, 0).timed.v[e] == col(r, 1).timed.v[e]);
  }
}

TEST_CASE("seed 002 follow-up: memcgs taking turns on one CPU, and obj-stock-keep",
          "[knobs][memcg][seed002]") {
  // 8 tasks of 8 memcgs on CPU 0, 80 turns of 16 objects of 264 charged
  // bytes (4,224: two page charges a turn), freed in the next task's turn.
  const testing::Sets sets = {{"iterations", "80"}};
  {
    // 6.18, one obj stock slot. Unpatched: each turn's allocations take
    // the stock over (a drain), its frees of the previous memcg's objects
    // take it back (a drain): 160. Kept: the frees go to that objcg's
    // nr_charged_bytes (1,280 = 80 x 16), one drain a turn, and each
    // free's stat delta goes straight to the lruvec (1,280 more flushes).
    const RunResult r = run_ok("memcg-multi", {"unpatched", "obj-stock-keep"}, sets, "v6.18");
    CHECK(col(r, 0).timed_ops == 1280);
    CHECK(col(r, 0).timed[Event::obj_stock_drain] == 160);
    CHECK(col(r, 1).timed[Event::obj_stock_drain] == 80);
    CHECK(col(r, 0).timed[Event::obj_stock_refill_bypass] == 0);
    CHECK(col(r, 1).timed[Event::obj_stock_refill_bypass] == 1280);
    CHECK(col(r, 0).timed[Event::memcg_vmstat_flush] == 160);
    CHECK(col(r, 1).timed[Event::memcg_vmstat_flush] == 1360);
    for (int c : {0, 1}) CHECK(col(r, c).timed[Event::obj_stock_miss] == 160);
  }
  {
    // 7.1: five slots, so the previous turn's memcg still has one: the
    // policy never acts.
    const RunResult r = run_ok("memcg-multi", {"unpatched", "obj-stock-keep"}, sets, "v7.1");
    CHECK(col(r, 1).timed[Event::obj_stock_refill_bypass] == 0);
    for (size_t e = 0; e < kNumEvents; ++e) CHECK(col(r, 0).timed.v[e] == col(r, 1).timed.v[e]);
  }
}

TEST_CASE("docs/knobs.md's knob table is generated from the table", "[knobs][docs]") {
  const std::string path = std::string(SIMCACHE_SOURCE_DIR) + "/docs/knobs.md";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const std::string begin = "<!-- knob-table begin -->\n", end = "<!-- knob-table end -->";
  const std::string want = knob_table_markdown();
  if (std::getenv("SIMCACHE_UPDATE_DOCS")) {
    const size_t b = doc.find(begin), e = doc.find(end);
    REQUIRE(b != std::string::npos);
    REQUIRE(e != std::string::npos);
    doc = doc.substr(0, b + begin.size()) + want + doc.substr(e);
    std::ofstream(path, std::ios::binary) << doc;
  }
  const size_t b = doc.find(begin), e = doc.find(end);
  INFO("regenerate with SIMCACHE_UPDATE_DOCS=1 ./build/tests/simcache_tests '[docs]'");
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == want);
  for (const PolicyFieldInfo& f : policy_fields())
    CHECK_THAT(want, Contains("| `" + std::string(f.name) + "` |"));
}

TEST_CASE("seed 004: grow-without-fill and fill-on-opt-in combine, and prefill fills kmalloc nodes",
          "[knobs][rsrc][seed004]") {
  // No opt-in flag: prefill-optin fills nothing; with prefill-grow the
  // array still grows at registration.
  testing::Sets no_flag = kOneRound;
  const RunResult r = run_ok("sparse-fill",
                             {"node-slab+prefill-optin", "node-slab+prefill-grow+prefill-optin",
                              "node-slab+prefill-grow"},
                             no_flag);
  CHECK(col(r, 0).total[Event::io_cache_prefill] == 0);
  CHECK(col(r, 1).total[Event::io_cache_prefill] == 0);
  CHECK(col(r, 1).total[Event::kvmalloc] == col(r, 0).total[Event::kvmalloc] + 1);
  CHECK(col(r, 1).total == col(r, 2).total);  // optin without the flag adds nothing
  // With the flag, the combination fills exactly as prefill-optin does
  // (the fill grows the array itself; the earlier grow makes it a no-op).
  testing::Sets flag = kOneRound;
  flag.emplace_back("prefill_flag", "1");
  const RunResult f = run_ok("sparse-fill",
                             {"node-slab+prefill-optin", "node-slab+prefill-grow+prefill-optin"},
                             flag);
  CHECK(col(f, 0).total[Event::io_cache_prefill] == 4096);
  CHECK(col(f, 1).total[Event::io_cache_prefill] == 4096);
  CHECK(col(f, 1).total[Event::kvmalloc] == col(f, 0).total[Event::kvmalloc]);
  // v6.18's own node cache holds kmalloc'd nodes: prefill fills it with
  // one kmalloc per node (no bulk call), and every install hits.
  const RunResult k = run_ok("sparse-fill", {"unpatched", "prefill", "node-slab+prefill"},
                             kOneRound);
  CHECK(col(k, 1).total[Event::io_cache_prefill] == 4096);
  CHECK(col(k, 1).timed[Event::node_cache_hit] == 4096);
  CHECK(col(k, 1).timed[Event::io_cache_alloc_new] == 0);
  CHECK(col(k, 1).total[Event::bulk_objects] == col(k, 0).total[Event::bulk_objects]);
  CHECK(col(k, 1).total[Event::kmalloc] == col(k, 0).total[Event::kmalloc]);  // moved, not added
  CHECK(col(k, 1).timed[Event::kmalloc] + 4096 == col(k, 0).timed[Event::kmalloc]);
  CHECK(col(k, 2).total[Event::bulk_objects] == col(k, 0).total[Event::bulk_objects] + 4096);
  // bulk-refill still needs a dedicated slab.
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"bulk-refill"};
  RunResult out;
  std::string err;
  CHECK_FALSE(run(req, &out, &err));
  CHECK_THAT(err, Contains("bulk-refill needs node-slab"));
}

TEST_CASE("seed 000: waitv-cache-zero zeroes reused vectors, telling the two halves apart",
          "[knobs][futex][seed000]") {
  const RunResult r = run_ok("waitv", {"waitv-account", "waitv-cache", "waitv-cache-zero"},
                             {{"rounds", "1"}, {"warmup", "0"}});
  const uint64_t hits = col(r, 1).timed[Event::io_cache_get];
  REQUIRE(hits == 4096 - 8);
  CHECK(col(r, 2).timed[Event::io_cache_get] == hits);
  // Each hit zeroes the vector the request asked kcalloc() for: 8 entries
  // of the profile's futex_vector (the v6.18 profile: the bare array).
  const uint64_t vec = waitv_alloc_size(*profile_by_name("v6.18", nullptr), 8);
  CHECK(vec == 8 * 160);
  CHECK(col(r, 2).timed[Event::zero_bytes] == col(r, 1).timed[Event::zero_bytes] + hits * vec);
  // Everything else is the cache's: the same allocator calls as without zeroing.
  CHECK(col(r, 2).timed[Event::kmalloc] == col(r, 1).timed[Event::kmalloc]);
  RunRequest req;
  req.scenario = "waitv";
  req.policies = {"waitv_cache_zero=true"};
  RunResult out;
  std::string err;
  CHECK_FALSE(run(req, &out, &err));
  CHECK_THAT(err, Contains("waitv_cache_zero needs a WAITV cache"));
}

TEST_CASE("seed 000-c: WAITV programs in several memcgs on one CPU switch the obj stock's owner",
          "[knobs][futex][memcg][seed000]") {
  // memcgs=N: N copies of the program, each in a memcg of its own with a
  // ring of its own, take turns cycle by cycle. The work is the same as
  // one program's (the same allocations and frees per cycle); only the
  // CPU's obj stock changes owner.
  // One warm-up round: each ring's request cache is filled before the
  // measured one (four rings refill four caches).
  const Sets base = {{"rounds", "1"}, {"warmup", "1"}};
  auto with = [&](const char* n) {
    Sets s = base;
    s.emplace_back("memcgs", n);
    return s;
  };
  const RunResult one = run_ok("waitv", {"waitv-account"}, base);
  const RunResult four = run_ok("waitv", {"waitv-account"}, with("4"));
  const Counters& o = col(one, 0).timed;
  const Counters& f = col(four, 0).timed;
  CHECK(f[Event::kmalloc] == o[Event::kmalloc]);
  CHECK(f[Event::memcg_post_alloc_hook] == o[Event::memcg_post_alloc_hook]);
  CHECK(f[Event::memcg_post_alloc_hook] == 4096);
  // One program: the stock never changes owner. Four on a one-slot stock
  // (v6.18): every cycle's first charge finds another memcg's bytes there.
  CHECK(o[Event::obj_stock_drain] == 0);
  CHECK(f[Event::obj_stock_drain] == 512);  // one per cycle
  CHECK(f[Event::memcg_charge] > o[Event::memcg_charge]);
  // obj-stock-keep acts on frees for another memcg; here every free is in
  // the memcg that allocated it, so it changes nothing.
  const RunResult keep = run_ok("waitv", {"waitv-account+obj-stock-keep"}, with("4"));
  CHECK(col(keep, 0).timed == f);
  // 7.1's obj stock caches five objcgs (NR_OBJ_STOCK): four programs cost
  // what one does; one slot, or eight programs, drain it every cycle.
  auto v71 = [&](const char* policy, const char* n) {
    return col(run_ok("waitv", {policy}, with(n), "v7.1"), 0).timed;
  };
  const Counters one71 = col(run_ok("waitv", {"waitv-account"}, base, "v7.1"), 0).timed;
  CHECK(v71("waitv-account", "4")[Event::memcg_charge] == one71[Event::memcg_charge]);
  CHECK(v71("waitv-account", "4")[Event::obj_stock_drain] == 0);
  CHECK(v71("waitv-account(obj_stock_slots=1)", "4")[Event::obj_stock_drain] == 512);
  CHECK(v71("waitv-account", "8")[Event::obj_stock_drain] == 512);
  // The memory metrics sum every program's ring: four WAITV caches.
  const auto retained = [&](const Sets& sets) {
    return col(run_ok("waitv", {"waitv-cache"}, sets), 0).metrics.at("bytes_retained");
  };
  CHECK(retained(base) > 0);
  CHECK(retained(with("4")) == 4 * retained(base));
}
