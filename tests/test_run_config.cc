// The typed run configuration: a request is resolved once into kernel and
// machine rows, parsed columns and resolved parameters; the engine runs
// that and gives the same result as the request it came from.
#include <catch2/catch.hpp>

#include <set>

#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "sim/run/engine.h"
#include "sim/run/run_config.h"
#include "sim/run/scenario.h"

using namespace simcache;
using namespace simcache::sim;
using Catch::Matchers::Contains;

TEST_CASE("run config: every preset resolves each column once, typed, as the engine runs it",
          "[run_config]") {
  for (const PresetInfo& p : ScenarioRegistry::get().presets()) {
    INFO(p.name);
    RunRequest req;
    req.scenario = std::string(p.name);
    RunConfig cfg;
    std::string error;
    REQUIRE(resolve_run(req, &cfg, &error));
    CHECK(cfg.workloads.size() == p.items.size());
    std::set<std::string> specs;
    for (const RunWorkload& w : cfg.workloads) {
      REQUIRE(w.info != nullptr);
      CHECK(w.info->name == w.scenario);
      for (const RunColumn* c : w.columns) {
        specs.insert(c->spec);
        // Each column is the one parsed entry of its spec.
        CHECK(&cfg.columns.at(c->spec) == c);
      }
      // The machine, typed once, is the parameters' values.
      CHECK(w.machine.cpus == w.params.at("cpus"));
      CHECK(w.machine.nodes == w.params.at("nodes"));
      CHECK(w.machine.cpu == w.params.at("cpu"));
      CHECK(w.machine.kworker_cpu == w.params.at("kworker_cpu"));
      CHECK(w.machine.cgroup == (w.params.at("cgroup") != 0));
      CHECK(w.machine.preempt_rt == (w.params.count("rt") && w.params.at("rt") != 0));
    }
    CHECK(specs.size() == cfg.columns.size());
    CHECK(cfg.kernel == iou::profile_by_name(req.kernel, nullptr));
    CHECK(cfg.machine == iou::machine_by_name(req.machine, nullptr));
  }
}

TEST_CASE("run config: the engine runs a resolved configuration as it runs the request",
          "[run_config]") {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"unpatched", "node-slab+prefill"};
  req.knobs = {{"prefill_max", "512"}};
  req.sets = {{"slots", "256"}, {"installs", "64"}, {"rounds", "1"}, {"warmup", "0"}};
  RunConfig cfg;
  std::string error;
  REQUIRE(resolve_run(req, &cfg, &error));
  REQUIRE(cfg.policies.size() == 2);
  CHECK(cfg.policies[1] == "node-slab+prefill+prefill_max=512");
  CHECK(cfg.columns.at(cfg.policies[1]).ps.prefill_max == 512);
  RunResult a, b;
  run(cfg, &a);
  REQUIRE(run(req, &b, &error));
  REQUIRE(a.workloads.size() == 1);
  CHECK(a.workloads[0].params == b.workloads[0].params);
  for (size_t k = 0; k < 2; ++k) {
    CHECK(a.workloads[0].policies[k].metrics == b.workloads[0].policies[k].metrics);
    CHECK(a.workloads[0].policies[k].config == b.workloads[0].policies[k].config);
  }
  // A machine row changes the parameters' defaults and the typed machine.
  req.machine = "vm-2vcpu";
  REQUIRE(resolve_run(req, &cfg, &error));
  CHECK(cfg.workloads[0].machine.cpus == iou::machine_by_name("vm-2vcpu", nullptr)->value("cpus"));
}

TEST_CASE("run config: what does not resolve is one error before anything runs", "[run_config]") {
  RunConfig cfg;
  std::string error;
  RunRequest req;
  req.scenario = "no-such";
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("unknown scenario 'no-such'"));
  req.scenario = "sparse-fill";
  req.kernel = "v6.13";
  req.policies = {"node-slab"};
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("per-ring node cache"));
  req.kernel = "v6.18";
  req.policies = {};
  req.machine = "pdp11";
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("unknown machine 'pdp11'"));
  req.machine = "i7-12700KF";
  req.sets = {{"cpu", "99"}};
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("must be below cpus"));
  req.sets = {{"slots", "4096"}, {"installs", "4096"}};
  req.max_work = 10;
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("the work budget is 10"));
}
