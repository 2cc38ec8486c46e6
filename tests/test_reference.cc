// The reference (sim/calibrate/reference.h): rows the kit measured round
// by round beside one program are scaled by its reading, so that a spell
// of a slower machine in the middle of a suite leaves the fit as it was.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <fmt/format.h>

#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/reference.h"
#include "sim/calibrate/validate.h"
#include "sim/cost/cost.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

// A command run from the top directory, as a user's finds data/ (the
// directory put back however the test ends).
CliOutcome run_from_top(const std::vector<std::string>& args) {
  const simcache::testing::InSourceDir top("reference");
  return run_cli(args);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t next; (next = s.find(sep, at)) != std::string::npos; at = next + 1)
    out.push_back(s.substr(at, next - at));
  out.push_back(s.substr(at));
  return out;
}

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? std::string(1, sep) : "") + v[i];
  return out;
}

// The note's "NAME X" figure set to `to(X)`.
template <typename F>
std::string edit_figure(std::string note, const std::string& name, F to) {
  const size_t at = note.find("; " + name + " ");
  REQUIRE(at != std::string::npos);
  const size_t from = at + name.size() + 3, end = note.find(';', from);
  const double v = std::stod(note.substr(from, end - from));
  return note.replace(from, end - from, fmt::format("{:.6f}", to(v)));
}
std::string scale_figure(const std::string& note, const std::string& name, double f) {
  return edit_figure(note, name, [f](double v) { return v * f; });
}
std::string set_figure(const std::string& note, const std::string& name, double x) {
  return edit_figure(note, name, [x](double) { return x; });
}

// The sixth shipped sitting's calibration suite as the kit would have
// written it with the reference beside every row, on a machine a third of
// whose rows ran in a spell `slow` times slower: each row and its
// reference's reading (300 ns, or 300 x slow in the spell; slow = 2 keeps every scaled figure exact) move together.
// Row `drop_ref`'s reference is left out (-1: none). every = 1: every row
// in the spell.
std::string with_references(const std::string& tsv, double slow, int drop_ref = -1,
                            int every = 3) {
  std::vector<std::string> lines = split(tsv, '\n');
  // The reference's row: the sixth sitting's scalar control.
  std::string s0;
  for (const std::string& l :
       split(read_text(repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv")), '\n'))
    if (l.rfind("C-S0-32\t", 0) == 0) s0 = l;
  REQUIRE(!s0.empty());
  std::string out = lines[0] + "\n";
  int k = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    std::vector<std::string> c = split(lines[i], '\t');
    REQUIRE(c.size() == 10);
    const double f = k % every == every - 1 ? slow : 1.0;
    std::vector<std::string> r = split(s0, '\t');
    r[0] = c[0] + ".ref";
    r[5] = fmt::format("{:.6f}", 300 * f);
    // The reference's figures: median and fastest at its reading; no
    // standard error or drift of its own (the row's stays what it was).
    std::string note = set_figure(set_figure(r[9], "median", 300 * f), "fastest", 290 * f);
    const size_t se = note.find("; se ");
    note.replace(se, note.find(';', se + 1) - se, "; se 0.0000%");
    const size_t drift = note.find("; max role drift ");
    note.replace(drift, note.find(';', drift + 1) - drift, "; max role drift 0.000000%");
    r[9] = note + "; anchor of " + c[0] + ", round by round";
    if (k != drop_ref) out += join(r, '\t') + "\n";
    c[5] = fmt::format("{:.6f}", std::stod(c[5]) * f);
    c[9] = scale_figure(scale_figure(c[9], "median", f), "fastest", f) +
           "; paired round by round with anchor " + c[0] + ".ref";
    out += join(c, '\t') + "\n";
    ++k;
  }
  return out;
}

// A profile's parameters and error model, without its header.
std::string params_of(const std::string& toml) {
  const size_t at = toml.find("\n[[param]]");
  return at == std::string::npos ? std::string() : toml.substr(at);
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("simcache_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

// `text` as DIR/NAME in a directory of its own (profiles name the files
// they were fitted to: two fits compared keep one name).
struct TempDirFile {
  TempDirFile(const std::string& dir, const std::string& name, const std::string& text)
      : dir_(temp_path(dir)) {
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/" + name;
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempDirFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

}  // namespace

TEST_CASE("the reference: a spell a third of the rows ran in leaves the fit as it was",
          "[calibrate][reference][refits]") {
  const std::string tsv = read_text(repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv"));
  const TempDirFile as_shipped("ref_plain", "sitting.tsv", tsv);
  const TempDirFile slowed("ref_slowed", "sitting.tsv", with_references(tsv, 2.0));
  const std::string a = temp_path("ref_a.toml"), b = temp_path("ref_b.toml");
  const CliOutcome plain = run_cli({"calibrate", "--statistic", "median", "--measurements",
                                    as_shipped.path(), "--out", a});
  const CliOutcome scaled =
      run_cli({"calibrate", "--statistic", "median", "--measurements", slowed.path(), "--out", b});
  const std::string pa = read_text(a), pb = read_text(b);
  std::filesystem::remove(a), std::filesystem::remove(b);
  REQUIRE(plain.status == 0);
  REQUIRE(scaled.status == 0);
  // 31 rows, each beside a reading of 300 ns or 600: scaled to the median, 300.
  CHECK(scaled.out.find("the reference: 31 rows measured round by round beside wait-wake cgroup=1 cpu=1 cpus=2 cycles=512") !=
        std::string::npos);
  CHECK(scaled.out.find("(31 readings from 300.000 ns to 600.000 ns), each scaled by 300.000 ns "
                        "/ its reference's reading (the median of these readings)") !=
        std::string::npos);
  CHECK(plain.out.find("the reference:") == std::string::npos);
  REQUIRE_FALSE(params_of(pa).empty());
  CHECK(params_of(pa) == params_of(pb));
  CHECK(pb.find("\nreference_ns = 300\n") != std::string::npos);
  CHECK(pa.find("\nreference") == std::string::npos);

  // Without the scaling the same rows fit worse: the spell is in them.
  std::string raw = slowed.path() + ".raw";
  {
    std::string text = read_text(slowed.path()), kept;
    for (const std::string& l : split(text, '\n')) {
      if (l.empty() || l.find(", round by round") != std::string::npos &&
                           l.find("paired round by round") == std::string::npos)
        continue;
      std::vector<std::string> c = split(l, '\t');
      if (c.size() == 10) {
        const size_t p = c[9].find("; paired round by round");
        if (p != std::string::npos) c[9].erase(p);
      }
      kept += join(c, '\t') + "\n";
    }
    std::ofstream(raw) << kept;
  }
  const CliOutcome unscaled =
      run_cli({"calibrate", "--statistic", "median", "--measurements", raw, "--force"});
  std::filesystem::remove(raw);
  const auto rms = [](const std::string& report) {
    const size_t at = report.find("rms relative residual ");
    REQUIRE(at != std::string::npos);
    return std::stod(report.substr(at + 22));
  };
  CHECK(rms(unscaled.out) > 2 * rms(scaled.out));
}

TEST_CASE("the reference: validate scales to the reading the fit was scaled to",
          "[validate][reference][refits]") {
  const std::string cal_file = repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv");
  const std::string val_file = repo_file("data/measurements/vm-2cpu-sixth-validation.tsv");
  const TempDirFile c("ref_cal", "cal.tsv", with_references(read_text(cal_file), 2.0));
  // The validation suite ran in a spell throughout: its references read
  // 600 ns, its rows as much slower.
  const TempDirFile v("ref_val", "val.tsv", with_references(read_text(val_file), 2.0, -1, 1));
  const TempDirFile c0("ref_cal0", "cal.tsv", read_text(cal_file));
  const TempDirFile v0("ref_val0", "val.tsv", read_text(val_file));
  const std::string profile = temp_path("ref_fit.toml"), profile0 = temp_path("ref_fit0.toml");
  for (const auto& [rows, out] : {std::pair{c.path(), profile}, std::pair{c0.path(), profile0}})
    REQUIRE(run_cli({"calibrate", "--statistic", "median", "--measurements", rows, "--name",
                     "ref_fit", "--out", out})
                .status == 0);
  const auto validate = [](std::vector<std::string> args) {
    args.insert(args.begin(), {"validate", "--statistic", "median", "--measurements"});
    return run_cli(args);
  };
  const CliOutcome fit_on = validate({v.path(), "--fit-on", c.path()});
  const CliOutcome fit_on0 = validate({v0.path(), "--fit-on", c0.path()});
  const CliOutcome by_profile = validate({v.path(), "--profile", profile});
  const CliOutcome by_profile0 = validate({v0.path(), "--profile", profile0});
  std::filesystem::remove(profile), std::filesystem::remove(profile0);
  for (const CliOutcome* r : {&fit_on, &fit_on0, &by_profile, &by_profile0}) REQUIRE(r->status == 0);
  CHECK(fit_on.out.find("--fit-on the reference: 31 rows") != std::string::npos);
  CHECK(fit_on.out.find("the reference: 26 rows measured round by round beside wait-wake") !=
        std::string::npos);
  CHECK(fit_on.out.find("(26 readings from 600.000 ns to 600.000 ns), each scaled by 300.000 ns "
                        "/ its reference's reading (the median reading of --fit-on's "
                        "references)") != std::string::npos);
  CHECK(by_profile.out.find("each scaled by 300.000 ns / its reference's reading (the reading "
                            "profile ref_fit was fitted at)") != std::string::npos);
  // Judged as the sitting without the spell, either way.
  const auto line = [](const std::string& s, const std::string& what) {
    const size_t at = s.find(what);
    return at == std::string::npos ? std::string() : s.substr(at, s.find('\n', at) - at);
  };
  for (const char* what : {"coverage of the 90%", "summary: ", "the machine moved by"}) {
    INFO(what);
    CHECK_FALSE(line(fit_on0.out, what).empty());
    CHECK(line(fit_on.out, what) == line(fit_on0.out, what));
  }
  for (const char* what : {"coverage of the 90%", "summary: "}) {
    INFO(what);
    CHECK_FALSE(line(by_profile0.out, what).empty());
    CHECK(line(by_profile.out, what) == line(by_profile0.out, what));
  }
}

TEST_CASE("the reference: a row without its reference, a reference without its row, two programs",
          "[calibrate][reference][errors]") {
  const std::string tsv = read_text(repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv"));
  {
    const TempFile f("ref_missing.tsv", with_references(tsv, 1.0, 3));
    const CliOutcome r = run_cli({"calibrate", "--measurements", f.path()});
    CHECK(r.status == 2);
    // Row C-LP-4096-64-reg, the fourth row: line 8 after three pairs and the header.
    CHECK(r.err.find(f.path() + ":8:") != std::string::npos);
    CHECK(r.err.find("note: its anchor 'C-LP-4096-64-reg.ref' is not an anchor row of") !=
          std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  {
    std::string text = with_references(tsv, 1.0);
    const size_t at = text.find("; paired round by round with anchor C-F0-4096-64.ref");
    REQUIRE(at != std::string::npos);
    text.erase(at, std::strlen("; paired round by round with anchor C-F0-4096-64.ref"));
    const TempFile f("ref_orphan.tsv", text);
    const CliOutcome r = run_cli({"calibrate", "--measurements", f.path()});
    CHECK(r.status == 2);
    CHECK(r.err.find(f.path() + ":4:") != std::string::npos);
    CHECK(r.err.find("note: an anchor no row of its file is paired with (row C-F0-4096-64.ref)") !=
          std::string::npos);
  }
  {
    // Another program as one row's reference.
    std::string text = with_references(tsv, 1.0);
    const size_t at = text.find("\nC-F0-4096-64.ref\t");
    REQUIRE(at != std::string::npos);
    const size_t shape = text.find("512 cycles", at);
    text.replace(shape, 10, "256 cycles");
    const TempFile f("ref_two.tsv", text);
    const CliOutcome r = run_cli({"calibrate", "--measurements", f.path()});
    CHECK(r.status == 2);
    CHECK(r.err.find(f.path() + ":4:") != std::string::npos);
    CHECK(r.err.find("the rows of one set are scaled by one reference program") !=
          std::string::npos);
  }
  {
    // Paired rows, but no anchor in the file.
    std::string text, all = with_references(tsv, 1.0);
    for (const std::string& l : split(all, '\n'))
      if (!l.empty() && l.find(".ref\t") == std::string::npos) text += l + "\n";
    const TempFile f("ref_none.tsv", text);
    const CliOutcome r = run_cli({"calibrate", "--measurements", f.path()});
    CHECK(r.status == 2);
    CHECK(r.err.find(f.path() + ":2:") != std::string::npos);
    CHECK(r.err.find("note: its anchor 'C-F0-4096-4096.ref' is not a row of") !=
          std::string::npos);
  }
}

TEST_CASE("the reference: a profile names its reference program and reading together",
          "[profile][reference][errors]") {
  const std::string base = read_text(repo_file("tests/data/test-profile.toml"));
  const size_t at = base.find("\nname = ");
  REQUIRE(at != std::string::npos);
  for (const auto& [extra, expect] :
       std::vector<std::pair<std::string, std::string>>{
           {"reference = \"waitv\"\n", "reference: reference and reference_ns go together"},
           {"reference_ns = 300\n", "reference_ns: reference and reference_ns go together"},
           {"reference = \"waitv\"\nreference_ns = -1\n", "reference_ns: -1 is outside"}}) {
    std::string text = base;
    text.insert(at + 1, extra);
    const TempFile f("ref_profile.toml", text);
    CostModel m;
    std::string error;
    INFO(extra);
    CHECK_FALSE(load_profile(f.path(), &m, &error));
    CHECK(error.find(expect) != std::string::npos);
  }
  std::string text = base;
  text.insert(at + 1, "reference = \"waitv cycles=64\"\nreference_ns = 301.5\n");
  const TempFile f("ref_profile_ok.toml", text);
  CostModel m;
  std::string error;
  REQUIRE(load_profile(f.path(), &m, &error));
  CHECK(m.reference == "waitv cycles=64");
  CHECK(m.reference_ns == 301.5);
  CHECK(profile_toml(m, "").find("reference = \"waitv cycles=64\"\nreference_ns = 301.5\n") !=
        std::string::npos);
}

namespace {

// Lines of the eighth shipped sitting's validation suite, by id.
std::string eighth_line(const std::string& id) {
  for (const std::string& l :
       split(read_text(repo_file("data/measurements/vm-2cpu-eighth-validation.tsv")), '\n'))
    if (l.rfind(id + "\t", 0) == 0) return l;
  FAIL("no row " << id);
  return "";
}

// A note's "NAME X" figure ("median", "fastest", or the ratio's).
double figure(const std::string& note, const std::string& name) {
  const size_t at = note.find(name + " ");
  REQUIRE(at != std::string::npos);
  return std::stod(note.substr(at + name.size() + 1));
}

struct Scaled {
  bool ok = false;
  std::string error;
  std::vector<MappedRow> rows;
  std::vector<std::string> skipped;
  ReferenceScaling ref;
};

// The rows of `tsv` mapped, read as `s` and scaled (typical 0: their own).
Scaled scale_rows(const std::string& tsv, RowStatistic s, double typical = 0,
                  bool lenient = false) {
  static const Mapping map = [] {
    Mapping m;
    std::string err;
    REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &m, &err));
    return m;
  }();
  Scaled out;
  std::vector<MeasuredRow> rows;
  REQUIRE(parse_measurements(tsv, "t.tsv", &rows, &out.error));
  REQUIRE(map_rows(map, rows, &out.rows, lenient ? &out.skipped : nullptr, &out.error,
                   &out.skipped));
  REQUIRE(apply_row_statistic(s, &out.rows, &out.error));
  out.ok = apply_reference(&out.rows, map.fit, s, typical, "", lenient ? &out.skipped : nullptr,
                           &out.ref, &out.error);
  return out;
}

std::string header() {
  return split(read_text(repo_file("data/measurements/vm-2cpu-eighth-validation.tsv")), '\n')[0] +
         "\n";
}

}  // namespace

TEST_CASE("the reference: a kit row becomes its ratio round by round times the typical reading",
          "[reference]") {
  const std::string ref = eighth_line("V-F0-256-256.ref"), row = eighth_line("V-F0-256-256");
  const std::string ref_note = split(ref, '\t')[9], row_note = split(row, '\t')[9];
  const std::string tsv = header() + ref + "\n" + row + "\n";
  for (RowStatistic s : {RowStatistic::mean, RowStatistic::median}) {
    const Scaled m = scale_rows(tsv, s);
    INFO(m.error);
    REQUIRE(m.ok);
    REQUIRE(m.rows.size() == 1);
    const bool med = s == RowStatistic::median;
    const double reading = med ? figure(ref_note, "; median") : std::stod(split(ref, '\t')[5]);
    CHECK(m.ref.typical_ns == Approx(reading).epsilon(1e-12));
    const double ratio = figure(row_note, med ? ", median" : "round by round: mean");
    CHECK(m.rows[0].value_ns == Approx(ratio * reading).epsilon(1e-12));
    // Its spread is the ratio's now.
    CHECK(m.rows[0].row.note.find(fmt::format("; se {:.6f}%", figure(row_note, ", se"))) !=
          std::string::npos);
    // To a given reading instead.
    const Scaled g = scale_rows(tsv, s, 300);
    REQUIRE(g.ok);
    CHECK(g.rows[0].value_ns == Approx(ratio * 300).epsilon(1e-12));
    CHECK(g.ref.given);
  }
  // The fastest round: the row's over its reference's.
  const Scaled f = scale_rows(tsv, RowStatistic::fastest, 300);
  REQUIRE(f.ok);
  CHECK(f.rows[0].value_ns ==
        Approx(figure(row_note, "; fastest") * 300 / figure(ref_note, "; fastest")).epsilon(1e-12));
  // A ratio the reader cannot read is one error naming the note.
  std::string bad = row;
  bad.replace(bad.find(", median "), 9, ", medain ");
  const Scaled b = scale_rows(header() + ref + "\n" + bad + "\n", RowStatistic::median);
  CHECK_FALSE(b.ok);
  CHECK(b.error.find("t.tsv:3:") == 0);
  CHECK(b.error.find("note: the ratio to its anchor is not \"ratio to anchor ns round by round: "
                     "mean A, median B") != std::string::npos);
}

TEST_CASE("the reference: a lifecycle anchor's phase rows are set aside with it", "[reference]") {
  // A lifecycle program as the anchor: three anchor rows, the row paired
  // with the first.
  std::string anchor;
  for (const char* phase : {"", "-reg", "-fill"}) {
    std::vector<std::string> c = split(eighth_line(std::string("V-R-LS-128-128") + phase), '\t');
    c[0] = std::string("X-anchor") + phase;
    c[9] = c[9].substr(0, c[9].find("; paired round by round")) + "; anchor of X, round by round";
    anchor += join(c, '\t') + "\n";
  }
  std::vector<std::string> row = split(eighth_line("V-F0-256-256"), '\t');
  row[0] = "X";
  row[9].replace(row[9].find("anchor V-F0-256-256.ref"), 23, "anchor X-anchor");
  const Scaled m = scale_rows(header() + anchor + join(row, '\t') + "\n", RowStatistic::median);
  INFO(m.error);
  REQUIRE(m.ok);
  REQUIRE(m.rows.size() == 1);
  CHECK(m.rows[0].row.id == "X");
  CHECK(m.ref.references == 1);
  CHECK(m.ref.program.rfind("lifecycle ", 0) == 0);
  // Pooled after another sitting, the phase rows are X-anchor-reg@2 and
  // X-anchor-fill@2 (read_sittings' renaming) and still set aside.
  const TempFile one("ref_life1.tsv", header() + anchor + join(row, '\t') + "\n");
  const TempFile two("ref_life2.tsv", header() + anchor + join(row, '\t') + "\n");
  const CliOutcome pooled =
      run_cli({"validate", "--statistic", "median", "--measurements", one.path() + "," + two.path()});
  INFO(pooled.err);
  CHECK(pooled.status == 0);
  CHECK(pooled.out.find("the reference: 2 rows measured round by round beside lifecycle") !=
        std::string::npos);
  // An unused anchor whose id merely extends the used one's is no phase:
  // it names another partner, and no row is paired with it.
  std::vector<std::string> stray = split(eighth_line("V-F0-1024-1024.ref"), '\t');
  stray[0] = "X-anchor-reg";
  stray[9] = stray[9].substr(0, stray[9].find("; anchor of ")) + "; anchor of Y, round by round";
  const std::string first = anchor.substr(0, anchor.find('\n') + 1);
  const Scaled s2 = scale_rows(header() + first + join(stray, '\t') + "\n" + join(row, '\t') + "\n",
                               RowStatistic::median);
  CHECK_FALSE(s2.ok);
  CHECK(s2.error.find("t.tsv:3:") == 0);
  CHECK(s2.error.find("an anchor no row of its file is paired with (row X-anchor-reg)") !=
        std::string::npos);
}

TEST_CASE("the reference: --skip-unmapped leaves a row out with its anchor", "[reference]") {
  const std::string ref = eighth_line("V-F0-256-256.ref"), row = eighth_line("V-F0-256-256");
  const std::string other_ref = eighth_line("V-F0-1024-1024.ref"),
                    other = eighth_line("V-F0-1024-1024");
  std::vector<std::string> c = split(row, '\t');
  c[1] = "no-such-workload";
  // The row unmapped: its anchor goes with it; the other pair is scaled.
  const Scaled a = scale_rows(header() + ref + "\n" + join(c, '\t') + "\n" + other_ref + "\n" +
                                  other + "\n",
                              RowStatistic::median, 0, true);
  INFO(a.error);
  REQUIRE(a.ok);
  REQUIRE(a.rows.size() == 1);
  CHECK(a.rows[0].row.id == "V-F0-1024-1024");
  CHECK(a.ref.scaled == 1);
  REQUIRE(a.skipped.size() == 2);
  CHECK(a.skipped[1].find("t.tsv:2:") == 0);
  CHECK(a.skipped[1].find("an anchor no row of its file is paired with (row V-F0-256-256.ref): "
                          "left out") != std::string::npos);
  // The anchor unmapped: the row goes with it.
  std::vector<std::string> r = split(ref, '\t');
  r[1] = "no-such-workload";
  const Scaled b = scale_rows(header() + join(r, '\t') + "\n" + row + "\n" + other_ref + "\n" +
                                  other + "\n",
                              RowStatistic::median, 0, true);
  REQUIRE(b.ok);
  REQUIRE(b.rows.size() == 1);
  CHECK(b.rows[0].row.id == "V-F0-1024-1024");
  CHECK(b.skipped.back().find("its anchor 'V-F0-256-256.ref' is not an anchor row of t.tsv") !=
        std::string::npos);
  // Without --skip-unmapped the same anchor is an error.
  const Scaled strict = scale_rows(header() + ref + "\n" + other_ref + "\n" + other + "\n",
                                   RowStatistic::median);
  CHECK_FALSE(strict.ok);
  CHECK(strict.error.find("t.tsv:2:") == 0);
}

TEST_CASE("the reference: effects keep their bases when the anchors go, pooled after a paired file",
          "[validate][reference][refits]") {
  // calibration.tsv's effects after the eighth sitting's validation rows:
  // its rows move down by the anchors taken out.
  const std::string paired = repo_file("data/measurements/vm-2cpu-eighth-validation.tsv"),
                    seeds = repo_file("data/measurements/calibration.tsv");
  const CliOutcome after = run_cli(
      {"validate", "--measurements", paired + "," + seeds, "--skip-unmapped", "--max-work",
       "1000000000"});
  const CliOutcome alone =
      run_cli({"validate", "--measurements", seeds, "--skip-unmapped", "--max-work", "1000000000"});
  INFO(after.err);
  REQUIRE(after.status == 0);
  REQUIRE(alone.status == 0);
  const auto effects = [](const std::string& out) {
    const size_t at = out.find("summary: ");
    REQUIRE(at != std::string::npos);
    const size_t e = out.find(" effects", at);
    return out.substr(out.rfind(' ', e - 1) + 1, e - out.rfind(' ', e - 1) - 1);
  };
  CHECK(effects(after.out) == effects(alone.out));
  CHECK(std::stoi(effects(after.out)) > 10);
  // And two sittings of paired rows pooled: each file's rows find their
  // anchors under the ids read_sittings renamed (@2).
  const std::string twice = temp_path("eighth-again.tsv");
  std::filesystem::copy_file(paired, twice, std::filesystem::copy_options::overwrite_existing);
  const CliOutcome pooled =
      run_cli({"validate", "--measurements", paired + "," + twice, "--statistic", "median"});
  std::filesystem::remove(twice);
  REQUIRE(pooled.status == 0);
  CHECK(pooled.out.find("the reference: 64 rows measured round by round beside wait-wake") !=
        std::string::npos);
  CHECK(pooled.out.find("(52 readings from 283.671 ns to 440.810 ns)") != std::string::npos);
}

TEST_CASE("the reference: rows beside another program than the profile's are refused",
          "[validate][reference][errors]") {
  std::string profile = read_text(repo_file("tests/data/test-profile.toml"));
  profile.insert(profile.find("\nname = ") + 1,
                 "reference = \"wait-wake cycles=512 on v6.18\"\nreference_ns = 300\n");
  const TempFile p("ref_other.toml", profile);
  const TempFile rows("ref_other.tsv", header() + eighth_line("V-F0-256-256.ref") + "\n" +
                                           eighth_line("V-F0-256-256") + "\n");
  const CliOutcome r =
      run_cli({"validate", "--measurements", rows.path(), "--profile", p.path()});
  CHECK(r.status == 2);
  CHECK(r.err.find(rows.path() + ":2:") != std::string::npos);
  CHECK(r.err.find("the rows it is compared with were scaled by wait-wake cycles=512 on v6.18") !=
        std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("the reference: a root row beside its child twin is an effect against it, unscaled",
          "[reference]") {
  // The third Xeon sitting's paired runs: each root row's anchor is the
  // same poll program in the child memcg.
  const std::string pairs =
      read_text(repo_file("data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv"));
  std::vector<std::string> lines = split(pairs, '\n');
  const auto line_of = [&](const std::string& id) {
    for (const std::string& l : lines)
      if (l.rfind(id + "\t", 0) == 0) return l;
    FAIL("no row " << id);
    return std::string();
  };
  for (RowStatistic s : {RowStatistic::mean, RowStatistic::median, RowStatistic::fastest}) {
    INFO(row_statistic_name(s));
    const Scaled m = scale_rows(pairs, s);
    INFO(m.error);
    REQUIRE(m.ok);
    // Every row stays, none scaled; no reference program.
    REQUIRE(m.rows.size() == 8);
    CHECK(m.ref.references == 0);
    CHECK(m.ref.scaled == 0);
    CHECK(m.ref.twins == 4);
    CHECK(m.ref.line("") == "");
    CHECK(m.ref.twin_line(true) ==
          "the twins: 4 rows measured round by round beside the same program in another cgroup, "
          "each read as an effect against it, neither scaled (docs/measure.md, \"Charged and "
          "uncharged\")\n");
    for (size_t i = 0; i < m.rows.size(); ++i) {
      const MappedRow& r = m.rows[i];
      const std::string row = line_of(r.row.id), note = split(row, '\t')[9];
      const double as_read = s == RowStatistic::mean     ? std::stod(split(row, '\t')[5])
                             : s == RowStatistic::median ? figure(note, "; median")
                                                         : figure(note, "; fastest");
      CHECK(r.value_ns == Approx(as_read).epsilon(1e-12));
      if (r.row.id.find("-root-") == std::string::npos) {
        CHECK(r.twin_ratio == 0);
        continue;
      }
      // Its one base is its child twin, the row it was paired with.
      REQUIRE(r.bases.size() == 1);
      const MappedRow& child = m.rows[r.bases[0]];
      CHECK(note.find("paired round by round with anchor " + child.row.id) != std::string::npos);
      CHECK(child.params.at("cgroup") == 1);
      CHECK(r.params.at("cgroup") == 0);
      if (s == RowStatistic::fastest) {
        CHECK(r.twin_ratio == Approx(r.value_ns / child.value_ns).epsilon(1e-12));
      } else {
        CHECK(r.twin_ratio ==
              Approx(figure(note, s == RowStatistic::median ? ", median" : "round by round: mean"))
                  .epsilon(1e-12));
        CHECK(r.twin_se == Approx(figure(note, ", se") / 100).epsilon(1e-12));
      }
    }
  }
  // Not twins: an anchor of the same configuration (here the child row
  // paired with a copy of itself) is a reference, and scales its row.
  const std::string child = line_of("M-POLL-4096-a"), root = line_of("M-POLL-4096-root-a");
  std::vector<std::string> c = split(root, '\t');
  c[2] = split(child, '\t')[2];  // the child's shape: cgroup=1 like its anchor
  c[8] = split(child, '\t')[8];
  const Scaled same = scale_rows(header() + child + "\n" + join(c, '\t') + "\n",
                                 RowStatistic::median);
  INFO(same.error);
  REQUIRE(same.ok);
  CHECK(same.ref.twins == 0);
  CHECK(same.ref.references == 1);
  REQUIRE(same.rows.size() == 1);
  CHECK(same.rows[0].twin_ratio == 0);
  // ... and one of another program too: the suites' root rows, each
  // beside the scalar reference, stay scaled rows.
  const std::string third =
      read_text(repo_file("data/measurements/vm-2cpu-xeon-third-calibration.tsv"));
  const Scaled suite = scale_rows(third, RowStatistic::median);
  REQUIRE(suite.ok);
  CHECK(suite.ref.twins == 0);
  CHECK(suite.ref.references > 0);
}

TEST_CASE("validate: twins' effects are judged against the model's interval of the difference",
          "[reference][validate][refits]") {
  const CliOutcome o =
      run_from_top({"validate", "--statistic", "median", "--measurements",
                    "data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv", "--fit-on",
                    "data/measurements/vm-2cpu-xeon-third-calibration.tsv"});
  INFO(o.err);
  REQUIRE(o.status == 0);
  // Four effects, root against child, even where the pair repeats a
  // fitted configuration (QD 4,096): none set apart as drift.
  CHECK(o.out.find("effects 4/4 (with measurement noise added: 4/4)") != std::string::npos);
  CHECK(o.out.find("no row repeats a configuration of the fitted rows") != std::string::npos);
  // docs/measure.md's prose: the model's charge 1.6 times the measured
  // one at QD 4,096, 1.6 to 2.3 times at QD 1,024; the rows predicted
  // 13 to 25 % below their measurements.
  std::istringstream in(o.out);
  double lo4 = 9, hi4 = 0, lo1 = 9, hi1 = 0, lo_err = 100, hi_err = 0;
  int effects = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("M-POLL-", 0) != 0) continue;
    std::istringstream w(l);
    std::string id, a, b;
    w >> id >> a;
    if (a.rfind("M-POLL-", 0) == 0) {  // an effect: measured, model
      std::string measured, model;
      w >> measured >> model;
      const double ratio = std::stod(model) / std::stod(measured);
      ++effects;
      double& lo = id.find("4096") != std::string::npos ? lo4 : lo1;
      double& hi = id.find("4096") != std::string::npos ? hi4 : hi1;
      lo = std::min(lo, ratio), hi = std::max(hi, ratio);
    } else {  // a row: measured ns, model ns [lo, hi] error
      const size_t pct = l.rfind('%');
      const double err = -std::stod(l.substr(l.rfind(' ', pct - 1) + 1));
      lo_err = std::min(lo_err, err), hi_err = std::max(hi_err, err);
    }
  }
  CHECK(effects == 4);
  CHECK(fmt::format("{:.1f} {:.1f} {:.1f} {:.1f}", lo4, hi4, lo1, hi1) == "1.6 1.6 1.6 2.3");
  CHECK(fmt::format("{:.0f} {:.0f}", lo_err, hi_err) == "13 24");
  const std::string doc = read_text(repo_file("docs/measure.md"));
  CHECK(doc.find("charge 1.6 times what the pairs measured at QD 4,096 and 1.6 to 2.3\ntimes at "
                 "QD 1,024") != std::string::npos);
  CHECK(doc.find("predicted 13 to 24 % below\ntheir measurements") != std::string::npos);
  CHECK(read_text(repo_file("docs/validation.md"))
            .find("POLL_ADD's charge 1.6 to 2.3 times what it costs") !=
        std::string::npos);
}

TEST_CASE("the reference: a twin in another unit, a lifecycle twin's phase rows, a fit of both kinds",
          "[reference]") {
  const std::string pairs =
      read_text(repo_file("data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv"));
  std::string child, root;
  for (const std::string& l : split(pairs, '\n')) {
    if (l.rfind("M-POLL-4096-a\t", 0) == 0) child = l;
    if (l.rfind("M-POLL-4096-root-a\t", 0) == 0) root = l;
  }
  REQUIRE((!child.empty() && !root.empty()));
  const Scaled ns = scale_rows(header() + child + "\n" + root + "\n", RowStatistic::median);
  REQUIRE(ns.ok);
  REQUIRE(ns.rows.size() == 2);
  const double in_ns = ns.rows[1].twin_ratio;
  CHECK(in_ns > 0.9);
  CHECK(in_ns < 1);
  // The root row written in us, as the kit writes a lifecycle's: its
  // ratio to the anchor's ns is a thousand times smaller; the effect is
  // the same.
  std::vector<std::string> us = split(root, '\t');
  us[5] = fmt::format("{:.9f}", std::stod(us[5]) / 1000);
  us[6] = "us/sqe";
  std::string note = us[9];
  for (const char* f : {"; median ", "; fastest "}) {
    const size_t at = note.find(f) + std::string(f).size();
    const size_t end = note.find(';', at);
    note.replace(at, end - at, fmt::format("{:.9f}", std::stod(note.substr(at, end - at)) / 1000));
  }
  for (const char* f : {"round by round: mean ", ", median "}) {
    const size_t at = note.find(f, note.find("ratio to anchor")) + std::string(f).size();
    const size_t end = note.find(',', at);
    note.replace(at, end - at, fmt::format("{:.12g}", std::stod(note.substr(at, end - at)) / 1000));
  }
  us[9] = note;
  const Scaled u = scale_rows(header() + child + "\n" + join(us, '\t') + "\n", RowStatistic::median);
  INFO(u.error);
  REQUIRE(u.ok);
  REQUIRE(u.rows.size() == 2);
  CHECK(u.rows[1].unit_ns == 1000);
  CHECK(u.rows[1].twin_ratio == Approx(in_ns).epsilon(1e-9));
  // A lifecycle twin: the anchor's three rows and the row's three, each
  // of the row's naming the whole anchor. The whole row is the twin; its
  // phase rows are left out with the anchor's, and counted.
  std::string life;
  const std::string cal =
      read_text(repo_file("data/measurements/vm-2cpu-xeon-third-calibration.tsv"));
  for (const char* who : {"A", "R"})
    for (const char* phase : {"", "-reg", "-fill"}) {
      std::vector<std::string> c;
      for (const std::string& l : split(cal, '\n'))
        if (l.rfind(std::string("C-LP-4096-64") + phase + "\t", 0) == 0) c = split(l, '\t');
      REQUIRE(c.size() == 10);
      c[0] = std::string(who) + phase;
      const std::string base = c[9].substr(0, c[9].find("; paired round by round"));
      if (std::string(who) == "A") {
        c[9] = base + "; anchor of R, round by round";
      } else {
        c[2].replace(c[2].find("child memcg"), 11, "root memcg");
        c[9] = base +
               "; paired round by round with anchor A; ratio to anchor ns round by round: mean "
               "0.00095, median 0.00095, se 1.0000%, max group CV 5.000000%, max role drift "
               "1.000000%";
      }
      life += join(c, '\t') + "\n";
    }
  const Scaled l = scale_rows(header() + life, RowStatistic::median);
  INFO(l.error);
  REQUIRE(l.ok);
  REQUIRE(l.rows.size() == 2);
  CHECK(l.rows[1].row.id == "R");
  CHECK(l.rows[1].twin_ratio == Approx(0.95).epsilon(1e-12));  // us over ns, in ns over ns
  CHECK(l.ref.twins == 1);
  CHECK(l.ref.twin_phases == 2);
  CHECK(l.ref.twin_line(true).find("; 2 phase rows of twins left out (their ratio is to the "
                                   "whole program)") != std::string::npos);
  // Twins alone are fitted at their anchors' figures times their ratios,
  // each pair sharing one level, and the line says so (twins beside rows
  // a reference scaled: "calibrate: twins beside rows a reference scaled
  // fit their ratios", below).
  const CliOutcome alone = run_from_top({"calibrate", "--statistic", "median", "--measurements",
                                         "data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv"});
  CHECK(alone.status == 0);
  CHECK(alone.out.find("the twins: 4 rows measured round by round beside the same program in "
                       "another cgroup, each fitted at its anchor's figure times that ratio, the "
                       "pair sharing one level, neither scaled") != std::string::npos);
  CHECK(alone.out.find("(a twin's measured figure above is its anchor's times the ratio measured "
                       "round by round, the figure the fit takes, not the twin's own)") !=
        std::string::npos);
  // Every anchor failed its stability gate: each pair is judged whole in
  // the gate-failed half (its twin's residual is mostly its anchor's level).
  CHECK(alone.out.find("no row passed its stability gate; 0.78 sd in rms over the 8 gate-failed "
                       "rows (4 of them twins, each judged with its anchor)") != std::string::npos);
  // By the fastest rounds a twin's ratio is its figure over its anchor's:
  // the fit takes the twin's own figure, and no line says otherwise.
  const CliOutcome fastest = run_from_top(
      {"calibrate", "--statistic", "fastest", "--measurements",
       "data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv"});
  CHECK(fastest.status == 0);
  CHECK(fastest.out.find("the twins: 4 rows") != std::string::npos);
  CHECK(fastest.out.find("(a twin's measured figure above") == std::string::npos);
  // Twins must differ in a twin parameter and in nothing else: the child
  // beside a root row of another queue depth is no twin.
  std::string other;
  for (const std::string& ln : split(pairs, '\n'))
    if (ln.rfind("M-POLL-1024-root-a\t", 0) == 0) other = ln;
  REQUIRE(!other.empty());
  std::vector<std::string> o = split(other, '\t');
  o[9].replace(o[9].find("anchor M-POLL-1024-a"), 20, "anchor M-POLL-4096-a");
  std::vector<std::string> a = split(child, '\t');
  a[9].replace(a[9].find("anchor of M-POLL-4096-root-a"), 28, "anchor of M-POLL-1024-root-a");
  const Scaled apart = scale_rows(header() + join(a, '\t') + "\n" + join(o, '\t') + "\n",
                                  RowStatistic::median);
  INFO(apart.error);
  REQUIRE(apart.ok);
  CHECK(apart.ref.twins == 0);
  CHECK(apart.ref.references == 1);
}

TEST_CASE("validate: the pairs suite's first run, as docs/validation.md quotes it",
          "[reference][validate][refits]") {
  // data/measurements/vm-2cpu-xeon-pairs-suite.tsv (scripts/measure
  // --suite pairs) against a fit of the third Xeon sitting's calibration
  // suite: each twin's measured and predicted effect, and whether it lies
  // inside its interval.
  const auto effects = [](const char* statistic) {
    const CliOutcome o = run_from_top({"validate", "--statistic", statistic, "--measurements",
                                       "data/measurements/vm-2cpu-xeon-pairs-suite.tsv", "--fit-on",
                                       "data/measurements/vm-2cpu-xeon-third-calibration.tsv"});
    INFO(o.err);
    REQUIRE(o.status == 0);
    CHECK(o.out.find("the twins: 4 rows measured round by round") != std::string::npos);
    std::string got;
    std::istringstream in(o.out);
    for (std::string l; std::getline(in, l);) {
      std::istringstream w(l);
      std::string id, base, measured, model;
      w >> id >> base >> measured >> model;
      if (id.rfind("P-", 0) != 0 || base.rfind("P-", 0) != 0) continue;
      got += id + " " + measured + " " + model +
             (l.find(" outside") == std::string::npos ? " inside" : " outside") + "\n";
    }
    return got;
  };
  CHECK(effects("median") ==
        "P-POLL-4096-root -8.51% -10.24% inside\n"
        "P-POLL-1024-root -9.36% -14.24% inside\n"
        "P-F0-4096-1024-root -0.29% +0.00% inside\n"
        "P-E0-0-root -0.23% +0.00% inside\n");
  const std::string mean = effects("mean");
  CHECK(mean.find("P-POLL-1024-root -0.26% -13.64% outside\n") != std::string::npos);
  // By the fastest rounds the fit's inadequacies are 0: the twins the
  // model counts alike carry its row noise instead of a zero-width
  // interval (docs/calibration.md, "model_row_noise").
  {
    const CliOutcome c = run_from_top({"calibrate", "--statistic", "fastest", "--measurements",
                                       "data/measurements/vm-2cpu-xeon-third-calibration.tsv"});
    const CliOutcome v = run_from_top({"validate", "--statistic", "fastest", "--measurements",
                                       "data/measurements/vm-2cpu-xeon-pairs-suite.tsv", "--fit-on",
                                       "data/measurements/vm-2cpu-xeon-third-calibration.tsv"});
    REQUIRE(c.status == 0);
    REQUIRE(v.status == 0);
    CHECK(c.out.find("measurement noise of a row 0.77%") != std::string::npos);
    CHECK(c.out.find("model inadequacy 0.00% per configuration (40 configurations) and 0.00% per "
                     "workload shape") != std::string::npos);
    for (const char* id : {"\nP-F0-4096-1024-root P-F0-4096-1024 ", "\nP-E0-0-root P-E0-0 "}) {
      INFO(id);
      const size_t at = v.out.find(id);
      REQUIRE(at != std::string::npos);
      const std::string line = v.out.substr(at + 1, v.out.find('\n', at + 1) - at - 1);
      CHECK(line.find("+0.00% [-1.79, +1.79]") != std::string::npos);
      CHECK(line.find(" outside") == std::string::npos);
    }
    CHECK(read_text(repo_file("docs/calibration.md"))
              .find("the third Xeon sitting's fastest rounds, sv = su = 0 and s = 0.77 %: the\n"
                    "pairs suite's F0 and e0 twins get +-1.79 %") != std::string::npos);
  }
  const std::string doc = read_text(repo_file("docs/validation.md"));
  for (const char* quoted :
       {"rounds: POLL_ADD -8.51 % at QD 4,096 and -9.36 % at QD 1,024 against\nthe model's "
        "-10.24 and -14.24 %, an F0 fill -0.29 % and an armed wait\n-0.23 % against the "
        "model's 0: all four inside their intervals. By\nmean rounds the QD 1,024 pair reads "
        "-0.26 %, outside"})
    CHECK(doc.find(quoted) != std::string::npos);
}

TEST_CASE("calibrate: twins beside rows a reference scaled fit their ratios, their levels free",
          "[reference][calib][refits]") {
  // The third Xeon sitting's calibration suite (scaled by its reference)
  // pooled with the pairs suite (four twins, unscaled, measured later):
  // each twin enters the fit as its ratio to its anchor, the pair's level
  // left to the model, so the charge's prices move toward the measured
  // ratios (docs/calibration.md, "Twins in a fit").
  const std::string cal = "data/measurements/vm-2cpu-xeon-third-calibration.tsv",
                    pairs = "data/measurements/vm-2cpu-xeon-pairs-suite.tsv",
                    held_out = "data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv";
  const CliOutcome c =
      run_from_top({"calibrate", "--statistic", "median", "--measurements", cal + "," + pairs});
  INFO(c.err);
  REQUIRE(c.status == 0);
  CHECK(c.out.find("the twins: 4 rows measured round by round beside the same program in another "
                   "cgroup, each fitted as its ratio to its anchor (the pair's level left free "
                   "beside rows scaled by a reference)") != std::string::npos);
  CHECK(c.out.find("rms relative residual 2.32% over 45 rows and twins' ratios (no anchor's "
                   "level)") != std::string::npos);
  // The twins' block: the measured ratio, the fitted one, the residual.
  const auto twin_line = [&](const std::string& id) {
    const size_t at = c.out.find("\n" + id + " ");
    REQUIRE(at != std::string::npos);
    return c.out.substr(at + 1, c.out.find('\n', at + 1) - at - 1);
  };
  CHECK(twin_line("P-POLL-4096-root")
            .rfind("P-POLL-4096-root P-POLL-4096    -8.51%    -8.14%  +0.40%", 0) == 0);
  CHECK(twin_line("P-POLL-1024-root")
            .rfind("P-POLL-1024-root P-POLL-1024    -9.36%   -10.64%  -1.42%", 0) == 0);
  // The passed half of the credibility test holds the four twins' ratios.
  CHECK(c.out.find("the fit is credible: rms 0.68% over the 1 rows that passed their stability "
                   "gate and 4 twins' ratios against") != std::string::npos);
  // The anchors' levels are no rows of the main table.
  CHECK(c.out.find("\nP-POLL-4096 ") == std::string::npos);

  // No measured level enters: the pairs' figures (values, medians,
  // fastest rounds) all 1.5 times larger, their ratios as measured, give
  // the same prices to the last digit.
  std::string scaled;
  for (const std::string& l : split(read_text(repo_file(pairs)), '\n')) {
    if (l.empty()) continue;
    std::vector<std::string> col = split(l, '\t');
    if (col[0] != "id") {
      col[5] = fmt::format("{:.9f}", std::stod(col[5]) * 1.5);
      col[9] = scale_figure(scale_figure(col[9], "median", 1.5), "fastest", 1.5);
    }
    scaled += join(col, '\t') + "\n";
  }
  const TempDirFile same("twins_same", "vm-2cpu-xeon-pairs-suite.tsv", read_text(repo_file(pairs))),
      slower("twins_slower", "vm-2cpu-xeon-pairs-suite.tsv", scaled);
  std::string fitted[2];
  for (int k = 0; k < 2; ++k) {
    const std::string out = temp_path(fmt::format("twins_fit{}.toml", k));
    const CliOutcome f =
        run_from_top({"calibrate", "--statistic", "median", "--measurements",
                      cal + "," + (k ? slower.path() : same.path()), "--out", out});
    REQUIRE(f.status == 0);
    const std::string text = read_text(out);
    // The header's rms is over the rows and the twins' ratios.
    CHECK(text.find("\n# (49 rows, rms relative residual 2.32% over 45 rows and twins' ratios; ") !=
          std::string::npos);
    fitted[k] = params_of(text);
    std::filesystem::remove(out);
  }
  REQUIRE(!fitted[0].empty());
  CHECK(fitted[0] == fitted[1]);

  // Out of sample: the third sitting's own paired runs (two of each POLL
  // shape, not fitted), judged against the fit with the pairs and
  // without them. The effects' mean abs error falls by each statistic.
  std::string coverage, intervals, outside;
  const auto effect_error = [&](const char* statistic, const std::string& fit_on) {
    const CliOutcome v = run_from_top({"validate", "--statistic", statistic, "--measurements",
                                       held_out, "--fit-on", fit_on});
    INFO(v.err);
    REQUIRE(v.status == 0);
    const size_t at = v.out.find("4 effects, mean abs error ");
    REQUIRE(at != std::string::npos);
    const size_t cov = v.out.find("effects ", v.out.find("coverage of the 90%"));
    REQUIRE(cov != std::string::npos);
    coverage +=
        std::string(statistic) + " " + v.out.substr(cov, v.out.find('\n', cov) - cov) + "\n";
    const std::string error = v.out.substr(at + 26, v.out.find(" pp", at) - at - 26);
    if (std::string(statistic) != "median") return error;
    for (const char* id :
         {"\nM-POLL-4096-root-a M-POLL-4096-a ", "\nM-POLL-1024-root-a M-POLL-1024-a "}) {
      const size_t l = v.out.find(id);
      REQUIRE(l != std::string::npos);
      const size_t b = v.out.find('[', l);
      // The model's figure before its interval, then the interval.
      const size_t m = v.out.rfind(' ', v.out.find_last_not_of(' ', b - 1));
      intervals += v.out.substr(m + 1, b - m - 2) + " " +
                   v.out.substr(b, v.out.find(']', b) - b + 1) + " ";
    }
    // The two QD 1,024 runs' measured ratios and their standard errors.
    for (const char* run : {"\nM-POLL-1024-root-a M-POLL-1024-a      -6.27% ",
                            "\nM-POLL-1024-root-b M-POLL-1024-b      -9.09% "}) {
      const size_t l = v.out.find(run);
      REQUIRE(l != std::string::npos);
      const std::string line = v.out.substr(l, v.out.find('\n', l + 1) - l);
      outside += line.find(" outside") != std::string::npos ? "outside " : "inside ";
      CHECK(line.find(std::string(run).find("-a ") != std::string::npos ? "pp  1.12%  "
                                                                         : "pp  1.29%  ") !=
            std::string::npos);
    }
    return error;
  };
  std::string got;
  for (const char* statistic : {"median", "mean", "fastest"}) {
    const std::string without = effect_error(statistic, cal),
                      with = effect_error(statistic, cal + "," + pairs);
    CHECK(std::stod(with) < std::stod(without));
    got += fmt::format("{} {} -> {}\n", statistic, without, with);
  }
  CHECK(got == "median 5.20 -> 2.35\nmean 5.53 -> 1.67\nfastest 5.37 -> 3.85\n");
  // Each statistic without the pairs, then with them.
  CHECK(coverage ==
        "median effects 4/4 (with measurement noise added: 4/4)\n"
        "median effects 3/4 (with measurement noise added: 3/4)\n"
        "mean effects 4/4 (with measurement noise added: 4/4)\n"
        "mean effects 4/4 (with measurement noise added: 4/4)\n"
        "fastest effects 3/4 (with measurement noise added: 4/4)\n"
        "fastest effects 4/4 (with measurement noise added: 4/4)\n");
  CHECK(intervals ==
        "-10.24% [-16.52, -3.97] -14.24% [-23.40, -5.09] -8.14% [-10.11, -6.17] "
        "-10.64% [-13.30, -7.98] ");
  // The QD 1,024 runs by median rounds: both inside without the pairs;
  // with them, the first (-6.27 %) outside.
  CHECK(outside == "inside inside outside inside ");
  // docs/calibration.md and docs/validation.md quote these figures.
  const std::string cal_doc = read_text(repo_file("docs/calibration.md")),
                    val_doc = read_text(repo_file("docs/validation.md"));
  CHECK(cal_doc.find("the pairs suite moves the POLL_ADD charge to -8.14 % at QD 4,096\nagainst "
                     "the measured -8.51 % (the calibration suite alone predicts\n-10.24 %), and "
                     "to -10.64 % at QD 1,024 against -9.36 % (-14.24 %).") != std::string::npos);
  CHECK(c.out.find("; 0.76% beyond it, a drift between sittings") != std::string::npos);
  for (const char* quoted :
       {"The model then puts the charge at -8.14 % at QD 4,096 and -10.64 % at\nQD 1,024",
        "abs error falls from 5.20 to 2.35 pp by median rounds, from 5.53 to 1.67\nby mean "
        "rounds and from 5.37 to 3.85 by fastest.",
        "by median rounds to [-10.11, -6.17] and [-13.30, -7.98] from\n[-16.52, -3.97] and "
        "[-23.40, -5.09]: 3 of the 4 measured charges lie\ninside by median rounds (3 with the "
        "measurement noise added), 4 by mean\nrounds and 4 by fastest.",
        "the two QD 1,024 runs read -6.27 and\n-9.09 % within the hour, with standard errors of "
        "1.12 and 1.29 %",
        "(0.76 % in this fit), and the one charge outside is the first of these"})
    CHECK(val_doc.find(quoted) != std::string::npos);
}

TEST_CASE("validate --leave-out: the twins stay in every fit, and a lone twin or anchor tells nothing",
          "[reference][validate][refits]") {
  // A few of the third Xeon sitting's calibration rows (each beside its
  // reference) with two of the pairs suite's twins. Beside rows scaled by
  // a reference a pair is fitted by its ratio, its level free, so
  // --leave-out keeps the twins and anchors in every fit and leaves out
  // the other rows' units in turn: each unit is predicted by the fit
  // calibrate would make of the rest, every twin paired with its own
  // anchor. A twin or an anchor without its partner is fitted alone and
  // tells the fit nothing.
  const auto lines = [](const std::string& file, const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& l : split(read_text(repo_file(file)), '\n'))
      for (const std::string& id : ids)
        if (l.rfind(id + "\t", 0) == 0) out += l + "\n";
    return out;
  };
  const std::string tsv =
      header() +
      lines("data/measurements/vm-2cpu-xeon-third-calibration.tsv",
            {"C-E0-1000.ref", "C-E0-1000", "C-POLL-4096.ref", "C-POLL-4096", "C-S0-32.ref",
             "C-S0-32"}) +
      lines("data/measurements/vm-2cpu-xeon-pairs-suite.tsv",
            {"P-POLL-4096", "P-POLL-4096-root", "P-E0-0", "P-E0-0-root"});
  const Scaled sc = scale_rows(tsv, RowStatistic::median);
  INFO(sc.error);
  REQUIRE(sc.ok);
  const std::vector<MappedRow>& rows = sc.rows;
  REQUIRE(rows.size() == 7);
  std::vector<PerOpCounts> per_op;
  std::string err;
  REQUIRE(simulate_rows(rows, 1, &per_op, &err));
  Mapping map;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  const auto index_of = [&](const std::vector<MappedRow>& v, const std::string& id) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].row.id == id) return i;
    FAIL("no row " << id);
    return v.size();
  };
  // The rows but those named, their bases remapped as validate does.
  const auto without = [&](const std::vector<std::string>& ids, std::vector<MappedRow>* kept,
                           std::vector<PerOpCounts>* kept_op) {
    std::vector<size_t> at(rows.size(), SIZE_MAX);
    for (size_t i = 0; i < rows.size(); ++i)
      if (std::find(ids.begin(), ids.end(), rows[i].row.id) == ids.end())
        at[i] = kept->size(), kept->push_back(rows[i]), kept_op->push_back(per_op[i]);
    remap_bases(kept, at);
  };
  const FitReport all = fit_profile(prior_model(), map.fit, rows, per_op, "all");
  CHECK(all.levels_free);
  CHECK(all.twins == 2);
  CHECK(all.pair[index_of(rows, "P-POLL-4096-root")] == index_of(rows, "P-POLL-4096"));
  CHECK(all.pair[index_of(rows, "P-E0-0-root")] == index_of(rows, "P-E0-0"));
  const LeaveOut l = leave_out(prior_model(), map.fit, rows, per_op, false, 1);
  REQUIRE(l.units.size() == 3);  // the three calibration rows; the pairs stay
  CHECK(l.rows_all == 3);
  for (const LeaveOutUnit& u : l.units) {
    REQUIRE(u.rows.size() == 1);
    const std::string id = rows[u.rows[0]].row.id;
    INFO(id);
    CHECK(id.rfind("C-", 0) == 0);
    std::vector<MappedRow> rest;
    std::vector<PerOpCounts> rest_op;
    without({id}, &rest, &rest_op);
    const FitReport f = fit_profile(prior_model(), map.fit, rest, rest_op, "leave-out");
    CHECK(rest[f.pair[index_of(rest, "P-POLL-4096-root")]].row.id == "P-POLL-4096");
    CHECK(rest[f.pair[index_of(rest, "P-E0-0-root")]].row.id == "P-E0-0");
    REQUIRE(u.v.predicted.size() == 1);
    CHECK(u.v.predicted[0] == predict_ns(f.model, per_op[u.rows[0]]));
  }
  // Alone: a twin without its anchor, an anchor without its twin. Either
  // fit predicts what the fit without the pair predicts.
  for (const auto& [gone, lone] : {std::pair<std::string, std::string>{"P-POLL-4096", "P-POLL-4096-root"},
                                   {"P-E0-0-root", "P-E0-0"}}) {
    INFO(lone);
    std::vector<MappedRow> one, none;
    std::vector<PerOpCounts> one_op, none_op;
    without({gone}, &one, &one_op);
    without({gone, lone}, &none, &none_op);
    const FitReport f = fit_profile(prior_model(), map.fit, one, one_op, "alone"),
                    g = fit_profile(prior_model(), map.fit, none, none_op, "without");
    CHECK(f.levels_free);
    CHECK(f.twins == 1);
    CHECK(f.pair[index_of(one, lone)] == index_of(one, lone));
    CHECK_FALSE(f.counted[index_of(one, lone)]);
    for (const char* id : {"C-E0-1000", "C-POLL-4096", "C-S0-32"})
      CHECK(predict_ns(f.model, per_op[index_of(rows, id)]) ==
            Approx(predict_ns(g.model, per_op[index_of(rows, id)])).epsilon(1e-6));
  }
}
