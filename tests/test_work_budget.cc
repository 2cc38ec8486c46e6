// The work budget of a scenario run (--max-work): every driver states the
// operations its parameters ask for, and a run that asks for more than the
// budget is refused before anything runs, with both numbers named.
#include <catch2/catch.hpp>

#include "sim/cli/cli.h"
#include "sim/run/engine.h"
#include "sim/run/scenario.h"
#include "test_cost_util.h"

using namespace simcache::sim;
using simcache::testing::lines;

TEST_CASE("work budget: a 4 x 10^9-wait arm-fail is refused at once", "[budget]") {
  const CliOutcome r = run_cli({"--scenario", "arm-fail", "--set", "cycles=1048576", "--set",
                                "waits=4096", "--profile", "none"});
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("the run asks for 4294967296 operations (1 column(s) of 1 workload(s)); the "
                   "work budget is 1000000000 (--max-work N raises it)") != std::string::npos);
}

TEST_CASE("work budget: the bound is the driver's count, all columns together", "[budget]") {
  // sparse-fill: (smoke + warmup + rounds) x (slots + installs) = 1 x 128 per column.
  const std::vector<std::string> run = {"--scenario", "sparse-fill", "--set", "slots=64", "--set",
                                        "installs=64", "--set", "rounds=1", "--set", "warmup=0",
                                        "--set", "smoke=0", "--profile", "none", "--policy",
                                        "unpatched,node-slab"};
  auto with = [&](const std::string& budget) {
    std::vector<std::string> a = run;
    a.insert(a.end(), {"--max-work", budget});
    return run_cli(a);
  };
  CHECK(with("256").status == 0);
  const CliOutcome over = with("255");
  CHECK(over.status == 2);
  CHECK(over.err.find("asks for 256 operations (2 column(s) of 1 workload(s))") !=
        std::string::npos);
  CHECK(with("0").status == 2);
  CHECK(with("x").err.find("--max-work 'x'") != std::string::npos);
}

TEST_CASE("work budget: every driver states its work, every preset fits the default",
          "[budget]") {
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  for (const ScenarioInfo& s : reg.all()) {
    INFO(s.name);
    REQUIRE(s.work != nullptr);
    Params p;
    for (const ParamSpec& ps : s.params) p[std::string(ps.name)] = ps.def;
    for (const ParamSpec& ps : machine_params()) p[std::string(ps.name)] = ps.def;
    const uint64_t def = s.work(p);
    CHECK(def > 0);
    CHECK(def <= kDefaultMaxWork);
    // Every parameter at its maximum: more work, saturated rather than wrapped.
    for (const ParamSpec& ps : s.params) p[std::string(ps.name)] = ps.max;
    CHECK(s.work(p) > def);
  }
  for (const PresetInfo& pr : reg.presets()) {
    INFO(pr.name);
    RunRequest req;
    req.scenario = pr.name;
    req.max_work = 1;  // refused, with the preset's own count in the message
    RunResult r;
    std::string err;
    CHECK_FALSE(run(req, &r, &err));
    CHECK(err.find("the work budget is 1 ") != std::string::npos);
    const size_t at = err.find("asks for ");
    REQUIRE(at != std::string::npos);
    const uint64_t asked = std::stoull(err.substr(at + 9));
    CHECK(asked > 1);
    CHECK(asked <= kDefaultMaxWork);
  }
}
