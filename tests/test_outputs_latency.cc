// Latency outputs from synthetic histograms (no run fills them yet): the
// table block, --latency-hist, JSON and CSV, checked exactly. Bucket
// arithmetic (sim/run/latency.h): a value of t ticks (1/1024 ns) with
// msb m >= 5 falls in a bucket 2^(m-5) ticks wide; a percentile is the
// bucket's last tick, clamped to the maximum.
#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/report/kernel_formats.h"
#include "sim/report/report.h"
#include "sim/report/table_layout.h"
#include "tests/test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;

namespace {

// A: 900 x 100 ns, 90 x 200 ns, 9 x 1000 ns, 1 x 50000 ns.
// B: 1000 x 100 ns, and 10 kmalloc of 20 ns (a kind A lacks).
RunResult synthetic(size_t columns = 2) {
  PolicyResult a, b;
  a.policy = "unpatched";
  b.policy = "futex-return-to-cache";
  LatencyHist ha, hb, hk;
  for (int i = 0; i < 900; ++i) ha.add_ns(100);
  for (int i = 0; i < 90; ++i) ha.add_ns(200);
  for (int i = 0; i < 9; ++i) ha.add_ns(1000);
  ha.add_ns(50000);
  for (int i = 0; i < 1000; ++i) hb.add_ns(100);
  for (int i = 0; i < 10; ++i) hk.add_ns(20);
  a.latency = {{"futex_wait", ha}};
  a.metrics["lock_waits"] = 0;  // background users beside the program: tasks contend
  b.latency = {{"futex_wait", hb}, {"kmalloc", hk}};
  WorkloadResult w;
  w.scenario = "rt-arm";
  w.label = "rt-arm";
  w.op_unit = "op";
  w.time_unit = "ns";
  w.policies = {a};
  for (size_t i = 1; i < columns; ++i) w.policies.push_back(b);
  RunResult r;
  r.scenario = "rt-arm";
  r.kernel = "v6.18";
  for (const PolicyResult& p : w.policies) r.policies.push_back(p.policy);
  r.workloads = {w};
  return r;
}

}  // namespace

// 100 ns = 102400 ticks (msb 16): buckets of 2048 ticks (2 ns), so its
// percentile reads 104447 / 1024 = 101.999 ns; 200 ns: 4 ns buckets,
// 203.999; 1000 ns = 1024000 ticks (msb 19): 16 ns buckets from
// 1015808 (992 ns), 1007.999. B's 100 ns are all at its maximum: 100.
// The 90 % intervals (order statistics of Binomial(n, p/100), widened to
// their buckets): A's n = 1000 p50 ranks 474..527 are all 100 ns (bucket
// [100, 102)); p90's 884..916 run from the 100 ns bucket into the 200 ns
// one ([200, 204)); p99's 985..996 from 200 ns into 1000 ns ([992, 1008));
// p99.9's lower rank 995 is a 1000 ns sample and no rank bounds it from
// above (0.999^1000 = 37 % > 5 %): "..inf". B's 10 kmalloc: the p50's
// ranks 2..9 are 20 ns; a p90 needs 0.9^10 <= 5 % to have an upper rank.
TEST_CASE("latency block: percentiles per kind and policy, change against A",
          "[outputs][latency]") {
  const std::string block = format_latency_block(synthetic().workloads[0], false);
  const std::string want =
      "  latency per operation in model time (events x prices + lock and idle waits),\n"
      "  measured timed regions; (n beyond): samples at or above the percentile;\n"
      "  90% interval: where the percentile lies (order statistics, widened where the\n"
      "  slow samples cluster; docs/stats.md)\n"
      "                                     A               B\n"
      "futex_wait ops                    1000            1000\n"
      "  p50 ns (501 beyond)            102.0   100.0 (-2.0%)\n"
      "    90% interval          100.0..102.0    100.0..100.0\n"
      "  p90 ns (101 beyond)            102.0   100.0 (-2.0%)\n"
      "    90% interval          100.0..204.0    100.0..100.0\n"
      "  p99 ns (11 beyond)             204.0  100.0 (-51.0%)\n"
      "    90% interval         200.0..1008.0    100.0..100.0\n"
      "  p99.9 ns (2 beyond)           1008.0  100.0 (-90.1%)\n"
      "    90% interval            992.0..inf      100.0..inf\n"
      "  max us (1 beyond)              50.00   0.10 (-99.8%)\n"
      "kmalloc ops                          -              10\n"
      "  p50 ns (6 beyond)                  -            20.0\n"
      "    90% interval                     -      20.0..20.0\n"
      "  p90 ns (2 beyond)                  -            20.0\n"
      "    90% interval                     -       20.0..inf\n"
      "  p99 ns (1 beyond)                  -            20.0\n"
      "    90% interval                     -       20.0..inf\n"
      "  p99.9 ns (1 beyond)                -            20.0\n"
      "    90% interval                     -       20.0..inf\n"
      "  max ns (1 beyond)                  -            20.0\n"
      "  lock waits (whole run, model time):\n"
      "                    A         B\n"
      "lock_waits          0         0\n";
  CHECK(block == want);
  // docs/output.md "Latency block" shows this block up to the kmalloc rows.
  const std::string doc =
      simcache::testing::read_text(simcache::testing::repo_file("docs/output.md"));
  CHECK(doc.find(want.substr(0, want.find("kmalloc ops"))) != std::string::npos);
  // A single task (no background users): the same for every operation of
  // a kind, no block.
  RunResult single = synthetic();
  single.workloads[0].policies[0].metrics.clear();
  CHECK(format_latency_block(single.workloads[0], false).empty());
  // No latencies (a run without prices): no block.
  RunResult none = synthetic();
  for (PolicyResult& p : none.workloads[0].policies) p.latency.clear();
  CHECK(format_latency_block(none.workloads[0], true).empty());
  CHECK(format_table(none).find("latency") == std::string::npos);
}

TEST_CASE("latency histograms: bpftrace log2 layout, one per kind and policy",
          "[outputs][latency]") {
  const RunResult r = synthetic();
  const std::string text = format_latency_block(r.workloads[0], true);
  // A's log2 buckets by lower edge: 100 -> [64, 128), 200 -> [128, 256),
  // 992 -> [512, 1K), 49152 -> [32K, 64K).
  std::array<uint64_t, kLog2Buckets> a{};
  a[7] = 900, a[8] = 90, a[10] = 9, a[16] = 1;
  std::array<uint64_t, kLog2Buckets> b{}, k{};
  b[7] = 1000;
  k[5] = 10;  // [16, 32)
  const std::string hist = "  latency histograms, ns (bpftrace hist() buckets):\n"
                           "\n@futex_wait_ns[A]:\n" + format_log2_hist(a) +
                           "\n@futex_wait_ns[B]:\n" + format_log2_hist(b) +
                           "\n@kmalloc_ns[B]:\n" + format_log2_hist(k);
  REQUIRE(text.size() > hist.size());
  CHECK(text.substr(text.size() - hist.size()) == hist);
  // 1 of 900 draws no bar (52 x 1 / 900 rounds down).
  CHECK(format_log2_hist(a).find("[32K, 64K)             1 |" + std::string(52, ' ') + "|\n") !=
        std::string::npos);
  // --latency-hist (which implies --latency) puts them in the table.
  ReportOptions o;
  o.latency = o.latency_hist = true;
  CHECK(format_table(r, o).find("@futex_wait_ns[A]:") != std::string::npos);
  CHECK(format_table(r).find("@futex_wait_ns[A]:") == std::string::npos);
}

TEST_CASE("latency block: eight policies stay within 80 columns", "[outputs][latency]") {
  ReportOptions o;
  o.latency = o.latency_hist = o.counts = true;
  std::istringstream in(format_table(synthetic(8), o));
  size_t widest = 0, heads = 0;
  for (std::string line; std::getline(in, line);) {
    widest = std::max(widest, line.size());
    heads += line.find("  A") != std::string::npos || line.find("  D") != std::string::npos;
  }
  CHECK(widest <= 80);
  CHECK(heads >= 4);  // count and latency blocks, each wrapped
}

TEST_CASE("latency JSON and CSV", "[outputs][latency]") {
  const RunResult r = synthetic();
  const auto j = nlohmann::json::parse(format_json(r));
  const auto& a = j["workloads"][0]["policies"][0]["latency"]["futex_wait"];
  CHECK(a["count"] == 1000);
  CHECK(a["mean_ns"] == 167.0);  // (90000 + 18000 + 9000 + 50000) / 1000
  CHECK(a["min_ns"] == 100.0);
  CHECK(a["max_ns"] == 50000.0);
  CHECK(a["p50_ns"] == 104447.0 / 1024);
  CHECK(a["p90_ns"] == 104447.0 / 1024);
  CHECK(a["p99_ns"] == 208895.0 / 1024);
  CHECK(a["p99.9_ns"] == 1032191.0 / 1024);
  // Their 90 % intervals: bucket edges (lower edge, last tick), none above.
  CHECK(a["p50_ns_lo90"] == 100.0);
  CHECK(a["p50_ns_hi90"] == 104447.0 / 1024);
  CHECK(a["p99_ns_lo90"] == 200.0);
  CHECK(a["p99_ns_hi90"] == 1032191.0 / 1024);
  CHECK(a["p99.9_ns_lo90"] == 992.0);
  CHECK(a["p99.9_ns_hi90"].is_null());
  // [lower edge ns, upper edge ns, count]: 50000 ns = 51200000 ticks
  // (msb 25): 1024 ns buckets from 48 << 20 ticks = 49152 ns.
  CHECK(a["buckets"] == nlohmann::json::parse(
                            "[[100, 102, 900], [200, 204, 90], [992, 1008, 9], [49152, 50176, 1]]"));
  CHECK(j["workloads"][0]["policies"][1]["latency"]["kmalloc"]["count"] == 10);
  RunResult none = synthetic();
  for (PolicyResult& p : none.workloads[0].policies) p.latency.clear();
  CHECK_FALSE(nlohmann::json::parse(format_json(none))["workloads"][0]["policies"][0].contains(
      "latency"));
  const std::string csv = format_csv(r);
  CHECK(csv.find(",unpatched,latency:futex_wait,count,1000\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,p50_ns,101.9990234375\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,p99.9_ns,1007.9990234375\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,max_ns,50000\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,p99_ns_lo90,200\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,p99.9_ns_lo90,992\r\n") != std::string::npos);
  CHECK(csv.find(",unpatched,latency:futex_wait,p99.9_ns_hi90,inf\r\n") != std::string::npos);
  CHECK(csv.find(",futex-return-to-cache,latency:kmalloc,p99_ns,20\r\n") != std::string::npos);
}

TEST_CASE("docs/stats.md documents every batch kind and latency field", "[docs]") {
  const std::string text =
      simcache::testing::read_text(simcache::testing::repo_file("docs/stats.md"));
  for (std::string_view b : kBatchNames)
    CHECK(text.find("`" + std::string(b) + "`") != std::string::npos);
  for (const char* f : {"count", "mean_ns", "min_ns", "max_ns", "buckets"})
    CHECK(text.find("`" + std::string(f) + "`") != std::string::npos);
  for (const LatencyPoint& pt : kLatencyPoints)
    CHECK(text.find("`" + std::string(pt.name) + "_ns`") != std::string::npos);
}
