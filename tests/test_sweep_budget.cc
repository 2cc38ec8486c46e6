// Sweep grids are sharded before they are expanded, and a run takes at
// most its work budget of points (--max-points): a 10^10-point grid is one
// line naming both numbers, sharded or not, never an allocation failure.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/cli/cli.h"
#include "sim/sweep/sweep.h"

using namespace simcache::sim;
namespace fs = std::filesystem;

namespace {

std::string grid_file(const std::string& name, const std::string& text) {
  const fs::path p =
      fs::temp_directory_path() / ("simcache_budget_" + std::to_string(getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// Ten parameters of ten values each: 10^10 points.
std::string huge_grid() {
  std::string t = "scenario = \"sparse-fill\"\nprofiles = [\"none\"]\n[params]\n";
  for (const char* k : {"slots", "installs", "rounds", "warmup", "smoke", "cpus", "cpu",
                        "kworker_cpu", "nodes", "cgroup"}) {
    t += std::string(k) + " = [";
    for (int v = 1; v <= 10; ++v) t += (v > 1 ? ", " : "") + std::to_string(v);
    t += "]\n";
  }
  return t;
}

}  // namespace

TEST_CASE("a 10^10-point grid is refused with its size, sharded or not", "[sweep][budget]") {
  const std::string g = grid_file("huge.toml", huge_grid());
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, std::vector<std::string>{"--shard", "3/1000"}}) {
    std::vector<std::string> args = {"sweep", g};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliOutcome r = run_cli(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find("the grid has 10000000000 points") != std::string::npos);
    CHECK(r.err.find("--max-points N raises it") != std::string::npos);
  }
  // One shard in a million, its 10^4 points decoded from their indices:
  // no whole grid is ever built.
  SweepGrid grid;
  std::string err;
  REQUIRE(load_grid(g, &grid, &err));
  std::vector<SweepPoint> pts;
  REQUIRE(expand_grid(grid, &pts, &err, 999999, 1000000, 10000));
  REQUIRE(pts.size() == 10000);
  CHECK(pts[0].index == 999999);
  CHECK(pts.back().index == 9999999999ull);
  // 9999999999: the last value of every parameter.
  for (const auto& [k, v] : pts.back().params) CHECK(v == "10");
  fs::remove(g);
}

TEST_CASE("a shard's points are exactly the whole grid's points with its indices",
          "[sweep][budget]") {
  const std::string g = grid_file(
      "small.toml",
      "scenario = [\"sparse-fill\", \"waitv\"]\nkernels = [\"v6.13\", \"v7.1\"]\nseeds = [1, 2]\n"
      "policies = [\"unpatched\", \"node-slab+prefill\"]\n"
      "[params]\nslots = [64, 128, 256]\n[knobs]\nprefill_max = [256, 1024]\n");
  SweepGrid grid;
  std::string err;
  REQUIRE(load_grid(g, &grid, &err));
  std::vector<SweepPoint> all;
  REQUIRE(expand_grid(grid, &all, &err));
  REQUIRE(all.size() == 2 * 2 * 2 * 3 * 2 * 2);
  // The documented order: the knob varies fastest, then the policy, ...
  CHECK(all[1].knobs == std::vector<std::pair<std::string, std::string>>{{"prefill_max", "1024"}});
  CHECK(all[2].policy == "node-slab+prefill");
  CHECK(all[4].params[0].second == "128");
  CHECK(all[24].kernel == "v7.1");
  CHECK(all[48].scenario == "waitv");
  for (uint32_t n : {1u, 3u, 7u, 200u})
    for (uint32_t i = 0; i < n && i < 5; ++i) {
      std::vector<SweepPoint> shard;
      REQUIRE(expand_grid(grid, &shard, &err, i, n));
      size_t k = 0;
      for (const SweepPoint& p : all) {
        if (p.index % n != i) continue;
        REQUIRE(k < shard.size());
        CHECK(shard[k].index == p.index);
        CHECK(shard[k].scenario == p.scenario);
        CHECK(shard[k].kernel == p.kernel);
        CHECK(shard[k].seed == p.seed);
        CHECK(shard[k].params == p.params);
        CHECK(shard[k].policy == p.policy);
        CHECK(shard[k].knobs == p.knobs);
        ++k;
      }
      CHECK(k == shard.size());
    }
  // The budget counts the shard's points.
  CHECK_FALSE(expand_grid(grid, &all, &err, 0, 1, 95));
  CHECK(err.find("the grid has 96 points, 96 of them in this shard; the budget is 95") !=
        std::string::npos);
  CHECK(expand_grid(grid, &all, &err, 0, 2, 48));
  fs::remove(g);
}
