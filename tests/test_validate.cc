// calibrate and validate through the CLI: malformed and unmappable rows
// are one-line errors with file, line and column and exit status 2, no
// half-written profile is left behind; validate's effects follow the A/B/A
// convention of docs/workloads.md.
#include <catch2/catch.hpp>
#include <filesystem>
#include <cmath>
#include <fstream>
#include <tuple>

#include <fmt/format.h>

#include "test_cost_util.h"
#include "sim/calibrate/validate.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

using simcache::testing::kHeader;
const char kShapeF0[] =
    "F0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 batches of QD=64, "
    "new target ring per round, 3 warmup + 15 measured rounds";

std::string row(const std::string& id, const std::string& workload, const std::string& shape,
                const std::string& variant, const std::string& value,
                const std::string& unit = "ns/install") {
  return id + "\t" + workload + "\t" + shape + "\t" + variant + "\tmean ns/install\t" + value +
         "\t" + unit + "\ttiming\tsrc\t\n";
}

// The causes calibrate's report lists ("NOT CREDIBLE: ..." lines).
size_t fit_problems_count(const std::string& report) {
  size_t n = 0;
  for (size_t at = report.find("\nNOT CREDIBLE: "); at != std::string::npos;
       at = report.find("\nNOT CREDIBLE: ", at + 1))
    ++n;
  return n;
}

// 1-based character column of field `k` (0-based) of a TSV line.
int column_of(const std::string& line, int k) {
  size_t pos = 0;
  for (int i = 0; i < k; ++i) pos = line.find('\t', pos) + 1;
  return static_cast<int>(pos) + 1;
}

struct Bad {
  std::string name, text, where;  // where: ":LINE:COL"
  std::string expect;
};

std::vector<Bad> bad_inputs() {
  const std::string good = row("X-1", "sparse-fill", kShapeF0, "U unpatched v6.18-rc4", "119.4");
  std::vector<Bad> b;
  const std::string bad_value = row("X-2", "sparse-fill", kShapeF0, "U unpatched", "12x.5");
  b.push_back({"value", kHeader + good + bad_value, ":3:" + std::to_string(column_of(bad_value, 5)),
               "value: '12x.5' is not a number"});
  const std::string bad_wl = row("X-2", "no-such-workload", kShapeF0, "U unpatched", "1");
  b.push_back({"workload", kHeader + good + bad_wl, ":3:" + std::to_string(column_of(bad_wl, 1)),
               "workload: no [[shape]] rule"});
  const std::string bad_shape = row("X-2", "sparse-fill", "F9: something else", "U unpatched", "1");
  b.push_back({"shape", kHeader + good + bad_shape, ":3:" + std::to_string(column_of(bad_shape, 2)),
               "shape: no [[shape]] rule"});
  const std::string bad_var = row("X-2", "sparse-fill", kShapeF0, "Z some other kernel", "1");
  b.push_back({"variant", kHeader + good + bad_var, ":3:" + std::to_string(column_of(bad_var, 3)),
               "variant: no [[variant]] rule"});
  const std::string bad_kernel = row("X-2", "sparse-fill", kShapeF0, "parent x v9.9 (boot A)", "1");
  b.push_back({"kernel", kHeader + good + bad_kernel,
               ":3:" + std::to_string(column_of(bad_kernel, 3)), "v9.9"});
  const std::string bad_unit = row("X-2", "sparse-fill", kShapeF0, "U unpatched", "1", "furlongs");
  b.push_back({"unit", kHeader + good + bad_unit, ":3:" + std::to_string(column_of(bad_unit, 6)),
               "unit: 'furlongs'"});
  const std::string wrong_op = row("X-2", "sparse-fill", kShapeF0, "U unpatched", "1", "ns/pair");
  b.push_back({"op", kHeader + good + wrong_op, ":3:" + std::to_string(column_of(wrong_op, 6)),
               "is per pair"});
  b.push_back({"duplicate id", kHeader + good + good, ":3:1", "id: 'X-1' already used on line 2"});
  const std::string extra = good.substr(0, good.size() - 1) + "\textra";
  b.push_back({"extra field", kHeader + extra + "\n", ":2:" + std::to_string(column_of(extra, 10)),
               "row has 11 fields"});
  b.push_back({"missing column", "id\tworkload\tshape\tvariant\tmetric\tvalue\n" + good, ":1:1",
               "required column 'unit' is missing"});
  b.push_back({"unknown column", "id\twork\n", ":1:4", "unknown column 'work'"});
  b.push_back({"empty", "", ":1:1", "no header line"});
  const std::string empty_shape = row("X-2", "sparse-fill", "", "U unpatched", "1");
  b.push_back({"empty field", kHeader + empty_shape,
               ":2:" + std::to_string(column_of(empty_shape, 2)), "shape: empty"});
  const std::string too_big = row("X-2", "sparse-fill",
                                  "F0: slots=99999999 sparse, 64 MSG_RING SEND_FD installs/round "
                                  "as 1 batches of QD=64",
                                  "U unpatched", "1");
  b.push_back({"param range", kHeader + too_big, ":2:" + std::to_string(column_of(too_big, 2)),
               "out of range"});
  return b;
}

// A measurement file's lines, as read.
std::vector<std::string> file_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A TSV row with its value column times `scale` and, unless empty, its
// id replaced; newline-terminated.
std::string retimed(const std::string& line, const std::string& id, double scale) {
  std::vector<std::string> cols;
  for (size_t at = 0;;) {
    const size_t tab = line.find('\t', at);
    cols.push_back(line.substr(at, tab - at));
    if (tab == std::string::npos) break;
    at = tab + 1;
  }
  if (!id.empty()) cols[0] = id;
  cols[5] = fmt::format("{:.9f}", std::stod(cols[5]) * scale);
  std::string out;
  for (const std::string& c : cols) out += (out.empty() ? "" : "\t") + c;
  return out + "\n";
}

// validate's coverage of its rows ("N/M") and its summary's mean abs
// error ("x.xx"), as printed.
std::pair<std::string, std::string> rows_inside_and_error(const std::string& out) {
  const std::string cov = "coverage of the 90% model-uncertainty intervals: rows ";
  const size_t at = out.find(cov) + cov.size();
  const std::string mae_mark = "mean abs error ";
  const size_t m = out.find(mae_mark, out.find("\nsummary: ")) + mae_mark.size();
  return {out.substr(at, out.find(' ', at) - at), out.substr(m, out.find('%', m) - m)};
}

}  // namespace

TEST_CASE("calibrate and validate reject bad rows with file, line and column", "[validate]") {
  for (const Bad& b : bad_inputs()) {
    const TempFile tsv("bad.tsv", b.text);
    const std::string out = tsv.path() + ".profile.toml";
    for (bool calibrate : {true, false}) {
      std::vector<std::string> args = {calibrate ? "calibrate" : "validate", "--measurements",
                                       tsv.path()};
      if (calibrate) args.insert(args.end(), {"--out", out});
      const CliOutcome r = run_cli(args);
      INFO(b.name << (calibrate ? " (calibrate)" : " (validate)") << ": " << r.err);
      CHECK(r.status == 2);
      CHECK(r.out.empty());
      CHECK(simcache::testing::lines(r.err) == 1);
      CHECK(r.err.find(tsv.path() + b.where + ":") != std::string::npos);
      CHECK(r.err.find(b.expect) != std::string::npos);
      CHECK_FALSE(std::filesystem::exists(out));
      CHECK_FALSE(std::filesystem::exists(out + ".tmp~"));
    }
  }
}

TEST_CASE("validate can skip unmappable rows on request", "[validate]") {
  const std::string good = row("X-1", "sparse-fill", kShapeF0, "U unpatched v6.18-rc4", "119.4");
  const std::string odd = row("X-2", "sparse-fill", kShapeF0, "Z unknown", "1");
  const TempFile tsv("skip.tsv", kHeader + good + odd);
  const CliOutcome r = run_cli({"validate", "--measurements", tsv.path(), "--skip-unmapped"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("skipped: " + tsv.path() + ":3:") != std::string::npos);
  CHECK(r.out.find("summary: 1 rows") != std::string::npos);
}

TEST_CASE("bad command lines of the subcommands exit 2", "[validate]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"calibrate"},
           {"validate"},
           {"calibrate", "--measurements"},
           {"calibrate", "--measurements", "/no/such.tsv"},
           {"validate", "--measurements", "x", "--bogus"},
           {"validate", "--measurements", repo_file("data/measurements/calibration.tsv"),
            "--profile", "no-such-profile"},
           {"calibrate", "--measurements", repo_file("data/measurements/calibration.tsv"),
            "--mapping", "/no/such/mapping.toml"},
           {"calibrate", "--measurements", repo_file("data/measurements/calibration.tsv"), "--jobs",
            "0"}}) {
    const CliOutcome r = run_cli(args);
    INFO(args.size() << " args: " << r.err);
    CHECK(r.status == 2);
    CHECK(simcache::testing::lines(r.err) == 1);  // exactly one line: no usage text appended
    CHECK(r.err.rfind("simcache: ", 0) == 0);
    CHECK(r.err.find("usage:") == std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("a malformed mapping file names its line and field", "[validate]") {
  const TempFile m("bad_mapping.toml",
                   "[[shape]]\nname = \"x\"\nworkload = 'a'\nshape = '(\\d+'\ncaptures = []\n"
                   "scenario = \"sparse-fill\"\n[[variant]]\nmatch = 'x'\nkernel = \"v6.18\"\n"
                   "policy = \"unpatched\"\n");
  const CliOutcome r =
      run_cli({"validate", "--measurements", repo_file("data/measurements/calibration.tsv"),
               "--mapping", m.path()});
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.err.find(m.path() + ":4: shape[0].shape: bad regular expression") != std::string::npos);
}

TEST_CASE("validate on the calibration rows reports every row and effect", "[validate]") {
  const CliOutcome r = run_cli({"validate", "--measurements",
                                repo_file("data/measurements/calibration.tsv"), "--jobs", "2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  for (const char* id : {"SF-001", "SF-199", "SF-289", "WV-002", "WV-021"})
    CHECK(r.out.find(std::string("\n") + id + " ") != std::string::npos);
  CHECK(r.out.find("summary: 46 rows, mean abs error") != std::string::npos);
  CHECK(r.out.find("22 effects") != std::string::npos);
  CHECK(r.out.find("coverage of the 90% model-uncertainty intervals: rows ") != std::string::npos);
  // seed 000's formal result, child vs the midpoint of the parents: +8.091%.
  CHECK(r.out.find("WV-002   WV-001, WV-003     +8.09%") != std::string::npos);
}

TEST_CASE("effects compare a child with the midpoint of its parents", "[validate]") {
  CostModel m;
  m.name = "t";
  CostParam p;
  p.name = "k";
  p.unit = "ns/call";
  p.events = {Event::kmalloc};
  p.value = 1;
  p.source = "t";
  m.params = {p};
  std::string err;
  REQUIRE(m.validate(&err));
  std::vector<MappedRow> rows(3);
  std::vector<PerOpCounts> per_op(3, PerOpCounts{});
  const double meas[] = {100, 110, 102}, model[] = {50, 60, 50};
  for (size_t i = 0; i < 3; ++i) {
    rows[i].row.id = "R-" + std::to_string(i);
    rows[i].value_ns = meas[i];
    rows[i].base = i != 1;
    rows[i].group = "g";
    per_op[i][static_cast<size_t>(Event::kmalloc)] = model[i];
  }
  rows[1].bases = {0, 2};  // what map_rows() resolves from the rule's base
  const Validation v = validate_rows(m, rows, per_op, FitSettings{});
  REQUIRE(v.effects.size() == 1);
  CHECK(v.effects[0].measured == Approx(110.0 / 101.0 - 1));
  CHECK(v.effects[0].model == Approx(0.2));
  CHECK(v.effects[0].bases == std::vector<size_t>{0, 2});
  CHECK(v.effects[0].agrees);
  // No stderr in this model: the interval is the point, and the measured
  // +8.9% lies outside it; the row intervals are points too.
  CHECK(v.effects[0].lo == Approx(0.2));
  CHECK(v.effects[0].hi == Approx(0.2));
  CHECK_FALSE(v.effects[0].covered);
  CHECK(v.rows_covered == 0);
  CHECK(v.mean_abs_err == Approx((0.5 + (1 - 60.0 / 110) + (1 - 50.0 / 102)) / 3));
}

TEST_CASE("effect intervals follow the posterior covariance", "[validate]") {
  // Two parameters, base = 10 x a, variant = 10 x a + 5 x b; a = 1 +- 0.1,
  // b = 2 +- 0.2, uncorrelated. effect = 5b / 10a = 1; d/da = -5b/(10a^2)
  // = -1, d/db = 5/(10a) = 0.5: sd = sqrt(0.01 + 0.01) = 0.1414.
  CostModel m;
  m.name = "t";
  for (const auto& [n, e, v, sd] : {std::tuple{"a", Event::kmalloc, 1.0, 0.1},
                                    std::tuple{"b", Event::kfree, 2.0, 0.2}}) {
    CostParam p;
    p.name = n;
    p.unit = "ns/call";
    p.events = {e};
    p.value = v;
    p.stderr_ns = sd;
    p.prior_sd = sd * 10;
    p.source = "t";
    m.params.push_back(p);
  }
  std::string err;
  REQUIRE(m.validate(&err));
  const EffectInterval iv = effect_interval(m, {10, 0}, {10, 5});
  CHECK(iv.effect == Approx(1.0));
  CHECK(iv.hi - iv.effect == Approx(kIntervalZ * std::sqrt(0.02)));
  CHECK_FALSE(iv.prior_based);
  // Perfectly correlated errors (r = +1) partly cancel: sd = |-0.1 + 0.1| = 0.
  m.corr = {1, 1, 1, 1};
  const EffectInterval c = effect_interval(m, {10, 0}, {10, 5});
  CHECK(c.hi - c.effect == Approx(0.0).margin(1e-9));
}

TEST_CASE("model inadequacy widens an effect between two configurations only", "[validate]") {
  // One parameter a = 1 +- 0 (exact) and inadequacy 1 %: base 10 a,
  // variant 12 a. effect = 0.2; var = 2 (1.2)^2 (0.01)^2, sd = 0.01697.
  CostModel m;
  m.name = "t";
  CostParam p;
  p.name = "a";
  p.unit = "ns/call";
  p.events = {Event::kmalloc};
  p.value = 1;
  p.stderr_ns = 0;
  p.prior_sd = 1;
  p.source = "t";
  m.params = {p};
  m.inadequacy = 0.01;
  std::string err;
  REQUIRE(m.validate(&err));
  const EffectInterval iv = effect_interval(m, std::vector<double>{10}, std::vector<double>{12});
  CHECK(iv.effect == Approx(0.2));
  CHECK(iv.hi - iv.effect == Approx(kIntervalZ * std::sqrt(2.0) * 1.2 * 0.01));
  // The same configuration measured twice: nothing can tell them apart.
  const EffectInterval same = effect_interval(m, std::vector<double>{10}, std::vector<double>{10},
                                              EffectRelation::same_config);
  CHECK(same.hi - same.lo == Approx(0.0).margin(1e-12));
  // Two distinct configurations (two policies, two kernels) with identical
  // counts: a mechanism the model lacks can still tell them apart, so the
  // interval has the width of two configurations' inadequacy (it was
  // [0, 0] for slab_nomerge on the RFC's workload).
  const EffectInterval twin = effect_interval(m, std::vector<double>{10}, std::vector<double>{10});
  CHECK(twin.effect == Approx(0.0).margin(1e-12));
  CHECK(twin.hi == Approx(kIntervalZ * std::sqrt(2.0) * 0.01));
  CHECK(twin.lo == Approx(-twin.hi));
  // Two workload shapes: the shapes' shared inadequacy does not cancel.
  m.inadequacy_shape = 0.03;
  const EffectInterval cross = effect_interval(m, std::vector<double>{10}, std::vector<double>{12},
                                               EffectRelation::cross_shape);
  CHECK(cross.hi - cross.effect ==
        Approx(kIntervalZ * 1.2 * std::sqrt(2 * 0.01 * 0.01 + 2 * 0.03 * 0.03)));
  CHECK(effect_interval(m, std::vector<double>{10}, std::vector<double>{12}).hi == Approx(iv.hi));
  m.inadequacy_shape = 0;
  // A time: (inadequacy x t)^2 on top of the parameters' variance.
  CHECK(m.predictive_variance({10}, 10.0) == Approx(0.01));
}

TEST_CASE("a time's interval is positive however wide, and t +- z sd when narrow",
          "[validate][interval]") {
  // Narrow: the log-normal interval is the Gaussian one to first order.
  const TimeInterval n = time_interval(1000, 10);
  CHECK(n.lo == Approx(1000 - kIntervalZ * 10).epsilon(2e-4));
  CHECK(n.hi == Approx(1000 + kIntervalZ * 10).epsilon(2e-4));
  // The 128-slot registration of the issue: 3.66 us +- 2.39 us was
  // [-0.26, 7.58] us as t +- 1.645 sd.
  const TimeInterval w = time_interval(3660, 2390);
  CHECK(3660 - kIntervalZ * 2390 < 0);
  CHECK(w.lo > 0);
  CHECK(w.lo < 3660);
  CHECK(w.lo == Approx(1149.83).epsilon(1e-5));  // docs/calibration.md: [1.15, 8.17] us
  CHECK(w.hi == Approx(8167.34).epsilon(1e-5));
  CHECK(w.hi > 3660);
  // Its mean and variance are t and sd^2: the log-normal's own moments.
  const double s2 = std::log1p((2390.0 / 3660) * (2390.0 / 3660));
  CHECK(std::sqrt(w.lo * w.hi) == Approx(3660 * std::exp(-s2 / 2)));
  for (double cv : {0.01, 0.3, 1.0, 3.0, 30.0}) {
    const TimeInterval t = time_interval(5, 5 * cv);
    INFO(cv);
    CHECK(t.lo > 0);
    CHECK(t.lo < 5);
    CHECK(t.hi > 5);
  }
  const TimeInterval exact = time_interval(7, 0);
  CHECK(exact.lo == 7);
  CHECK(exact.hi == 7);
}

TEST_CASE("every predicted interval of the shipped profile is positive, rows and phases",
          "[validate][interval]") {
  // validate's rows, and a policy column's time and phases, of the shipped
  // profile: the lifecycle at 128 slots (registration rests on priors).
  const CostModel& m = simcache::testing::default_profile();
  std::vector<double> g(m.params.size(), 0.0);
  for (size_t j = 0; j < g.size(); ++j)
    if (m.params[j].name == "io_sqe_files_register" || m.params[j].name == "idle_gap") g[j] = 1;
    else if (m.params[j].name == "file_table_slot") g[j] = 128;
  double t = 0;
  for (size_t j = 0; j < g.size(); ++j) t += g[j] * m.params[j].value;
  const double sd = std::sqrt(m.predictive_variance(g, t));
  INFO("t " << t << " sd " << sd);
  const TimeInterval ti = time_interval(t, sd);
  CHECK(ti.lo > 0);
  CHECK(ti.hi > t);
}

TEST_CASE("each effect is measured against the base its mapping rule names", "[validate]") {
  Mapping map;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  std::vector<MeasuredRow> rows;
  REQUIRE(read_measurements(repo_file("data/measurements/calibration.tsv"), &rows, &err));
  std::vector<MappedRow> mapped;
  INFO(err);
  REQUIRE(map_rows(map, rows, &mapped, nullptr, &err));
  auto bases_of = [&](const std::string& id) {
    std::vector<std::string> ids;
    for (const MappedRow& r : mapped)
      if (r.row.id == id)
        for (size_t b : r.bases) ids.push_back(mapped[b].row.id);
    return ids;
  };
  using V = std::vector<std::string>;
  CHECK(bases_of("SF-002") == V{"SF-001", "SF-003"});
  CHECK(bases_of("SF-103") == V{"SF-102", "SF-104"});
  CHECK(bases_of("SF-117") == V{"SF-116", "SF-119"});
  CHECK(bases_of("SF-135") == V{"SF-132"});
  CHECK(bases_of("SF-199") == V{"SF-197"});
  CHECK(bases_of("SF-289") == V{"SF-287"});
  CHECK(bases_of("WV-011") == V{"WV-010", "WV-012"});
  CHECK(bases_of("WV-058") == V{"WV-057", "WV-059"});
  size_t effects = 0;
  for (const MappedRow& r : mapped) {
    INFO(r.row.id);
    CHECK(r.base == r.bases.empty());
    for (size_t b : r.bases) CHECK(mapped[b].group == r.group);
    effects += !r.base;
  }
  CHECK(effects == 22);

  // A rule that is not a base must name one.
  std::string text = simcache::testing::read_text(repo_file("data/profiles/mapping.toml"));
  const std::string line = "base = '^parent e410ffca5886'\n";
  const size_t at = text.find(line);
  REQUIRE(at != std::string::npos);
  const TempFile nobase("nobase.toml", text.substr(0, at) + text.substr(at + line.size()));
  Mapping bad;
  CHECK_FALSE(load_mapping(nobase.path(), &bad, &err));
  CHECK(err.find(nobase.path() + ":") == 0);
  CHECK(err.find(".base: missing") != std::string::npos);
  // A base that matches no row of the group is an error naming the row.
  const std::string tsv = std::string(kHeader) +
                          row("X-1", "sparse-fill", kShapeF0, "U unpatched v6.18-rc4", "119") +
                          row("X-2", "sparse-fill", kShapeF0, "child 7029acd8a950", "114");
  std::vector<MeasuredRow> two;
  REQUIRE(parse_measurements(tsv, "two.tsv", &two, &err));
  CHECK_FALSE(map_rows(map, two, &mapped, nullptr, &err));
  CHECK(err.find("two.tsv:3:") == 0);
  CHECK(err.find("matches its base '^parent e410ffca5886'") != std::string::npos);
  CHECK(err.find('\n') == std::string::npos);
}

TEST_CASE("validate and calibrate name the rows whose simulation had failed ops", "[validate]") {
  // 4096 installs into a 64-slot table: 4032 of them fail with -ENFILE.
  const std::string tsv =
      std::string(kHeader) +
      row("X-1", "sparse-fill",
          "F0: slots=64 sparse, 4096 MSG_RING SEND_FD installs/round as 64 batches of QD=64, "
          "new target ring per round, 0 warmup + 1 measured rounds",
          "U unpatched v6.18-rc4", "119.4");
  const TempFile f("fail.tsv", tsv);
  for (const char* cmd : {"validate", "calibrate"}) {
    const CliOutcome r = run_cli({cmd, "--measurements", f.path()});
    INFO(cmd << ": " << r.err << r.out);
    REQUIRE(r.status == 0);
    const size_t at = r.out.find("failed ops: X-1 (");
    REQUIRE(at != std::string::npos);
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    CHECK(line.find("4032 x -ENFILE") != std::string::npos);
  }
}

TEST_CASE("ratio and negative rows are skipped with a reason, not errors", "[validate]") {
  const std::string tsv =
      "id\tworkload\tshape\tvariant\tmetric\tvalue\tunit\tkind\tsource\tnote\n"
      "X-1\tsparse-fill\tF0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 "
      "batches of QD=64\tparent e410ffca5886\tratio\t0.9\tratio\ttiming\ts\t\n"
      "X-2\tsparse-fill\tF0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 "
      "batches of QD=64\tparent e410ffca5886\tdelta\t-3\tns/install\ttiming\ts\t\n"
      "X-3\tsparse-fill\tF0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 "
      "batches of QD=64\tparent e410ffca5886\tmean ns/install\t102\tns/install\ttiming\ts\t\n"
      "X-4\tsparse-fill\tF0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 "
      "batches of QD=64\tparent e410ffca5886\tchange\t4.5\t%\ttiming\ts\t\n"
      "X-5\tsparse-fill\tF0: slots=4096 sparse, 4096 MSG_RING SEND_FD installs/round as 64 "
      "batches of QD=64\tparent e410ffca5886\tchange\t4.5\tpp\ttiming\ts\t\n";
  Mapping map;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  std::vector<MeasuredRow> rows;
  REQUIRE(parse_measurements(tsv, "x.tsv", &rows, &err));
  std::vector<MappedRow> mapped;
  std::vector<std::string> why;
  REQUIRE(map_rows(map, rows, &mapped, nullptr, &err, &why));
  REQUIRE(mapped.size() == 1);
  CHECK(mapped[0].row.id == "X-3");
  REQUIRE(why.size() == 4);
  CHECK(why[0].find("x.tsv:2:") == 0);
  CHECK(why[0].find("is a ratio") != std::string::npos);
  CHECK(why[1].find("not positive") != std::string::npos);
  // A bare "%" is a ratio too (a word boundary after it needs a word).
  CHECK(why[2].find("x.tsv:5:") == 0);
  CHECK(why[2].find("unit: '%' is a ratio, not a time") != std::string::npos);
  CHECK(why[3].find("unit: 'pp' is a ratio, not a time") != std::string::npos);
}

TEST_CASE("the metric column picks the lifecycle phase", "[validate]") {
  Mapping map;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  const std::string shape =
      "lifecycle paced-4096-64: 4096 sparse slots, 64 installs; new ring per op";
  auto phase_of = [&](const std::string& metric) {
    MeasuredRow r;
    r.file = "x.tsv";
    r.id = "L-1";
    r.workload = "sparse-fill";
    r.shape = shape;
    r.variant = "U unpatched v6.18-rc4";
    r.metric = metric;
    r.unit = "us";
    r.kind = "timing";
    r.value = 20;
    MappedRow out;
    std::string e;
    REQUIRE(map_row(map, r, &out, &e));
    return out.phase;
  };
  CHECK(phase_of("interval time per op (registration or removal start to fill end)").empty());
  CHECK(phase_of("registration time per op") == "registration");
  CHECK(phase_of("fill time per op") == "fill");
  CHECK(phase_of("refill time per op") == "refill");
}

TEST_CASE("calibrate refuses a fit that is not credible: exit 3, one line per cause, no profile",
          "[slow][validate][credible]") {
  // The shipped rows with the lifecycle rows five times slower.
  std::string text, line;
  {
    std::ifstream in(repo_file("data/measurements/calibration.tsv"));
    for (bool first = true; std::getline(in, line); first = false) {
      if (!first && (line.rfind("SF-25", 0) == 0 || line.rfind("SF-26", 0) == 0 ||
                     line.rfind("SF-28", 0) == 0)) {
        std::vector<std::string> f = simcache::sim::split_words(line, '\t');
        f[5] = fmt::format("{:.6f}", 5 * std::stod(f[5]));
        line.clear();
        for (size_t i = 0; i < f.size(); ++i) line += (i ? "\t" : "") + f[i];
      }
      text += line + "\n";
    }
  }
  const TempFile rows("slow_lifecycle.tsv", text);
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(getpid()) + "_refused.toml"))
                              .string();
  std::filesystem::remove(out);
  const CliOutcome r =
      run_cli({"calibrate", "--measurements", rows.path(), "--out", out, "--jobs", "2"});
  INFO(r.err);
  CHECK(r.status == 3);
  CHECK_FALSE(std::filesystem::exists(out));
  // The three slow rows are one shape's: their shared inadequacy (at its
  // cap, the cause below) takes their common shift, so their whitened
  // residual is no cause of its own.
  CHECK(r.err.find("gate-failed rows' residuals") == std::string::npos);
  CHECK(r.err.find("simcache: calibrate: not credible: the model inadequacy per workload shape "
                   "sits at its cap (30%)") != std::string::npos);
  // docs/calibration.md quotes these two lines. Under log-normal priors
  // no price of work is driven to 0, and none far below its prior.
  CHECK(r.err.find(" of its prior although ") == std::string::npos);
  CHECK(r.err.find("simcache: calibrate: rows that disagree most: SF-264 -69.69% (2.3 sd), ") !=
        std::string::npos);
  // The doc's second line is the fit's second cause, as printed.
  const std::string settle =
      "simcache: calibrate: not credible: the error model did not settle: its last "
      "relinearisation moved a speed factor or an error term by 1.11% (more than 1%), and the "
      "prices are that round's\n";
  CHECK(r.err.find(settle) != std::string::npos);
  const std::string doc = simcache::testing::read_text(repo_file("docs/calibration.md"));
  CHECK(doc.find("    simcache: calibrate: not credible: the model inadequacy per workload shape "
                 "sits at its cap (30%): the search could not place it\n") != std::string::npos);
  CHECK(doc.find("rows that disagree most: SF-264 -69.69% (2.3 sd), ...") != std::string::npos);
  CHECK(doc.find("    " + settle) != std::string::npos);
  CHECK(r.err.find("no profile written to " + out + " (--force writes it)") != std::string::npos);
  CHECK(r.out.find("NOT CREDIBLE: ") != std::string::npos);
  // Every stderr line is one cause or one of the two closing lines.
  size_t lines = 0;
  for (char c : r.err) lines += c == '\n';
  CHECK(lines == 2 + fit_problems_count(r.out));
  const CliOutcome forced = run_cli(
      {"calibrate", "--measurements", rows.path(), "--out", out, "--jobs", "2", "--force"});
  CHECK(forced.status == 3);
  REQUIRE(std::filesystem::exists(out));
  CHECK(simcache::testing::read_text(out).find("# NOT CREDIBLE (written with --force): ") !=
        std::string::npos);
  CostModel m;
  std::string err;
  CHECK(load_profile(out, &m, &err));
  std::filesystem::remove(out);
}

TEST_CASE("calibrate writes a profile that loads and reproduces its fit", "[validate]") {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(getpid()) + "_fit.toml"))
                              .string();
  const CliOutcome r =
      run_cli({"calibrate", "--measurements", repo_file("data/measurements/calibration.tsv"),
               "--out", out, "--name", "test-machine", "--jobs", "2"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find(" prior\n    no data: no calibration row counts") != std::string::npos);
  CHECK(r.out.find("measurement noise of a row") != std::string::npos);
  CHECK(r.out.find("model inadequacy") != std::string::npos);
  CHECK(r.out.find("rms relative residual") != std::string::npos);
  CostModel m;
  std::string err;
  REQUIRE(load_profile(out, &m, &err));
  CHECK(m.name == "test-machine");
  const CliOutcome v = run_cli({"validate", "--measurements",
                                repo_file("data/measurements/calibration.tsv"), "--profile", out,
                                "--jobs", "2"});
  REQUIRE(v.status == 0);
  std::filesystem::remove(out);
}

// [refits]: four fits and validations of a sitting (45 s under ASan);
// split_repeats and format_drift run under ASan in the two cases below.
TEST_CASE("validate --fit-on sets apart the rows that repeat a fitted configuration, as drift",
          "[validate][calib][refits]") {
  // The sixth sitting's validation rows, their own repeats (V-R-*) taken
  // out and two others put in, of a calibration row each, measured 25 %
  // and 15 % slower than in the calibration suite: the machine moved by
  // their median, +20 %. Both are set apart (24 rows validated, as
  // without them), and the rows divided by 1.2 judge as a file of those
  // rows divided by 1.2 judges as measured.
  const std::string cal = repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv");
  const std::string val = repo_file("data/measurements/vm-2cpu-sixth-validation.tsv");
  const auto with = retimed;
  const std::vector<std::string> c = file_lines(cal), v = file_lines(val);
  REQUIRE(v.size() > 20);  // the sitting's header and rows, read
  std::string f0, s0;
  for (const std::string& l : c) {
    if (l.rfind("C-F0-4096-4096\t", 0) == 0) f0 = l;
    if (l.rfind("C-S0-32\t", 0) == 0) s0 = l;
  }
  REQUIRE(!f0.empty());
  REQUIRE(!s0.empty());
  std::string anchored = v[0] + "\n" + with(f0, "V-X-F0", 1.25), divided = v[0] + "\n";
  size_t own = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].rfind("V-R-", 0) == 0) {
      ++own;
      continue;
    }
    anchored += v[i] + "\n", divided += with(v[i], "", 1 / 1.2);
  }
  CHECK(own == 2);
  anchored += with(s0, "V-X-S0", 1.15);
  const TempFile a("drift_anchored.tsv", anchored), d("drift_divided.tsv", divided);

  const CliOutcome o = run_cli({"validate", "--measurements", a.path(), "--fit-on", cal});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK(o.out.find("simcache validate: 24 rows of") != std::string::npos);
  CHECK(o.out.find("\nV-X-") == std::string::npos);  // not among the validated rows
  CHECK(o.out.find("drift between the suites: 2 rows repeat a configuration of the fitted rows "
                   "(set apart from the rows above; +- the ratio's standard error") !=
        std::string::npos);
  CHECK(o.out.find("against C-F0-4096-4096 ") != std::string::npos);
  CHECK(o.out.find(": +25.00% +- ") != std::string::npos);
  CHECK(o.out.find(": +15.00% +- ") != std::string::npos);
  // Two repeats: their mean; far beyond the rows' noise.
  CHECK(o.out.find("the machine moved by +20.00% (the repeats' mean; +- ") != std::string::npos);
  CHECK(o.out.find(": more than twice its error); each row above divided by it") !=
        std::string::npos);
  const CliOutcome plain = run_cli({"validate", "--measurements", d.path(), "--fit-on", cal});
  REQUIRE(plain.status == 0);
  const auto [inside, mae] = rows_inside_and_error(plain.out);
  CHECK(o.out.find(fmt::format("each row above divided by it: rows inside the 90% interval {}, "
                               "mean abs error {}%",
                               inside, mae)) != std::string::npos);
  // The plain file repeats nothing; a suite validated on itself shows no
  // drift block at all.
  CHECK(plain.out.find("drift between the suites: no row repeats a configuration of the fitted "
                       "rows") != std::string::npos);
  const CliOutcome self = run_cli({"validate", "--measurements", cal, "--fit-on", cal});
  REQUIRE(self.status == 0);
  CHECK(self.out.find("drift between") == std::string::npos);
  // Pooled sittings: nothing set apart, and the block says why.
  const std::string fifth = repo_file("data/measurements/vm-2cpu-fifth-calibration.tsv");
  const CliOutcome pooled =
      run_cli({"validate", "--measurements", a.path(), "--fit-on", cal + "," + fifth});
  REQUIRE(pooled.status == 0);
  CHECK(pooled.out.find("simcache validate: 26 rows of") != std::string::npos);
  CHECK(pooled.out.find("drift between the suites: not measured for pooled sittings") !=
        std::string::npos);
}

TEST_CASE("validate --fit-on: each row divided by the repeats that ran last before it",
          "[validate][calib][refits]") {
  // The sixth sitting's validation rows, their own repeats taken out, with
  // three anchors: a repeat of C-F0-4096-4096 first and of C-S0-32 last,
  // both as measured, and between them, ahead of the lifecycle rows, the
  // three rows of C-LS-128-128 30 % slower, as is every row from there to
  // the end (a machine slowed for a while). Divided by the anchor that ran
  // last before each, the rows judge exactly as the unslowed file does.
  const std::string cal = repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv");
  const std::string val = repo_file("data/measurements/vm-2cpu-sixth-validation.tsv");
  // A calibration row as a repeat: "C-" becomes "V-X-".
  const auto with = [](const std::string& line, const std::string& id, double scale) {
    return retimed(line, id.empty() ? id : id + line.substr(1, line.find('\t') - 1), scale);
  };
  const std::vector<std::string> c = file_lines(cal), v = file_lines(val);
  REQUIRE(v.size() > 20);
  std::string f0, s0, ls;
  for (const std::string& l : c) {
    if (l.rfind("C-F0-4096-4096\t", 0) == 0) f0 = l;
    if (l.rfind("C-S0-32\t", 0) == 0) s0 = l;
    if (l.rfind("C-LS-128-128", 0) == 0) ls += with(l, "V-X", 1.3);
  }
  REQUIRE(!f0.empty());
  REQUIRE(!s0.empty());
  REQUIRE(std::count(ls.begin(), ls.end(), '\n') == 3);
  std::string anchored = v[0] + "\n" + with(f0, "V-X", 1), plain = v[0] + "\n";
  double scale = 1;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].rfind("V-R-", 0) == 0) continue;
    if (v[i].rfind("V-LS-", 0) == 0 && scale == 1) anchored += ls, scale = 1.3;
    anchored += with(v[i], "", scale), plain += v[i] + "\n";
  }
  REQUIRE(scale == 1.3);
  anchored += with(s0, "V-X", 1);
  const TempFile a("order_anchored.tsv", anchored), p("order_plain.tsv", plain);
  const CliOutcome o = run_cli({"validate", "--measurements", a.path(), "--fit-on", cal});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK(o.out.find("drift between the suites: 5 rows repeat") != std::string::npos);
  const std::string order = "in file order (3 anchors: +0.00% +- ";
  const size_t at = o.out.find(order);
  REQUIRE(at != std::string::npos);
  const std::string line = o.out.substr(at, o.out.find('\n', at) - at);
  CHECK(line.find("%, +30.00% +- ") != std::string::npos);
  CHECK(line.find("%, +0.00% +- ") != std::string::npos);  // the closing anchor
  CHECK(line.find("): each row divided by the anchor that ran last before it: rows inside the "
                  "90% interval ") != std::string::npos);
  // The middle anchor's three phase rows are one run: the machine's move
  // is the median of three runs, 0.
  CHECK(o.out.find("the machine moved by +0.00% (the repeats' median over 3 runs, a run's "
                   "phases as one; ") != std::string::npos);
  const CliOutcome q = run_cli({"validate", "--measurements", p.path(), "--fit-on", cal});
  REQUIRE(q.status == 0);
  const auto [inside, mae] = rows_inside_and_error(q.out);
  CHECK(o.out.find(fmt::format("before it: rows inside the 90% interval {}, mean abs error {}%",
                               inside, mae)) != std::string::npos);
  // As measured, the slowed rows judge worse.
  CHECK(std::stod(rows_inside_and_error(o.out).second) > std::stod(mae) + 5);
  // One anchor, in the middle, and none before it: the rows ahead of it
  // are divided by the machine's move, the rest by it; the line says so.
  std::string middle = v[0] + "\n";
  scale = 1;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].rfind("V-R-", 0) == 0) continue;
    if (v[i].rfind("V-LS-", 0) == 0 && scale == 1) middle += ls, scale = 1.3;
    middle += with(v[i], "", scale);
  }
  const TempFile mf("order_middle.tsv", middle);
  const CliOutcome om = run_cli({"validate", "--measurements", mf.path(), "--fit-on", cal});
  REQUIRE(om.status == 0);
  INFO(om.out);
  CHECK(om.out.find("in file order (1 anchor: +30.00% +- ") != std::string::npos);
  CHECK(om.out.find("each row divided by the anchor that ran last before it (a row before every "
                    "anchor by the machine's move): rows inside") != std::string::npos);
  CHECK(om.out.find("the machine moved by +30.00% (the repeats' median in one run, its phases "
                    "as one; ") !=
        std::string::npos);
  // The sitting's rows as measured, between two repeats.
  const auto between = [&](const std::string& first, const std::string& last) {
    std::string out = v[0] + "\n" + first;
    for (size_t i = 1; i < v.size(); ++i)
      if (v[i].rfind("V-R-", 0) != 0) out += v[i] + "\n";
    return out + last;
  };
  // Two repeats of one shape, at the two ends: two runs, not one.
  const TempFile tf("order_twice.tsv", between(with(f0, "V-X", 1.1), with(f0, "V-Y", 1.3)));
  const CliOutcome ot = run_cli({"validate", "--measurements", tf.path(), "--fit-on", cal});
  REQUIRE(ot.status == 0);
  CHECK(ot.out.find("the machine moved by +20.00% (the repeats' mean; ") != std::string::npos);
  // Anchors only at the two ends: every row would be divided by the
  // opening one, and the line is not printed.
  const TempFile e("order_ends.tsv", between(with(f0, "V-X", 1), with(s0, "V-X", 1.1)));
  const CliOutcome oe = run_cli({"validate", "--measurements", e.path(), "--fit-on", cal});
  REQUIRE(oe.status == 0);
  CHECK(oe.out.find("the machine moved by") != std::string::npos);
  CHECK(oe.out.find("in file order") == std::string::npos);
}

TEST_CASE("validate --fit-on: an effect whose base is set apart as a repeat is not compared",
          "[validate][calib]") {
  // Seed rows of one sitting split in two: the fit takes SF-003; the
  // validated file holds SF-001, SF-002, SF-003 (one A/B/A group: SF-002
  // against SF-001 and SF-003, both of SF-003's configuration) and
  // SF-102/103/104 (another). SF-001 and SF-003 are set apart as
  // repeats, so SF-002 loses its bases and is validated as a row only;
  // SF-103 keeps SF-102 and SF-104 at their new places.
  std::string fit = simcache::testing::kHeader, val = simcache::testing::kHeader;
  {
    std::ifstream in(repo_file("data/measurements/calibration.tsv"));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      for (const char* id : {"SF-001", "SF-002", "SF-003", "SF-102", "SF-103", "SF-104"})
        if (line.rfind(std::string(id) + "\t", 0) == 0) val += line + "\n";
      if (line.rfind("SF-003\t", 0) == 0) fit += line + "\n";
    }
  }
  const TempFile f("repeat_fit.tsv", fit), v("repeat_val.tsv", val);
  const CliOutcome o = run_cli({"validate", "--measurements", v.path(), "--fit-on", f.path()});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK(o.out.find("simcache validate: 4 rows of") != std::string::npos);
  CHECK(o.out.find("\nSF-103   SF-102, SF-104 ") != std::string::npos);
  CHECK(o.out.find("\nSF-002       ") != std::string::npos);  // its row
  CHECK(o.out.find("\nSF-002   SF-") == std::string::npos);     // no effect line
  CHECK(o.out.find("drift between the suites: 2 rows repeat") != std::string::npos);
  CHECK(o.out.find("the rows' notes give no standard error") != std::string::npos);
}

TEST_CASE("a recorded condition leaves one configuration but a reading of another is no repeat",
          "[validate][calib]") {
  // Two rows that differ only in the kit's cache share (llc_kib, a
  // condition_params entry) are one configuration to the fit's error
  // model, but a repeat for the drift must record the same condition:
  // the model prices the other share differently.
  Mapping m;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
  REQUIRE(m.fit.condition_params ==
          std::vector<std::string>{"llc_kib", "pcp_high_min", "pcp_high_max"});
  MappedRow a;
  a.scenario = "poll-refill";
  a.kernel = "v6.18";
  a.policy = "unpatched";
  a.params = {{"qd", 4096}, {"llc_kib", 4096}};
  a.row.id = "C-POLL";
  a.row.metric = "mean ns/sqe";
  a.row.unit = "ns/sqe";
  a.value_ns = 1000;
  MappedRow b = a;
  b.params["llc_kib"] = 8192;
  b.row.id = "V-R-POLL";
  b.value_ns = 1100;
  CHECK(row_relation(a, b, m.fit) == EffectRelation::same_config);
  b.params["qd"] = 256;
  CHECK(row_relation(a, b, m.fit) == EffectRelation::cross_shape);
  b.params["qd"] = 4096;
  std::vector<MappedRow> rows{b};
  std::vector<PerOpCounts> per_op(1);
  std::vector<RowFailure> failed;
  CHECK(split_repeats(&rows, &per_op, &failed, {a}, m.fit).empty());
  REQUIRE(rows.size() == 1);
  rows[0].params["llc_kib"] = 4096;
  const std::vector<Repeat> r = split_repeats(&rows, &per_op, &failed, {a}, m.fit);
  REQUIRE(r.size() == 1);
  CHECK(rows.empty());
  CHECK(r[0].ratio() == Approx(1.1));
}
