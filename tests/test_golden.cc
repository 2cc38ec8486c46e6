// Golden reports: one small file per output format in tests/golden/, each
// produced by the command line tests/golden/goldens.txt gives for it. These
// tests only compare. A report that changes on purpose is rewritten by
// scripts/update-goldens, and its diff is reviewed like code.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "sim/run/build_info.h"
#include "sim/run/scenario.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::kTestProfile;
using simcache::testing::read_text;
using simcache::testing::repo_file;

namespace {

constexpr size_t kMaxLines = 1750;  // a JSON column is ~800 lines (counters, sites, config), the record ~60

// The goldens about the shipped profile, the only ones that run on it: the
// preset's report as a user sees it, the fit that makes the profile, and
// its validation (tests/golden/goldens.txt). Every other golden names the
// frozen test profile or `--profile none`, so a refit changes only these.
const std::set<std::string> kOnShippedProfile = {"sparse4096.txt", "calibrate.txt",
                                                 "validate.txt"};

struct Golden {
  std::string file;
  std::vector<std::string> args;
};

const std::vector<Golden>& manifest() {
  static const std::vector<Golden> m = [] {
    std::vector<Golden> out;
    std::istringstream in(read_text(repo_file("tests/golden/goldens.txt")));
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      Golden g;
      if (!(words >> g.file) || g.file[0] == '#') continue;
      for (std::string a; words >> a;) g.args.push_back(a);
      out.push_back(std::move(g));
    }
    return out;
  }();
  return m;
}

// The goldens that have a test case below, registered at start-up.
std::set<std::string>& tested() {
  static std::set<std::string> s;
  return s;
}
struct Register {
  explicit Register(const char* file) { tested().insert(file); }
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size())
    s.replace(p, from.size(), to);
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The first differing hunk, unified-diff style: 3 lines of context and at
// most 12 lines of each side.
std::string diff_excerpt(const std::string& want, const std::string& got) {
  const std::vector<std::string> a = split_lines(want), b = split_lines(got);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  const size_t a_end = a.size() - suf, b_end = b.size() - suf;
  if (pre == a_end && pre == b_end) return "(the texts differ only in line endings)\n";
  const size_t from = pre >= 3 ? pre - 3 : 0, kMax = 12, after = std::min<size_t>(suf, 3);
  std::ostringstream o;
  o << "@@ -" << from + 1 << "," << a_end + after - from << " +" << from + 1 << ","
    << b_end + after - from << " @@ (- golden, + now)\n";
  for (size_t i = from; i < pre; ++i) o << " " << a[i] << "\n";
  const auto side = [&](const std::vector<std::string>& v, size_t end, char mark) {
    for (size_t i = pre; i < end && i < pre + kMax; ++i) o << mark << v[i] << "\n";
    if (end > pre + kMax) o << mark << "... " << end - pre - kMax << " more lines\n";
  };
  side(a, a_end, '-');
  side(b, b_end, '+');
  for (size_t i = a_end; i < a_end + after; ++i) o << " " << a[i] << "\n";
  return o.str();
}

// Runs simcache's front end from the top directory with @TMP@ bound to a
// fresh directory, exactly as scripts/update-goldens runs the binary
// (InSourceDir puts both back, however the run ends).
CliOutcome run_golden(const Golden& g) {
  const simcache::testing::InSourceDir run("golden");
  std::vector<std::string> args;
  for (const std::string& a : g.args) args.push_back(replace_all(a, "@TMP@", run.tmp()));
  CliOutcome r = run_cli(args);
  r.out = replace_all(r.out, run.tmp(), "@TMP@");
  // The run record's commit changes with every commit: goldens hold
  // @COMMIT@ (full id in JSON and CSV, 12 digits in tables).
  const std::string commit = simcache::build_git_commit();
  if (commit.size() == 40) {
    r.out = replace_all(r.out, commit, "@COMMIT@");
    r.out = replace_all(r.out, commit.substr(0, 12), "@COMMIT@");
  }
  // So do the compiled-in tables' digests, with every edit of a table:
  // @SHA256@ (in full, and the 16 digits of the detail view).
  for (const simcache::BuiltTable& t : simcache::build_tables()) {
    r.out = replace_all(r.out, t.sha256, "@SHA256@");
    r.out = replace_all(r.out, std::string(t.sha256).substr(0, 16), "@SHA256@");
  }
  return r;
}

void check_golden(const std::string& file) {
  if (std::getenv("SIMCACHE_UPDATE_GOLDEN"))
    WARN("SIMCACHE_UPDATE_GOLDEN is ignored: only scripts/update-goldens rewrites goldens");
  const auto it = std::find_if(manifest().begin(), manifest().end(),
                               [&](const Golden& g) { return g.file == file; });
  REQUIRE(it != manifest().end());
  const CliOutcome r = run_golden(*it);
  INFO(r.err);
  REQUIRE(r.status == 0);
  // No warning either (e.g. a profile that lacks a parameter of the table).
  CHECK(r.err.empty());
  const std::string want = read_text(repo_file("tests/golden/" + file));
  std::string cmd = "simcache";
  for (const std::string& a : it->args) cmd += " " + a;
  if (r.out != want)
    FAIL("tests/golden/" << file << " differs from `" << cmd << "`:\n"
                         << diff_excerpt(want, r.out)
                         << "If the change is intended: scripts/update-goldens, then review "
                            "`git diff tests/golden`.");
}

// Every object key anywhere in `j`.
void keys_of(const nlohmann::json& j, std::set<std::string>* out) {
  if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      out->insert(k);
      keys_of(v, out);
    }
  else if (j.is_array())
    for (const auto& v : j) keys_of(v, out);
}

// The keys docs/output.md documents for the JSON format: the backquoted
// names in the first cell of each table row between "## JSON" and "## CSV".
std::set<std::string> documented_json_keys() {
  const std::string doc = read_text(repo_file("docs/output.md"));
  const size_t from = doc.find("\n## JSON"), to = doc.find("\n## CSV");
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  std::set<std::string> keys;
  for (const std::string& line : split_lines(doc.substr(from, to - from))) {
    if (line.rfind("| `", 0) != 0) continue;
    const std::string cell = line.substr(1, line.find('|', 1) - 1);
    for (size_t p = 0; (p = cell.find('`', p)) != std::string::npos;) {
      const size_t q = cell.find('`', p + 1);
      const std::string key = cell.substr(p + 1, q - p - 1);
      keys.insert(key.substr(key.rfind('.') + 1));  // total.slab -> slab
      p = q + 1;
    }
  }
  return keys;
}

std::vector<std::string> golden_lines(const std::string& file) {
  return split_lines(read_text(repo_file("tests/golden/" + file)));
}

// The value of a golden's `--profile`, "" without one (the shipped default).
std::string profile_arg(const Golden& g) {
  const auto it = std::find(g.args.begin(), g.args.end(), "--profile");
  return it == g.args.end() || it + 1 == g.args.end() ? "" : *(it + 1);
}

// A round number: 0, or m x 10^k with m an integer of 1..99 (at most two
// significant figures), as a person writes it, not as a fit gives it.
bool round_number(double v) {
  if (v == 0) return true;
  if (!(v > 0) || !std::isfinite(v)) return false;
  for (int k = -15; k <= 15; ++k) {
    const double m = v * std::pow(10.0, k);
    if (m >= 1 && m < 100 && std::abs(m - std::round(m)) <= 1e-9 * m) return true;
  }
  return false;
}

}  // namespace

#define GOLDEN_TEST(file, what)                      \
  const Register reg_##what{file};                   \
  TEST_CASE("golden: " file, "[golden]") { check_golden(file); }

GOLDEN_TEST("sparse4096.txt", sparse4096_txt)
GOLDEN_TEST("waitv.txt", waitv_txt)
GOLDEN_TEST("waitv_explain.txt", waitv_explain_txt)
GOLDEN_TEST("waitv_all.txt", waitv_all_txt)
GOLDEN_TEST("latency.txt", latency_txt)
GOLDEN_TEST("waitv.json", waitv_json)
GOLDEN_TEST("sparse_fill.json", sparse_fill_json)
GOLDEN_TEST("sparse_fill.csv", sparse_fill_csv)
GOLDEN_TEST("lifecycle.json", lifecycle_json)
GOLDEN_TEST("faults.json", faults_json)
GOLDEN_TEST("list.txt", list_txt)
GOLDEN_TEST("slabinfo.txt", slabinfo_txt)
GOLDEN_TEST("slabinfo_fill.txt", slabinfo_fill_txt)
GOLDEN_TEST("hist.txt", hist_txt)
GOLDEN_TEST("slabinfo_r.txt", slabinfo_r_txt)
GOLDEN_TEST("perf_stat.txt", perf_stat_txt)
GOLDEN_TEST("calibrate.txt", calibrate_txt)
GOLDEN_TEST("validate.txt", validate_txt)

TEST_CASE("golden: goldens.txt lists the files of tests/golden, each with a test", "[golden]") {
  std::set<std::string> listed, on_disk;
  for (const Golden& g : manifest()) CHECK(listed.insert(g.file).second);
  for (const auto& e : std::filesystem::directory_iterator(repo_file("tests/golden")))
    if (e.path().filename() != "goldens.txt") on_disk.insert(e.path().filename().string());
  CHECK(listed == on_disk);
  CHECK(listed == tested());
}


TEST_CASE("golden: only the goldens about the shipped profile run on it", "[golden][profile]") {
  std::set<std::string> on_shipped;
  for (const Golden& g : manifest()) {
    INFO(g.file << ": --profile '" << profile_arg(g) << "'");
    if (kOnShippedProfile.count(g.file)) {
      CHECK(profile_arg(g).empty());  // the default: the shipped profile
      on_shipped.insert(g.file);
    } else if (g.args != std::vector<std::string>{"--list"}) {  // --list prices nothing
      CHECK((profile_arg(g) == kTestProfile || profile_arg(g) == "none"));
    }
  }
  CHECK(on_shipped == kOnShippedProfile);  // each is still a golden
}

TEST_CASE("golden: the test profile is frozen: round numbers and one row per cost parameter",
          "[golden][profile]") {
  const CostModel& t = simcache::testing::test_profile();
  CHECK(t.name == "test");
  // One row per parameter of sim/cost/cost_params.def, pricing its events:
  // a new parameter is one new row, by hand.
  for (const CostParamSpec& s : default_param_specs()) {
    INFO(s.name);
    const CostParam* p = t.find(s.name);
    REQUIRE(p != nullptr);
    std::vector<Event> events;
    for (const std::string& ev : split_words(s.events)) {
      Event e;
      REQUIRE(event_by_name(ev, &e));
      events.push_back(e);
    }
    CHECK(p->events == events);
  }
  CHECK(t.params.size() == default_param_specs().size());  // and nothing else
  // Every number is round, the error model too; no correlations.
  for (const CostParam& p : t.params) {
    INFO(p.name << ": value " << p.value << ", stderr " << p.stderr_ns << ", prior " << p.prior
                << " +- " << p.prior_sd);
    CHECK(round_number(p.value));
    CHECK(round_number(p.stderr_ns));
    CHECK(round_number(p.prior));
    CHECK(round_number(p.prior_sd));
  }
  CHECK(round_number(t.inadequacy));
  CHECK(round_number(t.inadequacy_shape));
  CHECK(t.corr.empty());
  REQUIRE(t.noise.has_value());
  std::vector<NoiseEntry> noise = t.noise->entries;
  noise.push_back(t.noise->fallback);
  for (const NoiseEntry& e : noise) {
    INFO(e.scenario << ": round_cv " << e.round_cv << ", drift " << e.drift);
    CHECK(round_number(e.round_cv));
    CHECK(round_number(e.drift));
  }
  // The check tells round numbers from a fit's.
  CHECK(round_number(0.067));
  CHECK(round_number(220000));
  CHECK_FALSE(round_number(4096));
  CHECK_FALSE(round_number(46.9276));
  size_t fitted = 0;
  for (const CostParam& p : simcache::testing::default_profile().params)
    fitted += !round_number(p.value);
  CHECK(fitted > 0);
}

TEST_CASE("golden: files stay small, tables within 80 columns", "[golden]") {
  for (const Golden& g : manifest()) {
    const std::vector<std::string> lines = golden_lines(g.file);
    INFO(g.file);
    CHECK(lines.size() <= kMaxLines);
    CHECK_FALSE(lines.empty());
  }
  for (const char* name : {"sparse4096.txt", "waitv.txt", "waitv_explain.txt", "hist.txt",
                           "slabinfo_r.txt", "perf_stat.txt"}) {
    const std::vector<std::string> lines = golden_lines(name);
    for (size_t n = 0; n < lines.size(); ++n) {
      INFO(name << ":" << n + 1 << ": " << lines[n]);
      CHECK(lines[n].size() <= 80);
    }
  }
}

TEST_CASE("golden: the JSON goldens carry every key docs/output.md documents", "[golden][docs]") {
  std::set<std::string> seen;
  for (const Golden& g : manifest())
    if (g.file.size() > 5 && g.file.substr(g.file.size() - 5) == ".json")
      keys_of(nlohmann::json::parse(read_text(repo_file("tests/golden/" + g.file))), &seen);
  // `note` is only set by presets (next test); KASAN entries only appear
  // for a buggy policy (test_io_uring_* seed them).
  // LATENCY only appears when the many-CPU engine records latencies
  // (tests/test_outputs_latency.cc checks every key on synthetic ones;
  // "p99.9_ns" reads as "9_ns" here).
  const std::set<std::string> elsewhere = {"note",    "kind",   "ptr",    "cache",  "detail",
                                           "where",   "report", "latency", "count", "mean_ns",
                                           "min_ns",  "max_ns", "p50_ns", "p90_ns", "p99_ns",
                                           "9_ns",    "buckets",
                                           // --until-separated's WORKLOAD extension
                                           // (tests/test_tails.cc checks each key).
                                           "extension", "outcome", "rounds_from", "doublings",
                                           "9_ns_lo90", "9_ns_hi90",  // p99.9_ns_lo90
                                           // --seeds N's WORKLOAD seeds (test_tails.cc)
                                           "seeds", "first", "pooled",
                                           // columns on several kernels (test_outputs.cc)
                                           "kernel_profiles",
                                           // seed 003's iowait share (test_summary.cc)
                                           "iowait_interval90_ppm", "iowait_rests_on_priors"};
  const std::set<std::string> documented = documented_json_keys();
  CHECK(documented.size() > 30);
  for (const std::string& k : documented) {
    if (elsewhere.count(k)) continue;
    INFO(k);
    CHECK(seen.count(k) == 1);
  }
  for (const char* k :
       {"slab", "aliases", "objs_per_slab", "measured", "delta_pct", "significant"}) {
    INFO(k);
    CHECK(seen.count(k) == 1);
  }
}

TEST_CASE("golden: the preset's JSON gives each hypothesis its note", "[golden]") {
  const CliOutcome r = run_cli({"--scenario", "sparse4096", "--format", "json", "--jobs", "2"});
  REQUIRE(r.status == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  size_t notes = 0;
  for (const auto& w : j.at("workloads")) {
    const std::string label = w.at("label");
    INFO(label);
    CHECK(w.contains("note") == (label.rfind("hypothesis: ", 0) == 0));
    notes += w.contains("note");
  }
  // As many as the preset's items with a note (sim/run/scenarios/presets.cc).
  const PresetInfo* preset = ScenarioRegistry::get().find_preset("sparse4096");
  REQUIRE(preset != nullptr);
  const size_t want = static_cast<size_t>(std::count_if(
      preset->items.begin(), preset->items.end(), [](const PresetItem& i) { return !i.note.empty(); }));
  CHECK(want > 0);
  CHECK(notes == want);
}
