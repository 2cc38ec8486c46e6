// Catch2's main, with one more mode for tests/check_test_names.cmake:
//
//   simcache_tests --select-each FILE
//
// reads FILE, one test spec a line as ctest passes it (one command-line
// argument), and prints a line for each: how many test cases that spec
// selects, then their names, tab-separated. The spec goes through the
// same parser and filter as the command line's positional argument
// (Catch::Config over ConfigData::testsOrTags), so the check sees what a
// run of each ctest would select, in one start of the binary instead of
// one for each of the hundreds of test cases.
//
// GCC 12 at -O1 with the sanitizers warns inside libstdc++'s <regex> as
// used by Catch2; not our code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#pragma GCC diagnostic pop

#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

namespace {

int select_each(const char* path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "simcache_tests: --select-each: cannot read " << path << "\n";
    return 2;
  }
  const Catch::Config plain{Catch::ConfigData{}};
  const std::vector<Catch::TestCase>& all = Catch::getAllTestCasesSorted(plain);
  std::string spec;
  while (std::getline(in, spec)) {
    Catch::ConfigData data;
    data.testsOrTags = {spec};
    const Catch::Config config(data);
    const std::vector<Catch::TestCase> chosen = Catch::filterTests(all, config.testSpec(), config);
    std::cout << chosen.size();
    // A name that starts with '#' is listed (--list-test-names-only)
    // in quotes, and so named in ctest: the same here.
    for (const Catch::TestCase& t : chosen)
      std::cout << '\t' << (t.name.rfind('#', 0) == 0 ? '"' + t.name + '"' : t.name);
    std::cout << '\n';
  }
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc == 3 && std::strcmp(argv[1], "--select-each") == 0) return select_each(argv[2]);
  return Catch::Session().run(argc, argv);
}
