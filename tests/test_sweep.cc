// Run configurations, sweeps, shards and merges, and the plots: a config
// round-trips, a sharded or threaded sweep merges into the bytes of the
// unsharded one, and the HTML report renders in headless Chromium with
// every series' colour on screen.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "png_reader.h"
#include "model/kernel/machine.h"
#include "sim/cli/cli.h"
#include "sim/report/plot.h"
#include "sim/sweep/sweep_effects.h"
#include "test_run_util.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using Catch::Matchers::Contains;
// A missing file throws (the test fails), never reads as "".
using simcache::testing::read_text;
namespace fs = std::filesystem;

namespace {

// One ok record as the sweep writes it (trimmed params).
const std::string kRecord =
    "{\"accounted_bytes\":53248,\"config\":{\"policy.prefill\":\"off\"},"
    "\"cost_profile\":\"i7-12700KF\",\"grid\":{\"slots\":\"64\"},"
    "\"kasan\":0,\"kernel\":\"v6.13\",\"knobs\":{},\"label\":\"sparse-fill\",\"machine\":\"i7-12700KF\","
    "\"metrics\":{\"bytes_retained\":256,\"nodes_unused\":0},\"ns_per_op\":149.75,"
    "\"op_unit\":\"install\",\"params\":{\"slots\":64},\"point\":0,\"policy\":\"unpatched\","
    "\"resolved\":\"unpatched\",\"scenario\":\"sparse-fill\",\"seed\":1,\"status\":\"ok\","
    "\"timed_ops\":64,\"unaccounted_bytes\":131072,\"workload\":0,"
    "\"record\":{\"reproduce\":\"simcache sweep grid.toml\",\"git_commit\":\"unknown\","
    "\"grid_sha256\":\"\",\"cost_profile_sha256\":\"\"}}";

// A fresh directory, removed with everything in it at scope exit.
struct SweepDir {
  fs::path path;
  SweepDir() {
    path = fs::temp_directory_path() /
           ("simcache-sweep-test-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~SweepDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name, const std::string& text = "") const {
    const std::string p = (path / name).string();
    if (!text.empty()) std::ofstream(p, std::ios::binary) << text;
    return p;
  }
};

CliOutcome sweep_ok(const std::vector<std::string>& args) {
  CliOutcome o = run_cli(args);
  INFO(o.err);
  REQUIRE(o.status == 0);
  return o;
}

const char* kGrid =
    "scenario = \"sparse-fill\"\n"
    "kernels = [\"v6.13\", \"v6.18\"]\n"
    "policies = [\"unpatched\", \"node-slab+prefill\", \"prefill-grow\"]\n"
    "[params]\n"
    "slots = [256, 4096]\n"
    "installs = 64\n"
    "rounds = 1\n"
    "warmup = 0\n"
    "smoke = 0\n";

}  // namespace

TEST_CASE("config: a run configuration round-trips and runs as its command line",
          "[config]") {
  SweepDir d;
  const std::string cfg = d.file("run.toml",
                                 "scenario = \"sparse-fill\"\n"
                                 "policy = [\"node-slab+prefill\", \"prefill-grow\"]\n"
                                 "format = \"csv\"\n"
                                 "profile = \"none\"\n"
                                 "[set]\nslots = 1024\ninstalls = 64\nrounds = 1\nwarmup = 0\n"
                                 "[knobs]\nprefill_max = 512\n");
  const std::string dump1 = sweep_ok({"--config", cfg, "--dump-config"}).out;
  CHECK_THAT(dump1, Contains("prefill_max = 512"));
  CHECK_THAT(dump1, Contains("'node_alloc=slab+prefill=always+prefill_max=512'"));
  CHECK_THAT(dump1, Contains("teardown_lag = 1"));  // every parameter, resolved
  const std::string again = d.file("dump.toml", dump1);
  CHECK(sweep_ok({"--config", again, "--dump-config"}).out == dump1);
  const std::string by_flags =
      sweep_ok({"--scenario", "sparse-fill", "--policy", "node-slab+prefill,prefill-grow", "--format",
          "csv", "--profile", "none", "--set", "slots=1024", "--set", "installs=64", "--set",
          "rounds=1", "--set", "warmup=0", "--set", "policy.prefill_max=512"})
          .out;
  // The same report but for the run record's command line.
  auto no_cmd = [](const std::string& csv) {
    std::string out;
    std::istringstream in(csv);
    for (std::string l; std::getline(in, l);)
      if (l.find(",record,command_line,") == std::string::npos) out += l + "\n";
    return out;
  };
  CHECK(no_cmd(sweep_ok({"--config", cfg}).out) == no_cmd(by_flags));
  CHECK(no_cmd(sweep_ok({"--config", again}).out) == no_cmd(by_flags));
  CHECK(no_cmd(by_flags) != by_flags);  // the record line was there
  // The command line wins over the file.
  CHECK(sweep_ok({"--config", cfg, "--set", "policy.prefill_max=4096", "--dump-config"}).out ==
        sweep_ok({"--config", cfg, "--set", "policy.prefill_max=4096", "--dump-config"}).out);
  CHECK_THAT(sweep_ok({"--config", cfg, "--set", "policy.prefill_max=4096", "--dump-config"}).out,
             Contains("prefill_max = 4096"));
}

TEST_CASE("config: a bad configuration is one line with file, line and field, exit 2",
          "[config]") {
  SweepDir d;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"scenario = \"waitv\"\nseed = -1\n", ":2: seed: expected a non-negative integer ("},
      {"scenario = \"waitv\"\nbogus = 1\n", ":2: bogus: unknown field"},
      {"scenario = \"waitv\"\n[set]\nrounds = [1]\n",
       ":3: set.rounds: expected an integer, a string or a boolean\n"},
      {"scenario = \n", ":1: syntax: "},
      {"scenario = \"waitv\"\n[knobs]\nprefill_max = 0\n",
       ":3: knobs.prefill_max: policy.prefill_max = '0': expected 1..1048576 entries\n"},
      {"scenario = \"waitv\"\npolicy = [\"unpatched\", \"bogus\"]\n", ":2: policy: unknown policy 'bogus'"},
      {"scenario = \"nope\"\n", ":1: scenario: unknown scenario 'nope'"},
      {"kernel = \"v9\"\n", ":1: kernel: unknown kernel profile 'v9'"},
  };
  for (const auto& [text, want] : cases) {
    const std::string p = d.file("bad.toml", text);
    const CliOutcome o = run_cli({"--config", p});
    INFO(text);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Contains("simcache: " + p + want));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  }
  const CliOutcome o = run_cli({"--config", d.file("missing.toml")});
  CHECK(o.status == 2);
}

TEST_CASE("sweep: sharded and threaded sweeps merge into the same bytes, skips say why",
          "[sweep]") {
  SweepDir d;
  const std::string grid = d.file("grid.toml", kGrid);
  const std::string one = sweep_ok({"sweep", grid, "--jobs", "1"}).out;
  // 2 kernels x 2 slot counts x 3 policies = 12 points, one line each.
  CHECK(std::count(one.begin(), one.end(), '\n') == 12);
  CHECK(sweep_ok({"sweep", grid, "--jobs", "2"}).out == one);
  std::vector<std::string> merge = {"merge"};
  for (int i = 2; i >= 0; --i) {  // any order of shard files
    const std::string out = d.file("s" + std::to_string(i) + ".jsonl");
    sweep_ok({"sweep", grid, "--shard", std::to_string(i) + "/3", "--output", out});
    merge.push_back(out);
  }
  CHECK(sweep_ok(merge).out == one);
  // v6.13 has no node cache: both node policies' points are skipped.
  CHECK_THAT(one, Contains("\"policy\":\"node-slab+prefill\",\"reason\":\"node-slab/"
                           "node-slab-account need a kernel profile with a per-ring node cache"));
  size_t skipped = 0;
  for (size_t at = 0; (at = one.find("\"status\":\"skipped\"", at)) != std::string::npos; ++at)
    ++skipped;
  CHECK(skipped == 4);
  const std::string csv = sweep_ok({"merge", d.path.string() + "/s0.jsonl", "--format", "csv"}).out;
  CHECK(csv.rfind("point,workload,scenario,", 0) == 0);
}

TEST_CASE("sweep: a machines axis runs each point on its machine row", "[sweep]") {
  SweepDir d;
  std::string grid = "scenario = \"sparse-fill\"\nmachines = [";
  for (const iou::MachineInfo& m : iou::machines()) grid += "\"" + std::string(m.name) + "\",";
  grid += "]\n[params]\nslots = 256\ninstalls = 64\nrounds = 1\nwarmup = 0\n";
  const std::string out = sweep_ok({"sweep", d.file("m.toml", grid), "--profile", "none"}).out;
  std::istringstream in(out);
  size_t n = 0;
  for (std::string l; std::getline(in, l); ++n) {
    const nlohmann::json j = nlohmann::json::parse(l);
    const iou::MachineInfo* m = iou::machine_by_name(j.at("machine").get<std::string>(), nullptr);
    REQUIRE(m != nullptr);
    CHECK(m == &iou::machines()[n]);  // in table order, one point each
    // The machine's row is the default of every machine parameter.
    for (const iou::MachineField& f : iou::machine_fields())
      CHECK(j.at("params").at(std::string(f.name)).get<int64_t>() == m->value(f.name));
  }
  CHECK(n == iou::machines().size());
  const std::string bad = d.file("bad.toml", "scenario = \"sparse-fill\"\nmachine = \"pdp11\"\n");
  const CliOutcome o = run_cli({"sweep", bad});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains(bad + ": machine: unknown machine 'pdp11'"));
}

TEST_CASE("sweep: bad grids, shards and shard files fail with one line and exit 2",
          "[sweep]") {
  SweepDir d;
  const std::string g1 = d.file("g1.toml", "scenario = \"sparse-fill\"\nkernels = [\"v9\"]\n");
  CHECK_THAT(run_cli({"sweep", g1}).err, Contains(g1 + ": kernel: unknown kernel profile 'v9'"));
  const std::string g2 =
      d.file("g2.toml", "scenario = \"sparse-fill\"\npolicies = [\"prefill(max=0)\"]\n");
  CHECK_THAT(run_cli({"sweep", g2}).err,
             Contains(g2 + ": policy: policy.prefill_max = '0': expected 1..1048576"));
  const std::string g3 = d.file("g3.toml", "scenario = \"sparse-fill\"\ncolour = 1\n");
  CHECK_THAT(run_cli({"sweep", g3}).err, Contains(g3 + ":2: colour: unknown field"));
  CHECK(run_cli({"sweep", d.file("grid.toml", kGrid), "--shard", "3/3"}).status == 2);
  // A control character in a name is escaped, so the error stays one line
  // (fuzz_run_config found a raw CR here).
  const std::string g4 = d.file("g4.toml", "scenario = \"sp\\rse\"\nkernels = [\"v\\n9\"]\n");
  const CliOutcome o4 = run_cli({"sweep", g4});
  CHECK(o4.status == 2);
  CHECK_THAT(o4.err, Contains(g4 + ": scenario: unknown scenario 'sp\\rse'"));
  CHECK(std::count(o4.err.begin(), o4.err.end(), '\r') == 0);
  CHECK(std::count(o4.err.begin(), o4.err.end(), '\n') == 1);
  const std::string g5 = d.file("g5.toml", "scenario = \"sparse-fill\"\nkernels = [\"v\\r9\"]\n");
  const CliOutcome o5 = run_cli({"sweep", g5});
  CHECK(o5.status == 2);
  CHECK_THAT(o5.err, Contains(g5 + ": kernel: unknown kernel profile 'v\\r9'"));
  CHECK(std::count(o5.err.begin(), o5.err.end(), '\r') == 0);
  const std::string line = kRecord + "\n";
  const std::string dup = d.file("dup.jsonl", line + line);
  const CliOutcome o = run_cli({"merge", dup});
  CHECK(o.status == 2);
  CHECK(o.err == "simcache: " + dup + ":2: point 0 workload 0 appears twice\n");
  const std::string junk = d.file("junk.jsonl", "not json\n");
  CHECK_THAT(run_cli({"merge", junk}).err, Contains(junk + ":1: not a sweep record"));
}

TEST_CASE("sweep: merge checks each record's fields and types once, on reading", "[sweep]") {
  SweepDir d;
  const std::string out = d.file("out.csv");
  // A record missing a field the formatters need (the fuzzer's first crash).
  std::string missing = kRecord;
  const std::string unacc = ",\"unaccounted_bytes\":131072";
  REQUIRE(missing.find(unacc) != std::string::npos);
  missing.erase(missing.find(unacc), unacc.size());
  const std::string f1 = d.file("missing.jsonl", missing + "\n");
  CliOutcome o = run_cli({"merge", f1, "--format", "csv", "--output", out});
  CHECK(o.status == 2);
  CHECK(o.err == "simcache: " + f1 + ":1: field 'unaccounted_bytes': missing\n");
  CHECK(o.out.empty());
  CHECK_FALSE(fs::exists(out));
  // A field of the wrong type, on the second line of the second shard.
  std::string wrong = kRecord;
  wrong.replace(wrong.find("\"seed\":1"), 8, "\"seed\":\"1\"");
  const std::string good = d.file("good.jsonl", kRecord + "\n");
  const std::string f2 = d.file("wrong.jsonl", "\n" + wrong + "\n");
  o = run_cli({"merge", good, f2, "--output", out});
  CHECK(o.status == 2);
  CHECK(o.err == "simcache: " + f2 + ":2: field 'seed': expected an unsigned integer\n");
  CHECK_FALSE(fs::exists(out));
  // A map's entry of the wrong type names the key.
  std::string knob = kRecord;
  knob.replace(knob.find("\"knobs\":{}"), 10, "\"knobs\":{\"prefill_max\":8}");
  const std::string f3 = d.file("knob.jsonl", knob + "\n");
  CHECK(run_cli({"merge", f3}).err ==
        "simcache: " + f3 + ":1: field 'knobs': 'prefill_max': expected a string\n");
  // The valid record merges and formats.
  CHECK(sweep_ok({"merge", good, "--format", "table"}).out.find("unpatched") != std::string::npos);
  // A field with a carriage return in it is quoted (RFC 4180), as the
  // CSV report quotes it (merge once left it bare, splitting the row).
  std::string cr = kRecord;
  cr.replace(cr.find("\"knobs\":{}"), 10, "\"knobs\":{\"prefill_max\":\"8\\r9\"}");
  const std::string csv = sweep_ok({"merge", d.file("cr.jsonl", cr + "\n"), "--format", "csv"}).out;
  CHECK(csv.find("policy.prefill_max=8\r9\",") != std::string::npos);
  // Values one ulp apart (1e17, 1e17 + 16) once stalled the chart's tick loop.
  std::string a = kRecord, b = kRecord;
  a.replace(a.find("53248"), 5, "100000000000000000");
  b.replace(b.find("53248"), 5, "100000000000000016");
  b.replace(b.find("\"point\":0"), 9, "\"point\":1");
  const std::string near = d.file("near.jsonl", a + "\n" + b + "\n");
  sweep_ok({"merge", near, "--plot", d.file("near.svg"), "--output", out});
  CHECK(fs::exists(d.path / "near.svg"));
}

TEST_CASE("plots: the HTML report renders in headless Chromium with every series",
          "[plot]") {
  SweepDir d;
  const std::string grid = d.file("grid.toml", kGrid);
  const std::string html = d.file("report.html"), svg = d.file("report.svg");
  sweep_ok({"sweep", grid, "--html", html, "--plot", svg, "--output", d.file("out.jsonl")});
  // The same sweep draws the same bytes.
  sweep_ok({"sweep", grid, "--plot", d.file("again.svg"), "--output", d.file("out2.jsonl")});
  CHECK(read_text(svg) == read_text(d.file("again.svg")));
  const std::string page = read_text(html);
  // Series: v6.13 unpatched, then v6.18's three columns.
  for (const char* s : {"v6.13 unpatched", "v6.18 unpatched", "v6.18 node-slab+prefill",
                        "v6.18 prefill-grow", "Memory retained against time per operation",
                        "Time against slots", "Accounted against unaccounted slab memory"})
    CHECK_THAT(page, Contains(s));
  const std::string png = d.file("shot.png");
  const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu "
                          "--force-color-profile=srgb --hide-scrollbars --window-size=1100,1250 "
                          "--screenshot=" + png + " file://" + html + " >/dev/null 2>&1";
  INFO("needs chromium (scripts/bootstrap installs it): " << cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  testing::Png img;
  REQUIRE(testing::read_png(read_text(png), &img));
  CHECK(img.width == 1100);
  size_t non_white = 0;
  std::map<uint32_t, size_t> count;
  for (uint32_t px : img.rgb) {
    non_white += px != 0xffffff;
    ++count[px];
  }
  CHECK(non_white > 20000);  // not blank
  const auto& pal = plot_palette();
  for (size_t i = 0; i < pal.size(); ++i) {
    const uint32_t c = static_cast<uint32_t>(std::stoul(pal[i].substr(1), nullptr, 16));
    INFO("series " << i << " " << pal[i] << ": " << count[c] << " pixels");
    // A colour per policy (three), each with its markers and lines in
    // four charts.
    if (i < 3) CHECK(count[c] >= 4 * 100);
    else CHECK(count[c] < 20);
  }
}

namespace {
std::vector<nlohmann::json> parse_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The record of `policy` at slots=`slots`.
size_t find_point(const std::vector<nlohmann::json>& r, const std::string& policy,
                  const std::string& slots) {
  for (size_t i = 0; i < r.size(); ++i)
    if (r[i].at("policy") == policy && r[i].at("grid").at("slots") == slots) return i;
  FAIL("no point " << policy << " slots=" << slots);
  return 0;
}
}  // namespace

TEST_CASE("sweep: effects between points carry the report's intervals, across shapes both "
          "shapes' inadequacy",
          "[sweep]") {
  SweepDir d;
  const std::string grid = d.file("grid.toml",
                                  "scenario = \"sparse-fill\"\n"
                                  "policies = [\"unpatched\", \"node-slab+prefill\"]\n"
                                  "[params]\nslots = [256, 4096]\ninstalls = 64\n"
                                  "rounds = 1\nwarmup = 0\nsmoke = 0\n");
  const std::string svg = d.file("o.svg"), html = d.file("o.html");
  // The frozen test profile: its shape inadequacy (3 %) is not 0, so a
  // cross-shape interval must be wider than a same-shape one.
  const std::string profile = simcache::testing::repo_file("tests/data/test-profile.toml");
  const std::vector<nlohmann::json> recs = parse_lines(
      sweep_ok({"sweep", grid, "--profile", profile, "--plot", svg, "--html", html}).out);
  REQUIRE(recs.size() == 4);
  CostModel m;
  std::string err;
  REQUIRE(resolve_profile(profile, &m, &err));
  REQUIRE(m.inadequacy_shape > 0);
  const std::vector<PointEffects> fx = sweep_effects(recs, "slots", {{profile, &m}});
  REQUIRE(fx.size() == 4);

  // Against the first policy: the interval the report computes for the
  // same two columns (its "vs A"), from the run's own counts.
  const sim::RunResult run = simcache::testing::run_ok(
      "sparse-fill", {"unpatched", "node-slab+prefill"},
      {{"slots", "256"}, {"installs", "64"}, {"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}});
  const WorkloadResult& w = run.workloads.at(0);
  const PolicyTime ta = policy_time(m, w, w.policies.at(0)), tb = policy_time(m, w, w.policies.at(1));
  const EffectInterval want = effect_interval(m, ta, tb);
  const SweepEffect& vp = fx[find_point(recs, "node-slab+prefill", "256")].vs_policy;
  REQUIRE(vp.valid);
  CHECK_FALSE(vp.cross_shape);
  CHECK(vp.effect == Approx(want.effect).epsilon(1e-9));
  CHECK(vp.lo == Approx(want.lo).epsilon(1e-9));
  CHECK(vp.hi == Approx(want.hi).epsilon(1e-9));
  CHECK(vp.effect < -0.05);  // the node cache's prefill removes the allocator from the fill
  CHECK_FALSE(fx[find_point(recs, "unpatched", "256")].vs_policy.valid);  // the base itself

  // Against the smallest table size: another workload shape, so the
  // interval is the cross-shape one, wider than the same counts would
  // get as two configurations of one shape.
  const size_t a256 = find_point(recs, "unpatched", "256"), a4k = find_point(recs, "unpatched", "4096");
  const SweepEffect& vx = fx[a4k].vs_x;
  REQUIRE(vx.valid);
  CHECK(vx.cross_shape);
  CHECK_FALSE(fx[a256].vs_x.valid);
  std::vector<double> c256(m.params.size()), c4k(m.params.size());
  for (size_t i = 0; i < m.params.size(); ++i) {
    c256[i] = recs[a256].at("param_counts").value(m.params[i].name, 0.0);
    c4k[i] = recs[a4k].at("param_counts").value(m.params[i].name, 0.0);
  }
  const EffectInterval cross = effect_interval(m, c256, c4k, EffectRelation::cross_shape);
  const EffectInterval same = effect_interval(m, c256, c4k, EffectRelation::same_shape);
  CHECK(vx.lo == Approx(cross.lo).epsilon(1e-9));
  CHECK(vx.hi == Approx(cross.hi).epsilon(1e-9));
  CHECK(vx.hi - vx.lo > same.hi - same.lo + 0.01);
  // ns_per_op in the lines is what the counts price to.
  double t = 0;
  for (size_t i = 0; i < m.params.size(); ++i) t += c4k[i] * m.params[i].value;
  CHECK(t == Approx(recs[a4k].at("ns_per_op").get<double>()).epsilon(1e-9));

  // The charts draw them: a whisker per time point (4) and per change
  // point against the first policy (2).
  const std::string page = read_text(svg);
  size_t whiskers = 0;
  for (size_t at = 0; (at = page.find("class=\"interval\"", at)) != std::string::npos; ++at)
    ++whiskers;
  CHECK(whiskers == 6);
  // The page's table gives both effects with their intervals.
  const std::string h = read_text(html);
  CHECK_THAT(h, Contains("vs unpatched"));
  CHECK_THAT(h, Contains("vs smallest slots"));
  CHECK_THAT(h, Contains(fmt::format("{:+.1f}% [{:+.1f},{:+.1f}]", 100 * vp.effect, 100 * vp.lo,
                                     100 * vp.hi)));

  // A knob on the x axis keeps the workload: same-shape intervals.
  const std::string kgrid = d.file("k.toml",
                                   "scenario = \"sparse-fill\"\n"
                                   "policies = [\"node-slab+prefill\"]\nplot_x = \"prefill_max\"\n"
                                   "[params]\nslots = 4096\ninstalls = 64\n"
                                   "rounds = 1\nwarmup = 0\nsmoke = 0\n"
                                   "[knobs]\nprefill_max = [64, 4096]\n");
  const std::vector<nlohmann::json> krecs =
      parse_lines(sweep_ok({"sweep", kgrid, "--profile", profile}).out);
  const std::vector<PointEffects> kfx = sweep_effects(krecs, "prefill_max", {{profile, &m}});
  REQUIRE(kfx.size() == 2);
  REQUIRE(kfx[1].vs_x.valid);
  CHECK_FALSE(kfx[1].vs_x.cross_shape);
}

TEST_CASE("sweep: merge prices effects only with the profile the lines were priced with",
          "[sweep]") {
  SweepDir d;
  const std::string grid = d.file("grid.toml",
                                  "scenario = \"sparse-fill\"\n"
                                  "policies = [\"unpatched\", \"node-slab+prefill\"]\n"
                                  "[params]\ninstalls = 64\nrounds = 1\nwarmup = 0\nsmoke = 0\n");
  std::string lines = sweep_ok({"sweep", grid}).out;
  // The same lines with another profile's hash in their record.
  const std::string key = "\"cost_profile_sha256\":\"";
  for (size_t at = 0; (at = lines.find(key, at)) != std::string::npos; at += key.size())
    lines.replace(at + key.size(), 64, std::string(64, '0'));
  const std::string shard = d.file("s.jsonl", lines), svg = d.file("o.svg");
  const CliOutcome o = run_cli({"merge", shard, "--plot", svg});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains("point 0"));
  CHECK_THAT(o.err, Contains("record.cost_profile_sha256"));
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') <= 1);
  CHECK_FALSE(fs::exists(svg));
  // Without plots merge needs no profile.
  CHECK(run_cli({"merge", shard}).status == 0);
}
