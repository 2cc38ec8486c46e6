// The summary screen (docs/output.md "Summary"): every scenario and preset
// of the scenario table opens with at most 40 lines of at most 80
// columns; sparse4096's carries the RFC's four rows with the model change,
// its interval, the measured change and the memory line; the details come
// only on request, each behind its flag.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cli/cli.h"
#include "sim/run/scenario.h"

using namespace simcache::sim;

namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

CliOutcome run_ok(std::vector<std::string> args) {
  CliOutcome o = run_cli(args);
  INFO(o.err);
  REQUIRE(o.status == 0);
  return o;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("summary: every scenario and preset fits one screen", "[slow][summary]") {
  std::vector<std::string> names;
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  for (const PresetInfo& p : reg.presets()) names.emplace_back(p.name);
  for (const ScenarioInfo& s : reg.all()) names.emplace_back(s.name);
  REQUIRE(names.size() == reg.presets().size() + reg.all().size());
  for (const std::string& n : names) {
    INFO(n);
    const CliOutcome o = run_ok({"--scenario", n, "--jobs", "2"});
    const std::vector<std::string> ls = lines_of(o.out);
    CHECK(ls.size() <= 40);
    for (const std::string& l : ls) {
      INFO(l);
      CHECK(l.size() <= 80);
    }
    // The digest: scenario, kernel, seed, commit, profile hash, one line.
    CHECK(has(ls.at(0), n + " v6.18 seed 1 git "));
    CHECK(has(ls.at(0), " sha256:"));
    // Details only on request.
    CHECK_FALSE(has(o.out, "timed region per round"));
    CHECK_FALSE(has(o.out, "command:"));
  }
}

TEST_CASE("summary: sparse4096 carries the RFC's four rows", "[summary]") {
  const CliOutcome o = run_ok({"--scenario", "sparse4096", "--jobs", "2"});
  const std::vector<std::string> ls = lines_of(o.out);
  for (const char* row : {"first fill, 4096 slots", "same-ring remove+refill, 4096 files",
                          "one-shot register through fill, 4096", "register 4096 / install 64"}) {
    INFO(row);
    size_t at = 0;
    while (at < ls.size() && ls[at].rfind(row, 0) != 0) ++at;
    REQUIRE(at < ls.size());
    // Within the row (up to the next workload): the model values, the
    // change with its interval, the measured change, memory and moved.
    std::string block;
    for (size_t i = at; i < ls.size() && i < at + 8; ++i) block += ls[i] + "\n";
    CHECK(has(block, "  vs A "));
    CHECK(has(block, "% ["));  // the change and its interval
    CHECK(has(block, "  measured "));
    CHECK(has(block, " in-sample"));  // the shipped profile was fitted to these rows
    CHECK(has(block, "  memory "));
    CHECK(has(block, "  moved: B "));
  }
  // The RFC's finding with the model beside it: 4096 idle prefilled
  // nodes but 64 installed, and the change of register 4096 / install 64.
  CHECK(has(o.out, "/4032/"));
  // (the figure moves with a refit; the RFC measured +314.5 %): C's change
  // on that row is a rise of a few hundred per cent, with its interval.
  size_t reg = 0;
  while (reg < ls.size() && ls[reg].rfind("register 4096 / install 64", 0) != 0) ++reg;
  REQUIRE(reg + 2 < ls.size());
  const std::string& vs = ls[reg + 2];
  REQUIRE(vs.rfind("  vs A ", 0) == 0);
  const size_t plus = vs.rfind(" +");
  REQUIRE(plus != std::string::npos);
  const double c = std::stod(vs.substr(plus + 2));  // C, the last column
  CHECK(c > 200);
  CHECK(c < 450);
  CHECK(has(vs, "% [+"));
  // The hypotheses keep their own pairs.
  CHECK(has(o.out, "hypothesis: node-slab-account vs node-slab; RFC: +8.5%"));
}

// --perf-stat: the timed counts of the measured rounds, value first with
// thousands separators, then the count per operation. waitv: one kmalloc
// per pair, a memcg charge every other pair (the objcg stock); 15 rounds
// of 4096 pairs. With a profile, the model time and its ns per operation;
// without, none.
TEST_CASE("summary: --perf-stat prints perf stat's shape", "[summary]") {
  const std::string profile = std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml";
  const std::string out = run_ok({"--scenario", "waitv", "--policy", "waitv-account",
                                  "--perf-stat", "--profile", profile}).out;
  CHECK(has(out, "\n Performance counter stats for 'waitv', A = waitv-account\n"
                 " (timed regions of 15 measured rounds, 61,440 pairs):\n\n"));
  CHECK(has(out, "\n            61,440      kmalloc                   #    1.000 per pair\n"));
  CHECK(has(out, "\n            30,720      memcg_charge              #    0.500 per pair\n"));
  CHECK(has(out, " ns   model-time                #  "));
  CHECK(has(out, " ns/pair\n"));
  CHECK_FALSE(has(out, "   kmem_cache_alloc  "));  // a counter that stayed 0: no line
  const std::string none = run_ok({"--scenario", "waitv", "--policy", "waitv-account",
                                   "--perf-stat", "--profile", "none"}).out;
  CHECK(has(none, "61,440      kmalloc"));
  CHECK_FALSE(has(none, "model-time"));
}

TEST_CASE("summary: each detail view is behind its flag", "[summary]") {
  const std::vector<std::string> base = {"--scenario", "waitv", "--policy",
                                         "unpatched,waitv-account", "--profile",
                                         "tests/data/test-profile.toml"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    for (auto& e : extra) a.push_back(e);
    a[5] = std::string(SIMCACHE_SOURCE_DIR) + "/" + a[5];
    return run_ok(a).out;
  };
  const std::string summary = with({});
  CHECK_FALSE(has(summary, "kmalloc   "));
  const std::string counts = with({"--counts"});
  CHECK(has(counts, "timed region per round"));
  CHECK(has(counts, "command: simcache"));  // the full record
  CHECK(has(counts, "model ns/pair"));
  CHECK_FALSE(has(counts, "  phase "));
  CHECK_FALSE(has(counts, "kmalloc-32 alloc_slab"));
  const CliOutcome pc = run_ok({"--scenario", "sparse-fill", "--set", "rounds=1", "--per-cache",
                                "--profile", "none"});
  CHECK(has(pc.out, "kmalloc-32 alloc_slab"));
  const std::string all = with({"--all"});
  CHECK(has(all, "timed region per round"));
  CHECK(has(all, "explain"));
  CHECK(has(all, " Performance counter stats for 'waitv', B = waitv-account\n"));
  CHECK_FALSE(has(counts, "Performance counter stats"));
  // A single task does not contend: no latency section, even on request.
  CHECK_FALSE(has(with({"--latency"}), "latency per operation"));
  // ... and the request is answered with why, not with silence.
  CHECK(has(with({"--latency"}), "  no latency block: one task, nothing contends (its latency\n"));
  const CliOutcome bg = run_ok({"--scenario", "arm-fail", "--set", "bg_per_cpu=1", "--set",
                                "cycles=20", "--set", "cpus=4", "--latency", "--profile",
                                std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml"});
  CHECK(has(bg.out, "latency per operation in model time"));
  CHECK(has(bg.out, "  p99 ns (7 beyond)"));
  CHECK(has(bg.out, "lock_waits"));
  // How heavy the neighbours are: 3 CPUs besides the loop's and the loop's
  // own (bg_loop_cpu=1), one user each, at 100 bursts of 16 kmallocs per
  // ms: 1.6 kmalloc per us per task, Poisson-paced.
  CHECK(has(bg.out,
            "  background load, each task over its span (model time, spawn to the loop's "
            "end):\n  median [smallest..largest] over the tasks\n"));
  CHECK(has(bg.out, "\n  tasks                                 4\n"));
  CHECK(has(bg.out, "\n  list_lock hold %"));
  const CliOutcome j = run_ok({"--scenario", "arm-fail", "--set", "bg_per_cpu=1", "--set",
                               "cycles=20", "--set", "cpus=4", "--format", "json", "--profile",
                               std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml"});
  const auto m = nlohmann::json::parse(j.out)["workloads"][0]["policies"][0]["total"];
  REQUIRE(m.contains("bg_tasks"));
  CHECK(m["bg_tasks"] == 4);
  const double per_us = m["bg_kmallocs"].get<double>() / 4 / m["bg_span_ns"].get<double>() * 1e3;
  CHECK(per_us > 1.2);
  CHECK(per_us < 2.0);
  // Each task on its own: Poisson-paced users differ, and each one's
  // rate is near the 1.6 per us asked of it.
  const double lo = m["bg_kmalloc_per_s_min"].get<double>() / 1e6,
               hi = m["bg_kmalloc_per_s_max"].get<double>() / 1e6;
  CHECK(lo < hi);
  CHECK(lo > 0.5);
  CHECK(hi < 3.0);
  // 32 bursty users on 8 CPUs take list_lock: the time they hold it is
  // counted (the priced work between its acquisition and its release),
  // and each task's shares lie in [0, 100 %].
  const CliOutcome heavy = run_ok(
      {"--scenario", "rt-arm-loop", "--set", "cpus=8", "--set", "bg_per_cpu=4", "--set",
       "bg_burst=128", "--set", "messages=200", "--format", "json", "--profile",
       std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml"});
  const auto h = nlohmann::json::parse(heavy.out)["workloads"][0]["policies"][0]["total"];
  CHECK(h["bg_list_lock_hold_ns"].get<double>() > 0);
  CHECK(h["bg_list_lock_hold_ppm_max"].get<double>() > 0);
  CHECK(h["bg_list_lock_hold_ppm_max"].get<double>() <= 1e6);
  CHECK(h["bg_list_lock_wait_ppm_max"].get<double>() > 0);
  CHECK(h["bg_list_lock_wait_ppm_max"].get<double>() <= 1e6);
}

TEST_CASE("summary: seed 003's iowait share is a row of the table", "[summary][iowait]") {
  // The iowait-gate preset's three waiters: a read in flight, a waiter
  // that never submitted, one that submitted before (cached task refs).
  // 6.5-rc2 counts every io_schedule sleep as iowait; 6.5-rc3's gate
  // leaves out the waiter with nothing in flight that never submitted.
  const auto shares = [](const char* kernel) {
    const CliOutcome o = run_ok({"--scenario", "iowait-gate", "--machine", "cascadelake-w",
                                 "--kernel", kernel, "--profile",
                                 std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml"});
    std::vector<std::string> v;
    for (size_t at = o.out.find("  iowait %"); at != std::string::npos;
         at = o.out.find("  iowait %", at + 1))
      v.push_back(o.out.substr(at, o.out.find('\n', at) - at));
    return v;
  };
  const std::vector<std::string> rc2 = shares("v6.5-rc2"), rc3 = shares("v6.5-rc3");
  REQUIRE(rc2.size() == 3);
  REQUIRE(rc3.size() == 3);
  // Each share with its 90 % model interval (the rest of the round's
  // prices; `*`: on priors); a share of nothing is exactly 0.
  CHECK(rc2[0] == "  iowait %   95.8 [89.9,98.9]*");
  CHECK(rc2[1] == "  iowait %   99.6 [99.1,99.9]*");
  CHECK(rc2[2] == "  iowait %   99.6 [99.1,99.9]*");
  CHECK(rc3[0] == rc2[0]);
  CHECK(rc3[1] == "  iowait %        0.0");
  CHECK(rc3[2] == rc2[2]);
  // The header names a machine that is not the default.
  CHECK(has(run_ok({"--scenario", "idle-wait", "--machine", "cascadelake-w"}).out,
            "idle-wait v6.18 on cascadelake-w seed 1 git "));
  // A run without the metric has no such row.
  CHECK_FALSE(has(run_ok({"--scenario", "waitv"}).out, "iowait %"));
  // JSON carries the interval beside the metric, where the metric is.
  const auto j = nlohmann::json::parse(
      run_ok({"--scenario", "idle-wait", "--kernel", "v6.5-rc2,v6.5-rc3", "--set", "submitted=0",
              "--format", "json"}).out);
  const auto& cols = j.at("workloads").at(0).at("policies");
  const auto& rc2t = cols.at(0).at("time");
  CHECK(rc2t.at("iowait_interval90_ppm").at(0).get<double>() < cols.at(0).at("total").at("iowait_ppm").get<double>());
  CHECK(rc2t.at("iowait_interval90_ppm").at(1).get<double>() > cols.at(0).at("total").at("iowait_ppm").get<double>());
  CHECK(rc2t.at("iowait_interval90_ppm").at(1).get<double>() < 1e6);
  CHECK(rc2t.at("iowait_rests_on_priors") == true);
  const auto& rc3t = cols.at(1).at("time");  // no iowait sleep: exactly 0
  CHECK(rc3t.at("iowait_interval90_ppm") == nlohmann::json::array({0.0, 0.0}));
  CHECK_FALSE(run_ok({"--scenario", "waitv", "--format", "json"}).out.find("iowait_interval") !=
              std::string::npos);
}

TEST_CASE("summary: a scenario's failing arms are results, not warnings", "[summary]") {
  for (const char* s : {"arm-fail", "rt-arm"}) {
    INFO(s);
    const CliOutcome o = run_ok({"--scenario", s, "--counts"});
    CHECK(has(o.out, "futex_wait_arm_fail (run)"));
    CHECK_FALSE(has(o.out, "warning"));
    CHECK_FALSE(has(o.err, "warning"));
  }
}

TEST_CASE("summary: docs/output.md shows sparse4096's summary as the golden has it",
          "[summary][docs]") {
  auto read = [](const std::string& rel) {
    std::ifstream in(std::string(SIMCACHE_SOURCE_DIR) + "/" + rel, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string doc = read("docs/output.md");
  const std::string mark = "<!-- summary: sparse4096 -->\n```\n";
  const size_t at = doc.find(mark);
  REQUIRE(at != std::string::npos);
  const size_t end = doc.find("```\n", at + mark.size());
  REQUIRE(end != std::string::npos);
  std::string shown = doc.substr(at + mark.size(), end - at - mark.size());
  // The doc's commit stands for the golden's @COMMIT@.
  const size_t git = shown.find(" git ");
  REQUIRE(git != std::string::npos);
  shown.replace(git + 5, 12, "@COMMIT@");
  CHECK(shown == read("tests/golden/sparse4096.txt"));
}

TEST_CASE("summary: a preset's hypotheses keep their own pairs under --policy",
          "[summary][scenario]") {
  // The README's example: three columns of the user's, five hypotheses
  // each still on the pair its label and the RFC's finding speak of.
  const CliOutcome o = run_ok({"--scenario", "sparse4096", "--policy",
                               "unpatched,node-slab+prefill,prefill-grow", "--format", "json"});
  const auto j = nlohmann::json::parse(o.out);
  size_t hyps = 0;
  for (const auto& w : j["workloads"]) {
    const std::string label = w["label"];
    if (label.rfind("hypothesis: ", 0) != 0) {
      CHECK(w["policies"][1]["policy"] == "node-slab+prefill");
      continue;
    }
    ++hyps;
    INFO(label);
    CHECK(w["policies"].size() == 2);
    for (const auto& p : w["policies"]) CHECK(p["policy"] != "prefill-grow");
    if (label == "hypothesis: slab merging defeats locality") {
      CHECK(w["policies"][0]["policy"] == "node-slab");
      CHECK(w["policies"][1]["policy"] == "node-slab+slab-nomerge");
    }
  }
  CHECK(hyps == 5);
  const CliOutcome t = run_ok({"--scenario", "sparse4096", "--policy",
                               "unpatched,node-slab+prefill,prefill-grow"});
  CHECK(has(t.out, "  hypothesis: node-slab+slab-nomerge vs node-slab; RFC: slab_nomerge"));
  CHECK(lines_of(t.out).size() <= 40);
}

TEST_CASE("summary: JSON marks measured rows the profile was fitted to", "[summary][record]") {
  const CliOutcome o = run_ok({"--scenario", "sparse-fill", "--policy",
                               "unpatched,node-slab+bulk-refill+prefill", "--format", "json"});
  const auto j = nlohmann::json::parse(o.out);
  const auto& m = j["workloads"][0]["policies"][1]["time"]["measured"];
  REQUIRE(m.is_object());
  CHECK(m["in_sample"] == true);  // SF-199 is a calibration row of the shipped profile
  // The frozen test profile was fitted to nothing.
  const CliOutcome t = run_ok({"--scenario", "sparse-fill", "--policy",
                               "unpatched,node-slab+bulk-refill+prefill", "--format", "json",
                               "--profile",
                               std::string(SIMCACHE_SOURCE_DIR) + "/tests/data/test-profile.toml"});
  CHECK(nlohmann::json::parse(t.out)["workloads"][0]["policies"][1]["time"]["measured"]
                                   ["in_sample"] == false);
}

TEST_CASE("summary: docs/cli.md shows two kernels side by side as the tool prints them",
          "[summary][docs]") {
  std::ifstream in(std::string(SIMCACHE_SOURCE_DIR) + "/docs/cli.md", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string doc = s.str();
  const std::string mark = "<!-- kernels side by side: the output after its first line";
  const size_t at = doc.find(mark);
  REQUIRE(at != std::string::npos);
  const size_t from = doc.find("```\n", at) + 4;
  const size_t end = doc.find("```\n", from);
  REQUIRE(end != std::string::npos);
  const CliOutcome o = run_ok({"--scenario", "sparse-fill", "--kernel", "v6.12,v6.13"});
  const std::string out = o.out.substr(o.out.find('\n') + 1);
  CHECK(doc.substr(from, end - from) == out);
  CHECK(has(lines_of(o.out).at(0), "sparse-fill v6.12,v6.13 seed 1 git "));
  // The change is v6.13's per-install node allocations, with an interval.
  CHECK(has(out, "A unpatched@v6.12, B unpatched@v6.13"));
  CHECK(has(out, "moved: B alloc calls 0->4096"));
}
