// Golden reports with times under the default profile. They change when
// the model's counts, the default profile or a report format change:
// review the diff like code, then regenerate with
//   SIMCACHE_UPDATE_GOLDEN=1 ./build/tests/simcache_tests '[golden]'
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "test_cost_util.h"

using namespace simcache::sim;
using simcache::testing::repo_file;

namespace {

void check_golden(const std::string& name, const std::vector<std::string>& args) {
  const CliOutcome r = run_cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string path = repo_file("tests/golden/" + name);
  const char* update = std::getenv("SIMCACHE_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << r.out;
    WARN("rewrote " << path);
    return;
  }
  const std::string want = simcache::testing::read_text(path);
  INFO("golden " << path
                 << " differs; if the change is intended, regenerate with "
                    "SIMCACHE_UPDATE_GOLDEN=1 (tests/test_golden_times.cc)");
  CHECK(r.out == want);
}

}  // namespace

TEST_CASE("golden: sparse4096 table with times", "[golden]") {
  check_golden("sparse4096.txt", {"--scenario", "sparse4096", "--jobs", "2"});
}

TEST_CASE("golden: waitv table with times, both allocation flavours", "[golden]") {
  check_golden("waitv.txt", {"--scenario", "waitv", "--policy", "unpatched,waitv-account"});
}

TEST_CASE("golden: waitv default columns, with --explain", "[golden]") {
  check_golden("waitv_explain.txt", {"--scenario", "waitv", "--explain"});
}

TEST_CASE("golden: waitv JSON with time fields", "[golden]") {
  check_golden("waitv.json", {"--scenario", "waitv", "--policy", "unpatched,waitv-account", "--set",
                              "rounds=2", "--set", "cycles=8", "--format", "json"});
}

TEST_CASE("golden tables stay within 80 columns", "[golden]") {
  for (const char* name : {"sparse4096.txt", "waitv.txt", "waitv_explain.txt"}) {
    std::ifstream f(repo_file(std::string("tests/golden/") + name));
    std::string line;
    int n = 0;
    while (std::getline(f, line)) {
      ++n;
      INFO(name << ":" << n << ": " << line);
      CHECK(line.size() <= 80);
    }
  }
}

TEST_CASE("golden: sparse4096 JSON", "[golden]") {
  check_golden("sparse4096.json", {"--scenario", "sparse4096", "--format", "json", "--jobs", "2"});
}
