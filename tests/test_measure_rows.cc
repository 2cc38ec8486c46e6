// The measurement kit's rows (measure/, docs/measure.md) through the
// shipped mapping: every shape the kit prints maps to the simulation it
// replays, with the host's machine parameters; a noisy row (CV above
// 100 %) still gives a profile that validate reads back.
#include <catch2/catch.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "test_cost_util.h"
#include "sim/calibrate/measure.h"

using namespace simcache::sim;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

using simcache::testing::kHeader;
const char kHost[] = "; host: 2 CPUs, task on CPU 1, kworker CPU 0, child memcg";

// A row as simcache-measure prints it (kit_row() in measure/kit_common.c).
std::string kit_row(const std::string& id, const std::string& workload, const std::string& shape,
                    const std::string& value, const std::string& unit,
                    const std::string& cv = "1.2") {
  return id + "\t" + workload + "\t" + shape + kHost +
         "\thost unpatched 6.18.44-fc-v857 (profile v6.18)\tmean\t" + value + "\t" + unit +
         "\ttiming\tsimcache-measure on X; kernel 6.18.44-fc-v857; 2 CPUs\tmean of 2 repeat "
         "means; stability=pass; max group CV " + cv + "%; max role drift 0.5%\n";
}

struct Expect {
  std::string workload, shape, value, unit, scenario;
  Params params;  // checked on top of the machine parameters
};

const std::string kLife = "4096 sparse slots, 64 installs as batches of QD=64; new ring per op, "
                          "50 ms untimed gap after close; 3 warmup + 15 groups x 32 ops; per-op mean";

const std::vector<Expect> kRows = {
    {"sparse-fill",
     "F0: slots=1024 sparse, 256 MSG_RING SEND_FD installs/round as 4 batches of QD=64, new "
     "target ring per round, 3 warmup + 10 measured rounds",
     "280.5", "ns/install", "sparse-fill",
     {{"slots", 1024}, {"installs", 256}, {"qd", 64}, {"warmup", 3}, {"rounds", 10}}},
    {"sparse-fill", "lifecycle paced-4096-64: " + kLife, "41.5", "us", "lifecycle",
     {{"mode", 1}, {"slots", 4096}, {"installs", 64}, {"groups", 1}}},
    {"sparse-fill", "lifecycle paced-4096-64 registration phase: " + kLife, "8.6", "us",
     "lifecycle", {{"mode", 1}, {"slots", 4096}, {"installs", 0}, {"groups", 1}}},
    {"sparse-fill", "lifecycle paced-4096-64 fill phase: " + kLife, "514.3", "ns/install",
     "sparse-fill", {{"slots", 4096}, {"installs", 64}, {"teardown_lag", 0}, {"idle", 1}, {"smoke", 0},
      {"verify", 0}}},
    {"sparse-fill",
     "lifecycle serial-128-128 fill phase: 128 sparse slots, 128 installs as batches of QD=32; "
     "new ring per op, no pause; 3 warmup + 15 groups x 32 ops; per-op mean",
     "300", "ns/install", "sparse-fill",
     {{"slots", 128}, {"installs", 128}, {"teardown_lag", 1}, {"idle", 0}, {"qd", 32},
      {"verify", 0}}},
    {"sparse-fill",
     "lifecycle reuse-4096-4096: 4096 sparse slots, 4096 installs as batches of QD=64; same "
     "ring: FILES_UPDATE(-1) removal of all installed files then SEND_FD refill; 3 warmup + 10 "
     "groups x 32 ops; per-op mean",
     "9470", "us", "lifecycle", {{"mode", 2}, {"slots", 4096}, {"installs", 4096}}},
    {"node-cache",
     "warm: new ring, 128-slot sparse table, fill of 128 timed as 2 batches of QD=64 after fill "
     "+ unregister + re-register on the same ring, 3 warmup + 10 measured rounds",
     "226", "ns/install", "node-cache-coldwarm", {{"warm", 1}, {"slots", 128}, {"qd", 64}}},
    {"node-cache",
     "primed: new ring, 128-slot sparse table, fill of 128 timed as 2 batches of QD=64 after one "
     "install + unregister + re-register on the same ring, 3 warmup + 10 measured rounds",
     "180", "ns/install", "node-cache-coldwarm", {{"warm", 2}, {"slots", 128}, {"qd", 64}}},
    {"WAITV",
     "1 ring (SQ 64, CQ 128); 8 FUTEX_WAITV x 16 private u32 futex words (64-byte separated); 8 "
     "WAKE on word 3 of each vector; 512 cycles = 4096 pairs/round; 3 warmup + 10 measured rounds",
     "7681", "ns/pair", "waitv", {{"vectors", 8}, {"width", 16}, {"cycles", 512}}},
    {"WAIT-WAKE control",
     "scalar control s0: 32 FUTEX_WAIT then 32 FUTEX_WAKE per cycle on 32 words; 512 cycles = "
     "16384 pairs/round; 3 warmup + 10 measured rounds",
     "1343", "ns/pair", "wait-wake", {{"vectors", 32}, {"cycles", 512}}},
    {"arm-fail",
     "e0: 32 FUTEX_WAIT per cycle, 390 per mille fail to arm (-EAGAIN), the armed woken by one "
     "FUTEX_WAKE each; 3125 cycles/round; 3 warmup + 10 measured rounds",
     "1318", "ns/wait", "arm-fail", {{"waits", 32}, {"fail_permille", 390}, {"cycles", 3125}}},
    {"poll-refill",
     "POLL_ADD on a never-readable pipe: QD=4096, bursts of 2048 SQEs, ring recycled every 32 "
     "bursts, 65536 SQEs/round; 3 warmup + 10 measured rounds",
     "1975", "ns/sqe", "poll-refill",
     {{"qd", 4096}, {"burst", 2048}, {"recycle", 32}, {"total", 65536}}},
};

}  // namespace

TEST_CASE("every kit row maps to the simulation it replays, on the host's machine", "[measure]") {
  Mapping m;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
  std::string text = kHeader;
  for (size_t i = 0; i < kRows.size(); ++i)
    text += kit_row("H-" + std::to_string(i), kRows[i].workload, kRows[i].shape, kRows[i].value,
                    kRows[i].unit);
  std::vector<MeasuredRow> rows;
  REQUIRE(parse_measurements(text, "kit.tsv", &rows, &err));
  REQUIRE(rows.size() == kRows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(kRows[i].shape);
    MappedRow mr;
    REQUIRE(map_row(m, rows[i], &mr, &err));
    CHECK(mr.scenario == kRows[i].scenario);
    CHECK(mr.kernel == "v6.18");
    CHECK(mr.policy == "unpatched");
    CHECK(mr.base);
    CHECK(mr.params.at("cpus") == 2);
    CHECK(mr.params.at("cpu") == 1);
    CHECK(mr.params.at("kworker_cpu") == 0);
    CHECK(mr.params.at("cgroup") == 1);
    for (const auto& [k, v] : kRows[i].params) {
      INFO(k);
      CHECK(mr.params.at(k) == v);
    }
    // F0 reads every slot back after its fill (the scenario's default);
    // a lifecycle's fill phase, mapped to the same scenario, does not.
    if (kRows[i].shape.rfind("F0:", 0) == 0) CHECK(mr.params.count("verify") == 0);
  }
}

TEST_CASE("a poll row's pointer-chase cache share becomes the machine's llc_kib", "[measure]") {
  Mapping m;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
  const Expect& poll = kRows.back();
  REQUIRE(poll.scenario == "poll-refill");
  const std::string text =
      std::string(kHeader) +
      kit_row("H-0", poll.workload, poll.shape + "; LLC share 4096 KiB (pointer chase)", poll.value,
              poll.unit) +
      kit_row("H-1", poll.workload, poll.shape, poll.value, poll.unit);
  std::vector<MeasuredRow> rows;
  REQUIRE(parse_measurements(text, "kit.tsv", &rows, &err));
  REQUIRE(rows.size() == 2);
  MappedRow with, without;
  REQUIRE(map_row(m, rows[0], &with, &err));
  REQUIRE(map_row(m, rows[1], &without, &err));
  CHECK(with.params.at("llc_kib") == 4096);
  CHECK(with.params.at("recycle") == 32);
  // An older sitting's row (no chase): the default machine's share.
  CHECK(without.params.count("llc_kib") == 0);
}

TEST_CASE("a kit row's per-CPU page lists' high marks become the machine's", "[measure]") {
  // The kit reads them from /proc/zoneinfo (the task CPU's high_min and
  // high_max in its node's Normal zone) and appends them to the host; a
  // row from before takes vm-2vcpu's (the host rules' defaults: every
  // stored sitting ran on such a VM); marks the kernel could not have are
  // one line naming the row and field, as any bad row. The marks are the
  // machine's state, not the shape: rows that differ only in them are
  // one group.
  Mapping m;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
  for (const Expect& e : kRows) {
    INFO(e.shape);
    std::string group;
    for (const char* marks : {", pcp high 6295..71680", "", ", pcp high 400..300",
                              ", pcp high 6367..200", ", pcp high 1128..46187"}) {
      std::string row = kit_row("H-0", e.workload, e.shape, e.value, e.unit);
      const size_t at = row.find(kHost);
      REQUIRE(at != std::string::npos);
      row.insert(at + sizeof kHost - 1, marks);
      std::vector<MeasuredRow> rows;
      REQUIRE(parse_measurements(std::string(kHeader) + row, "kit.tsv", &rows, &err));
      MappedRow mr;
      if (std::string(marks).find("..300") != std::string::npos) {
        CHECK_FALSE(map_row(m, rows[0], &mr, &err));
        INFO(err);
        CHECK(err.find("kit.tsv:2:") == 0);
        CHECK(err.find(": shape: rule 'host: ") != std::string::npos);
        CHECK(err.find("parameter 'pcp_high_max' = 300 is below pcp_high_min = 400") !=
              std::string::npos);
        continue;
      }
      if (std::string(marks).find("..200") != std::string::npos) {  // below the floor
        CHECK_FALSE(map_row(m, rows[0], &mr, &err));
        INFO(err);
        CHECK(err.find("kit.tsv:2:") == 0);
        CHECK(err.find("parameter 'pcp_high_max' of scenario ") != std::string::npos);
        CHECK(err.find(": 200 is out of range [252, 2147483647]") != std::string::npos);
        continue;
      }
      REQUIRE(map_row(m, rows[0], &mr, &err));
      const std::string s(marks);
      CHECK(mr.params.at("pcp_high_min") == (s.empty() ? 6367 : s.find("1128") != s.npos ? 1128 : 6295));
      CHECK(mr.params.at("pcp_high_max") ==
            (s.empty() ? 73728 : s.find("1128") != s.npos ? 46187 : 71680));
      if (group.empty()) group = mr.group;
      CHECK(mr.group == group);
    }
  }
  // Two rows that differ only in the marks are one configuration measured
  // twice (condition_params): the machine's state, not a shape.
  for (const char* k : {"pcp_high_min", "pcp_high_max"})
    CHECK(std::find(m.fit.condition_params.begin(), m.fit.condition_params.end(), k) !=
          m.fit.condition_params.end());
}

TEST_CASE("a kit row without the host suffix is not taken for a host row", "[measure]") {
  Mapping m;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
  // The i7 rows' shape: falls through to the original rule, 20 CPUs.
  const std::string text =
      std::string(kHeader) + "SF-1\tsparse-fill\t" + kRows[0].shape +
      "\tunpatched kernel v6.18\tm\t119.4\tns/install\ttiming\ts\t\n";
  std::vector<MeasuredRow> rows;
  REQUIRE(parse_measurements(text, "i7.tsv", &rows, &err));
  MappedRow mr;
  REQUIRE(map_row(m, rows[0], &mr, &err));
  CHECK(mr.scenario == "sparse-fill");
  CHECK(mr.params.count("cpus") == 0);
}

TEST_CASE("calibrate then validate on kit rows, one of them noisier than 100 %", "[measure]") {
  std::string text = kHeader;
  for (size_t i = 0; i < kRows.size(); ++i)
    text += kit_row("H-" + std::to_string(i), kRows[i].workload, kRows[i].shape, kRows[i].value,
                    kRows[i].unit, i == 9 ? "132.8" : "1.2");
  TempFile rows("kit_rows.tsv", text);
  TempFile out("kit_host.toml", "");
  // These VM-like rows are not a credible fit of the model (prices the
  // rows measure go to 0: docs/calibration.md, "A fit that refuses to
  // lie"): calibrate says so and exits 3; --force writes the profile.
  CliOutcome c = simcache::sim::run_cli(
      {"calibrate", "--measurements", rows.path(), "--out", out.path(), "--force"});
  INFO(c.err);
  REQUIRE(c.status == 3);
  CHECK(c.err.find("simcache: calibrate: not credible: ") == 0);
  CHECK(c.err.find("wrote " + out.path() + " anyway (--force)") != std::string::npos);
  CHECK(simcache::testing::read_text(out.path()).find("round_cv = 1\n") != std::string::npos);
  CliOutcome v = simcache::sim::run_cli(
      {"validate", "--profile", out.path(), "--measurements", rows.path()});
  INFO(v.err);
  CHECK(v.status == 0);
  CHECK(v.out.find(fmt::format("summary: {} rows", kRows.size())) != std::string::npos);
}

TEST_CASE("a fit of the median or fastest rounds reads them from a kit row's note",
          "[measure][cli]") {
  // Rows as map_rows() leaves them: the figure replaces the time, in the
  // row's unit (K-2's is microseconds).
  const std::string kit =
      kHeader + std::string("K-1\tWAITV\tw\tv\tmean\t100.5\tns/pair\ttiming\tkit\t"
                            "mean of 2 repeat means; stability=pass; median 98.25; fastest "
                            "90; se 0.5%\n"
                            "K-2\tWAITV\tw\tv\tmean\t0.2\tus/pair\ttiming\tkit\t"
                            "median 1.5e-1;fastest 0.12075; medians 3\n");
  std::vector<MeasuredRow> rows;
  std::string err;
  REQUIRE(parse_measurements(kit, "kit.tsv", &rows, &err));
  const auto mapped = [](const std::vector<MeasuredRow>& in) {
    std::vector<MappedRow> out;
    for (const MeasuredRow& r : in) {
      MappedRow m;
      m.row = r;
      m.unit_ns = r.unit.rfind("us", 0) == 0 ? 1e3 : 1;
      m.value_ns = r.value * m.unit_ns;
      out.push_back(m);
    }
    return out;
  };
  std::vector<MappedRow> mean = mapped(rows), median = mean, fastest = mean;
  REQUIRE(apply_row_statistic(RowStatistic::mean, &mean, &err));
  REQUIRE(apply_row_statistic(RowStatistic::median, &median, &err));
  REQUIRE(apply_row_statistic(RowStatistic::fastest, &fastest, &err));
  CHECK(mean[0].value_ns == 100.5);
  CHECK(mean[1].value_ns == Approx(200));
  CHECK(median[0].value_ns == 98.25);
  CHECK(median[0].row.value == 98.25);
  CHECK(median[1].value_ns == Approx(150));
  CHECK(fastest[0].value_ns == 90);
  CHECK(fastest[1].value_ns == Approx(120.75));
  RowStatistic s;
  CHECK(parse_row_statistic("median", &s));
  CHECK(s == RowStatistic::median);
  CHECK(parse_row_statistic("fastest", &s));
  CHECK(s == RowStatistic::fastest);
  CHECK(parse_row_statistic("mean", &s));
  CHECK(s == RowStatistic::mean);
  CHECK_FALSE(parse_row_statistic("p50", &s));
  CHECK_FALSE(parse_row_statistic("Median", &s));

  // The seeds' rows carry the mean only; a figure that is not a positive
  // number in the value column's range, or given twice, is refused. Each
  // is one line naming the file, line and column.
  const std::pair<std::string, std::string> bad[] = {
      {"stability=pass; max group CV 1.2%",
       "kit.tsv:2:43: note: no 'median' figures (--statistic median reads the kit's rows, whose "
       "note gives one median and one fastest round; row B-1 has the mean only)"},
      {"median 3; fastest 1; median 4",
       "kit.tsv:2:43: note: two 'median' figures (--statistic median reads the kit's rows, whose "
       "note gives one median and one fastest round; row B-1 names it twice)"},
      {"median -3; fastest 1", "kit.tsv:2:43: note: median '-3' is not a positive number (row B-1)"},
      {"median nan", "kit.tsv:2:43: note: median 'nan' is not a positive number (row B-1)"},
      {"median 12ns", "kit.tsv:2:43: note: median '12ns' is not a positive number (row B-1)"},
      {"median 1e308", "kit.tsv:2:43: note: 1e+308 ns/pair is more than 3.6e+12 (an hour) ns, "
                       "not a measurement"},
      {"median 1e-320", "kit.tsv:2:43: note: 1e-320 ns/pair is less than 1e-09 ns, not a "
                        "measurement"},
  };
  for (const auto& [note, want] : bad) {
    INFO(note);
    REQUIRE(parse_measurements(kHeader + std::string("B-1\tWAITV\tw\tv\tmean\t100\tns/pair\t"
                                                     "timing\tkit\t") + note + "\n",
                               "kit.tsv", &rows, &err));
    std::vector<MappedRow> one = mapped(rows);
    CHECK_FALSE(apply_row_statistic(RowStatistic::median, &one, &err));
    CHECK(err == want);
    CHECK(one[0].value_ns == 100);  // left as read
  }

  // Through the commands: the reports open with the statistic, the
  // profile names it, rows that are not times are skipped as always (a
  // ratio, a difference), and rows without the figure exit 2.
  std::string sitting_text =
      simcache::testing::read_text(repo_file("data/measurements/vm-2cpu-idle-calibration.tsv"));
  const size_t first = sitting_text.find('\n') + 1;
  const std::string row = sitting_text.substr(first, sitting_text.find('\n', first) - first);
  auto with_column = [&](size_t col, const std::string& v) {
    std::vector<std::string> f;
    for (size_t a = 0, b; a <= row.size(); a = b + 1) {
      b = row.find('\t', a);
      if (b == std::string::npos) b = row.size();
      f.push_back(row.substr(a, b - a));
    }
    f[col] = v;
    std::string out;
    for (const std::string& x : f) out += (out.empty() ? "" : "\t") + x;
    return out + "\n";
  };
  // A ratio (unit, column 6) and a difference (value, column 5) of the
  // same shape, their notes carrying a median: skipped, not read.
  std::string ratio = with_column(6, "ratio"), diff = with_column(5, "-3");
  ratio.replace(0, ratio.find('\t'), "X-RATIO");
  diff.replace(0, diff.find('\t'), "X-DIFF");
  TempFile sitting("statistic_rows.tsv", sitting_text + ratio + diff);
  TempFile prof("statistic.toml", "");
  const simcache::sim::CliOutcome cal = simcache::sim::run_cli(
      {"calibrate", "--statistic", "median", "--measurements", sitting.path(), "--out",
       prof.path(), "--force"});
  INFO(cal.err);
  CHECK((cal.status == 0 || cal.status == 3));
  CHECK(cal.out.rfind("rows read as their median round (--statistic median): the figure in "
                      "each row's note, not its value column (the mean)\n",
                      0) == 0);
  CHECK(cal.out.find("skipped: ") == std::string::npos);  // calibrate lists none
  CHECK(cal.out.find("X-RATIO") == std::string::npos);
  CHECK(cal.out.find("X-DIFF") == std::string::npos);
  const std::string text = simcache::testing::read_text(prof.path());
  CHECK(text.find("#   simcache calibrate --measurements " + sitting.path() +
                  " --statistic median --out " + prof.path() +
                  (cal.status == 3 ? " --force\n" : "\n")) != std::string::npos);
  CHECK(text.find("rows, their median rounds) by simcache calibrate") != std::string::npos);
  CHECK(text.find("\nstatistic = \"median\"\n") != std::string::npos);
  // The median rows are not the mean rows: the fit differs. The header's
  // command names every flag that shaped the profile, quoted for a shell.
  TempFile mean_prof("statistic_mean.toml", "");
  const simcache::sim::CliOutcome by_mean = simcache::sim::run_cli(
      {"calibrate", "--measurements", sitting.path(), "--out", mean_prof.path(), "--force",
       "--name", "host's mean", "--mapping", repo_file("data/profiles/mapping.toml")});
  CHECK(simcache::testing::read_text(mean_prof.path())
            .find("#   simcache calibrate --measurements " + sitting.path() + " --mapping " +
                  repo_file("data/profiles/mapping.toml") + " --name 'host'\\''s mean' --out " +
                  mean_prof.path() + (by_mean.status == 3 ? " --force\n" : "\n")) !=
        std::string::npos);
  CHECK(by_mean.out.find("rows read as") == std::string::npos);
  CHECK(simcache::testing::read_text(mean_prof.path()).find("\nstatistic =") == std::string::npos);
  // The field is what a profile carries: a description that merely reads
  // like calibrate's changes nothing, and a value other than the three
  // is refused with its line and field.
  {
    std::string edited = simcache::testing::read_text(prof.path());
    const size_t at = edited.find("\nstatistic = \"median\"\n");
    REQUIRE(at != std::string::npos);
    TempFile no_field("statistic_none.toml",
                      edited.substr(0, at + 1) + edited.substr(at + 22));
    simcache::sim::CostModel m;
    std::string e;
    REQUIRE(simcache::sim::load_profile(no_field.path(), &m, &e));
    CHECK(m.description.find("their median rounds") != std::string::npos);
    CHECK(fitted_statistic(m) == RowStatistic::mean);
    REQUIRE(simcache::sim::load_profile(prof.path(), &m, &e));
    CHECK(fitted_statistic(m) == RowStatistic::median);
    const size_t line = static_cast<size_t>(std::count(edited.begin(), edited.begin() + at, '\n')) + 2;
    for (const char* value : {"\"p50\"", "\"\"", "\"Median\""}) {
      INFO(value);
      TempFile bad("statistic_bad.toml", edited.substr(0, at + 1) + "statistic = " + value +
                                             "\n" + edited.substr(at + 22));
      const simcache::sim::CliOutcome r = simcache::sim::run_cli(
          {"validate", "--profile", bad.path(), "--measurements", sitting.path()});
      CHECK(r.status == 2);
      CHECK(r.err == "simcache: " + bad.path() + ":" + std::to_string(line) +
                         ": statistic: expected mean, median or fastest\n");
    }
  }
  CHECK(by_mean.out.substr(by_mean.out.find("rms relative")) !=
        cal.out.substr(cal.out.find("rms relative")));
  // A report beside the rows shows the figure the profile was fitted to:
  // C-S0-32's median round (544.29 ns) or its mean (544.90 ns), on the
  // machine the row names (its per-CPU page lists: vm-2vcpu's).
  auto measured_line = [&](const std::string& profile) {
    const simcache::sim::CliOutcome r = simcache::sim::run_cli(
        {"--scenario", "wait-wake", "--machine", "vm-2vcpu", "--set", "rounds=10", "--set",
         "cpu=1", "--set", "kworker_cpu=0", "--profile", profile, "--measurements",
         repo_file("data/measurements/vm-2cpu-idle-calibration.tsv"), "--counts"});
    REQUIRE(r.status == 0);
    const size_t at = r.out.find("\nmeasured ns/pair");
    REQUIRE(at != std::string::npos);
    const size_t foot = r.out.find("  measured (");
    REQUIRE(foot != std::string::npos);
    std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1) + " | " +
                       r.out.substr(foot, r.out.find('\n', foot) - foot);
    // Column widths follow the profile's name: blanks collapsed.
    line.erase(std::unique(line.begin(), line.end(),
                           [](char a, char b) { return a == ' ' && b == ' '; }),
               line.end());
    return line;
  };
  CHECK(measured_line(prof.path()) ==
        "measured ns/pair 544.3 | measured (vm-2cpu-idle-calibration.tsv, their median rounds): "
        "A C-S0-32");
  CHECK(measured_line(mean_prof.path()) ==
        "measured ns/pair 544.9 | measured (vm-2cpu-idle-calibration.tsv): A C-S0-32");
  const std::string val_rows = repo_file("data/measurements/vm-2cpu-idle-validation.tsv");
  const simcache::sim::CliOutcome val = simcache::sim::run_cli(
      {"validate", "--statistic", "fastest", "--profile", prof.path(), "--measurements", val_rows});
  CHECK(val.status == 0);
  CHECK(val.out.rfind("rows read as their fastest round (--statistic fastest)", 0) == 0);
  // A profile fitted to one statistic, validated on another: said once.
  CHECK(val.err.find("was fitted to the rows' median rounds; these rows are read as their "
                     "fastest (--statistic median compares like with like)") !=
        std::string::npos);
  const simcache::sim::CliOutcome same = simcache::sim::run_cli(
      {"validate", "--statistic", "median", "--profile", prof.path(), "--measurements", val_rows});
  CHECK(same.err.find("was fitted to") == std::string::npos);
  const simcache::sim::CliOutcome plain = simcache::sim::run_cli(
      {"validate", "--profile", prof.path(), "--measurements", val_rows});
  CHECK(plain.err.find("these rows are read as their mean (--statistic median") !=
        std::string::npos);
  // Leave-out refits once per shape: the suite's first six rows (six
  // F0 shapes, each with its median) show the statistic reaches it at a
  // small part of the whole suite's cost.
  std::string six = simcache::testing::read_text(val_rows);
  size_t end = 0;
  for (int line = 0; line < 7; ++line) end = six.find('\n', end) + 1;
  TempFile six_rows("statistic_six.tsv", six.substr(0, end));
  const simcache::sim::CliOutcome out_of_sample = simcache::sim::run_cli(
      {"validate", "--statistic", "median", "--leave-out", "shape", "--measurements",
       six_rows.path()});
  CHECK(out_of_sample.status == 0);
  CHECK(out_of_sample.out.rfind("rows read as their median round", 0) == 0);
  CHECK(out_of_sample.out.find("over the 6 fits") != std::string::npos);
  const simcache::sim::CliOutcome seeds =
      simcache::sim::run_cli({"calibrate", "--statistic", "median", "--measurements",
                              repo_file("data/measurements/calibration.tsv")});
  CHECK(seeds.status == 2);
  CHECK(seeds.err.find("note: no 'median' figures") != std::string::npos);
  CHECK(std::count(seeds.err.begin(), seeds.err.end(), '\n') == 1);
  const simcache::sim::CliOutcome typo =
      simcache::sim::run_cli({"validate", "--statistic", "p50", "--measurements", val_rows});
  CHECK(typo.status == 2);
  CHECK(typo.err == "simcache: --statistic 'p50': expected mean, median or fastest\n");
}
