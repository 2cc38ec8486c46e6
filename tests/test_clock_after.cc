// The plain table prices a one-task run after the fact (sim/cli/cli.cc,
// run_report): its machine runs without prices, and a column whose
// report depends on them (the clock ordered its tasks, or a metric is a
// share of wall time) runs again with them. The output must be the one
// --full gives, byte for byte.
#include <catch2/catch.hpp>

#include <filesystem>

#include "sim/cli/cli.h"
#include "sim/cost/cost.h"
#include "sim/run/engine.h"
#include "sim/replay/background_trace.h"
#include "sim/run/run_config.h"
#include "test_cost_util.h"
#include "test_run_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::col;
using simcache::testing::run_priced;

TEST_CASE("a column needs the clock when its tasks or its shown metrics depend on it",
          "[clock][engine]") {
  const CostModel& m = simcache::testing::test_profile();
  // One task, nothing read off the clock for the table.
  CHECK_FALSE(col(run_priced("sparse-fill", {"unpatched"}, {{"rounds", "1"}, {"warmup", "0"}}, m),
                  0)
                  .needs_clock);
  CHECK_FALSE(col(run_priced("waitv", {"unpatched"}, {{"rounds", "1"}, {"warmup", "0"}}, m), 0)
                  .needs_clock);
  // Background users beside the loop: the clock orders the tasks.
  CHECK(col(run_priced("rt-arm-loop", {"unpatched"}, {{"messages", "200"}}, m), 0).needs_clock);
  // One task, but the table shows its iowait share of wall time.
  CHECK(col(run_priced("qd1-read", {"unpatched"}, {{"rounds", "1"}, {"warmup", "0"}}, m), 0)
            .needs_clock);
  CHECK(col(run_priced("idle-wait", {"unpatched"}, {{"rounds", "1"}, {"warmup", "0"}}, m), 0)
            .needs_clock);
}

TEST_CASE("each driver's one-task declaration is what its priced run does", "[clock][engine]") {
  // A driver that says it runs as one task reading nothing off the clock
  // (ScenarioInfo::one_task) must not need the clock when priced; one
  // that does not say so, with its defaults, does need it (the
  // declaration is not merely cautious).
  const CostModel& m = simcache::testing::test_profile();
  size_t one = 0, more = 0;
  std::string not_one;
  for (const ScenarioInfo& s : ScenarioRegistry::get().all()) {
    Params p;
    std::string err;
    REQUIRE(resolve_params(s, {}, {}, &p, &err));
    const bool declared = s.one_task && s.one_task(p);
    INFO(s.name << (declared ? ": one task" : ": not one task"));
    CHECK(col(run_priced(std::string(s.name), {"unpatched"}, {}, m), 0).needs_clock == !declared);
    (declared ? one : more) += 1;
    if (!declared) not_one += std::string(not_one.empty() ? "" : ",") + std::string(s.name);
  }
  // docs/cli.md names them.
  CHECK(not_one == "rt-arm-loop,qd1-read,idle-wait");
  CHECK(one == 10);  // all but rt-arm-loop, qd1-read and idle-wait
  CHECK(more == 3);
  // arm-fail with background users is not one task.
  const ScenarioInfo* af = ScenarioRegistry::get().find("arm-fail");
  REQUIRE(af);
  Params p;
  std::string err;
  REQUIRE(resolve_params(*af, {}, {{"bg_per_cpu", "1"}}, &p, &err));
  CHECK_FALSE(af->one_task(p));
  CHECK(col(run_priced("arm-fail", {"unpatched"}, {{"bg_per_cpu", "1"}, {"cycles", "100"}}, m), 0)
            .needs_clock);
}

TEST_CASE("a run is priced after the fact only where every workload is one task",
          "[clock][engine]") {
  const auto one = [](const char* scenario, std::vector<std::pair<std::string, std::string>> sets,
                      const char* bg = nullptr) {
    RunRequest req;
    req.scenario = scenario;
    req.sets = std::move(sets);
    if (bg) req.background_trace = bg;
    RunConfig cfg;
    std::string err;
    if (bg) REQUIRE(attach_background_trace(&req, &err));
    REQUIRE(resolve_run(req, &cfg, &err));
    return runs_as_one_task(cfg);
  };
  CHECK(one("sparse4096", {}));
  CHECK(one("sparse-fill", {}));
  CHECK(one("arm-fail", {}));
  CHECK(one("memcg-multi", {}));
  CHECK_FALSE(one("arm-fail", {{"bg_per_cpu", "1"}}));
  CHECK_FALSE(one("rt-arm", {}));  // a preset with one multi-task workload is not
  CHECK_FALSE(one("qd1", {}));
  CHECK_FALSE(one("iowait-gate", {}));
  CHECK_FALSE(one("arm-fail", {},
                  simcache::testing::repo_file("tests/data/traces/bg-two-cpu-192.txt").c_str()));
}

TEST_CASE("every scenario's plain table is the same priced after the fact or as it goes",
          "[slow][matrix][clock][cli]") {
  std::vector<std::string> names = split_words(ScenarioRegistry::get().names(), ',');
  for (std::string& n : names) n.erase(0, n.find_first_not_of(' '));
  REQUIRE(names.size() >= 20);
  // The shipped profile and measurements, as a user's run finds them.
  struct InSource {
    std::filesystem::path was = std::filesystem::current_path();
    InSource() { std::filesystem::current_path(SIMCACHE_SOURCE_DIR); }
    ~InSource() { std::filesystem::current_path(was); }
  } in_source;
  size_t compared = 0;
  for (const std::string& s : names)
    for (const char* k : {"v6.5-rc2", "v6.18", "v7.1"}) {
      INFO(s << " on " << k);
      const CliOutcome a = run_cli({"--scenario", s, "--kernel", k});
      const CliOutcome b = run_cli({"--scenario", s, "--kernel", k, "--full"});
      INFO(a.err);
      CHECK(a.status == b.status);
      CHECK(a.out == b.out);
      CHECK(a.err == b.err);
      compared += a.status == 0;
    }
  // All but sparse4096 on v6.5-rc2 (its policies need a node cache): refused alike.
  CHECK(compared == 3 * names.size() - 1);
  // Policies and injected failures, on the drivers the preset runs.
  for (const char* s : {"sparse-fill", "lifecycle", "waitv", "arm-fail", "memcg-bulk",
                        "poll-refill", "idle-wait"})
    for (const char* extra : {"", "slab=0.02"}) {
      std::vector<std::string> args = {"--scenario", s,           "--policy",
                                       "unpatched,prefill,waitv-cache,futex-return-to-cache"};
      args.insert(args.end(), {"--max-work", "3000000"});
      if (*extra) args.insert(args.end(), {"--fail", extra});
      INFO(s << " " << extra);
      const CliOutcome a = run_cli(args);
      args.push_back("--full");
      const CliOutcome b = run_cli(args);
      CHECK(a.status == b.status);
      CHECK(a.out == b.out);
      CHECK(a.err == b.err);
    }
}
