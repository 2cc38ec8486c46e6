// The work budget of calibrate and validate (docs/calibration.md, "Work
// budget"): a row is refused before anything is simulated when its
// operations per round times its rounds exceed --max-work, with one line
// naming the file, line, row, number and flag; progress goes to stderr
// only.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include <fmt/format.h>

#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/measure.h"
#include "sim/cli/cli.h"
#include "sim/run/scenario.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

using simcache::testing::kHeader;

std::string f0(int64_t slots, int64_t installs, int64_t rounds) {
  return fmt::format(
      "F0: slots={} sparse, {} MSG_RING SEND_FD installs/round as {} batches of QD=64, new "
      "target ring per round, 3 warmup + {} measured rounds",
      slots, installs, installs / 64, rounds);
}

std::string row(const std::string& id, const std::string& shape) {
  return id + "\tsparse-fill\t" + shape +
         "\tU unpatched v6.18-rc4\tmean\t119.4\tns/install\ttiming\tsrc\t\n";
}

std::vector<MappedRow> mapped(const std::string& tsv) {
  Mapping map;
  std::vector<MeasuredRow> rows;
  std::vector<MappedRow> out;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  REQUIRE(parse_measurements(tsv, "rows.tsv", &rows, &err));
  REQUIRE(map_rows(map, rows, &out, nullptr, &err));
  return out;
}

bool budget_one_line(const std::string& s) {
  return !s.empty() && s.back() == '\n' && s.find('\n') == s.size() - 1;
}

}  // namespace

TEST_CASE("calibrate budget: 1M installs x 10,000 rounds is refused at once, naming the number",
          "[calib-budget]") {
  // (1,048,576 slots + 1,048,576 installs) per round x (1 smoke + 3 warm-up
  // + 10,000 measured) rounds: about 50 minutes of simulation before the budget.
  const TempFile tsv("calib_big.tsv", kHeader + row("X-1", f0(1 << 20, 1 << 20, 10000)));
  for (const char* cmd : {"calibrate", "validate"}) {
    INFO(cmd);
    const auto t0 = std::chrono::steady_clock::now();
    const CliOutcome r = run_cli({cmd, "--measurements", tsv.path()});
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(budget_one_line(r.err));
    CHECK(r.err.find("calib_big.tsv:2:") != std::string::npos);
    CHECK(r.err.find("row X-1") != std::string::npos);
    CHECK(r.err.find(std::to_string((2ull << 20) * 10004) + " operations") != std::string::npos);
    CHECK(r.err.find("2097152 per round x 10004 rounds") != std::string::npos);
    CHECK(r.err.find("the budget is 100000000") != std::string::npos);
    CHECK(r.err.find("--max-work N") != std::string::npos);
    CHECK(s < 10);
  }
}

TEST_CASE("calibrate budget: --max-work sets the budget, checked before any simulation",
          "[calib-budget]") {
  const TempFile tsv("calib_f0.tsv", kHeader + row("X-1", f0(4096, 4096, 15)));
  // (4096 slots + 4096 installs) x 19 rounds = 155,648.
  const CliOutcome low = run_cli({"validate", "--measurements", tsv.path(), "--max-work", "155647"});
  CHECK(low.status == 2);
  CHECK(budget_one_line(low.err));
  CHECK(low.err.find("asks for 155648 operations") != std::string::npos);
  CHECK(low.err.find("the budget is 155647 (--max-work N") != std::string::npos);
  for (const char* bad : {"0", "-1", "x", "1e9", ""}) {
    INFO(bad);
    const CliOutcome r = run_cli({"calibrate", "--measurements", tsv.path(), "--max-work", bad});
    CHECK(r.status == 2);
    CHECK(r.err.find("--max-work") != std::string::npos);
  }
  // At the budget exactly, the row simulates.
  const std::vector<MappedRow> rows = mapped(kHeader + row("X-1", f0(4096, 4096, 15)));
  std::vector<PerOpCounts> per_op;
  std::string err;
  SimulateOptions o;
  o.max_work = 155648;
  CHECK(simulate_rows(rows, 1, &per_op, &err, nullptr, o));
  CHECK(per_op.size() == 1);
  o.max_work = 155647;
  CHECK_FALSE(simulate_rows(rows, 1, &per_op, &err, nullptr, o));
  CHECK(err.find("rows.tsv:2:") != std::string::npos);
}

TEST_CASE("calibrate budget: a row's work is its operations per round times every round",
          "[calib-budget]") {
  // Every registered scenario has an entry (a new one must say what a
  // round of it costs).
  for (const ScenarioInfo& s : ScenarioRegistry::get().all()) {
    INFO(s.name);
    CHECK(has_work_entry(s.name));
  }
  const std::vector<MappedRow> rows =
      mapped(std::string(kHeader) + row("X-1", f0(4096, 4096, 15)) + row("X-2", f0(8192, 1024, 40)));
  RowWork w;
  std::string err;
  REQUIRE(row_work(rows[0], &w, &err));
  CHECK(w.per_round == 4096 + 4096);  // registration's slots and the installs
  CHECK(w.rounds == 19);               // smoke 1 + warm-up 3 + 15
  CHECK(w.work == 8192 * 19);
  CHECK(w.what == "operations");
  REQUIRE(row_work(rows[1], &w, &err));
  CHECK(w.work == (8192 + 1024) * 44);
  // Every shipped row is within the default budget.
  Mapping map;
  std::vector<MeasuredRow> shipped;
  std::vector<MappedRow> all;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  REQUIRE(read_measurements(repo_file("data/measurements/calibration.tsv"), &shipped, &err));
  REQUIRE(map_rows(map, shipped, &all, nullptr, &err));
  for (const MappedRow& r : all) {
    INFO(r.row.id);
    REQUIRE(row_work(r, &w, &err));
    CHECK(w.work <= kDefaultMaxRowWork);
  }
}

TEST_CASE("calibrate progress: rows done, in order, ending at every row", "[calib-budget]") {
  const std::vector<MappedRow> rows = mapped(std::string(kHeader) + row("X-1", f0(256, 256, 2)) +
                                             row("X-2", f0(512, 256, 2)) +
                                             row("X-3", f0(256, 256, 2)));
  std::vector<std::pair<size_t, size_t>> seen;
  SimulateOptions o;
  o.progress = [&](size_t done, size_t total) { seen.emplace_back(done, total); };
  std::vector<PerOpCounts> per_op;
  std::string err;
  REQUIRE(simulate_rows(rows, 1, &per_op, &err, nullptr, o));
  // are one simulation.
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].first < seen[1].first);
  CHECK(seen.back() == std::pair<size_t, size_t>{3, 3});
  CHECK(per_op[0] == per_op[2]);
}

TEST_CASE("a process simulates each configuration once: the same rows again are remembered",
          "[calib-budget]") {
  // From a clean memory (the whole binary may run in one process).
  forget_simulations();
  const std::vector<MappedRow> rows = mapped(std::string(kHeader) + row("X-1", f0(320, 192, 2)) +
                                             row("X-2", f0(448, 192, 2)) +
                                             row("X-3", f0(320, 192, 2)));
  std::vector<PerOpCounts> first, again, two_jobs, full;
  std::string err;
  uint64_t ran = 0;
  SimulateOptions o;
  o.simulated = &ran;
  REQUIRE(simulate_rows(rows, 1, &first, &err, nullptr, o));
  CHECK(ran == 2);  // are one simulation
  REQUIRE(simulate_rows(rows, 1, &again, &err, nullptr, o));
  CHECK(ran == 2);  // remembered
  CHECK(again == first);
  // Another job count or the reference runs again, to the same counts.
  REQUIRE(simulate_rows(rows, 2, &two_jobs, &err, nullptr, o));
  CHECK(ran == 4);
  CHECK(two_jobs == first);
  o.full = true;
  REQUIRE(simulate_rows(rows, 1, &full, &err, nullptr, o));
  CHECK(ran == 6);
  CHECK(full == first);
  // A row whose simulation is remembered still goes through the budget.
  o.max_work = 1;
  CHECK_FALSE(simulate_rows(rows, 1, &again, &err, nullptr, o));
  CHECK(ran == 6);
}

TEST_CASE("the simulations a process remembers are bounded: past 512 the oldest is forgotten",
          "[calib-budget]") {
  forget_simulations();
  // 513 distinct small configurations, then the first again: simulated
  // anew, where the second and the last are still remembered.
  std::string tsv = kHeader;
  for (int i = 0; i < 513; ++i) tsv += row(fmt::format("X-{}", i), f0(64 + i, 64, 1));
  const std::vector<MappedRow> rows = mapped(tsv);
  std::vector<PerOpCounts> per_op;
  std::string err;
  uint64_t ran = 0;
  SimulateOptions o;
  o.simulated = &ran;
  REQUIRE(simulate_rows(rows, 1, &per_op, &err, nullptr, o));
  CHECK(ran == 513);
  // Simulated in the order of their parameters: here the rows' order.
  for (const size_t i : {size_t{512}, size_t{1}}) {
    REQUIRE(simulate_rows({rows[i]}, 1, &per_op, &err, nullptr, o));
    CHECK(ran == 513);
  }
  REQUIRE(simulate_rows({rows.front()}, 1, &per_op, &err, nullptr, o));
  CHECK(ran == 514);
}
