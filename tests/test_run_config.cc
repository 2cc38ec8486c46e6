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
  // The per-CPU page lists' high mark is tuned from the least up to the most.
  req.sets = {{"pcp_high_min", "4000"}};
  REQUIRE(resolve_run(req, &cfg, &error));
  CHECK(cfg.workloads.at(0).machine.pcp_high_min == 4000);
  CHECK(cfg.workloads.at(0).machine.pcp_high_max == 46187);
  req.sets = {{"pcp_high_min", "50000"}};
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK(error == "parameter 'pcp_high_max' = 46187 is below pcp_high_min = 50000");
  req.sets = {{"pcp_high_max", "251"}};
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("'pcp_high_max'"));
  CHECK_THAT(error, Contains("251 is out of range [252, 2147483647]"));
  req.sets = {{"slots", "4096"}, {"installs", "4096"}};
  req.max_work = 10;
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("the work budget is 10"));
}

TEST_CASE("run config: kernels side by side, each column counted as on its own kernel",
          "[run_config]") {
  std::string error;
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"unpatched", "prefill"};
  req.knobs = {{"prefill_max", "512"}};
  req.sets = {{"slots", "256"}, {"installs", "256"}, {"rounds", "2"}, {"warmup", "1"}};
  req.kernel = "v6.13,v6.18";
  // v6.13 has no node cache: prefill does not parse there.
  RunConfig cfg;
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("per-ring node cache"));
  req.kernel = "v7.1,v6.18";
  REQUIRE(resolve_run(req, &cfg, &error));
  // Kernel-major, the knobs before each column's kernel.
  CHECK(cfg.policies == std::vector<std::string>{"unpatched+prefill_max=512@v7.1",
                                                 "prefill+prefill_max=512@v7.1",
                                                 "unpatched+prefill_max=512@v6.18",
                                                 "prefill+prefill_max=512@v6.18"});
  CHECK(cfg.kernel == iou::profile_by_name("v7.1", nullptr));
  RunResult both;
  run(cfg, &both);
  CHECK(both.kernel == "v7.1,v6.18");
  const auto& cols = both.workloads.at(0).policies;
  REQUIRE(cols.size() == 4);
  // Each column's counts are those of a run on its kernel alone.
  for (size_t k = 0; k < 4; ++k) {
    INFO(cols[k].policy);
    RunRequest one = req;
    one.kernel = k < 2 ? "v7.1" : "v6.18";
    RunResult r;
    REQUIRE(run(one, &r, &error));
    CHECK(r.kernel == one.kernel);
    const PolicyResult& alone = r.workloads.at(0).policies.at(k % 2);
    CHECK(cols[k].kernel == one.kernel);
    CHECK(cols[k].policy == alone.policy + "@" + one.kernel);
    CHECK(cols[k].total == alone.total);
    CHECK(cols[k].timed == alone.timed);
    CHECK(cols[k].metrics == alone.metrics);
  }
  // The SLUB generations differ where they should: sheaves on 7.x only.
  CHECK(cols[0].timed != cols[2].timed);
}

TEST_CASE("run config: a column names its own kernel and a bad kernel list is one error",
          "[run_config]") {
  std::string error;
  RunConfig cfg;
  RunRequest req;
  req.scenario = "sparse-fill";
  req.sets = {{"slots", "64"}, {"installs", "64"}, {"rounds", "1"}, {"warmup", "0"}};
  req.policies = {"unpatched@v6.12", "prefill"};
  REQUIRE(resolve_run(req, &cfg, &error));
  CHECK(cfg.policies == std::vector<std::string>{"unpatched@v6.12", "prefill"});
  CHECK(cfg.columns.at("unpatched@v6.12").kernel == iou::profile_by_name("v6.12", nullptr));
  CHECK(cfg.columns.at("prefill").kernel == iou::profile_by_name("v6.18", nullptr));
  RunResult r;
  run(cfg, &r);
  CHECK(r.kernel == "v6.12,v6.18");  // the kernels the columns ran on
  // With several kernels, a column that names its own keeps it, once.
  req.kernel = "v7.1,v6.18";
  REQUIRE(resolve_run(req, &cfg, &error));
  CHECK(cfg.policies ==
        std::vector<std::string>{"unpatched@v6.12", "prefill@v7.1", "prefill@v6.18"});
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"v6.18,v6.99", "unknown kernel profile 'v6.99'"},
      {"v6.18,", "unknown kernel profile ''"},
      {",v6.18", "unknown kernel profile ''"},
      {"v6.18,v6.18", "kernel 'v6.18' is named twice"},
  };
  req.policies = {"unpatched"};
  for (const auto& [kernels, why] : bad) {
    INFO(kernels);
    req.kernel = kernels;
    CHECK_FALSE(resolve_run(req, &cfg, &error));
    CHECK_THAT(error, Contains(why));
  }
  req.kernel = "v6.18";
  req.policies = {"unpatched@v9"};
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("column 'unpatched@v9': unknown kernel profile 'v9'"));
  // Columns are at most kMaxColumns, kernels times policies.
  req.policies = {"unpatched", "prefill", "node-slab"};
  req.kernel = "v7.2,v6.18,v7.1";
  CHECK_FALSE(resolve_run(req, &cfg, &error));
  CHECK_THAT(error, Contains("9 columns on 3 kernels; at most 8"));
}
