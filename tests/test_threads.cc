// The multi-threaded paths (--jobs): the engine's worker pool and the
// calibrate/validate simulation pool give the same results at any thread
// count, with and without injected faults. The "[threads]" subset is what
// CI runs under ThreadSanitizer (.ci/run).
#include <catch2/catch.hpp>

#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/measure.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;

TEST_CASE("engine workers: same counts and faults at 1 and 4 jobs", "[threads]") {
  RunRequest req;
  req.scenario = "sparse-fill";
  req.policies = {"unpatched", "node-slab", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill"};
  req.sets = {{"rounds", "2"}, {"warmup", "0"}, {"slots", "512"}, {"installs", "256"}};
  req.faults = {{FaultPoint::slab_alloc, 0.02}, {FaultPoint::page_alloc, 0, 12}};
  req.seed = 42;
  RunResult a, b;
  std::string err;
  REQUIRE(run(req, &a, &err));
  req.jobs = 4;
  REQUIRE(run(req, &b, &err));
  for (size_t k = 0; k < a.workloads[0].policies.size(); ++k) {
    const PolicyResult &pa = a.workloads[0].policies[k], &pb = b.workloads[0].policies[k];
    CHECK(pa.total == pb.total);
    CHECK(pa.faults_injected == pb.faults_injected);
    CHECK(pa.failures == pb.failures);
    CHECK(pa.faults_injected.at("slab_alloc") > 0);
    // Every 12th page allocation fails: slab pages (each absorbed), not
    // the rings' regions (the 7th was one: its ring failed, and with it
    // the run, which slab_alloc > 0 catches).
    CHECK(pa.faults_injected.at("page_alloc") > 0);
  }
}

TEST_CASE("simulation pool: per-row counts do not depend on --jobs", "[threads]") {
  Mapping map;
  std::vector<MeasuredRow> rows;
  std::vector<MappedRow> mapped;
  std::string err;
  REQUIRE(load_mapping(testing::repo_file("data/profiles/mapping.toml"), &map, &err));
  REQUIRE(read_measurements(testing::repo_file("data/measurements/calibration.tsv"), &rows, &err));
  rows.resize(6);
  REQUIRE(map_rows(map, rows, &mapped, nullptr, &err));
  std::vector<PerOpCounts> one, four;
  REQUIRE(simulate_rows(mapped, 1, &one, &err));
  REQUIRE(simulate_rows(mapped, 4, &four, &err));
  REQUIRE(one.size() == four.size());
  CHECK(one == four);
}
