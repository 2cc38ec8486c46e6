// --until-separated (sim/run/extend.h): a run that doubles its measured
// rounds until the compared policies' p99.9 latency intervals separate or
// stop narrowing, within the work budget; deterministic at any --jobs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim/cli/cli.h"
#include "sim/cost/cost.h"
#include "sim/run/engine.h"
#include "sim/run/extend.h"
#include "tests/test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;

namespace {

// rt-arm-loop on 4 CPUs, 500 messages a round: one round gives 500
// futex_wait samples, too few to bound a p99.9 from above.
std::vector<std::string> tails(const std::string& policies, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--scenario", "rt-arm-loop", "--set", "messages=500", "--set",
                                "cpus=4", "--policy", policies, "--until-separated", "--profile",
                                testing::repo_file(testing::kTestProfile)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

nlohmann::json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  a.insert(a.end(), {"--format", "json"});
  const CliOutcome r = run_cli(a);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("until-separated: policies that differ separate", "[tails]") {
  const nlohmann::json j = run_json(tails("unpatched,futex-return-to-cache"));
  const auto& w = j["workloads"][0];
  const auto& e = w["extension"];
  CHECK(e["outcome"] == "separated");
  CHECK(e["kind"] == "futex_wait");
  CHECK(e["rounds_from"] == 1);
  CHECK(e["rounds"] == 8);  // 4000 samples: the first with an upper p99.9 bound
  CHECK(e["doublings"] == 3);
  CHECK(w["params"]["rounds"] == 8);
  // The intervals reached are disjoint, and rest on every sample recorded.
  const auto& a = w["policies"][0]["latency"]["futex_wait"];
  const auto& b = w["policies"][1]["latency"]["futex_wait"];
  CHECK(a["count"] == 8 * 500);
  CHECK(b["count"] == 8 * 500);
  REQUIRE(a["p99.9_ns_hi90"].is_number());
  REQUIRE(b["p99.9_ns_hi90"].is_number());
  const double alo = a["p99.9_ns_lo90"], ahi = a["p99.9_ns_hi90"];
  const double blo = b["p99.9_ns_lo90"], bhi = b["p99.9_ns_hi90"];
  const bool disjoint = bhi < alo || ahi < blo;
  CHECK(disjoint);
  // The table says what happened.
  const CliOutcome t = run_cli(tails("unpatched,futex-return-to-cache"));
  CHECK(t.out.find("  --until-separated: separated (futex_wait p99.9), rounds 1 -> 8 (3 "
                   "doublings)\n") != std::string::npos);
}

TEST_CASE("until-separated: identical policies stop narrowing", "[tails]") {
  const nlohmann::json j = run_json(tails("unpatched,unpatched"));
  const auto& e = j["workloads"][0]["extension"];
  CHECK(e["outcome"] == "stopped narrowing");
  // Unbounded up to 4000 samples (8 rounds), the same width at 8000.
  CHECK(e["rounds"] == 16);
  const auto& a = j["workloads"][0]["policies"][0]["latency"]["futex_wait"];
  CHECK(a["count"] == 16 * 500);
}

TEST_CASE("until-separated: the work of all runs stays within --max-work", "[tails]") {
  // One round after one warm-up: 2 x 500 waits x 2 columns = 2000; the
  // next run (2 rounds) asks 3000 more: over a budget of 4999.
  nlohmann::json j = run_json(tails("unpatched,futex-return-to-cache", {"--max-work", "4999"}));
  CHECK(j["workloads"][0]["extension"]["outcome"] == "work budget");
  CHECK(j["workloads"][0]["extension"]["rounds"] == 1);
  // 5000: room for exactly that one more run (then 5000 more for 4 rounds).
  j = run_json(tails("unpatched,futex-return-to-cache", {"--max-work", "5000"}));
  CHECK(j["workloads"][0]["extension"]["outcome"] == "work budget");
  CHECK(j["workloads"][0]["extension"]["rounds"] == 2);
  CHECK(j["workloads"][0]["policies"][0]["latency"]["futex_wait"]["count"] == 1000);
}

TEST_CASE("until-separated: byte-identical at --jobs 1 and 2, in every format", "[tails]") {
  for (const char* fmt : {"table", "json", "csv"}) {
    INFO(fmt);
    const CliOutcome one = run_cli(tails("unpatched,futex-return-to-cache",
                                         {"--format", fmt, "--jobs", "1", "--set", "rt=1"}));
    const CliOutcome two = run_cli(tails("unpatched,futex-return-to-cache",
                                         {"--format", fmt, "--jobs", "2", "--set", "rt=1"}));
    REQUIRE(one.status == 0);
    // The run record names the command line: the same once --jobs is masked.
    auto masked = [](std::string s, const std::string& jobs) {
      for (size_t at; (at = s.find(jobs)) != std::string::npos;) s.replace(at, jobs.size(), "--jobs J");
      return s;
    };
    const bool said = one.out.find("--until-separated: separated") != std::string::npos;
    CHECK((said || std::string(fmt) != "table"));
    CHECK(masked(one.out, "--jobs 1") == masked(two.out, "--jobs 2"));
  }
  const CliOutcome csv = run_cli(tails("unpatched,futex-return-to-cache", {"--format", "csv"}));
  CHECK(csv.out.find(",,extension,outcome,separated\r\n") != std::string::npos);
  CHECK(csv.out.find(",,extension,rounds,8\r\n") != std::string::npos);
}

TEST_CASE("until-separated: needs a cost profile and one column runs until its own tail "
          "stops narrowing",
          "[tails]") {
  const CliOutcome r = run_cli({"--scenario", "rt-arm-loop", "--until-separated", "--profile",
                                "none"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--until-separated needs a cost profile") != std::string::npos);
  // The same doublings as column A of "unpatched,unpatched" above: nothing
  // to separate from, so its own interval decides.
  const nlohmann::json j = run_json(tails("unpatched"));
  CHECK(j["workloads"][0]["extension"]["outcome"] == "stopped narrowing");
  CHECK(j["workloads"][0]["extension"]["rounds"] == 16);
}

namespace {
// The rt-arm preset's bursty PREEMPT_RT item, shorter: 128-object bursts
// of 4 users per CPU and a 3 us irq every 20 us delay runs of waits.
std::vector<std::string> bursty(const std::string& policies, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {
      "--scenario", "rt-arm-loop", "--set", "rt=1", "--set", "cpus=8", "--set", "bg_per_cpu=4",
      "--set", "bg_burst=128", "--set", "irq_period_ns=20000", "--set", "irq_dur_ns=3000",
      "--set", "messages=1000", "--policy", policies, "--profile",
      testing::repo_file(testing::kTestProfile)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
}  // namespace

TEST_CASE("seeds: latency pooled over seeds with intervals over them and identical runs not "
          "pooled",
          "[tails]") {
  // Each seed's own run, then the pool.
  std::vector<nlohmann::json> one;
  for (int s = 1; s <= 5; ++s) one.push_back(run_json(bursty("unpatched", {"--seed", std::to_string(s)})));
  const nlohmann::json j = run_json(bursty("unpatched", {"--seeds", "5"}));
  const auto& w = j["workloads"][0];
  CHECK(w["seeds"]["first"] == 1);
  CHECK(w["seeds"]["count"] == 5);
  CHECK(w["seeds"]["pooled"] == true);
  const auto& pool = w["policies"][0]["latency"]["futex_wait"];
  uint64_t count = 0;
  std::vector<double> p999;
  for (const auto& r : one) {
    const auto& l = r["workloads"][0]["policies"][0]["latency"]["futex_wait"];
    count += l["count"].get<uint64_t>();
    p999.push_back(l["p99.9_ns"].get<double>());
  }
  CHECK(pool["count"] == count);
  // Counts and times are the first seed's.
  CHECK(w["policies"][0]["total"] == one[0]["workloads"][0]["policies"][0]["total"]);
  // The seeds' own p99.9 differ (a burst lands on other waits), and the
  // interval holds the order-statistic interval for their median: with 5
  // seeds that is their smallest and largest.
  std::sort(p999.begin(), p999.end());
  REQUIRE(p999.front() < p999.back());
  CHECK(pool["p99.9_ns_lo90"].get<double>() <= p999.front());
  REQUIRE(pool["p99.9_ns_hi90"].is_number());
  CHECK(pool["p99.9_ns_hi90"].get<double>() >= p999.back());
  // One seed's 1000 waits leave the p99.9 unbounded above; five bound it.
  CHECK(one[0]["workloads"][0]["policies"][0]["latency"]["futex_wait"]["p99.9_ns_hi90"].is_null());
  // The table says what it pooled; CSV carries it too.
  const CliOutcome t = run_cli(bursty("unpatched", {"--seeds", "5"}));
  CHECK(t.out.find("--seeds 5: samples pooled over seeds 1..5") != std::string::npos);
  const CliOutcome csv = run_cli(bursty("unpatched", {"--seeds", "5", "--format", "csv"}));
  CHECK(csv.out.find(",,seeds,count,5\r\n") != std::string::npos);
  // Byte-identical at any --jobs (the command line masked).
  const CliOutcome two = run_cli(bursty("unpatched", {"--seeds", "5", "--jobs", "2"}));
  const std::string a = t.out.substr(t.out.find('\n')), b = two.out.substr(two.out.find('\n'));
  CHECK(a.substr(a.find("futex_wait ops")) == b.substr(b.find("futex_wait ops")));

  // A workload that draws nothing from the seed: five copies of one run
  // are not replications, so its samples stand alone.
  const nlohmann::json d = run_json({"--scenario", "sparse-fill", "--set", "slots=256", "--set",
                                     "installs=256", "--seeds", "5", "--profile",
                                     testing::repo_file(testing::kTestProfile)});
  const nlohmann::json d1 = run_json({"--scenario", "sparse-fill", "--set", "slots=256", "--set",
                                      "installs=256", "--latency", "--profile",
                                      testing::repo_file(testing::kTestProfile)});
  CHECK(d["workloads"][0]["seeds"]["pooled"] == false);
  CHECK(d["workloads"][0]["policies"][0]["latency"] == d1["workloads"][0]["policies"][0]["latency"]);
}

TEST_CASE("seeds: bad counts, no profile and the work budget are one line, exit 2", "[tails]") {
  for (const char* n : {"0", "2", "4", "65", "x", "-5"}) {
    INFO(n);
    const CliOutcome r = run_cli(bursty("unpatched", {"--seeds", n}));
    CHECK(r.status == 2);
    CHECK(r.err.find(std::string("--seeds '") + n + "': expected 1, or an integer in 5..64") !=
          std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const CliOutcome np = run_cli({"--scenario", "rt-arm-loop", "--seeds", "5", "--profile", "none"});
  CHECK(np.status == 2);
  CHECK(np.err.find("--seeds needs a cost profile") != std::string::npos);
  // 1000 messages x 2 (warm-up + 1 round) per seed: 5 seeds ask 10000.
  const CliOutcome b = run_cli(bursty("unpatched", {"--seeds", "5", "--max-work", "9999"}));
  CHECK(b.status == 2);
  CHECK(b.err.find("5 seeds") != std::string::npos);
  CHECK(run_cli(bursty("unpatched", {"--seeds", "5", "--max-work", "10000"})).status == 0);
  // A run configuration names its file, line and field.
  testing::TempDir d("seeds");
  const std::string cfg = d / "run.toml";
  std::ofstream(cfg) << "scenario = \"rt-arm-loop\"\nseeds = \"3\"\n";
  const CliOutcome c = run_cli({"--config", cfg});
  CHECK(c.status == 2);
  CHECK(c.err.find(cfg + ":2: seeds: '3': expected 1, or an integer in 5..64") != std::string::npos);
}

TEST_CASE("until-separated: docs/stats.md states the rule's numbers", "[tails][docs]") {
  const std::string doc = testing::read_text(testing::repo_file("docs/stats.md"));
  CHECK(kExtendPercentile == 99.9);
  CHECK(kExtendMinNarrowing == 0.05);
  CHECK(doc.find("narrowed by 5 % or more") != std::string::npos);
  CHECK(1 - 1 / std::sqrt(2.0) == Approx(0.29).margin(0.005));  // "about ... 29 %"
  CHECK(doc.find("rounds 1 -> 8 (3\ndoublings)") != std::string::npos);  // the run above
}

TEST_CASE("until-separated: the decision on synthetic intervals", "[tails]") {
  auto col = [](std::initializer_list<std::pair<double, int>> values) {
    PolicyResult p;
    LatencyHist h;
    for (auto [ns, n] : values)
      for (int i = 0; i < n; ++i) h.add_ns(ns);
    p.latency = {{"op", h}};
    return p;
  };
  WorkloadResult w;
  // 5000 samples: the p99.9 ranks 4992..5000 are the 5 slow ones and a
  // few fast: A's interval reaches 1000 ns, B's is 100 ns only.
  w.policies = {col({{100, 4995}, {1000, 5}}), col({{100, 5000}})};
  std::vector<double> widths;
  CHECK(extension_decision(w, "op", {}, &widths) == "");  // overlap at 100
  REQUIRE(widths.size() == 2);
  CHECK(widths[1] == 0);
  // The same widths again: stopped narrowing; wider before: narrowing.
  std::vector<double> again;
  CHECK(extension_decision(w, "op", widths, &again) == "stopped narrowing");
  CHECK(extension_decision(w, "op", {widths[0] * 2, widths[1]}, &again) == "");
  // A slower everywhere: separated.
  w.policies[0] = col({{300, 5000}});
  CHECK(extension_decision(w, "op", {}, &widths) == "separated");
  // Too few samples for an upper bound: neither.
  w.policies = {col({{100, 500}}), col({{100, 500}})};
  CHECK(extension_decision(w, "op", {}, &widths) == "");
  CHECK(extension_decision(w, "op", widths, &again) == "");
}
