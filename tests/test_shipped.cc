// The shipped data compiled in (sim/cost/shipped.h): the compiled-in
// profile and measured points are exactly what the readers make of the
// files; a run uses them only for the same bytes, so an edited profile,
// mapping or measurement file is read as the user wrote it, with its own
// hash in the record and the same exit-2 errors as before.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "sim/calibrate/measure.h"
#include "sim/cli/cli.h"
#include "sim/cost/cost.h"
#include "sim/cost/shipped.h"
#include "sim/cost/toml_reader.h"
#include "sim/report/record.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::lines;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempDir;

namespace {

// Where the shipped profile's msg_ring_send_fd value sits ("value = V\n"
// right after its name), and V: the edits below change that one price,
// whatever a refit made it.
size_t price_at(const std::string& text, double* v) {
  const std::string key = "name = \"msg_ring_send_fd\"\nvalue = ";
  const size_t k = text.find(key);
  if (k == std::string::npos) return std::string::npos;
  const size_t at = k + key.size() - 8;  // at "value = "
  *v = std::stod(text.substr(at + 8, text.find('\n', at) - at - 8));
  return at;
}
// Replaces the value at `at` (a "value = V" line) with `nv`.
void set_price(std::string* text, size_t at, double nv) {
  const size_t eol = text->find('\n', at);
  text->replace(at, eol - at, fmt::format("value = {}", nv));
}

const std::string kProfileRel = "profiles/i7-12700KF.toml";
const std::string kProfile = repo_file("data/" + kProfileRel);
const std::string kMapping = repo_file("data/profiles/mapping.toml");
const std::string kRows = repo_file("data/measurements/calibration.tsv");

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Bitwise: the compiled-in numbers are the parsed ones, not near them.
bool same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same_noise(const NoiseEntry& a, const NoiseEntry& b) {
  CHECK(a.scenario == b.scenario);
  CHECK(a.params == b.params);
  CHECK(same(a.round_cv, b.round_cv));
  CHECK(same(a.drift, b.drift));
  CHECK(a.source == b.source);
}

void check_same_model(const CostModel& a, const CostModel& b) {
  CHECK(a.name == b.name);
  CHECK(a.description == b.description);
  CHECK(a.statistic == b.statistic);
  CHECK(same(a.inadequacy, b.inadequacy));
  CHECK(same(a.inadequacy_shape, b.inadequacy_shape));
  CHECK(same(a.drift, b.drift));
  CHECK(same(a.row_noise, b.row_noise));
  CHECK(a.inadequacy_source == b.inadequacy_source);
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    const CostParam &p = a.params[i], &q = b.params[i];
    INFO(p.name);
    CHECK(p.name == q.name);
    CHECK(p.group == q.group);
    CHECK(p.unit == q.unit);
    CHECK(p.events == q.events);
    CHECK(same(p.value, q.value));
    CHECK(p.source == q.source);
    CHECK(p.pinned == q.pinned);
    CHECK(same(p.stderr_ns, q.stderr_ns));
    CHECK(same(p.prior, q.prior));
    CHECK(same(p.prior_sd, q.prior_sd));
    CHECK(p.prior_source == q.prior_source);
    CHECK(p.meaning == q.meaning);
  }
  REQUIRE(a.corr.size() == b.corr.size());
  for (size_t i = 0; i < a.corr.size(); ++i) CHECK(same(a.corr[i], b.corr[i]));
  REQUIRE(a.noise.has_value() == b.noise.has_value());
  if (a.noise) {
    check_same_noise(a.noise->fallback, b.noise->fallback);
    REQUIRE(a.noise->entries.size() == b.noise->entries.size());
    for (size_t i = 0; i < a.noise->entries.size(); ++i)
      check_same_noise(a.noise->entries[i], b.noise->entries[i]);
  }
}

// The header line's short hash: "... i7-12700KF sha256:661fc024" (8 or
// 12 digits, as the line's width allows).
std::string header_hash(const std::string& report) {
  const size_t at = report.find("sha256:");
  return at == std::string::npos ? "" : report.substr(at + 7, 8);
}

// A short run that shows measured rows (sparse-fill, SF-001..SF-003).
std::vector<std::string> run_args() {
  return {"--scenario", "sparse-fill", "--policy", "unpatched,node-slab", "--counts"};
}

}  // namespace

TEST_CASE("the compiled-in profile is what the parser makes of the shipped file",
          "[shipped][profile]") {
  const std::string text = read_text(kProfile);
  CostModel parsed, built;
  std::string error;
  REQUIRE(parse_profile(text, kProfile, &parsed, &error));
  REQUIRE(shipped_profile(kProfileRel, &built));
  check_same_model(parsed, built);
  CHECK(built.time_ns(Counters{}) == 0);
  CHECK_FALSE(shipped_profile("profiles/mapping.toml", &built));

  // Every compiled-in file is the file of the tree, with its SHA-256.
  REQUIRE(generated_shipped_files);
  size_t n = 0;
  for (const ShippedFile& f : generated_shipped_files()) {
    INFO(f.rel);
    const std::string bytes = read_text(repo_file("data/" + std::string(f.rel)));
    CHECK(f.bytes == bytes);
    CHECK(f.sha256 == sha256_hex(bytes));
    CHECK(shipped_match(bytes, false) == &f);
    CHECK(shipped_match(bytes, true) == nullptr);  // the file had a BOM: other bytes
    ++n;
  }
  CHECK(n == 3);
}

TEST_CASE("the compiled-in measured points are what the mapping makes of the shipped rows",
          "[shipped][measure]") {
  Mapping map;
  std::vector<MeasuredRow> rows;
  std::string error;
  REQUIRE(load_mapping(kMapping, &map, &error));
  REQUIRE(read_measurements(kRows, &rows, &error));
  const std::vector<MeasuredPoint> parsed = report_points(map, rows);
  std::vector<MeasuredPoint> built;
  REQUIRE(shipped_report_points(&built));
  REQUIRE(parsed.size() == built.size());
  CHECK(parsed.size() > 10);
  for (size_t i = 0; i < parsed.size(); ++i) {
    CHECK(parsed[i].scenario == built[i].scenario);
    CHECK(parsed[i].params == built[i].params);
    CHECK(parsed[i].kernel == built[i].kernel);
    CHECK(parsed[i].policy == built[i].policy);
    CHECK(same(parsed[i].value_ns, built[i].value_ns));
    CHECK(parsed[i].ids == built[i].ids);
  }
}

TEST_CASE("a copy of the shipped profile loads its compiled-in form, an edited one is parsed",
          "[shipped][profile]") {
  const TempDir d("shipped_profile");
  const std::string text = read_text(kProfile);
  put(d / "copy.toml", text);
  CostModel m;
  std::string error;
  REQUIRE(load_profile(d / "copy.toml", &m, &error));
  CHECK(m.path == d / "copy.toml");
  CHECK(m.sha256 == sha256_hex(text));  // known without hashing

  // One value edited: the edit is what the run uses.
  std::string edited = text;
  double shipped = 0;
  const size_t at = price_at(edited, &shipped);
  REQUIRE(at != std::string::npos);
  set_price(&edited, at, shipped + 10);
  put(d / "edited.toml", edited);
  CostModel e;
  REQUIRE(load_profile(d / "edited.toml", &e, &error));
  CHECK(e.sha256.empty());
  REQUIRE(e.find("msg_ring_send_fd"));
  CHECK(e.find("msg_ring_send_fd")->value == shipped + 10);
  CHECK(m.find("msg_ring_send_fd")->value == shipped);

  // Through the command line: the header names each file's own hash and
  // the edited price moves the time.
  auto args = run_args();
  args.insert(args.end(), {"--profile", d / "copy.toml"});
  const CliOutcome a = run_cli(args);
  args.back() = d / "edited.toml";
  const CliOutcome b = run_cli(args);
  REQUIRE(a.status == 0);
  REQUIRE(b.status == 0);
  CHECK(header_hash(a.out) == sha256_hex(text).substr(0, 8));
  CHECK(header_hash(b.out) == sha256_hex(edited).substr(0, 8));
  CHECK(b.out.find(sha256_hex(edited)) != std::string::npos);  // --counts: the full digest
  CHECK(a.out != b.out);

  // The same bytes after a byte-order mark: parsed (the same model), and
  // the record hashes the file as it is, BOM included.
  put(d / "bom.toml", "\xEF\xBB\xBF" + text);
  CostModel bm;
  REQUIRE(load_profile(d / "bom.toml", &bm, &error));
  CHECK(bm.sha256.empty());
  check_same_model(m, bm);
  args.back() = d / "bom.toml";
  const CliOutcome c = run_cli(args);
  REQUIRE(c.status == 0);
  CHECK(header_hash(c.out) == sha256_hex("\xEF\xBB\xBF" + text).substr(0, 8));
}

TEST_CASE("an edited shipped profile that breaks a range check is still exit 2, one line",
          "[shipped][profile]") {
  const TempDir d("shipped_bad");
  std::string text = read_text(kProfile);
  double shipped = 0;
  const size_t at = price_at(text, &shipped);
  REQUIRE(at != std::string::npos);
  set_price(&text, at, -shipped);
  put(d / "bad.toml", text);
  const size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n')) + 1;
  auto args = run_args();
  args.insert(args.end(), {"--profile", d / "bad.toml"});
  const CliOutcome r = run_cli(args);
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(escape_line(d / "bad.toml") + ":" + std::to_string(line) +
                   ": param 'msg_ring_send_fd': value") != std::string::npos);
}

TEST_CASE("edited measurements and mapping are read as written, with their own hashes",
          "[shipped][measure]") {
  const TempDir d("shipped_rows");
  const std::string rows = read_text(kRows), mapping = read_text(kMapping);
  // The profile's fit names its file: "in-sample" only beside that name.
  put(d / "calibration.tsv", rows);
  put(d / "mapping.toml", mapping);
  auto args = run_args();
  const CliOutcome shipped = run_cli(args);
  REQUIRE(shipped.status == 0);
  REQUIRE(shipped.out.find("  measured ") != std::string::npos);
  CHECK(shipped.out.find(sha256_hex(rows)) != std::string::npos);
  CHECK(shipped.out.find(sha256_hex(mapping)) != std::string::npos);

  // A byte-identical copy shows the same rows as the shipped file.
  args.insert(args.end(), {"--measurements", d / "calibration.tsv"});
  const CliOutcome copy = run_cli(args);
  REQUIRE(copy.status == 0);
  const auto measured_lines = [](const std::string& out) {
    std::string m;
    for (size_t at = out.find("  measured "); at != std::string::npos;
         at = out.find("  measured ", at + 1))
      m += out.substr(at, out.find('\n', at) - at) + "\n";
    return m;
  };
  CHECK(measured_lines(copy.out) == measured_lines(shipped.out));

  // SF-157 (column B's row) edited: its measured effect moves.
  std::string edited = rows;
  const size_t at = edited.find("\t118.406665\t");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 12, "\t128.406665\t");
  std::filesystem::create_directories(d / "e");  // the same name: only the value differs
  put(d / "e/calibration.tsv", edited);
  args.back() = d / "e/calibration.tsv";
  const CliOutcome e = run_cli(args);
  REQUIRE(e.status == 0);
  CHECK(measured_lines(e.out) != measured_lines(shipped.out));
  CHECK(e.out.find(sha256_hex(edited)) != std::string::npos);

  // A mapping with one more comment line maps the rows the same way;
  // the record carries its hash.
  put(d / "mapping2.toml", mapping + "# edited\n");
  auto margs = run_args();
  margs.insert(margs.end(), {"--mapping", d / "mapping2.toml"});
  const CliOutcome m = run_cli(margs);
  REQUIRE(m.status == 0);
  CHECK(measured_lines(m.out) == measured_lines(shipped.out));
  CHECK(m.out.find(sha256_hex(mapping + "# edited\n")) != std::string::npos);

  // A broken row is the same one-line error as before.
  put(d / "broken.tsv", rows + "SF-999\tsparse-fill\tx\ty\tmean ns/install\tnot-a-number\tns/install\n");
  args.back() = d / "broken.tsv";
  const CliOutcome b = run_cli(args);
  INFO(b.err);
  CHECK(b.status == 2);
  CHECK(lines(b.err) == 1);
  CHECK(b.err.find("broken.tsv:") != std::string::npos);
}

TEST_CASE("an edit to the data directory's own profile and rows is what a default run uses",
          "[shipped][profile][measure]") {
  const TempDir d("shipped_datadir");
  std::filesystem::create_directories(d / "profiles");
  std::filesystem::create_directories(d / "measurements");
  std::string profile = read_text(kProfile), rows = read_text(kRows);
  put(d / "profiles/mapping.toml", read_text(kMapping));
  put(d / "profiles/i7-12700KF.toml", profile);
  put(d / "measurements/calibration.tsv", rows);
  const char* old = std::getenv("SIMCACHE_DATA_DIR");
  const std::string saved = old ? old : "";
  ::setenv("SIMCACHE_DATA_DIR", d.p.c_str(), 1);
  const CliOutcome same = run_cli(run_args());
  // The shipped value of msg_ring_send_fd and SF-157's row, both edited.
  double price = 0;
  const size_t at = price_at(profile, &price);
  REQUIRE(at != std::string::npos);
  set_price(&profile, at, price + 10);
  put(d / "profiles/i7-12700KF.toml", profile);
  const size_t row = rows.find("\t118.406665\t");
  REQUIRE(row != std::string::npos);
  rows.replace(row, 12, "\t128.406665\t");
  put(d / "measurements/calibration.tsv", rows);
  const CliOutcome edited = run_cli(run_args());
  if (old)
    ::setenv("SIMCACHE_DATA_DIR", saved.c_str(), 1);
  else
    ::unsetenv("SIMCACHE_DATA_DIR");
  const CliOutcome shipped = run_cli(run_args());
  REQUIRE(same.status == 0);
  REQUIRE(edited.status == 0);
  REQUIRE(shipped.status == 0);
  CHECK(same.out == shipped.out);  // the same bytes elsewhere: the same report
  CHECK(edited.out != shipped.out);
  CHECK(header_hash(edited.out) == sha256_hex(profile).substr(0, 8));
  CHECK(edited.out.find(sha256_hex(rows)) != std::string::npos);
}
