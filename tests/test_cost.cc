// The cost layer: time is linear in the counts, costs never change a
// count, the parameter table of record covers every event, and profiles
// are read strictly.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "sim/cost/cost.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

Counters some_counts(uint64_t seed) {
  Counters c;
  for (size_t i = 0; i < kNumEvents; ++i) c.v[i] = (seed * 2654435761u + i * 40503u) % 1000;
  return c;
}

CostModel two_params() {
  CostModel m;
  m.name = "t";
  CostParam a;
  a.name = "a";
  a.unit = "ns/call";
  a.events = {Event::kmalloc, Event::kfree};
  a.value = 3;
  a.source = "test";
  CostParam b = a;
  b.name = "b";
  b.events = {Event::zero_bytes};
  b.value = 0.25;
  m.params = {a, b};
  std::string err;
  REQUIRE(m.validate(&err));
  return m;
}

}  // namespace

TEST_CASE("time is count x cost, summed over events", "[cost]") {
  const CostModel m = two_params();
  Counters c;
  c.add(Event::kmalloc, 10);
  c.add(Event::kfree, 4);
  c.add(Event::zero_bytes, 64);
  c.add(Event::list_lock, 1000);  // unpriced in this model
  CHECK(m.time_ns(c) == Approx(14 * 3 + 64 * 0.25));
  const std::vector<double> parts = m.contributions(c);
  CHECK(parts[0] == Approx(42));
  CHECK(parts[1] == Approx(16));
}

TEST_CASE("costs scale counts linearly", "[cost]") {
  const CostModel& m = simcache::testing::test_profile();
  const Counters a = some_counts(1), b = some_counts(2);
  Counters a3;
  for (size_t i = 0; i < kNumEvents; ++i) a3.v[i] = 3 * a.v[i];
  Counters ab = a;
  ab += b;
  CHECK(m.time_ns(a3) == Approx(3 * m.time_ns(a)).epsilon(1e-12));
  CHECK(m.time_ns(ab) == Approx(m.time_ns(a) + m.time_ns(b)).epsilon(1e-12));
  CHECK(m.time_ns(Counters{}) == 0.0);
  double sum = 0;
  for (double v : m.contributions(ab)) sum += v;
  CHECK(sum == Approx(m.time_ns(ab)).epsilon(1e-12));
}

TEST_CASE("changing a cost changes no count", "[cost]") {
  // Two profiles whose costs differ: the counts of the same run must be
  // identical, the times must not.
  CostModel m = simcache::testing::test_profile();
  for (CostParam& p : m.params) p.value = p.value * 3 + 1;
  const TempFile alt("alt_profile.toml", profile_toml(m, "test profile"));
  const std::vector<std::string> base = {
      "--scenario", "waitv",    "--set", "rounds=2", "--set",
      "cycles=16",  "--format", "json",  "--policy", "unpatched,waitv-account"};
  std::vector<std::string> a1 = base, a2 = base, a0 = base;
  a1.insert(a1.end(), {"--profile", simcache::testing::repo_file(simcache::testing::kTestProfile)});
  a2.insert(a2.end(), {"--profile", alt.path()});
  a0.insert(a0.end(), {"--profile", "none"});
  const CliOutcome r1 = run_cli(a1), r2 = run_cli(a2), r0 = run_cli(a0);
  REQUIRE(r1.status == 0);
  REQUIRE(r2.status == 0);
  REQUIRE(r0.status == 0);
  const auto j1 = nlohmann::json::parse(r1.out), j2 = nlohmann::json::parse(r2.out),
             j0 = nlohmann::json::parse(r0.out);
  for (size_t k = 0; k < 2; ++k) {
    const auto& p1 = j1["workloads"][0]["policies"][k];
    const auto& p2 = j2["workloads"][0]["policies"][k];
    const auto& p0 = j0["workloads"][0]["policies"][k];
    for (const char* scope : {"total", "timed", "rounds"}) {
      CHECK(p1[scope] == p2[scope]);
      CHECK(p1[scope] == p0[scope]);
    }
    CHECK(p1["time"]["per_op_ns"] != p2["time"]["per_op_ns"]);
    CHECK_FALSE(p0.contains("time"));
  }
}

TEST_CASE("every event is priced by exactly one parameter or listed unpriced", "[cost]") {
  const CostModel m = prior_model();
  std::vector<int> owners(kNumEvents, 0);
  for (const CostParamSpec& s : default_param_specs()) {
    for (const std::string& ev : split_words(s.events)) {
      Event e;
      INFO("parameter " << s.name << " prices unknown event " << ev);
      REQUIRE(event_by_name(ev, &e));
      ++owners[static_cast<size_t>(e)];
    }
    CHECK(std::string(s.unit).rfind("ns/", 0) == 0);
    CHECK(s.prior >= 0);
    CHECK_FALSE(std::string(s.prior_source).empty());
  }
  for (const UnpricedSpec& u : unpriced_events()) {
    Event e;
    INFO("unpriced entry names unknown event " << u.event);
    REQUIRE(event_by_name(u.event, &e));
    owners[static_cast<size_t>(e)] += 100;
  }
  for (size_t i = 0; i < kNumEvents; ++i) {
    INFO("event " << kEventInfo[i].name);
    CHECK((owners[i] == 1 || owners[i] == 100));
  }
  CHECK(m.params.size() == default_param_specs().size());
}

TEST_CASE("a profile survives a write and a read", "[cost][profile]") {
  CostModel m = simcache::testing::default_profile();
  std::string err;
  CostModel back;
  REQUIRE(parse_profile(profile_toml(m, "header\nline two"), "rt.toml", &back, &err));
  REQUIRE(back.params.size() == m.params.size());
  for (size_t i = 0; i < m.params.size(); ++i) {
    CHECK(back.params[i].name == m.params[i].name);
    CHECK(back.params[i].value == Approx(m.params[i].value).epsilon(1e-5));
    CHECK(back.params[i].events == m.params[i].events);
    CHECK(back.params[i].pinned == m.params[i].pinned);
    CHECK(back.params[i].source == m.params[i].source);
    CHECK(back.params[i].prior_sd == Approx(m.params[i].prior_sd).epsilon(1e-5));
    CHECK(back.params[i].prior_source == m.params[i].prior_source);
  }
  REQUIRE(back.corr.size() == m.corr.size());
  for (size_t i = 0; i < m.corr.size(); ++i)
    CHECK(back.corr[i] == Approx(m.corr[i]).epsilon(1e-8).margin(1e-12));
  REQUIRE(back.noise.has_value());
  CHECK(back.noise->entries.size() == m.noise->entries.size());
  CHECK(back.inadequacy == Approx(m.inadequacy).epsilon(1e-8));
  CHECK(m.drift > 0);
  CHECK(back.drift == Approx(m.drift).epsilon(1e-8));
}

TEST_CASE("model_drift widens a time's interval, not an effect's", "[cost][profile]") {
  CostModel m = simcache::testing::default_profile();
  const std::vector<double> g(m.params.size(), 0.0);
  m.drift = 0;
  const double base = m.predictive_variance(g, 100.0);
  m.drift = 0.05;
  CHECK(m.predictive_variance(g, 100.0) == Approx(base + 0.05 * 0.05 * 100.0 * 100.0));
  // An effect between two configurations: the same interval with or
  // without drift (a measured delta's noise is the noise model's).
  std::vector<double> b(m.params.size(), 0.0), v(m.params.size(), 0.0);
  b[0] = 10, v[0] = 11;
  const EffectInterval with = effect_interval(m, b, v, EffectRelation::cross_shape);
  m.drift = 0;
  const EffectInterval without = effect_interval(m, b, v, EffectRelation::cross_shape);
  CHECK(with.effect == Approx(0.1));
  CHECK(with.lo == without.lo);
  CHECK(with.hi == without.hi);
  // ... also where the row noise stands in for an inadequacy below it.
  m.inadequacy = 0, m.row_noise = 0.02, m.drift = 0.05;
  const EffectInterval floor_drift = effect_interval(m, b, v, EffectRelation::same_shape);
  m.drift = 0;
  const EffectInterval floor_only = effect_interval(m, b, v, EffectRelation::same_shape);
  CHECK(floor_drift.lo == floor_only.lo);
  CHECK(floor_drift.hi == floor_only.hi);
}

TEST_CASE("model_row_noise: the least inadequacy an effect between configurations carries",
          "[cost][profile]") {
  CostModel m = simcache::testing::default_profile();
  std::vector<double> b(m.params.size(), 0.0);
  b[0] = 10;
  // Two configurations the model counts alike, a fit whose sv came out 0.
  m.inadequacy = 0, m.inadequacy_shape = 0, m.row_noise = 0;
  const EffectInterval none = effect_interval(m, b, b, EffectRelation::same_shape);
  CHECK(none.lo == 0);
  CHECK(none.hi == 0);
  m.row_noise = 0.01;
  const EffectInterval floor = effect_interval(m, b, b, EffectRelation::same_shape);
  CHECK(floor.hi == Approx(kIntervalZ * std::sqrt(2.0) * 0.01));
  CHECK(floor.lo == Approx(-floor.hi));
  // The same configuration measured twice carries none.
  const EffectInterval same = effect_interval(m, b, b, EffectRelation::same_config);
  CHECK(same.hi == 0);
  // An sv above the noise is the one carried.
  m.inadequacy = 0.03;
  CHECK(effect_interval(m, b, b, EffectRelation::same_shape).hi ==
        Approx(kIntervalZ * std::sqrt(2.0) * 0.03));
  // Written and read back with the profile.
  const CostModel back = [&] {
    CostModel out;
    std::string err;
    REQUIRE(parse_profile(profile_toml(m, "t"), "t.toml", &out, &err));
    return out;
  }();
  CHECK(back.row_noise == Approx(0.01).epsilon(1e-9));
  // The shipped profile's sv is above its row noise: none of its
  // intervals moves (docs/calibration.md says so with both figures).
  CostModel shipped;
  std::string err;
  REQUIRE(load_profile(repo_file("data/profiles/i7-12700KF.toml"), &shipped, &err));
  CHECK(shipped.row_noise > 0);
  CHECK(shipped.inadequacy > shipped.row_noise);
  CHECK(read_text(repo_file("docs/calibration.md"))
            .find(fmt::format("The shipped profile's sv\n({:.2f} %) is above its s ({:.2f} %)",
                              100 * shipped.inadequacy, 100 * shipped.row_noise)) !=
        std::string::npos);
}

TEST_CASE("the noise model picks the most specific entry", "[cost]") {
  NoiseModel n;
  n.fallback = {"", {}, 0.02, 0.03, "f"};
  n.entries.push_back({"lifecycle", {}, 0.01, 0.01, "s"});
  n.entries.push_back({"lifecycle", {{"mode", 2}}, 0.001, 0.005, "m"});
  CHECK(n.lookup("lifecycle", {{"mode", 2}, {"slots", 1}}).source == "m");
  CHECK(n.lookup("lifecycle", {{"mode", 1}}).source == "s");
  CHECK(n.lookup("waitv", {{"mode", 2}}).source == "f");
}

TEST_CASE("malformed profiles are one-line errors naming file, line and field", "[cost][profile]") {
  const std::string good_param =
      "[[param]]\nname = \"a\"\nvalue = 1.5\nunit = \"ns/call\"\nevents = [\"kmalloc\"]\n"
      "source = \"test\"\n";
  struct Case {
    std::string text, expect;
  };
  const std::vector<Case> cases = {
      {"name = \"x\"\n" + good_param + "value2 = [\n", ":8: syntax"},
      {good_param, ":1: name: missing"},
      {"name = \"x\"\n[[param]]\nname = \"a\"\nvalue = -1\nunit = \"ns/call\"\n"
       "events = [\"kmalloc\"]\nsource = \"s\"\n",
       ":4: param 'a': value: -1 is outside"},
      {"name = \"x\"\n[[param]]\nname = \"a\"\nvalue = 1\nunit = \"ns/call\"\n"
       "events = [\"no_such_event\"]\nsource = \"s\"\n",
       ":6: param 'a': events: 'no_such_event'"},
      {"name = \"x\"\n[[param]]\nname = \"a\"\nvalue = 1\nunit = \"ns/call\"\n"
       "events = [\"kmalloc\"]\n",
       ":2: param 'a': source: missing"},
      {"name = \"x\"\n" + good_param + "valeu = 3\n", ":8: param 'a': valeu: unknown field"},
      {"name = \"x\"\n" + good_param + good_param, "param: parameter 'a' is defined twice"},
      {"name = \"x\"\n" + good_param + "[noise]\nround_cv = 2\ndrift = 0.01\nsource = \"s\"\n",
       ":9: noise.round_cv: 2 is outside"},
      {"name = \"x\"\nmodel_drift = 1.5\n" + good_param,
       ":2: model_drift: expected a fraction in [0, 1)"},
      {"name = \"x\"\nmodel_drift = \"a\"\n" + good_param,
       ":2: model_drift: expected a fraction in [0, 1)"},
      {"name = \"x\"\nmodel_row_noise = 1.5\n" + good_param,
       ":2: model_row_noise: expected a fraction in [0, 1)"},
  };
  for (const Case& c : cases) {
    const TempFile f("bad_profile.toml", c.text);
    const CliOutcome r = run_cli({"--scenario", "waitv", "--profile", f.path()});
    INFO(c.text << "\n-> " << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(simcache::testing::lines(r.err) == 1);
    CHECK(r.err.find(f.path()) != std::string::npos);
    CHECK(r.err.find(c.expect) != std::string::npos);
  }
  const CliOutcome missing = run_cli({"--scenario", "waitv", "--profile", "/nonexistent/p.toml"});
  CHECK(missing.status == 2);
  const CliOutcome unknown = run_cli({"--scenario", "waitv", "--profile", "no-such-machine"});
  CHECK(unknown.status == 2);
  CHECK(unknown.err.find("no-such-machine") != std::string::npos);
}

TEST_CASE("every shipped parameter records its origin", "[cost][profile]") {
  const CostModel& m = simcache::testing::default_profile();
  CHECK(m.name == "i7-12700KF");
  size_t pinned = 0;
  for (const CostParam& p : m.params) {
    INFO(p.name);
    CHECK_FALSE(p.source.empty());
    CHECK_FALSE(p.prior_source.empty());
    CHECK(p.prior_sd > 0);
    CHECK(p.stderr_ns > 0);
    if (p.pinned) {
      ++pinned;
      CHECK(p.source.rfind("fit: ", 0) == 0);
    } else {
      CHECK(p.source.rfind("prior", 0) == 0);
    }
  }
  CHECK(pinned >= 5);
  REQUIRE(m.noise.has_value());
  CHECK(m.corr.size() == m.params.size() * m.params.size());
}

TEST_CASE("docs/calibration.md names every cost parameter", "[cost][docs]") {
  const std::string doc =
      simcache::testing::read_text(simcache::testing::repo_file("docs/calibration.md"));
  REQUIRE_FALSE(doc.empty());
  for (const CostParamSpec& s : default_param_specs()) {
    INFO(s.name);
    CHECK(doc.find("`" + std::string(s.name) + "`") != std::string::npos);
  }
  const std::string out =
      simcache::testing::read_text(simcache::testing::repo_file("docs/output.md"));
  for (const char* key : {"per_op", "per_op_ns", "rounds_per_op_ns", "noise_stderr_pct",
                          "model_sd_ns", "interval90_per_op", "rests_on_priors",
                          "delta_interval90_pct", "phases", "drift_pct",
                          "delta_pct", "significant", "breakdown_ns", "measured", "error_pct",
                          "time_unit", "profile", "measurements"}) {
    INFO(key);
    CHECK(out.find(std::string("`") + key + "`") != std::string::npos);
  }
}

TEST_CASE("a share of a region's time: the ratio's delta-method interval", "[cost]") {
  // a prices kmalloc/kfree at 3 ns (sd 1), b zero_bytes at 0.25 ns (sd 0.05).
  CostModel m = two_params();
  m.params[0].stderr_ns = 1.0;
  m.params[1].stderr_ns = 0.05;
  m.params[0].prior = 3, m.params[0].prior_sd = 1;  // unmoved by any row: on priors
  m.params[1].prior = 0.25, m.params[1].prior_sd = 0.05;
  Counters part, whole;
  part.add(Event::zero_bytes, 400);  // 100 ns
  whole.add(Event::zero_bytes, 400);
  whole.add(Event::kmalloc, 100);  // 300 ns
  // share = 0.5 x 100 / 400 = 0.125.
  const ShareInterval s = share_interval(m, part, whole, 0.5);
  CHECK(s.share == Approx(0.125));
  // d/da = 0.5 (0 x 400 - 100 x 100) / 400^2, d/db = 0.5 (400 x 400 - 400 x 100) / 400^2.
  const double ga = 0.5 * (-100.0 * 100) / (400.0 * 400), gb = 0.5 * (400.0 * 300) / (400.0 * 400);
  const double sd = std::sqrt(ga * ga * 1.0 + gb * gb * 0.05 * 0.05);
  const TimeInterval want = time_interval(0.125, sd);
  CHECK(s.lo == Approx(want.lo));
  CHECK(s.hi == Approx(want.hi));
  CHECK(s.lo < 0.125);
  CHECK(s.hi > 0.125);
  CHECK(s.prior_based);
  // The inadequacy of the rest of the region widens it.
  m.inadequacy = 0.1;
  const ShareInterval w = share_interval(m, part, whole, 0.5);
  const double sd2 = std::sqrt(sd * sd + 0.125 * 0.125 * (0.1 * 300) * (0.1 * 300) / (400.0 * 400));
  CHECK(w.hi == Approx(time_interval(0.125, sd2).hi));
  // A share above one half: log-normal on the complement, inside (0, 1).
  const ShareInterval big = share_interval(m, whole, whole, 0.9);
  CHECK(big.share == Approx(0.9));
  {
    CostModel q = m;
    q.inadequacy = 0;
    const ShareInterval h = share_interval(q, part, part, 1.0);  // all part: exact
    CHECK(h.lo == Approx(1.0));
    Counters rest;  // 100 ns of zeroing in 400: complement 0.75 of a 0.25 share
    rest.add(Event::zero_bytes, 400);
    Counters whole2 = rest;
    whole2.add(Event::kmalloc, 10);  // 30 ns: share 100/130 = 0.769
    const ShareInterval s2 = share_interval(q, rest, whole2, 1.0);
    CHECK(s2.share == Approx(100.0 / 130));
    const double g_a = (-10.0 * 100) / (130.0 * 130), g_b = (400.0 * 30) / (130.0 * 130);
    const double sd3 = std::sqrt(g_a * g_a + g_b * g_b * 0.05 * 0.05);
    const TimeInterval c = time_interval(30.0 / 130, sd3);
    CHECK(s2.lo == Approx(1 - c.hi));
    CHECK(s2.hi == Approx(1 - c.lo));
    CHECK(s2.hi < 1.0);
  }
  // A region that is all part: the share is frac, exactly, whatever the prices.
  const ShareInterval all = share_interval(m, whole, whole, 1.0);
  CHECK(all.share == Approx(1.0));
  CHECK(all.lo == Approx(1.0));
  CHECK(all.hi == Approx(1.0));
  // Nothing to share: 0.
  CHECK(share_interval(m, part, whole, 0).share == 0);
  CHECK(share_interval(m, part, Counters{}, 1).share == 0);
}
