// The calibration fit end to end: it recovers known parameters from
// measurements the simulator generates itself, and the shipped default
// profile is what a fresh fit of the calibration rows gives.
#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>
#include <filesystem>
#include <random>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <map>
#include <fmt/format.h>

#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/measure.h"
#include "sim/calibrate/validate.h"
#include "sim/cli/cli.h"
#include "sim/run/engine.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::repo_file;

namespace {

struct Calib {
  Mapping map;
  std::vector<MappedRow> rows;
  std::vector<PerOpCounts> per_op;
};

// The shipped calibration rows, mapped and simulated once.
const Calib& calib() {
  static const Calib c = [] {
    Calib k;
    std::string err;
    std::vector<MeasuredRow> rows;
    if (!load_mapping(repo_file("data/profiles/mapping.toml"), &k.map, &err) ||
        !read_measurements(repo_file("data/measurements/calibration.tsv"), &rows, &err) ||
        !map_rows(k.map, rows, &k.rows, nullptr, &err) ||
        !simulate_rows(k.rows, 2, &k.per_op, &err))
      throw std::runtime_error(err);
    return k;
  }();
  return c;
}

// A machine unlike the default one: every parameter at a value of its own
// (deterministic, within its prior's range).
CostModel machine_b() {
  CostModel m = prior_model();
  for (size_t j = 0; j < m.params.size(); ++j) {
    CostParam& p = m.params[j];
    p.value = std::max(0.0, p.prior + p.prior_sd * (0.3 * std::sin(1.7 * static_cast<double>(j))));
  }
  return m;
}

std::vector<MappedRow> synthetic(const CostModel& truth, const std::vector<double>& rel_noise) {
  std::vector<MappedRow> rows = calib().rows;
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i].value_ns = predict_ns(truth, calib().per_op[i]) * (1 + rel_noise[i]);
  return rows;
}

// Deterministic standard normals (Box-Muller over a fixed mt19937_64).
struct Normal {
  std::mt19937_64 g{20261201};
  double operator()() {
    const double u1 = (static_cast<double>(g() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(g() >> 11) + 0.5) / 9007199254740992.0;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

}  // namespace

TEST_CASE("calibrate's simulations: computed rounds give the counts of every round simulated",
          "[calib][steady]") {
  // simulate_rows computes a one-task simulation's repeated rounds
  // (sim/run/steady.h) and records counts only (no call-site scopes, no
  // timed views); the per-op counts are those of every round simulated
  // with every view on, exactly.
  std::vector<PerOpCounts> steady, full;
  std::string err;
  uint64_t computed = 0;
  SimulateOptions o;
  o.computed_rounds = &computed;
  REQUIRE(simulate_rows(calib().rows, 2, &steady, &err, nullptr, o));
  // The wait-wake and WAITV programs and the three reuse lifecycles
  // compute rounds (docs/calibration.md, "Rounds a per-op mean needs").
  CHECK(computed == 188);
  uint64_t none = 0;
  SimulateOptions f;
  f.full = true;
  f.computed_rounds = &none;
  REQUIRE(simulate_rows(calib().rows, 2, &full, &err, nullptr, f));
  CHECK(none == 0);
  REQUIRE(full.size() == steady.size());
  for (size_t i = 0; i < full.size(); ++i) {
    INFO(calib().rows[i].row.id);
    CHECK(full[i] == steady[i]);
  }
}

TEST_CASE("the fit recovers known parameters from synthetic rows with priors", "[calib][fit]") {
  // Rows generated from `truth` exactly; every prior the rows touch is put
  // 50 % above the truth. The rows determine combinations of parameters
  // (a row's time), which the fit must recover; each single parameter
  // must land within 3 posterior sd of the truth, and those the rows
  // determine (most of the prior variance removed) closer to it than
  // their prior.
  const CostModel truth = machine_b();
  const std::vector<double> none(calib().rows.size(), 0.0);
  FitSettings exact = calib().map.fit;
  exact.noise_cv = 1e-4;
  CostModel structure = prior_model();
  for (size_t j = 0; j < structure.params.size(); ++j) {
    bool counted = false;
    for (size_t i = 0; i < calib().rows.size(); ++i)
      for (Event e : structure.params[j].events) counted |= calib().per_op[i][size_t(e)] > 0;
    CostParam& p = structure.params[j];
    p.prior = p.value = truth.params[j].value * (counted ? 1.5 : 1.0);
  }
  const FitReport r = fit_profile(structure, exact, synthetic(truth, none), calib().per_op, "b");
  for (size_t i = 0; i < calib().rows.size(); ++i) {
    INFO(calib().rows[i].row.id);
    CHECK(r.predicted[i] == Approx(predict_ns(truth, calib().per_op[i])).epsilon(2e-3));
  }
  size_t determined = 0;
  for (size_t j = 0; j < truth.params.size(); ++j) {
    const double t = truth.params[j].value, got = r.model.params[j].value;
    INFO(truth.params[j].name << ": truth " << t << ", prior " << structure.params[j].prior
                              << ", fit " << got << " +- " << r.model.params[j].stderr_ns
                              << ", data share " << r.params[j].data_share);
    CHECK(std::fabs(got - t) <= 3 * r.model.params[j].stderr_ns + 1e-9);
    if (r.params[j].data_share > 0.9) {
      // the rows moved it from a prior 50 % off back to the truth
      CHECK(std::fabs(got - t) < std::fabs(structure.params[j].prior - t));
      ++determined;
    }
  }
  CHECK(determined >= 3);
  CHECK(r.rms_rel < 2e-3);
}

TEST_CASE("the 90% intervals reach about their nominal coverage on synthetic data",
          "[refits][calib][fit]") {
  // Truth drawn from the priors (kept >= 0), rows with 1% noise: the
  // share of noise-free row times inside their predicted 90% interval.
  Normal z;
  size_t inside = 0, total = 0;
  const CostModel base = prior_model();
  for (int trial = 0; trial < 30; ++trial) {
    CostModel truth = base;
    for (CostParam& p : truth.params) p.value = std::max(0.0, p.prior + p.prior_sd * z());
    std::vector<double> noise;
    for (size_t i = 0; i < calib().rows.size(); ++i) noise.push_back(0.01 * z());
    const FitReport r =
        fit_profile(base, calib().map.fit, synthetic(truth, noise), calib().per_op, "t");
    for (size_t i = 0; i < calib().rows.size(); ++i) {
      std::vector<double> g(r.model.params.size(), 0.0);
      for (size_t j = 0; j < g.size(); ++j)
        for (Event e : r.model.params[j].events) g[j] += calib().per_op[i][static_cast<size_t>(e)];
      const double pred = predict_ns(r.model, calib().per_op[i]);
      const double half = kIntervalZ * std::sqrt(r.model.variance(g));
      const double t = predict_ns(truth, calib().per_op[i]);
      inside += std::fabs(pred - t) <= half;
      ++total;
    }
  }
  const double coverage = static_cast<double>(inside) / static_cast<double>(total);
  INFO("coverage " << coverage << " over " << total);
  CHECK(coverage >= 0.80);
  CHECK(coverage <= 0.99);
}

TEST_CASE("the fit separates model inadequacy from row noise and covers true effects",
          "[refits][calib][fit]") {
  // Truth from the priors; each configuration (rows with identical counts)
  // gets a model error d_c ~ N(0, 1.5 %) that no parameter explains, each
  // row a measurement noise of 0.3 %. The fit must estimate both, and the
  // 90 % model intervals (parameters + inadequacy) of the effects between
  // configurations must cover about 90 % of the true effects, where the
  // parameters' posterior alone covers far fewer.
  Normal z;
  const CostModel base = prior_model();
  // Configurations as the fit sees them: rows of one scenario, shape,
  // phase, kernel and policy (two kernels with identical counts are two).
  std::vector<size_t> config(calib().rows.size());
  size_t nconf = 0;
  for (size_t i = 0; i < config.size(); ++i) {
    config[i] = nconf;
    for (size_t k = 0; k < i && config[i] == nconf; ++k)
      if (row_relation(calib().rows[k], calib().rows[i], calib().map.fit) ==
          EffectRelation::same_config)
        config[i] = config[k];
    nconf += config[i] == nconf;
  }
  // Parameters no row counts change no row: their truth is left at the
  // prior and draws nothing, so appending such a parameter (a mechanism
  // no calibration program exercises) leaves this test's draws alone.
  std::vector<bool> counted(base.params.size(), false);
  for (const auto& c : calib().per_op) {
    const std::vector<double> g = param_counts(base, c);
    for (size_t j = 0; j < g.size(); ++j) counted[j] = counted[j] || g[j] != 0;
  }
  size_t inside = 0, inside_params = 0, total = 0;
  double s_sum = 0, d_sum = 0;
  const int trials = 20;
  for (int trial = 0; trial < trials; ++trial) {
    CostModel truth = base;
    for (size_t j = 0; j < truth.params.size(); ++j)
      if (counted[j])
        truth.params[j].value = std::max(0.0, truth.params[j].prior + truth.params[j].prior_sd * z());
    std::vector<double> d(nconf), noise;
    for (double& x : d) x = 0.015 * z();
    for (size_t i = 0; i < config.size(); ++i)
      noise.push_back((1 + d[config[i]]) * (1 + 0.003 * z()) - 1);
    const FitReport r =
        fit_profile(base, calib().map.fit, synthetic(truth, noise), calib().per_op, "t");
    s_sum += r.row_noise;
    d_sum += r.inadequacy;
    CostModel params_only = r.model;
    params_only.inadequacy = 0;
    params_only.row_noise = 0;
    for (size_t i = 0; i + 1 < config.size(); ++i) {
      const size_t k = i + 1;  // neighbouring rows: mostly one program's variants
      if (config[i] == config[k]) continue;
      const std::vector<double> gi = param_counts(r.model, calib().per_op[i]);
      const std::vector<double> gk = param_counts(r.model, calib().per_op[k]);
      const double te = predict_ns(truth, calib().per_op[k]) * (1 + d[config[k]]) /
                            (predict_ns(truth, calib().per_op[i]) * (1 + d[config[i]])) -
                        1;
      const EffectRelation rel = row_relation(calib().rows[i], calib().rows[k], calib().map.fit);
      const EffectInterval iv = effect_interval(r.model, gi, gk, rel);
      const EffectInterval ip = effect_interval(params_only, gi, gk, rel);
      inside += te >= iv.lo && te <= iv.hi;
      inside_params += te >= ip.lo && te <= ip.hi;
      ++total;
    }
  }
  INFO("row noise " << s_sum / trials << ", inadequacy " << d_sum / trials << ", coverage "
                    << inside << "/" << total << ", parameters only " << inside_params);
  CHECK(s_sum / trials == Approx(0.003).epsilon(0.35));
  CHECK(d_sum / trials == Approx(0.015).epsilon(0.35));
  const double coverage = static_cast<double>(inside) / static_cast<double>(total);
  CHECK(coverage >= 0.80);
  CHECK(coverage <= 0.99);
  CHECK(inside_params < inside);
}

TEST_CASE("every parameter has a prior with an uncertainty and a source", "[calib][fit]") {
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  auto status = [&](const std::string& name) {
    for (size_t j = 0; j < r.model.params.size(); ++j)
      if (r.model.params[j].name == name) return r.params[j];
    FAIL("no parameter " << name);
    return ParamFit{};
  };
  // No calibration row arms a POLL_ADD.
  CHECK(status("poll_add").status == PinStatus::no_data);
  CHECK(status("futexv_entry").status == PinStatus::pinned);
  size_t wider = 0;  // prices of work fitted above their centres, wider than their priors
  for (size_t j = 0; j < r.params.size(); ++j) {
    const CostParam& p = r.model.params[j];
    INFO(p.name);
    CHECK(p.prior_sd > 0);
    CHECK_FALSE(p.prior_source.empty());
    CHECK(p.stderr_ns > 0);
    // A price no row counts keeps its prior's sd. One the rows count is
    // narrower than its prior (relative to its value, on its logarithm)
    // where it sits at or below its prior's centre: at the mode the
    // rows' curvature on its diagonal is -v_j (tau_j / mu_j), so only a
    // price fitted above its centre can come out wider.
    if (r.params[j].status == PinStatus::no_data) CHECK(p.stderr_ns == Approx(p.prior_sd));
    CHECK(r.params[j].data_share >= 0);
    CHECK(r.params[j].data_share <= 1);
    if (!is_penalty(p) && r.params[j].prior_z <= 0)
      CHECK(p.stderr_ns / p.value <= p.prior_sd / p.prior * (1 + 1e-9));
    if (is_penalty(p)) CHECK(p.stderr_ns <= p.prior_sd * (1 + 1e-9));
    if (!is_penalty(p) && p.stderr_ns / p.value > p.prior_sd / p.prior * (1 + 1e-9)) {
      CHECK(r.params[j].prior_z > 0);
      ++wider;
    }
    if (r.params[j].status == PinStatus::no_data) CHECK(p.value == Approx(p.prior));
    if (r.params[j].status != PinStatus::pinned) CHECK_FALSE(r.params[j].reason.empty());
  }
  INFO("prices of work wider than their priors: " << wider);
  CHECK(wider > 0);  // the shipped rows have some: the check above is not vacuous
}

TEST_CASE("the shipped default profile is a fresh fit of the calibration rows", "[calib][fit]") {
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "i7-12700KF");
  const CostModel& shipped = simcache::testing::default_profile();
  // docs/calibration.md: the drift beyond the rows' own errors is a small
  // fraction of the configuration's inadequacy here.
  CHECK(r.drift > 0);
  CHECK(r.drift < 0.2 * r.inadequacy);
  CHECK(shipped.drift == Approx(r.drift).epsilon(1e-5));
  CHECK(shipped.inadequacy == Approx(r.inadequacy).epsilon(1e-5));
  CHECK(shipped.row_noise == Approx(r.model.row_noise).epsilon(1e-5));
  INFO(
      "stale data/profiles/i7-12700KF.toml? regenerate: simcache calibrate "
      "--measurements data/measurements/calibration.tsv --out data/profiles/i7-12700KF.toml");
  REQUIRE(shipped.params.size() == r.model.params.size());
  for (size_t j = 0; j < shipped.params.size(); ++j) {
    INFO(shipped.params[j].name);
    CHECK(shipped.params[j].name == r.model.params[j].name);
    CHECK(shipped.params[j].pinned == r.model.params[j].pinned);
    CHECK(shipped.params[j].value == Approx(r.model.params[j].value).epsilon(1e-5).margin(1e-9));
    CHECK(shipped.params[j].stderr_ns ==
          Approx(r.model.params[j].stderr_ns).epsilon(1e-4).margin(1e-9));
    CHECK(shipped.params[j].events == r.model.params[j].events);
  }
  REQUIRE(shipped.noise.has_value());
  CHECK(shipped.noise->entries.size() == r.model.noise->entries.size());
  // The residuals docs/validation.md states.
  CHECK(r.rms_rel < 0.02);
  CHECK(r.max_rel < 0.05);
}

TEST_CASE("the fit is scale-equivariant: a uniformly slower machine refits to scaled prices",
          "[refits][calib][fit][scale]") {
  // The shipped rows times c are a machine that is c times slower at
  // everything: the fit must give the same relative residuals and every
  // price (and its sd) times c. Before the speed factor, 1.1 collapsed to
  // a shape inadequacy at its cap and rows predicted 35-82 % low.
  const FitSettings& fit = calib().map.fit;
  const FitReport ref = fit_profile(prior_model(), fit, calib().rows, calib().per_op, "ref");
  REQUIRE(ref.rms_rel < 0.02);
  for (double c : {0.5, 0.9, 1.1, 2.0, 3.0}) {
    std::vector<MappedRow> rows = calib().rows;
    for (MappedRow& r : rows) r.value_ns *= c;
    const FitReport r = fit_profile(prior_model(), fit, rows, calib().per_op, "scaled");
    INFO("factor " << c << ": rms " << r.rms_rel << " (unscaled " << ref.rms_rel << "), speed "
                   << r.speed << " (unscaled " << ref.speed << ")");
    CHECK(r.rms_rel == Approx(ref.rms_rel).epsilon(1e-3));
    CHECK(r.speed == Approx(c * ref.speed).epsilon(1e-3));
    CHECK(r.speed_memory == Approx(c * ref.speed_memory).epsilon(1e-3));
    CHECK(r.inadequacy_shape == Approx(ref.inadequacy_shape).epsilon(1e-2).margin(1e-6));
    CHECK(r.inadequacy == Approx(ref.inadequacy).epsilon(1e-2).margin(1e-6));
    CHECK(r.row_noise == Approx(ref.row_noise).epsilon(1e-2));
    for (size_t i = 0; i < rows.size(); ++i) {
      INFO(rows[i].row.id);
      CHECK(r.predicted[i] / rows[i].value_ns ==
            Approx(ref.predicted[i] / calib().rows[i].value_ns).margin(1e-4));
    }
    for (size_t j = 0; j < r.model.params.size(); ++j) {
      const CostParam& p = r.model.params[j];
      const CostParam& q = ref.model.params[j];
      INFO(p.name << ": " << p.value << " +- " << p.stderr_ns << " against " << q.value << " +- "
                  << q.stderr_ns);
      const double k = speed_scaled(q) ? c : 1.0;
      CHECK(p.value == Approx(k * q.value).epsilon(0.01).margin(1e-9 * k * q.prior));
      CHECK(p.stderr_ns == Approx(k * q.stderr_ns).epsilon(0.01));
      CHECK(r.params[j].status == ref.params[j].status);
    }
  }
}

TEST_CASE("the fitter before the speed factors collapses on a slower machine, as issue 20 found",
          "[refits][calib][fit][scale]") {
  // FitMethod::unscaled is kept only so that validate can print its
  // figures beside today's: it must be that fitter, whose failure the
  // issue measured. On the shipped rows both fit; twice as slow, the old
  // one's relative-residual error model gives up the level for a shape
  // inadequacy at its cap, its noise at the floor, and leaves the rows
  // far off, where today's refits to the same residuals (the
  // scale-equivariance test above). With today's prices the old fitter's
  // cliff lies between 1.2 and 1.5 times the rows (the issue found it
  // below 1.1 with the prices of its day).
  const FitSettings& fit = calib().map.fit;
  const FitReport old_ref = fit_profile(prior_model(), fit, calib().rows, calib().per_op, "ref",
                                        FitMethod::unscaled);
  CHECK(old_ref.speed == 1);
  CHECK(old_ref.speed_memory == 1);
  CHECK(old_ref.drift == 0);
  CHECK(old_ref.rms_rel < 0.03);
  CHECK(fit_problems(old_ref).empty());
  // The cliff: credible at 1.2 times the rows, collapsed at 1.5.
  for (const double c : {1.2, 1.5}) {
    std::vector<MappedRow> scaled = calib().rows;
    for (MappedRow& r : scaled) r.value_ns *= c;
    const FitReport f =
        fit_profile(prior_model(), fit, scaled, calib().per_op, "cliff", FitMethod::unscaled);
    INFO("factor " << c << ": rms " << f.rms_rel << ", shape inadequacy " << f.inadequacy_shape);
    CHECK(fit_problems(f).empty() == (c < 1.3));
    CHECK(f.inadequacy_shape_at_cap == (c > 1.3));
  }
  std::vector<MappedRow> rows = calib().rows;
  for (MappedRow& r : rows) r.value_ns *= 2;
  const FitReport old = fit_profile(prior_model(), fit, rows, calib().per_op, "slow",
                                    FitMethod::unscaled);
  CHECK(old.inadequacy_shape_at_cap);
  CHECK(old.noise_at_floor);
  const FitReport now = fit_profile(prior_model(), fit, rows, calib().per_op, "slow");
  INFO("before the speed factors: rms " << old.rms_rel << ", shape inadequacy "
                                        << old.inadequacy_shape << "; today's: rms " << now.rms_rel);
  CHECK(old.rms_rel > 0.5);
  CHECK(now.rms_rel < 0.02);
  CHECK_FALSE(fit_problems(old).empty());
  CHECK(fit_problems(now).empty());
  CHECK(std::string(fit_method_label(FitMethod::current)) == "today's");
  CHECK(std::string(fit_method_label(FitMethod::unscaled)) == "before the speed factors");
}

namespace {

// The shipped rows with the rows whose id matches `prefix` times c.
std::vector<MappedRow> scaled_rows(const std::vector<std::string>& prefixes, double c) {
  std::vector<MappedRow> rows = calib().rows;
  for (MappedRow& r : rows)
    for (const std::string& p : prefixes)
      if (r.row.id.rfind(p, 0) == 0) r.value_ns *= c;
  return rows;
}

bool has_problem(const std::vector<std::string>& problems, const std::string& text) {
  for (const std::string& p : problems)
    if (p.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the shipped rows give a credible fit", "[calib][fit][credible]") {
  const FitReport r = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  const std::vector<std::string> problems = fit_problems(r);
  for (const std::string& p : problems) INFO(p);
  CHECK(problems.empty());
  CHECK(r.rms_rel <= expected_rms(r));
  // SF-250 (+2.02 %) failed its gate: judged against its own spread too,
  // it is not the row that disagrees most.
  CHECK(worst_rows(r, calib().rows, 2).rfind("WV-011 +1.94% (1.9 sd), ", 0) == 0);
  CHECK(r.passed == 43);
  CHECK(r.rms_passed <= expected_rms(r));
  CHECK(r.rms_sd_failed < 1);
}

TEST_CASE("a gate-failed row is judged against its own spread, a row that passed is not",
          "[calib][fit][credible]") {
  // One F0 row 30 % slow. As a row that passed its gate, the error model
  // has to take it: the inadequacy per configuration grows to about 5 %
  // (every interval with it). Marked gate-fail with a standard error of
  // 40 %, it is weighted by that in the fit and judged against it: the
  // error model stays where the other rows put it, and the fit stands
  // although its plain rms residual is three times that estimate.
  const FitReport base = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  std::vector<MappedRow> rows = scaled_rows({"SF-103"}, 1.3);
  FitReport r = fit_profile(prior_model(), calib().map.fit, rows, calib().per_op, "x");
  INFO("rms " << r.rms_rel << ", inadequacy " << r.inadequacy);
  CHECK(r.inadequacy > 3 * std::max(base.inadequacy, 0.005));
  CHECK(worst_rows(r, rows, 1).rfind("SF-103 -18.", 0) == 0);
  for (MappedRow& m : rows)
    if (m.row.id == "SF-103") m.row.note += "; stability=gate-fail; se 40%";
  r = fit_profile(prior_model(), calib().map.fit, rows, calib().per_op, "x");
  INFO("marked: rms " << r.rms_rel << " (passed " << r.rms_passed << ", failed "
                      << r.rms_sd_failed << " sd), inadequacy " << r.inadequacy);
  CHECK(r.inadequacy == Approx(base.inadequacy).epsilon(0.2));
  CHECK(fit_problems(r).empty());
  CHECK(r.rms_passed <= expected_rms(r));
  CHECK(r.rms_sd_failed < 1);
  CHECK(r.rms_rel > 3 * expected_rms(r));  // the plain rms alone would refuse it
  CHECK(worst_rows(r, rows, 5).find("SF-103 ") == std::string::npos);
}

TEST_CASE("a fit that cannot place its shape inadequacy is refused, with its residual",
          "[calib][fit][credible]") {
  // The lifecycle rows five times slower than everything else: no speed
  // factor and no price explains it; the shape inadequacy goes to its cap
  // and the residual beyond what the fit itself expects.
  const std::vector<MappedRow> rows = scaled_rows({"SF-25", "SF-26", "SF-28"}, 5.0);
  const FitReport r = fit_profile(prior_model(), calib().map.fit, rows, calib().per_op, "x");
  const std::vector<std::string> problems = fit_problems(r);
  INFO("rms " << r.rms_rel << ", su " << r.inadequacy_shape);
  // The residual: the three gate-failed rows are all of one shape, off
  // together. Each alone against its own sd (the diagonal) they are
  // beyond what three rows reach 1 % of the time; whitened by the shape's
  // shared inadequacy (at its cap) they are one shape's misfit counted
  // once, and within the limit. The cap is the cause.
  REQUIRE(r.gate_failed.size() == 3);
  double diag = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (r.spread[i] <= 0) continue;
    const double rel = r.predicted[i] / rows[i].value_ns - 1;
    diag += rel * rel / (row_sd(r, i) * row_sd(r, i));
  }
  diag = std::sqrt(diag / 3);
  INFO("diagonal " << diag << ", whitened " << r.rms_sd_failed);
  CHECK(fmt::format("{:.2f}", diag) == "2.20");
  CHECK(diag > rms_sd_limit(3));
  CHECK(r.rms_sd_failed < rms_sd_limit(3));
  CHECK(r.rms_sd_failed < 0.7 * diag);
  CHECK_FALSE(has_problem(problems, "gate-failed rows' residuals"));
  CHECK(has_problem(problems, "model inadequacy per workload shape sits at its cap (30%)"));
  CHECK(r.inadequacy_shape_at_cap);
  const std::string worst = worst_rows(r, rows, 1);
  INFO("worst " << worst);
  CHECK((worst.rfind("SF-25", 0) == 0 || worst.rfind("SF-26", 0) == 0 ||
         worst.rfind("SF-28", 0) == 0));  // a scaled row
}

TEST_CASE("a price the rows measure driven far below its prior is refused, naming it",
          "[calib][fit][credible]") {
  // The scalar wait-wake rows ten times faster: the fit can only take
  // the futex_wait and futex_wake prices far below their priors (under
  // log-normal priors no price reaches 0).
  const std::vector<MappedRow> rows =
      scaled_rows({"WV-019", "WV-020", "WV-021", "WV-057", "WV-058", "WV-059"}, 0.1);
  const FitReport r = fit_profile(prior_model(), calib().map.fit, rows, calib().per_op, "x");
  const std::vector<std::string> problems = fit_problems(r);
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  INFO(all);
  CHECK(has_problem(problems, "futex_wait is "));
  for (size_t j = 0; j < r.params.size(); ++j)
    if (r.model.params[j].name == "futex_wake" || r.model.params[j].name == "futex_wait") {
      INFO(r.model.params[j].name << " " << r.params[j].fitted << " z " << r.params[j].prior_z);
      CHECK(r.params[j].fitted > 0);
      CHECK(r.params[j].prior_z < -kPriorConflictZ);
    }
  CHECK(has_problem(problems,
                    "futex_wait is 2.61% of its prior although 6 rows count it (WV-019..WV-021, "
                    "...): the fit drove a price the rows measure 3.6 sds of its logarithm below "
                    "its prior (beyond 3.0)"));
  CHECK(has_problem(problems, "futex_wake is 4.46% of its prior although 18 rows count it"));
  // Five times faster is within the prior's reach: 2.8 and 2.3 sds below.
  const FitReport five = fit_profile(
      prior_model(), calib().map.fit,
      scaled_rows({"WV-019", "WV-020", "WV-021", "WV-057", "WV-058", "WV-059"}, 0.2),
      calib().per_op, "x");
  CHECK_FALSE(has_problem(fit_problems(five), "of its prior although"));
}

namespace {

// Two prices (definitions: no speed factor) with priors mu +- tau, and
// three rows of three shapes counting a[i] of them, measured at y[i].
struct TwoPrices {
  CostModel m;
  std::vector<MappedRow> rows;
  std::vector<PerOpCounts> per_op;
};
TwoPrices two_prices(const double (&mu)[2], const double (&tau)[2], const double (&a)[3][2],
                     const double (&y)[3]) {
  TwoPrices t;
  for (int j = 0; j < 2; ++j) {
    CostParam p;
    p.name = fmt::format("p{}", j);
    p.unit = "ns/event";
    p.events = {static_cast<Event>(j)};
    p.value = p.prior = mu[j];
    p.prior_sd = tau[j];
    p.prior_source = "definition: a test";
    t.m.params.push_back(p);
  }
  t.rows.resize(3);
  t.per_op.resize(3);
  for (size_t i = 0; i < 3; ++i) {
    t.rows[i].row.id = fmt::format("R{}", i);
    t.rows[i].row.file = "closed.tsv";
    t.rows[i].scenario = fmt::format("shape-{}", i);
    t.rows[i].value_ns = y[i];
    t.per_op[i].fill(0);
    t.per_op[i][0] = a[i][0];
    t.per_op[i][1] = a[i][1];
  }
  return t;
}

}  // namespace

TEST_CASE("the bound score is the closed form of a two-price fit", "[calib][fit][credible]") {
  // Two prices, no speed factor (definitions), three rows of three shapes:
  // the rows want the second price at -1 ns, its prior at +1. With it at
  // 0 the first price's posterior mode, the pull on the second and the
  // score g / sqrt(H_11 - H_01^2 / H_00) follow in closed form from the
  // fitted error model, here on the whitened rows over the prior rows.
  const double mu[2] = {10, 1}, tau[2] = {5, 1};
  const double a[3][2] = {{1, 0}, {1, 1}, {2, 1}}, y[3] = {10, 9, 19};
  const TwoPrices t = two_prices(mu, tau, a, y);
  // FitMethod::unscaled's NNLS, the one fit that can put a price at 0.
  const FitReport r =
      fit_profile(t.m, calib().map.fit, t.rows, t.per_op, "closed", FitMethod::unscaled);
  REQUIRE(r.inadequacy_shape == 0);  // every shape holds one configuration
  const double sigma = std::sqrt(r.row_noise * r.row_noise + r.inadequacy * r.inadequacy);
  INFO("s " << r.row_noise << ", sv " << r.inadequacy << ", x " << r.model.params[0].value
            << " " << r.model.params[1].value << ", bound_z " << r.params[1].bound_z);
  REQUIRE(r.model.params[1].value == 0);
  double mm[3][2], h00 = 1, h11 = 1, h01 = 0, g0 = mu[0] / tau[0];
  for (size_t i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) mm[i][j] = a[i][j] * tau[j] / (y[i] * sigma);
    h00 += mm[i][0] * mm[i][0], h11 += mm[i][1] * mm[i][1], h01 += mm[i][0] * mm[i][1];
    g0 += mm[i][0] / sigma;
  }
  const double u0 = g0 / h00;  // the free price's normal equation, the other at 0
  CHECK(r.model.params[0].value == Approx(u0 * tau[0]).epsilon(1e-9));
  double g1 = mu[1] / tau[1];  // the prior row's residual
  for (size_t i = 0; i < 3; ++i) g1 += mm[i][1] * (1 / sigma - mm[i][0] * u0);
  REQUIRE(g1 < 0);
  CHECK(r.params[1].bound_z == Approx(g1 / std::sqrt(h11 - h01 * h01 / h00)).epsilon(1e-9));
  CHECK(r.params[0].bound_z == 0);  // above its bound: no score
}

TEST_CASE("today's fit is the mode of the log-normal posterior", "[calib][fit][credible]") {
  // Two prices (definitions: no speed factor), three rows of three
  // shapes that want the second price near 0.1 ns, its prior 1 +- 1: the
  // fitted prices minimise |(1 - a_i x / y_i) / sigma|^2 + |(log x_j -
  // log mu_j) / (tau_j / mu_j)|^2 with sigma from the fitted error model,
  // and the second stays above 0. Checked here by the objective's
  // central differences in log x, and its sd by the delta method from
  // the Hessian's inverse.
  const double mu[2] = {10, 1}, tau[2] = {5, 1};
  const double a[3][2] = {{1, 0}, {1, 1}, {2, 1}}, y[3] = {10, 10.1, 20.1};
  const TwoPrices t = two_prices(mu, tau, a, y);
  const FitReport r = fit_profile(t.m, calib().map.fit, t.rows, t.per_op, "closed");
  REQUIRE(r.inadequacy_shape == 0);
  const double sigma = std::sqrt(r.row_noise * r.row_noise + r.inadequacy * r.inadequacy);
  const auto objective = [&](double l0, double l1) {
    const double x[2] = {std::exp(l0), std::exp(l1)};
    double q = 0;
    for (size_t i = 0; i < 3; ++i) {
      const double e = (1 - (a[i][0] * x[0] + a[i][1] * x[1]) / y[i]) / sigma;
      q += e * e;
    }
    for (int j = 0; j < 2; ++j) {
      const double v = (std::log(x[j]) - std::log(mu[j])) / (tau[j] / mu[j]);
      q += v * v;
    }
    return q;
  };
  const double l[2] = {std::log(r.model.params[0].value), std::log(r.model.params[1].value)};
  INFO("x " << r.model.params[0].value << " " << r.model.params[1].value << ", sigma " << sigma);
  CHECK(r.model.params[1].value > 0);
  CHECK(r.model.params[1].value < 0.5);
  const double h = 1e-5;
  const double g0 = (objective(l[0] + h, l[1]) - objective(l[0] - h, l[1])) / (2 * h);
  const double g1 = (objective(l[0], l[1] + h) - objective(l[0], l[1] - h)) / (2 * h);
  CHECK(std::fabs(g0) < 1e-4);
  CHECK(std::fabs(g1) < 1e-4);
  // The prior_z of the second: its distance from the prior's centre in
  // prior log-sds.
  CHECK(r.params[1].prior_z == Approx((l[1] - std::log(mu[1])) / (tau[1] / mu[1])).epsilon(1e-9));
  // The sd: x_j sqrt((H^-1)_jj), H half the objective's Hessian in log x
  // (the Laplace approximation on the prices' logarithms).
  const double h00 = (objective(l[0] + h, l[1]) - 2 * objective(l[0], l[1]) +
                      objective(l[0] - h, l[1])) / (2 * h * h),
               h11 = (objective(l[0], l[1] + h) - 2 * objective(l[0], l[1]) +
                      objective(l[0], l[1] - h)) / (2 * h * h),
               h01 = (objective(l[0] + h, l[1] + h) - objective(l[0] + h, l[1] - h) -
                      objective(l[0] - h, l[1] + h) + objective(l[0] - h, l[1] - h)) /
                     (8 * h * h);
  const double det = h00 * h11 - h01 * h01;
  CHECK(r.model.params[0].stderr_ns ==
        Approx(r.model.params[0].value * std::sqrt(h11 / det)).epsilon(1e-3));
  CHECK(r.model.params[1].stderr_ns ==
        Approx(r.model.params[1].value * std::sqrt(h00 / det)).epsilon(1e-3));
}

TEST_CASE("a penalty at 0 is reported and a work price far below its prior refused", "[calib][fit][credible]") {
  // Six rows: one send per op everywhere, and on the last three one more
  // event (a ring's first use, a penalty; or a scalar FUTEX_WAIT, work)
  // whose rows are a third faster than the others: no price above 0 fits
  // them; the fit takes the extra to 0 (a penalty) or far below its prior
  // (work), and the send price carries the rest.
  const CostModel priors = prior_model();
  std::vector<std::string> penalties;
  for (const CostParam& p : priors.params)
    if (is_penalty(p)) penalties.push_back(p.name);
  CHECK(penalties == std::vector<std::string>{"idle_gap", "idle_cold_slot", "idle_cold_install",
                                              "idle_slow_install",
                                              "slab_alloc_remote", "req_cold",
                                              "ring_first_use", "cpufreq_slow_wake"});
  const auto fit = [&](Event extra, std::string* report) {
    std::vector<MappedRow> rows(calib().rows.begin(), calib().rows.begin() + 6);
    std::vector<PerOpCounts> per_op(6, PerOpCounts{});
    for (size_t i = 0; i < 6; ++i) {
      per_op[i][static_cast<size_t>(Event::msg_ring_send_fd)] = 1;
      if (i >= 3) per_op[i][static_cast<size_t>(extra)] = 1;
      rows[i].value_ns = i >= 3 ? 600.0 : 1000.0;
    }
    FitReport r = fit_profile(priors, calib().map.fit, rows, per_op, "x");
    *report = format_fit(r, rows, "x.tsv", calib().map);
    return r;
  };
  const auto param = [&](const FitReport& r, const char* name) -> const ParamFit& {
    for (size_t j = 0; j < r.params.size(); ++j)
      if (r.model.params[j].name == name) return r.params[j];
    throw std::runtime_error(name);
  };
  std::string text;
  const FitReport pen = fit(Event::ring_first_use, &text);
  INFO(text);
  // A penalty keeps a Gaussian prior bounded at 0: it goes to 0, reported.
  REQUIRE(param(pen, "ring_first_use").fitted == 0);
  for (const std::string& p : fit_problems(pen)) {
    CHECK(p.find(" of its prior although ") == std::string::npos);
    CHECK(p.find(" is 0 although ") == std::string::npos);
  }
  CHECK(param(pen, "ring_first_use").reason.find("a penalty at 0: these rows show no such extra cost") !=
        std::string::npos);
  // Work has a log-normal prior: it cannot reach 0, and far below its
  // prior it refuses the fit.
  const FitReport work = fit(Event::futex_wait, &text);
  REQUIRE(param(work, "futex_wait").fitted > 0);
  REQUIRE(param(work, "futex_wait").prior_z < -kPriorConflictZ);
  CHECK(has_problem(fit_problems(work), "futex_wait is "));
  CHECK(has_problem(fit_problems(work), "% of its prior although 3 rows count it"));
}

TEST_CASE("every error-model edge is a cause of its own", "[calib][fit][credible]") {
  FitReport ok = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  REQUIRE(fit_problems(ok).empty());
  const std::vector<std::pair<bool FitReport::*, std::string>> edges = {
      {&FitReport::noise_at_cap, "the row noise sits at its cap"},
      {&FitReport::inadequacy_at_cap, "model inadequacy per configuration sits at its cap"},
      {&FitReport::inadequacy_shape_at_cap, "model inadequacy per workload shape sits at its cap"},
      {&FitReport::speed_at_bound, "a speed factor ("},
      {&FitReport::converged, "did not converge"}};
  for (const auto& [flag, text] : edges) {
    FitReport r = ok;
    r.*flag = !(r.*flag);
    const std::vector<std::string> problems = fit_problems(r);
    INFO(text);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find(text) != std::string::npos);
  }
  // The residual test, in its two halves: the rows that passed their
  // gate against expected_rms(), the gate-failed ones (the shipped rows
  // have 3) against their own spread; either alone refuses the fit.
  REQUIRE(ok.gate_failed.size() == 3);
  FitReport wide = ok;
  // The 43 that passed: their limit is 1.25 sd in rms (whitened).
  REQUIRE(ok.passed == 43);
  CHECK(rms_sd_limit(43) == Approx(std::sqrt(67.459 / 43)).epsilon(0.005));
  wide.white_passed = 1.01 * rms_sd_limit(43);
  CHECK(fit_problems(wide).size() == 1);
  CHECK(has_problem(fit_problems(wide), "the residuals of the 43 rows that passed their stability "
                                        "gate are 1.27 sd in rms against the fit's own "
                                        "noise-plus-inadequacy estimate"));
  CHECK(has_problem(fit_problems(wide), "with the inadequacies that rows of one configuration or "
                                        "shape share whitened (plain rms 0.75%): beyond the 1.25 "
                                        "that 43 such rows exceed 1% of the time"));
  wide.white_passed = 0.99 * rms_sd_limit(43);
  CHECK(fit_problems(wide).empty());
  // Their limit: the 99th percentile of chi-square on 3 degrees of
  // freedom (11.34), as an rms: 1.94 (1.95 by the cube).
  const double limit = rms_sd_limit(3);
  CHECK(limit == Approx(std::sqrt(11.345 / 3)).epsilon(0.01));
  wide.rms_sd_failed = 1.01 * limit;
  CHECK(has_problem(fit_problems(wide), "the 3 gate-failed rows' residuals are 1.97 sd in rms"));
  CHECK(has_problem(fit_problems(wide), "beyond the 1.95 that 3 such rows exceed 1% of the time"));
  wide.rms_sd_failed = 0.99 * limit;
  CHECK(fit_problems(wide).empty());
}

TEST_CASE("the row noise's prior: the passing rows' own errors, noise_cv without them",
          "[calib][fit][credible]") {
  // The shipped rows: 9 that passed their gate carry a standard error.
  const FitReport ok = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  CHECK(ok.noise_prior_rows == 9);
  CHECK(ok.noise_prior == Approx(std::max(calib().map.fit.noise_cv, ok.noise_prior_rms)));
  CHECK(ok.noise_prior_rms > calib().map.fit.noise_cv);
  // Every row marked gate-failed: their spreads are their own terms of the
  // error model already, so the prior falls back to noise_cv alone, and
  // the credible line says no row passed.
  std::vector<MappedRow> rows = calib().rows;
  for (MappedRow& m : rows)
    if (m.row.note.find("stability=gate-fail") == std::string::npos)
      m.row.note += "; stability=gate-fail; se 0.5%";
  const FitReport all = fit_profile(prior_model(), calib().map.fit, rows, calib().per_op, "x");
  CHECK(all.passed == 0);
  CHECK(all.noise_prior_rows == 0);
  CHECK(all.noise_prior_rms == 0);
  CHECK(all.noise_prior == calib().map.fit.noise_cv);
  // What the fit cannot explain still reaches the intervals.
  CHECK(all.model.inadequacy + all.model.drift > 0);
  const std::string text = format_fit(all, rows, "x.tsv", calib().map);
  INFO(text);
  CHECK(text.find("(its prior: noise_cv 0.30%: no row that passed its gate has a standard error") !=
        std::string::npos);
  if (fit_problems(all).empty())
    CHECK(text.find("the fit is credible: no row passed its stability gate; ") != std::string::npos);
}

TEST_CASE("docs/calibration.md states the fit's constants as the code has them",
          "[calib][fit][docs]") {
  const std::string doc = simcache::testing::read_text(repo_file("docs/calibration.md"));
  // The row noise's prior: log s ~ N(log s0, (log 2)^2).
  CHECK(doc.find("log s ~ N(log s0, (log 2)^2)") != std::string::npos);
  CHECK(kNoisePriorSd == Approx(std::log(2.0)));
  // Today's fit: a work price more than 3 sds of its logarithm below its
  // prior refuses it.
  CHECK(doc.find("3 sds of its logarithm below its prior's centre (`kPriorConflictZ`)") !=
        std::string::npos);
  CHECK(kPriorConflictZ == 3.0);
  // The fitter before it: a work price at 0 is refused beyond one
  // posterior sd, unless a price above 0 moves with it at |r| >= 0.9.
  CHECK(doc.find("than one posterior sd, or with no partner, is refused") != std::string::npos);
  CHECK(kBoundRefuseZ == 1.0);
  CHECK(doc.find("posterior correlation at least 0.9 in size") != std::string::npos);
  CHECK(kAllowedPartnerCorr == 0.9);
}

TEST_CASE("the residual limit is chi-square's 99th percentile", "[calib][fit][credible]") {
  // Exact quantiles (chi-square tables): n = 1, 2, 5, 10, 18, 40, 100.
  const std::vector<std::pair<size_t, double>> q99 = {
      {1, 6.635}, {2, 9.210}, {5, 15.086}, {10, 23.209}, {18, 34.805}, {40, 63.691}, {100, 135.807}};
  for (const auto& [n, q] : q99) {
    INFO(n);
    const double want = std::sqrt(q / static_cast<double>(n));
    CHECK(rms_sd_limit(n) == Approx(want).epsilon(0.005));
  }
  CHECK(rms_sd_limit(0) == 0);
  // docs/calibration.md's figures.
  CHECK(fmt::format("{:.2f} {:.2f} {:.2f} {:.2f}", rms_sd_limit(1), rms_sd_limit(6),
                    rms_sd_limit(18), rms_sd_limit(43)) == "2.57 1.68 1.39 1.25");
  CHECK(rms_sd_limit(6) == Approx(std::sqrt(16.812 / 6)).epsilon(0.005));
  // Ever closer to 1 from above as rows are added.
  bool falling = true;
  for (size_t n = 1; n < 1000; ++n) falling &= rms_sd_limit(n + 1) < rms_sd_limit(n);
  CHECK(falling);
  CHECK(rms_sd_limit(100000) > 1);
}

TEST_CASE("pinned means narrow against the value, not only against the prior",
          "[calib][fit][credible]") {
  const FitReport r = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  size_t pinned = 0;
  for (size_t j = 0; j < r.params.size(); ++j) {
    const ParamFit& f = r.params[j];
    INFO(r.model.params[j].name << " " << f.fitted << " +- " << f.stderr_ns);
    if (f.status != PinStatus::pinned) continue;
    ++pinned;
    CHECK(f.stderr_ns <= calib().map.fit.pin_relative * f.fitted);
    // Narrow against the prior on the log scale: relative sds.
    CHECK(f.stderr_ns / f.fitted <= calib().map.fit.pin_threshold * r.model.params[j].prior_sd /
                                        r.model.params[j].prior);
  }
  CHECK(pinned >= 3);
  // futex_wait: the rows remove most of its prior variance (on the log
  // scale), yet its posterior sd is more than half its value.
  for (size_t j = 0; j < r.params.size(); ++j)
    if (r.model.params[j].name == "futex_wait") {
      CHECK(r.params[j].stderr_ns > calib().map.fit.pin_relative * r.params[j].fitted);
      CHECK(r.params[j].data_share > 0.5);
      CHECK(r.params[j].status == PinStatus::weak);
    }
}

namespace {

// validate's output from its summary line on.
std::string tail(const std::string& out) { return out.substr(out.find("\nsummary: ") + 1); }

// How many rows validate counts inside their 90 % intervals.
int covered(const std::string& out) {
  const size_t at = out.find("rows ", out.find("coverage of the 90%"));
  return std::stoi(out.substr(at + 5));
}

// Writes `out`: the repository's measurement file `file` without the
// lines whose id starts with one of `ids` (a row and its ID.ref), and
// counts them in *dropped.
std::string write_without(const std::string& out, const std::string& file,
                          std::initializer_list<const char*> ids, int* dropped) {
  std::istringstream in(simcache::testing::read_text(repo_file(file)));
  std::string kept;
  for (std::string line; std::getline(in, line);) {
    bool drop = false;
    for (const char* id : ids) drop |= line.rfind(id, 0) == 0;
    if (drop) ++*dropped;
    else kept += line + "\n";
  }
  std::ofstream(out) << kept;
  return out;
}

// A row's figures as calibrate ("ID measured unit model unit resid%")
// or validate ("ID measured unit predicted unit [lo, hi] error%") prints
// them; lo is NaN in calibrate's.
struct RowFigures {
  double measured = NAN, predicted = NAN, lo = NAN, hi = NAN;
};
RowFigures row_figures(const std::string& out, const std::string& id) {
  RowFigures f;
  const size_t at = out.find("\n" + id + " ");
  if (at == std::string::npos) return f;
  std::istringstream in(out.substr(at + id.size() + 2, out.find('\n', at + 1) - at));
  std::string unit, lo, hi;
  in >> f.measured >> unit >> f.predicted >> unit >> lo >> hi;
  if (!lo.empty() && lo[0] == '[') f.lo = std::stod(lo.substr(1)), f.hi = std::stod(hi);
  return f;
}

// The same with each row's own measurement error added.
int covered_with_error(const std::string& out) {
  const std::string mark = "(with each row's own measurement error added: ";
  const size_t at = out.find(mark, out.find("coverage of the 90%"));
  return std::stoi(out.substr(at + mark.size()));
}

// The lines of calibrate's report from "rms relative residual" to the
// line before the parameter table, and its closing count of pinned
// parameters: what the workflow prints.
std::string report_summary(const std::string& report) {
  std::string out;
  const size_t b = report.find("rms relative residual");
  const size_t e = report.find("\n\nparameter ", b);
  out += report.substr(b, e - b + 1);
  const size_t p = report.find(" parameters pinned by the rows");
  const size_t ps = report.rfind('\n', p) + 1;
  out += report.substr(ps, report.find('\n', p) - ps + 1);
  return out;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '|') c = '/';
  return s;
}

// docs/calibration.md's "The default profile" block: the summary lines
// calibrate prints for the shipped rows, the count of weak scale priors,
// and every parameter.
std::string default_profile_markdown(const FitReport& r) {
  const std::string report =
      format_fit(r, calib().rows, "data/measurements/calibration.tsv", calib().map);
  const CostModel priors = prior_model();
  size_t weak_priors = 0;
  for (const CostParam& p : priors.params)
    weak_priors += p.prior_source.rfind("weak scale prior", 0) == 0 ||
                   p.prior_source.rfind("memory: weak scale prior", 0) == 0;
  std::string out = "```\n" + report_summary(report) + "```\n\n";
  out += fmt::format(
      "{} of the {} priors are weak scale priors. Every parameter (the profile file is "
      "authoritative; this is a reading aid; `sd` is the posterior sd; the prior is the table's, "
      "which the profile records times the speed factor {:.4g}, or {:.4g} for a `memory:` "
      "source):\n\n",
      weak_priors, priors.params.size(), r.speed, r.speed_memory);
  out += "| parameter | value | sd | prior (sd) | what pins it | prior source |\n";
  out += "|---|---|---|---|---|---|\n";
  for (size_t j = 0; j < r.params.size(); ++j) {
    const CostParam& p = r.model.params[j];
    const ParamFit& f = r.params[j];
    std::string pins;
    if (f.status == PinStatus::pinned) {
      const size_t shown = std::min<size_t>(3, f.rows.size());
      pins = fmt::format("rows ({}{}), data share {:.0f}%",
                         id_ranges({f.rows.begin(), f.rows.begin() + static_cast<long>(shown)}),
                         shown < f.rows.size() ? ", ..." : "", 100 * f.data_share);
    } else if (f.status == PinStatus::no_data) {
      pins = "prior only: no row counts it";
    } else {
      pins = f.reason;  // "weak: ..."
    }
    out += fmt::format("| `{}` | {:.4g} {} | {:.3g} | {:.4g} ({:.4g}) | {} | {} |\n", p.name,
                       p.value, p.unit, p.stderr_ns, priors.params[j].prior,
                       priors.params[j].prior_sd, pins, one_line(p.prior_source));
  }
  return out;
}

}  // namespace

TEST_CASE("docs/calibration.md's default profile block is what calibrate prints",
          "[calib][docs]") {
  const std::string path = repo_file("docs/calibration.md");
  std::string doc = simcache::testing::read_text(path);
  const std::string begin = "<!-- default-profile begin -->\n",
                    end = "<!-- default-profile end -->";
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "i7-12700KF");
  const std::string want = default_profile_markdown(r);
  if (std::getenv("SIMCACHE_UPDATE_DOCS")) {
    const size_t b = doc.find(begin), e = doc.find(end);
    REQUIRE(b != std::string::npos);
    REQUIRE(e != std::string::npos);
    doc = doc.substr(0, b + begin.size()) + want + doc.substr(e);
    std::ofstream(path, std::ios::binary) << doc;
  }
  const size_t b = doc.find(begin), e = doc.find(end);
  INFO("regenerate with SIMCACHE_UPDATE_DOCS=1 ./build/tests/simcache_tests '[docs]'");
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == want);
}

namespace {

// The text between a doc's two markers.
std::string doc_block(const std::string& rel, const std::string& name) {
  const std::string doc = simcache::testing::read_text(repo_file(rel));
  const std::string begin = "<!-- " + name + " begin -->\n", end = "<!-- " + name + " end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  INFO(rel << " " << name << ": regenerate with SIMCACHE_UPDATE_DOCS=1 "
                             "./build/tests/simcache_tests '[docs]'");
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  return doc.substr(b + begin.size(), e - b - begin.size());
}

// Replaces (with SIMCACHE_UPDATE_DOCS) or checks the text between two
// markers of a doc.
void check_doc_block(const std::string& rel, const std::string& name, const std::string& want) {
  if (std::getenv("SIMCACHE_UPDATE_DOCS")) {
    const std::string path = repo_file(rel), old = doc_block(rel, name);
    std::string doc = simcache::testing::read_text(path);
    const size_t b = doc.find("<!-- " + name + " begin -->\n") + name.size() + 16;
    doc = doc.substr(0, b) + want + doc.substr(b + old.size());
    std::ofstream(path, std::ios::binary) << doc;
  }
  CHECK(doc_block(rel, name) == want);
}

// The cells of the table line that starts with `head` in `text`.
std::vector<std::string> cells(const std::string& text, const std::string& head) {
  const size_t at = text.find("\n" + head);
  if (at == std::string::npos) return {};
  const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  std::vector<std::string> out;
  for (size_t b = 1, e; (e = line.find(" |", b)) != std::string::npos; b = e + 2)
    out.push_back(line.substr(b + 1, e - b - 1));
  return out;
}
// Its last cell, "6.05 %", as 6.05.
double last_cell_pct(const std::string& text, const std::string& head) {
  const std::vector<std::string> c = cells(text, head);
  return c.empty() ? -1 : std::stod(c.back());
}

std::string leave_out_markdown(bool by_shape) {
  const Calib& c = calib();
  const LeaveOut l = leave_out(prior_model(), c.map.fit, c.rows, c.per_op, by_shape, 2);
  const LeaveOut before =
      leave_out(prior_model(), c.map.fit, c.rows, c.per_op, by_shape, 2, FitMethod::unscaled);
  return format_leave_out(l, c.rows, true) + format_leave_out_comparison(l, before) + "\n";
}

}  // namespace

TEST_CASE("docs/validation.md's validate block is the validate golden", "[calib][docs]") {
  check_doc_block("docs/validation.md", "validate-calibration",
                  "```\n" + simcache::testing::read_text(repo_file("tests/golden/validate.txt")) +
                      "```\n");
}

TEST_CASE("docs/validation.md's out-of-sample block is a fresh leave-one-group-out",
          "[refits][calib][docs]") {
  const std::string groups = leave_out_markdown(false), shapes = leave_out_markdown(true);
  check_doc_block("docs/validation.md", "leave-one-group-out", groups + shapes);
  // docs/validation.md's reading of the fitters' lines: shape by shape,
  // today's covers every row with intervals about half the row wide, the
  // older one fewer with intervals over twice as wide and two of six fits
  // refused; group by group both near the goal, today's the narrower.
  const std::vector<std::string> sn = cells(shapes, "| today's |"),
                                 so = cells(shapes, "| before the speed factors |"),
                                 gn = cells(groups, "| today's |"),
                                 go = cells(groups, "| before the speed factors |");
  REQUIRE(sn.size() == 8);
  REQUIRE(so.size() == 8);
  REQUIRE(gn.size() == 8);
  REQUIRE(go.size() == 8);
  CHECK(sn[1] == "0/6");
  CHECK(so[1] == "2/6");
  CHECK(sn[3] == "46/46 (100 %)");
  CHECK(std::stoi(so[3]) < 46);
  CHECK(std::stod(sn[4]) == Approx(50).margin(5));
  CHECK(std::stod(so[4]) > 2 * std::stod(sn[4]));
  CHECK(std::stod(gn[4]) < std::stod(go[4]));
  CHECK(std::stod(so[3].substr(so[3].find('(') + 1)) >= 85);  // inside the goal by width
  CHECK(std::stod(gn[7]) < 0.5 * std::stod(go[7]));  // well under half the mean abs error
  for (const auto* g : {&gn, &go}) {
    const double share = std::stod((*g)[3].substr((*g)[3].find('(') + 1));
    CHECK(share >= 85);
    CHECK(share <= 97);
  }
}

TEST_CASE("validate --leave-out prints the out-of-sample table, at any job count",
          "[refits][calib][cli]") {
  // The docs' block is the library's leave_out at two jobs (the test
  // above refits it); the command prints the same at one job, refitting
  // from the priors: the job count changes nothing. Two refits here, not
  // five: each is dear under ASan.
  const std::string tsv = repo_file("data/measurements/calibration.tsv");
  const CliOutcome one =
      run_cli({"validate", "--leave-out", "shape", "--measurements", tsv, "--jobs", "1"});
  REQUIRE(one.status == 0);
  const CliOutcome bad = run_cli({"validate", "--leave-out", "config", "--measurements", tsv});
  CHECK(bad.status == 2);
  CHECK(bad.err == "simcache: --leave-out 'config': expected group or shape\n");
  const CliOutcome both = run_cli(
      {"validate", "--leave-out", "group", "--profile", "i7-12700KF", "--measurements", tsv});
  CHECK(both.status == 2);
  CHECK(both.err.find("takes no --profile") != std::string::npos);
  // Groups through the command, too.
  const CliOutcome groups =
      run_cli({"validate", "--leave-out", "group", "--measurements", tsv, "--jobs", "1"});
  REQUIRE(groups.status == 0);
  CHECK(groups.out + "\n" + one.out + "\n" ==
        doc_block("docs/validation.md", "leave-one-group-out"));
  // The units wholly inside: every row of a shape inside here; three
  // groups with a row outside (each such group's table row names its
  // rows outside), so 12 of 15.
  CHECK(one.out.find("(6/6 shapes with every row inside: a shape's rows are predicted from the "
                     "same prices, so their errors go together)") != std::string::npos);
  CHECK(groups.out.find("(12/15 groups with every row inside") != std::string::npos);
  size_t units_outside = 0;
  // The units' table, not the two fitters' beneath it.
  const std::string units = groups.out.substr(0, groups.out.find("\nToday's fitter beside"));
  REQUIRE(units.size() < groups.out.size());
  for (size_t at = units.find("\n| "); at != std::string::npos; at = units.find("\n| ", at + 1)) {
    const std::string line = units.substr(at + 1, units.find('\n', at + 1) - at - 1);
    // "| ROWS | IN/N | ..." on a unit's first line: IN < N has a row outside
    if (line.rfind("| |", 0) == 0 || line.rfind("| rows", 0) == 0 || line.rfind("|---", 0) == 0)
      continue;
    const size_t b = line.find(" | ") + 3, slash = line.find('/', b), e = line.find(' ', slash);
    units_outside += line.substr(b, slash - b) != line.substr(slash + 1, e - slash - 1);
  }
  CHECK(units_outside == 3);
  // docs/validation.md's reading of the two lines.
  const std::string doc = simcache::testing::read_text(repo_file("docs/validation.md"));
  CHECK(doc.find(fmt::format("all inside is what 90 % intervals give about half\nthe "
                             "time (0.9 to the sixth power, {:.2f})",
                             std::pow(0.9, 6))) != std::string::npos);
  CHECK(doc.find("where 3 of 15 groups have a row outside") != std::string::npos);
}

TEST_CASE("a fifth sitting: weak prices that a bounded Gaussian put at 0 fit above it",
          "[refits][calib][cli]") {
  // An idle sitting on a fresh VM of this kind (2026-12-05). Under the
  // Gaussian prior bounded at 0 that work had before, four weakly
  // measured prices sat at 0 on every statistic (the rows pushing them
  // below by 0.0 to 1.1 posterior sds, no partner above 0) and calibrate
  // refused a fit of rms 2.4 to 2.8 %. Under log-normal priors each is
  // above 0 and within 2.5 sds of its logarithm below its prior
  // (files_update_entry the lowest: its one row puts it at about a
  // seventh of its prior, 1.6 to 2.1 sds below), and the fit is credible.
  const std::string cal = repo_file("data/measurements/vm-2cpu-fifth-calibration.tsv");
  for (const char* statistic : {"mean", "median", "fastest"}) {
    const std::string prof = (std::filesystem::temp_directory_path() /
                              ("simcache_test_" + std::to_string(::getpid()) + "_fifth.toml"))
                                 .string();
    std::filesystem::remove(prof);
    const CliOutcome o =
        run_cli({"calibrate", "--statistic", statistic, "--measurements", cal, "--out", prof});
    INFO(statistic << "\n" << o.out << o.err);
    REQUIRE(o.status == 0);
    CHECK(o.err.empty());
    CHECK(o.out.find("no measured work price more than 3.0 sds of its logarithm below its "
                     "prior") != std::string::npos);
    CostModel m;
    std::string err;
    const bool loaded = load_profile(prof, &m, &err);
    std::filesystem::remove(prof);
    REQUIRE(loaded);
    size_t seen = 0;
    for (const CostParam& p : m.params)
      for (const char* name : {"futex_wait", "files_update_entry", "kmalloc", "io_cache_alloc_new"})
        if (p.name == name) {
          INFO(p.name << " " << p.value << " prior " << p.prior << " +- " << p.prior_sd);
          ++seen;
          CHECK(p.value > 0);
          CHECK(std::log(p.value / p.prior) > -2.5 * p.prior_sd / p.prior);
        }
    CHECK(seen == 4);
  }
}

TEST_CASE("a sixth sitting: polls armed beyond the cache share are priced cold",
          "[refits][calib][cli]") {
  // The first sitting with POLL_ADD at three shapes (65,536 polls armed a
  // ring, 4,096 on a ring of 4,096 and 4,096 on a ring of 256, which
  // overflows its CQ ring) and a pointer-chase cache share, median
  // rounds, 2026-12-06. The calibration suite read 8,192 KiB (32,768
  // io_kiocbs: half the deep row's polls cold); the fit pins req_cold
  // above 0 and fits the deep row within 1 % (which the deep row, the one
  // that counts req_cold, nearly guarantees); without the share (nothing
  // cold) it fits it over 15 % low and its rms is higher. The validation
  // suite's own reading, 4,096 KiB: its QD 1024 shape (4,096 armed) is
  // within 5 % with the share, over 7 % high without; its 32,768-deep
  // shape is half cold at that reading, over 10 % high (at the low edge
  // of its interval), and none cold at the calibration suite's reading, over
  // 10 % low (outside): the measurement lies between the two, and one
  // step at a share read to a factor of two is coarse. The shallow rows
  // show a ring of 4,096 costing more per SQE than one of 256 at equal
  // depth: the pages of its regions (ring_page).
  const std::string cal = repo_file("data/measurements/vm-2cpu-sixth-calibration.tsv");
  const std::string val = repo_file("data/measurements/vm-2cpu-sixth-validation.tsv");
  // The file with every row's share replaced by `with` ("" takes it out).
  const auto reshare = [](const std::string& path, const std::string& name,
                          const std::string& with) {
    std::ifstream in(path);
    std::string text((std::istreambuf_iterator<char>(in)), {}), out;
    const std::string mark = "; LLC share ";
    for (size_t at = 0;;) {
      const size_t m = text.find(mark, at);
      if (m == std::string::npos) return testing::TempFile(name, out + text.substr(at));
      out += text.substr(at, m - at) + with;
      at = text.find("(pointer chase)", m) + std::string("(pointer chase)").size();
    }
  };
  const auto strip = [&](const std::string& path, const std::string& name) {
    return reshare(path, name, "");
  };
  const auto rms_of = [](const std::string& out) {
    const std::string mark = "rms relative residual ";
    return std::stod(out.substr(out.find(mark) + mark.size()));
  };
  const auto error_of = [](const std::string& out, const char* id) {
    const RowFigures f = row_figures(out, id);
    return f.predicted / f.measured - 1;
  };
  const CliOutcome fit = run_cli({"calibrate", "--statistic", "median", "--measurements", cal});
  INFO(fit.out << fit.err);
  REQUIRE(fit.status == 0);
  CHECK(fit.out.find("llc_kib=8192 pcp_high_max=73728 pcp_high_min=6367 qd=4096 recycle=32 total=131072") != std::string::npos);
  const std::string cold = fit.out.substr(fit.out.find("\nreq_cold "));
  CHECK(cold.substr(0, cold.find('\n', 1)).find("pinned") != std::string::npos);
  CHECK(std::abs(error_of(fit.out, "C-POLL")) < 0.01);
  // The big ring against the small at equal depth: without its pages
  // priced the fit missed them by -11 % and +9 %; ring_page, fitted far
  // above its prior (its data: these two rows, so the agreement is by
  // construction), brings both within 3 %.
  CHECK(std::abs(error_of(fit.out, "C-POLL-4096")) < 0.03);
  CHECK(std::abs(error_of(fit.out, "C-POLL-256")) < 0.03);
  {
    const std::string page = fit.out.substr(fit.out.find("\nring_page "));
    std::istringstream in(page.substr(1, page.find('\n', 1)));
    std::string name;
    double value = 0, sd = 0, prior = 0;
    in >> name >> value >> sd >> prior;
    INFO(page.substr(0, page.find('\n', 1)));
    CHECK(value > 3 * prior);
    CHECK(value > 4360);  // scripts/measure_priors.c's io_uring_ring_page on this VM kind
  }
  const CliOutcome v =
      run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", cal});
  REQUIRE(v.status == 0);
  {
    const RowFigures f = row_figures(v.out, "V-POLL-1024");
    CHECK(f.measured >= f.lo);
    CHECK(f.measured <= f.hi);
    // The deep shape at the low edge of its interval: within 1 % of it.
    const RowFigures d = row_figures(v.out, "V-POLL-32768");
    CHECK(std::fabs(d.measured / d.lo - 1) < 0.01);
  }
  CHECK(std::abs(error_of(v.out, "V-POLL-1024")) < 0.05);
  CHECK(v.out.find("llc_kib=4096 pcp_high_max=73728 pcp_high_min=6367 qd=4096 recycle=16") != std::string::npos);
  CHECK(error_of(v.out, "V-POLL-32768") > 0.10);
  const testing::TempFile val8192 =
      reshare(val, "sixth_val8192.tsv", "; LLC share 8192 KiB (pointer chase)");
  const CliOutcome v8 = run_cli(
      {"validate", "--statistic", "median", "--measurements", val8192.path(), "--fit-on", cal});
  REQUIRE(v8.status == 0);
  CHECK(error_of(v8.out, "V-POLL-32768") < -0.10);
  CHECK(row_figures(v8.out, "V-POLL-32768").measured > row_figures(v8.out, "V-POLL-32768").hi);

  const testing::TempFile bare_cal = strip(cal, "sixth_nollc_cal.tsv"),
                          bare_val = strip(val, "sixth_nollc_val.tsv");
  const CliOutcome bare_fit =
      run_cli({"calibrate", "--statistic", "median", "--measurements", bare_cal.path()});
  REQUIRE(bare_fit.status == 0);
  CHECK(bare_fit.out.find("llc_kib") == std::string::npos);
  CHECK(error_of(bare_fit.out, "C-POLL") < -0.15);
  CHECK(rms_of(bare_fit.out) > rms_of(fit.out) + 1);
  const CliOutcome bare = run_cli({"validate", "--statistic", "median", "--measurements",
                                   bare_val.path(), "--fit-on", bare_cal.path()});
  REQUIRE(bare.status == 0);
  CHECK(error_of(bare.out, "V-POLL-1024") > 0.07);

  // docs/validation.md's drift block: the sitting's two repeats.
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
  const std::string rel_val = "data/measurements/vm-2cpu-sixth-validation.tsv",
                    rel_cal = "data/measurements/vm-2cpu-sixth-calibration.tsv";
  const CliOutcome d = run_cli({"validate", "--measurements", rel_val, "--fit-on", rel_cal});
  std::filesystem::current_path(cwd);
  REQUIRE(d.status == 0);
  const size_t b = d.out.find("drift between the suites: 2 rows");
  REQUIRE(b != std::string::npos);
  const size_t e = d.out.find("\n", d.out.find("the machine moved by", b));
  check_doc_block("docs/validation.md", "drift-sixth",
                  fmt::format("```\n$ simcache validate --measurements {} --fit-on {}\n...\n{}\n"
                              "...\n```\n",
                              rel_val, rel_cal, d.out.substr(b, e - b)));
}

TEST_CASE("a seventh sitting: a repeat ahead of each program's rows", "[refits][calib][cli]") {
  // The first sitting with a repeat of a calibration shape ahead of the
  // lifecycle, e0, WAITV and poll rows besides the two at the ends
  // (2026-12-06, median rounds). The repeats read from -13 % (poll) to
  // +32 % (a serial lifecycle's registration) against the calibration
  // suite: divided by the anchor that ran last before
  // each, more rows are inside than as measured or divided by the one
  // overall move.
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
  const std::string val = "data/measurements/vm-2cpu-seventh-validation.tsv",
                    cal = "data/measurements/vm-2cpu-seventh-calibration.tsv";
  const CliOutcome d =
      run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", cal});
  std::filesystem::current_path(cwd);
  INFO(d.out << d.err);
  REQUIRE(d.status == 0);
  const size_t b = d.out.find("drift between the suites: 8 rows");
  REQUIRE(b != std::string::npos);
  const size_t moved = d.out.find("the machine moved by", b), order = d.out.find("in file order (6 anchors: ", b);
  REQUIRE(moved != std::string::npos);
  REQUIRE(order != std::string::npos);
  const auto inside_after = [&](size_t at) {
    const std::string mark = "rows inside the 90% interval ";
    const size_t i = d.out.find(mark, at) + mark.size();
    return std::stoi(d.out.substr(i));
  };
  const std::string cov = "coverage of the 90% model-uncertainty intervals: rows ";
  const int measured = std::stoi(d.out.substr(d.out.find(cov) + cov.size()));
  CHECK(inside_after(order) > measured);
  CHECK(inside_after(order) > inside_after(moved));
  CHECK(d.out.find("V-R-POLL-4096          951.572 ns against C-POLL-4096 1093.443 ns: -12.97%") !=
        std::string::npos);
  CHECK(d.out.find("2.441 us against C-LS-128-128-reg 1.851 us: +31.92%") != std::string::npos);
  const size_t e = d.out.find("\n", order);
  check_doc_block("docs/validation.md", "drift-seventh",
                  fmt::format("```\n$ simcache validate --statistic median --measurements {} "
                              "--fit-on {}\n...\ncoverage{}\n...\n{}\n```\n",
                              val, cal,
                              d.out.substr(d.out.find(cov) + 8,
                                           d.out.find('\n', d.out.find(cov)) - d.out.find(cov) - 8),
                              d.out.substr(b, e - b)));
}

TEST_CASE("an eighth sitting: every row beside the reference", "[refits][calib][cli]") {
  // The first sitting whose every row was measured round by round beside
  // the scalar control (2026-12-06, median rounds; docs/measure.md, "The
  // reference"). Its references read from about 283 to over 400 ns a
  // pair in both suites: spells in each. Scaled, the repeats between the
  // suites agree within a few percent (one, arm-fail at 1000 per mille,
  // does not) and more rows are inside their interval, with a lower
  // error, than the same rounds judged as measured (the references and
  // ratios taken out of the same files).
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
  const std::string val = "data/measurements/vm-2cpu-eighth-validation.tsv",
                    cal = "data/measurements/vm-2cpu-eighth-calibration.tsv";
  const CliOutcome d =
      run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", cal});
  // The same files without the reference: its rows out, the rows' notes
  // without their pairing.
  const auto raw = [](const std::string& rel) {
    std::string out;
    std::istringstream in(simcache::testing::read_text(repo_file(rel)));
    for (std::string line; std::getline(in, line);) {
      const size_t tab = line.find('\t');
      if (tab != std::string::npos && tab > 4 && line.compare(tab - 4, 4, ".ref") == 0) continue;
      // The pairing's two fields (the kit writes them together, a
      // lifecycle row's phases after them).
      const size_t p = line.find("; paired round by round with anchor ");
      if (p != std::string::npos) {
        const size_t ratio = line.find(';', p + 2), end = line.find(';', ratio + 1);
        line.erase(p, (end == std::string::npos ? line.size() : end) - p);
      }
      out += line + "\n";
    }
    return out;
  };
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(::getpid()) + "_eighth"))
                              .string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/cal.tsv") << raw(cal);
  std::ofstream(dir + "/val.tsv") << raw(val);
  const CliOutcome as_measured = run_cli({"validate", "--statistic", "median", "--measurements",
                                          dir + "/val.tsv", "--fit-on", dir + "/cal.tsv"});
  std::filesystem::remove_all(dir);
  std::filesystem::current_path(cwd);
  INFO(d.out << d.err);
  REQUIRE(d.status == 0);
  REQUIRE(as_measured.status == 0);
  CHECK(as_measured.out.find("the reference") == std::string::npos);
  const std::string cov = "coverage of the 90% model-uncertainty intervals: rows ";
  const auto inside = [&](const std::string& out) {
    return std::stoi(out.substr(out.find(cov) + cov.size()));
  };
  const auto mean_err = [](const std::string& out) {
    const std::string mark = "mean abs error ";
    return std::stod(out.substr(out.find(mark, out.find("summary: ")) + mark.size()));
  };
  CHECK(inside(d.out) >= inside(as_measured.out) + 6);
  CHECK(mean_err(d.out) < mean_err(as_measured.out) / 2);
  const auto line = [&](const std::string& what) {
    const size_t at = d.out.find(what);
    REQUIRE(at != std::string::npos);
    return d.out.substr(at, d.out.find('\n', at) - at);
  };
  CHECK(line("--fit-on the reference: 31 rows").find("(19 readings from 283.252 ns to 406.329 ns)") !=
        std::string::npos);
  CHECK(line("the reference: 32 rows").find("(26 readings from 283.671 ns to 440.810 ns)") !=
        std::string::npos);
  CHECK(line("the machine moved by").find("within twice its error") != std::string::npos);
  // Beside the reference the repeats no longer help: divided by the
  // anchors in file order, no more rows are inside (docs/validation.md).
  {
    const std::string order = line("in file order (");
    const std::string mark = "rows inside the 90% interval ";
    // The prose's figures: 18 of 24 against 20.
    CHECK(std::stoi(order.substr(order.find(mark) + mark.size())) == 18);
    CHECK(inside(d.out) == 20);
  }
  // What is left (docs/validation.md's prose): each row's error, in %.
  const auto err = [&](const std::string& id) {
    const size_t at = d.out.find("\n" + id + " ");
    REQUIRE(at != std::string::npos);
    const std::string l = d.out.substr(at + 1, d.out.find('\n', at + 1) - at - 1);
    const size_t pct = l.rfind('%');
    return std::stod(l.substr(l.rfind(' ', pct - 1) + 1));
  };
  // docs/validation.md, "The CQ array's pages": 256 installs into a fresh
  // table within 5 % (12 to 15 % low before those pages were priced).
  for (const char* id : {"V-F0-4096-256", "V-F0-256-256"}) {
    INFO(id);
    CHECK(err(id) < -2);
    CHECK(err(id) > -5);
  }
  // "Table sizes" and what is left: predicted 25 % low, 8 to 12 % low,
  // 6 to 13 % low, 19 % high.
  CHECK(err("V-LS-16384-1024-reg") <= -24.5);  // 25 % to the percent
  CHECK(err("V-LS-16384-1024-reg") > -25.5);
  CHECK(err("V-E0-700") < -8);
  CHECK(err("V-E0-700") > -12);
  CHECK(err("V-LR-128-128") < -6);
  CHECK(err("V-LR-128-128") > -13);
  CHECK(err("V-POLL-32768") > 18);
  CHECK(err("V-POLL-32768") < 20);
  CHECK(d.out.find("V-R-E0-1000            170.959 ns against C-E0-1000 143.473 ns: +19.16%") !=
        std::string::npos);
  // Every other repeat agrees across the suites within a few percent.
  {
    const size_t from = d.out.find("drift between the suites: 8 rows");
    std::istringstream drift(d.out.substr(from, d.out.find("the machine moved by", from) - from));
    int repeats = 0;
    for (std::string l; std::getline(drift, l);) {
      if (l.rfind("  V-R-", 0) != 0 || l.rfind("  V-R-E0-1000 ", 0) == 0) continue;
      const size_t colon = l.rfind(": ");
      INFO(l);
      CHECK(std::fabs(std::stod(l.substr(colon + 2))) < 5);
      ++repeats;
    }
    CHECK(repeats == 7);
  }
  const size_t b = d.out.find("drift between the suites: 8 rows");
  REQUIRE(b != std::string::npos);
  const size_t e = d.out.find("\n", d.out.find("the machine moved by", b));
  check_doc_block(
      "docs/validation.md", "drift-eighth",
      fmt::format("```\n$ simcache validate --statistic median --measurements {} --fit-on {}\n"
                  "{}\n{}\n...\n{}\n{}\n...\n{}\n```\n\nThe same rounds without the "
                  "reference (its rows taken out of both files, the rows' notes without their "
                  "pairing):\n\n```\n{}\n{}\n```\n",
                  val, cal, line("--fit-on the reference"), line("the reference: 32"),
                  line("summary: "), line(cov), d.out.substr(b, e - b),
                  as_measured.out.substr(as_measured.out.find("summary: "),
                                         as_measured.out.find('\n', as_measured.out.find("summary: ")) -
                                             as_measured.out.find("summary: ")),
                  as_measured.out.substr(as_measured.out.find(cov),
                                         as_measured.out.find('\n', as_measured.out.find(cov)) -
                                             as_measured.out.find(cov))));
}

TEST_CASE("a ninth and a tenth sitting: a fourth table size for registration",
          "[refits][calib][cli]") {
  // Two sittings of the same day with the calibration suite's serial
  // lifecycle at 8,192 slots (scripts/measure), the ninth in a slow spell
  // throughout, the tenth mostly fast. Without that row the fit cannot
  // tell the zeroing's price per byte from a page allocation's (the
  // 4,096-slot table's array is one order-3 page, zeroed): the
  // 16,384-slot registration was predicted 21 % low on the eighth
  // sitting. With it, the validation suite's 16,384-slot registration is
  // predicted within a few percent on both (median rounds), in a
  // narrower interval than the same rows give without it
  // (docs/validation.md, "Table sizes").
  const simcache::testing::InSourceDir cwd("ninth");  // the rows' copies go with it
  const std::string dir = cwd.tmp();
  std::string want;
  for (const char* sitting : {"ninth", "tenth"}) {
    INFO(sitting);
    const std::string cal = fmt::format("data/measurements/vm-2cpu-{}-calibration.tsv", sitting),
                      val = fmt::format("data/measurements/vm-2cpu-{}-validation.tsv", sitting);
    // The same calibration rows less the 8,192-slot lifecycle's three.
    std::string without;
    {
      std::istringstream in(simcache::testing::read_text(repo_file(cal)));
      int dropped = 0;
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("C-LS-8192-1024", 0) == 0) {
          ++dropped;
          continue;
        }
        without += line + "\n";
      }
      CHECK(dropped == 4);  // interval, registration, fill, and the reference beside them
    }
    const std::string less = dir + "/" + sitting + "-less.tsv";
    std::ofstream(less) << without;
    const CliOutcome d =
        run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", cal});
    const CliOutcome w =
        run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", less});
    INFO(d.out << d.err << w.err);
    REQUIRE(d.status == 0);
    REQUIRE(w.status == 0);
    const auto line = [](const std::string& out, const std::string& what) {
      const size_t at = out.find(what);
      REQUIRE(at != std::string::npos);
      return out.substr(at, out.find('\n', at + 1) - at);
    };
    const RowFigures with_row = row_figures(d.out, "V-LS-16384-1024-reg"),
                     without_row = row_figures(w.out, "V-LS-16384-1024-reg");
    CHECK(std::fabs(with_row.predicted / with_row.measured - 1) < 0.06);
    CHECK(with_row.hi - with_row.lo < 0.75 * (without_row.hi - without_row.lo));
    const std::string cov = "coverage of the 90% model-uncertainty intervals: rows ";
    const int inside = std::stoi(line(d.out, cov).substr(cov.size()));
    // The prose's figures: 23 of 24 on both; the ninth's references 327
    // to 423 ns a pair (the block's reference line).
    const bool ninth = std::string(sitting) == "ninth";
    CHECK(inside == 23);
    if (ninth)
      CHECK(line(d.out, "the reference: 32 rows").find("from 327.112 ns to 423.231 ns") !=
            std::string::npos);
    // What is left (docs/validation.md), in the error column's terms (the
    // model's time against the measured one).
    const auto err = [&](const std::string& id) {
      const std::string l = line(d.out, "\n" + id + " ");
      const size_t pct = l.rfind('%');
      return std::stod(l.substr(l.rfind(' ', pct - 1) + 1));
    };
    // 256 installs into a fresh table within 4 % since the CQ array's
    // pages are priced (4 to 15 % low before).
    for (const char* id : {"V-F0-4096-256", "V-F0-256-256"}) {
      INFO(id);
      CHECK(std::fabs(err(id)) < 4);
    }
    CHECK(err("V-E0-700") < -8);
    CHECK(err("V-E0-700") > -12);
    CHECK(err("V-LR-128-128") < -6);
    CHECK(err("V-LR-128-128") > -13);
    if (ninth) {
      CHECK(err("V-POLL-1024") > 53);
      CHECK(err("V-POLL-1024") < 55);
      CHECK(line(d.out, "  V-R-POLL-4096 ").find("against C-POLL-4096 997.627 ns: -30.47%") !=
            std::string::npos);
    } else {
      CHECK(std::fabs(err("V-LP-1024-256-fill")) < 2);
    }
    want += fmt::format(
        "$ simcache validate --statistic median --measurements {} --fit-on {}\n{}\n...\n{}\n{}\n"
        "without C-LS-8192-1024 in --fit-on:\n{}\n",
        val, cal, line(d.out, "the reference: 32 rows"), line(d.out, "\nV-LS-16384-1024-reg ").substr(1),
        line(d.out, cov), line(w.out, "\nV-LS-16384-1024-reg ").substr(1));
  }
  check_doc_block("docs/validation.md", "table-sizes", "```\n" + want + "```\n");
}

TEST_CASE("validate --fit-on: today's fit validated as calibrate writes it, beside the "
          "older fitter's",
          "[refits][calib][cli]") {
  // A kit sitting: its calibration suite fitted here by both fitters,
  // its validation suite judged against each. Today's fit is the one
  // calibrate writes from the same rows: validate --profile on that file
  // prints the same rows and coverage.
  const std::string cal = repo_file("data/measurements/vm-2cpu-idle-calibration.tsv");
  const std::string val = repo_file("data/measurements/vm-2cpu-idle-validation.tsv");
  const CliOutcome both = run_cli({"validate", "--measurements", val, "--fit-on", cal});
  REQUIRE(both.status == 0);
  CHECK(both.err.empty());  // both fits credible on this sitting, fitted to its means
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(::getpid()) + "_fiton.toml"))
                              .string();
  REQUIRE(run_cli({"calibrate", "--measurements", cal, "--out", out}).status == 0);
  const CliOutcome one = run_cli({"validate", "--measurements", val, "--profile", out});
  std::filesystem::remove(out);
  REQUIRE(one.status == 0);
  const auto from = [](const std::string& s, const std::string& what) {
    const size_t at = s.find(what);
    return at == std::string::npos ? std::string() : s.substr(at, s.find('\n', at) - at);
  };
  // (Not the rows' lines: the profile file keeps each price to the
  // digits it writes, so a prediction's last digit may differ.)
  for (const char* line : {"coverage of the 90%", "median width of those", "summary: 23 rows"}) {
    INFO(line);
    CHECK_FALSE(from(one.out, line).empty());
    CHECK(from(both.out, line) == from(one.out, line));
  }
  // The comparison: today's row states that coverage, and the older
  // fitter's row is there beside it.
  const std::string cov = from(one.out, "coverage of the 90%");
  const std::string inside = cov.substr(cov.find("rows ") + 5, cov.find(' ', cov.find("rows ") + 5) -
                                                                   cov.find("rows ") - 5);
  CHECK(both.out.find("each fitted to " + cal + " (29 rows) and validated on these 23 rows") !=
        std::string::npos);
  CHECK(from(both.out, "| today's | 0/1 | ").find("| " + inside + " (") != std::string::npos);
  CHECK_FALSE(from(both.out, "| before the speed factors | ").empty());
  // Bad combinations, one line each.
  const CliOutcome prof =
      run_cli({"validate", "--measurements", val, "--fit-on", cal, "--profile", "i7-12700KF"});
  CHECK(prof.status == 2);
  CHECK(prof.err == "simcache: --fit-on fits the profile it validates; it takes no --profile\n");
  const CliOutcome loo =
      run_cli({"validate", "--measurements", val, "--fit-on", cal, "--leave-out", "shape"});
  CHECK(loo.status == 2);
  CHECK(loo.err == "simcache: --fit-on fits the profile it validates; it takes no --leave-out\n");
  const CliOutcome missing =
      run_cli({"validate", "--measurements", val, "--fit-on", "/nonexistent/cal.tsv"});
  CHECK(missing.status == 2);
  CHECK(missing.err.rfind("simcache: --fit-on: /nonexistent/cal.tsv: ", 0) == 0);
  CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
  // A --fit-on row no rule maps: an error even with --skip-unmapped,
  // which is for --measurements (calibrate would refuse the row too).
  {
    const simcache::testing::TempDir t("fit_on_unmapped");
    std::ifstream in(cal);
    std::string head, row;
    std::getline(in, head);
    std::getline(in, row);
    row.replace(row.find('\t') + 1, row.find('\t', row.find('\t') + 1) - row.find('\t') - 1,
                "no-such-workload");
    std::ofstream(t / "cal.tsv") << head << "\n" << row << "\n";
    const CliOutcome u = run_cli(
        {"validate", "--measurements", val, "--fit-on", t / "cal.tsv", "--skip-unmapped"});
    CHECK(u.status == 2);
    CHECK(u.err.rfind("simcache: --fit-on: " + (t / "cal.tsv") + ":2:", 0) == 0);
    CHECK(u.err.find(": workload: no [[shape]] rule of ") != std::string::npos);
    CHECK(u.err.find("(every --fit-on row must map, as in calibrate; --skip-unmapped applies to "
                     "--measurements only)\n") != std::string::npos);
    CHECK(std::count(u.err.begin(), u.err.end(), '\n') == 1);
  }
  const CliOutcome twice = run_cli({"validate", "--measurements", val, "--fit-on", cal + "," + cal});
  CHECK(twice.status == 2);
  CHECK(twice.err == "simcache: --fit-on: " + cal + " is named twice (a sitting counts once)\n");
  // The shipped i7 rows made twice as slow: today's fit is credible, the
  // older fitter's is not, and each of its causes is a warning; a file
  // in both lists is one too.
  const simcache::testing::TempDir tmp("fit_on");
  const std::string slow = tmp / "slow.tsv";
  {
    std::ifstream in(repo_file("data/measurements/calibration.tsv"));
    std::ofstream out(slow);
    std::string line;
    for (bool head = true; std::getline(in, line); head = false) {
      if (!head && !line.empty() && line[0] != '#') {
        // the value column, the sixth
        size_t b = 0;
        for (int k = 0; k < 5; ++k) b = line.find('\t', b) + 1;
        const size_t e = line.find('\t', b);
        line = line.substr(0, b) + fmt::format("{:.9g}", 2 * std::stod(line.substr(b, e - b))) +
               line.substr(e);
      }
      out << line << "\n";
    }
  }
  const CliOutcome scaled = run_cli({"validate", "--measurements", slow, "--fit-on", slow});
  REQUIRE(scaled.status == 0);
  INFO(scaled.err);
  CHECK(scaled.err.find("simcache: warning: " + slow + " is in --fit-on and --measurements: its "
                        "rows are validated in sample") != std::string::npos);
  CHECK(scaled.err.find("today's fit is not credible") == std::string::npos);
  CHECK(scaled.err.find("simcache: warning: --fit-on: the fit by the fitter before the speed "
                        "factors is not credible (calibrate would refuse it): the model "
                        "inadequacy per workload shape sits at its cap") != std::string::npos);
  CHECK(from(scaled.out, "| before the speed factors | 1/1 | ").size() > 0);
  CHECK(from(scaled.out, "| today's | 0/1 | ").size() > 0);
}

TEST_CASE("an Intel Xeon VM: few installs or waits a system call", "[refits][calib][cli]") {
  // docs/validation.md, "An Intel Xeon VM": the reuse of 128 slots (a
  // FILES_UPDATE and two batches of SEND_FD a cycle) and arm-fail at 700
  // per mille (two io_uring_enter a cycle for its 32 waits, about ten of
  // them armed) spend much of their time entering the kernel. On the AMD
  // sittings from the sixth to the twelfth each sitting's own fit
  // predicts the reuse 6 to 28 % low, and arm-fail at 700 down to 17 %
  // low; on the two Xeon sittings arm-fail within 2 % and the reuse from
  // 5.1 % low to 0.2 % high, inside their intervals.
  const simcache::testing::InSourceDir cwd("xeon");
  const auto error = [](const std::string& out, const char* id) {
    const RowFigures f = row_figures(out, id);
    REQUIRE(f.predicted == f.predicted);
    return 100 * (f.predicted / f.measured - 1);
  };
  const auto inside = [](const std::string& out, const char* id) {
    const RowFigures f = row_figures(out, id);
    return f.lo <= f.measured && f.measured <= f.hi;
  };
  const auto judge = [](const std::string& sitting, const char* statistic) {
    const std::string cal = fmt::format("data/measurements/vm-2cpu-{}-calibration.tsv", sitting),
                      val = fmt::format("data/measurements/vm-2cpu-{}-validation.tsv", sitting);
    const CliOutcome v =
        run_cli({"validate", "--statistic", statistic, "--measurements", val, "--fit-on", cal});
    INFO(sitting << " " << statistic << ": " << v.err);
    REQUIRE(v.status == 0);
    return v.out;
  };
  double reuse_lo = 100, reuse_hi = -100, arm_lo = 100;
  for (const char* sitting : {"sixth", "seventh", "eighth", "ninth", "tenth", "eleventh", "twelfth"})
    for (const char* statistic : {"mean", "median"}) {
      INFO(sitting << " " << statistic);
      const std::string out = judge(sitting, statistic);
      const double reuse = error(out, "V-LR-128-128");
      reuse_lo = std::min(reuse_lo, reuse), reuse_hi = std::max(reuse_hi, reuse);
      arm_lo = std::min(arm_lo, error(out, "V-E0-700"));
    }
  CHECK(fmt::format("{:.0f} {:.0f} {:.0f}", reuse_hi, reuse_lo, arm_lo) == "-6 -28 -17");
  double xeon_reuse_lo = 100, xeon_reuse_hi = -100;
  for (const char* sitting : {"xeon", "xeon-second"})
    for (const char* statistic : {"mean", "median"}) {
      INFO(sitting << " " << statistic);
      const std::string out = judge(sitting, statistic);
      if (std::string(sitting) == "xeon") {
        // 21 of 24 by median rounds, 20 by mean. Its misses: POLL_ADD at
        // QD 1,024 about 12 % high (outside its interval by either, by
        // mean rounds under 0.1 % below its lower end), and by mean
        // rounds the paced lifecycle about 11 % low (outside).
        CHECK(covered(out) == (std::string(statistic) == "median" ? 21 : 20));
        CHECK(std::fabs(error(out, "V-POLL-1024") - 12) < 1);
        CHECK_FALSE(inside(out, "V-POLL-1024"));
        if (std::string(statistic) == "mean") {
          CHECK(std::fabs(error(out, "V-LP-1024-256") + 11) < 1);
          CHECK_FALSE(inside(out, "V-LP-1024-256"));
        }
      }
      CHECK(std::fabs(error(out, "V-E0-700")) < 2);
      const double reuse = error(out, "V-LR-128-128");
      xeon_reuse_lo = std::min(xeon_reuse_lo, reuse), xeon_reuse_hi = std::max(xeon_reuse_hi, reuse);
      CHECK(inside(out, "V-E0-700"));
      CHECK(inside(out, "V-LR-128-128"));
    }
  CHECK(fmt::format("{:.1f} {:.1f}", xeon_reuse_lo, xeon_reuse_hi) == "-5.1 0.2");
  // The record: every Xeon row names its CPU and what its kernel says of
  // Meltdown, as an AMD CPU's does; all but 2 of their 232 rows failed
  // their stability gate.
  int rows = 0, failed = 0;
  for (const char* file : {"xeon-calibration", "xeon-validation", "xeon-second-calibration",
                           "xeon-second-validation"}) {
    std::istringstream in(simcache::testing::read_text(
        repo_file(fmt::format("data/measurements/vm-2cpu-{}.tsv", file))));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      ++rows;
      failed += line.find("stability=gate-fail;") != std::string::npos;
      CHECK(line.find("simcache-measure on Intel(R) Xeon(R) Processor;") != std::string::npos);
      CHECK(line.find("; meltdown Not affected;") != std::string::npos);
    }
  }
  CHECK(rows == 232);
  CHECK(failed == 230);
}

TEST_CASE("a third Xeon sitting: rows in the root memory cgroup beside the child",
          "[refits][calib][cli]") {
  // docs/validation.md, "Charged and uncharged": the kit's --root-memcg
  // rows beside the same shapes in the task's child memcg. The model
  // charges nothing of an F0 fill or an armed wait (each pair predicted
  // alike) and POLL_ADD's requests (the root predicted faster).
  const simcache::testing::InSourceDir cwd("rootmemcg");
  const std::string cal = "data/measurements/vm-2cpu-xeon-third-calibration.tsv",
                    val = "data/measurements/vm-2cpu-xeon-third-validation.tsv";
  const auto pct = [](double a, double b) { return fmt::format("{:+.2f}", 100 * (a / b - 1)); };
  const auto pct1 = [](double a, double b) { return fmt::format("{:+.1f}", 100 * (a / b - 1)); };
  std::map<std::string, std::string> figures;  // "statistic what" -> figure
  for (const char* statistic : {"median", "mean", "fastest"}) {
    INFO(statistic);
    const std::string st(statistic);
    const CliOutcome v =
        run_cli({"validate", "--statistic", statistic, "--measurements", val, "--fit-on", cal});
    REQUIRE(v.status == 0);
    figures[st + " inside"] = std::to_string(covered(v.out));
    if (st == "fastest") continue;
    for (const char* id : {"V-F0-4096-1024", "V-E0-0", "V-POLL-1024"}) {
      INFO(id);
      const RowFigures child = row_figures(v.out, id),
                       root = row_figures(v.out, std::string(id) + "-root");
      REQUIRE(child.measured == child.measured);
      REQUIRE(root.measured == root.measured);
      figures[st + " " + id + " measured"] = pct(root.measured, child.measured);
      figures[st + " " + id + " predicted"] = pct1(root.predicted, child.predicted);
      if (std::string(id) == "V-POLL-1024")  // outside by median rounds, inside by mean
        CHECK((root.lo <= root.measured && root.measured <= root.hi) == (st == "mean"));
    }
    const CliOutcome c = run_cli({"calibrate", "--statistic", statistic, "--measurements", cal});
    REQUIRE(c.status == 0);
    const RowFigures child = row_figures(c.out, "C-POLL-4096"),
                     root = row_figures(c.out, "C-POLL-4096-root");
    figures[st + " C-POLL-4096 measured"] = pct1(root.measured, child.measured);
    figures[st + " C-POLL-4096 fitted"] = pct1(root.predicted, child.predicted);
    figures[st + " C-POLL-4096-root residual"] = pct1(root.predicted, root.measured);
  }
  // The same shapes measured round by round, each root row beside the
  // same program in the child memcg as its anchor: the note's ratio, by
  // median rounds, is the charge alone.
  {
    std::istringstream in(simcache::testing::read_text(
        repo_file("data/measurements/vm-2cpu-xeon-third-memcg-pairs.tsv")));
    std::string line, pairs;
    std::getline(in, line);
    int rows = 0;
    while (std::getline(in, line)) {
      ++rows;
      const std::string id = line.substr(0, line.find('\t'));
      if (id.find("-root-") == std::string::npos) {
        CHECK(line.find(", child memcg\t") != std::string::npos);
        continue;
      }
      CHECK(line.find(", root memcg\t") != std::string::npos);
      const std::string mark = "ratio to anchor ns round by round: mean ";
      const size_t at = line.find(", median ", line.find(mark));
      REQUIRE(at != std::string::npos);
      pairs += fmt::format("{} {:+.1f}\n", id, 100 * (std::stod(line.substr(at + 9)) - 1));
      // docs/validation.md: the ratio's standard error about 1 %.
      const size_t se = line.find(", se ", at);
      REQUIRE(se != std::string::npos);
      CHECK(std::stod(line.substr(se + 5)) > 0.5);
      CHECK(std::stod(line.substr(se + 5)) < 1.5);
    }
    CHECK(rows == 8);
    CHECK(pairs ==
          "M-POLL-4096-root-a -6.6\n"
          "M-POLL-1024-root-a -6.3\n"
          "M-POLL-4096-root-b -6.2\n"
          "M-POLL-1024-root-b -9.1\n");
  }
  std::string got;
  for (const auto& [k, f] : figures) got += k + " " + f + "\n";
  CHECK(got ==
        "fastest inside 15\n"
        "mean C-POLL-4096 fitted -10.3\n"
        "mean C-POLL-4096 measured -3.8\n"
        "mean C-POLL-4096-root residual -4.9\n"
        "mean V-E0-0 measured -0.85\n"
        "mean V-E0-0 predicted +0.0\n"
        "mean V-F0-4096-1024 measured +0.01\n"
        "mean V-F0-4096-1024 predicted +0.0\n"
        "mean V-POLL-1024 measured +2.25\n"
        "mean V-POLL-1024 predicted -13.6\n"
        "mean inside 28\n"
        "median C-POLL-4096 fitted -10.2\n"
        "median C-POLL-4096 measured -6.2\n"
        "median C-POLL-4096-root residual -3.3\n"
        "median V-E0-0 measured +1.26\n"
        "median V-E0-0 predicted +0.0\n"
        "median V-F0-4096-1024 measured +0.66\n"
        "median V-F0-4096-1024 predicted +0.0\n"
        "median V-POLL-1024 measured +0.09\n"
        "median V-POLL-1024 predicted -14.2\n"
        "median inside 20\n");
}

TEST_CASE("the calibration suite's small reuse and nearly one armed wait a cycle",
          "[refits][calib][cli]") {
  // docs/measure.md, section 1's suites: C-LR-16-16 (against 4,096 slots,
  // the removal's and the refill's system calls against their entries)
  // and C-E0-969 (one armed wait in 992 of 1,000 cycles, none in the
  // rest: against 1000 per mille, the second io_uring_enter() any armed
  // wait costs). The second Xeon sitting has them (docs/validation.md,
  // "An Intel Xeon VM"): its fit meets both within 2 %, does not pin
  // io_uring_enter with them, and predicts its validation suite with a
  // mean absolute error of 4.54 % against 4.80 % without them by median
  // rounds, 3.00 % against 3.21 % by mean rounds.
  {
    // The kit's error diffusion at 969 per mille, 32 waits a cycle.
    long long seq = 0;
    int one = 0, none = 0;
    for (int c = 0; c < 3125; ++c) {
      int armed = 0;
      for (int i = 0; i < 32; ++i, ++seq) armed += !((seq + 1) * 969 / 1000 > seq * 969 / 1000);
      one += armed == 1, none += armed == 0;
    }
    CHECK(one == 3100);  // 992 of 1,000
    CHECK(none == 25);
  }
  const simcache::testing::InSourceDir cwd("percall");
  const std::string cal = "data/measurements/vm-2cpu-xeon-second-calibration.tsv",
                    val = "data/measurements/vm-2cpu-xeon-second-validation.tsv";
  int dropped = 0;
  const std::string less =
      write_without(cwd.tmp() + "/less.tsv", cal, {"C-LR-16-16", "C-E0-969"}, &dropped);
  CHECK(dropped == 4);  // the rows and the references beside them
  std::string maes;
  for (const char* statistic : {"median", "mean"}) {
    INFO(statistic);
    const CliOutcome c = run_cli({"calibrate", "--statistic", statistic, "--measurements", cal});
    REQUIRE(c.status == 0);
    for (const char* id : {"C-LR-16-16", "C-E0-969"}) {
      INFO(id);
      const RowFigures f = row_figures(c.out, id);
      CHECK(std::fabs(f.predicted / f.measured - 1) < 0.02);
    }
    // Not pinned: the rows leave most of its prior's variance.
    const size_t at = c.out.find("\nio_uring_enter ");
    REQUIRE(at != std::string::npos);
    const std::string line = c.out.substr(at + 1, c.out.find('\n', at + 1) - at - 1);
    CHECK(line.substr(line.size() - 6) == " prior");
    const CliOutcome w =
        run_cli({"validate", "--statistic", statistic, "--measurements", val, "--fit-on", cal});
    const CliOutcome l =
        run_cli({"validate", "--statistic", statistic, "--measurements", val, "--fit-on", less});
    REQUIRE(w.status == 0);
    REQUIRE(l.status == 0);
    const double with = last_cell_pct(w.out, "| today's |"),
                 without = last_cell_pct(l.out, "| today's |");
    REQUIRE(with > 0);
    REQUIRE(without > 0);
    maes += fmt::format("{:.2f} {:.2f} ", with, without);
  }
  CHECK(maes == "4.56 4.82 2.99 3.20 ");
  CHECK(simcache::testing::read_text(repo_file("docs/validation.md"))
            .find("absolute error a little: 4.56 % against 4.82 % without them by median\n"
                  "rounds, 2.99 % against 3.20 % by mean rounds.") != std::string::npos);
}

TEST_CASE("of the suites' serial registrations only 2,048 slots take an order-2 page",
          "[calib][cli]") {
  // docs/measure.md, section 1's suites: the calibration suite's serial
  // table sizes take slab objects (128, 1,024 slots) or pages of order 3
  // and above (4,096, 8,192); the validation suite's V-LS-2048-64 a
  // 16 KiB array, an order-2 page, whose price rests on its prior.
  for (const int slots : {128, 1024, 2048, 4096, 8192}) {
    INFO(slots);
    const CliOutcome o =
        run_cli({"--scenario", "lifecycle", "--set", fmt::format("slots={}", slots), "--set",
                 "installs=64", "--set", "mode=0", "--all-counters", "--no-sites"});
    REQUIRE(o.status == 0);
    const auto count = [&o](const std::string& name) {
      const size_t at = o.out.find("\n" + name + " ");
      return at == std::string::npos ? 0 : std::stoi(o.out.substr(at + name.size() + 2));
    };
    CHECK(count("page_alloc_order2") == (slots == 2048 ? 1 : 0));
    CHECK(count("page_alloc_order3") == (slots >= 4096 ? 1 : 0));
    CHECK(count("kmalloc_large") == (slots >= 2048 ? 1 : 0));
  }
}

TEST_CASE("the CQ array's pages: 256 installs into a fresh table", "[refits][calib][cli]") {
  // docs/validation.md, "The CQ array's pages": with the program's first
  // reads of a fresh ring's CQ array priced (ring_cq_page), the eighth to
  // eleventh sittings (median rounds) price a page at 5.2 to 5.9 us (the
  // twelfth at 6.2), the node cache's hit near its prior, and validate
  // the 256-install rows
  // within 5 % (7 to 9 % high on the eleventh) with 20, 23, 23, 24 and 22
  // of 24 rows inside their 90 % interval. The twelfth, measured after
  // the change with the kit's fixed address layout, judges it out of
  // sample: its 256-install rows within 1 %.
  const simcache::testing::InSourceDir cwd("pages");
  double lo = 1e300, hi = 0;
  const std::vector<std::pair<const char*, int>> sittings = {
      {"eighth", 20}, {"ninth", 23}, {"tenth", 23}, {"eleventh", 24}, {"twelfth", 22}};
  for (const auto& [sitting, inside] : sittings) {
    INFO(sitting);
    const std::string cal = fmt::format("data/measurements/vm-2cpu-{}-calibration.tsv", sitting),
                      val = fmt::format("data/measurements/vm-2cpu-{}-validation.tsv", sitting);
    const CliOutcome c = run_cli({"calibrate", "--statistic", "median", "--measurements", cal});
    const CliOutcome v =
        run_cli({"validate", "--statistic", "median", "--measurements", val, "--fit-on", cal});
    REQUIRE(c.status == 0);
    REQUIRE(v.status == 0);
    const auto param = [&](const std::string& name) {
      const size_t at = c.out.find("\n" + name + " ");
      REQUIRE(at != std::string::npos);
      return std::stod(c.out.substr(at + name.size() + 2));
    };
    const double page = param("ring_cq_page");
    if (std::string(sitting) != "twelfth") lo = std::min(lo, page), hi = std::max(hi, page);
    else CHECK(fmt::format("{:.1f}", page / 1000) == "6.1");
    CHECK(param("io_cache_get") < 10);
    const std::string cov = "coverage of the 90% model-uncertainty intervals: rows ";
    CHECK(std::stoi(v.out.substr(v.out.find(cov) + cov.size())) == inside);
    for (const char* id : {"V-F0-4096-256", "V-F0-256-256"}) {
      INFO(id);
      const RowFigures f = row_figures(v.out, id);
      const double e = 100 * (f.predicted / f.measured - 1);
      if (std::string(sitting) == "eleventh") {
        CHECK(e > 6.5);
        CHECK(e < 9.5);
      } else if (std::string(sitting) == "twelfth") {
        CHECK(std::fabs(e) < 1);
      } else {
        CHECK(std::fabs(e) < 5);
      }
    }
  }
  CHECK(fmt::format("{:.1f} {:.1f}", lo / 1000, hi / 1000) == "5.1 5.9");
}

TEST_CASE("an eleventh sitting: the node cache's primed fill", "[refits][calib][cli]") {
  // The calibration suite's node-cache shapes at 128 slots: cold (a new
  // ring's first fill), warm (its second, after an unregister and a
  // re-register: 128 nodes cached) and primed (one install, unregister,
  // re-register: the ring's first MSG_RING done, one node cached). Cold
  // against primed is the ring's first use, which the fit then prices
  // with less doubt than from cold and warm alone, where it shares the
  // step with the cache's hits (docs/measure.md, "A new ring's first
  // use").
  const simcache::testing::InSourceDir cwd("eleventh");
  const std::string cal = "data/measurements/vm-2cpu-eleventh-calibration.tsv";
  int dropped = 0;
  const std::string less = write_without(cwd.tmp() + "/less.tsv", cal, {"C-NC-primed"}, &dropped);
  CHECK(dropped == 2);  // the row and the reference beside it
  const CliOutcome w = run_cli({"calibrate", "--statistic", "median", "--measurements", cal});
  const CliOutcome l = run_cli({"calibrate", "--statistic", "median", "--measurements", less});
  INFO(w.err << l.err);
  REQUIRE(w.status == 0);
  REQUIRE(l.status == 0);
  // A parameter's fitted value and posterior sd from the fit's table.
  const auto param = [](const std::string& out, const std::string& name) {
    const size_t at = out.find("\n" + name + " ");
    REQUIRE(at != std::string::npos);
    std::istringstream in(out.substr(at + name.size() + 2));
    std::pair<double, double> v;
    in >> v.first >> v.second;
    return v;
  };
  const auto first = param(w.out, "ring_first_use"), first_less = param(l.out, "ring_first_use");
  CHECK(first.second < 0.75 * first_less.second);
  CHECK(param(w.out, "slab_alloc_remote").second < 0.75 * param(l.out, "slab_alloc_remote").second);
  // What the rows measure: cold against primed, a fill of 128 installs.
  const RowFigures cold = row_figures(w.out, "C-NC-cold"), primed = row_figures(w.out, "C-NC-primed");
  const double step = 128 * (cold.measured - primed.measured);
  CHECK(std::fabs(first.first / step - 1) < 0.05);
  // The prose's figures, in microseconds.
  CHECK(fmt::format("{:.2f} {:.2f} {:.2f} {:.2f}", first.first / 1000, first.second / 1000,
                    first_less.second / 1000, step / 1000) == "4.73 0.80 1.22 4.74");
}

TEST_CASE("every shipped fit's error model settles", "[refits][calib][cli]") {
  // docs/calibration.md, "The fit": with the memory work's prices held
  // where the previous round put them, no shipped fit's relinearisation
  // orbits (9 of the first 27 did) but the oldest sitting's by its mean
  // rounds, and calibrate says so; the two Xeon sittings, measured after
  // the change, settle too.
  const std::string cause = "not credible: the error model did not settle";
  std::vector<std::pair<std::string, std::string>> fits = {
      {"data/measurements/calibration.tsv", "mean"}};
  for (const char* sitting :
       {"", "idle-", "quiet-", "fresh-", "fourth-", "fifth-", "sixth-", "seventh-", "eighth-",
        "ninth-", "tenth-", "eleventh-", "twelfth-", "xeon-", "xeon-second-"})
    for (const char* statistic : {"mean", "median"})
      fits.emplace_back(fmt::format("data/measurements/vm-2cpu-{}calibration.tsv", sitting),
                        statistic);
  REQUIRE(fits.size() == 31);
  for (const auto& [file, statistic] : fits) {
    INFO(file << " " << statistic);
    const CliOutcome c =
        run_cli({"calibrate", "--statistic", statistic, "--measurements", repo_file(file)});
    const bool oldest_mean =
        file == "data/measurements/vm-2cpu-calibration.tsv" && statistic == "mean";
    CHECK((c.err.find(cause) != std::string::npos) == oldest_mean);
    CHECK(c.status == (oldest_mean ? 3 : 0));
    if (file != "data/measurements/calibration.tsv") continue;
    // The prose's figures for the shipped rows: km settles at 0.32, and
    // the two prices it scales at 0.0236 ns a byte and 0.156 ns a slot.
    const std::string cpu = "x the priors' machine for CPU work, ";
    const size_t at = c.out.find(cpu);
    REQUIRE(at != std::string::npos);
    CHECK(fmt::format("{:.2f}", std::stod(c.out.substr(at + cpu.size()))) == "0.32");
    const auto price = [&c](const std::string& name) {
      const size_t p = c.out.find("\n" + name + " ");
      REQUIRE(p != std::string::npos);
      return std::stod(c.out.substr(p + name.size() + 2));
    };
    CHECK(fmt::format("{:.4f} {:.3f}", price("zero_bytes"), price("file_table_slot")) ==
          "0.0236 0.156");
  }
}

TEST_CASE("an error model that moved by more than 1 % in its last round is refused",
          "[calib][fit][credible]") {
  FitReport r = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  const auto refused = [&r] {
    for (const std::string& p : fit_problems(r))
      if (p.find("the error model did not settle") != std::string::npos) return true;
    return false;
  };
  CHECK(r.error_model_move <= kStill);  // the shipped rows settle on their own
  CHECK_FALSE(refused());
  r.error_model_move = 0.009;
  CHECK_FALSE(refused());
  r.error_model_move = 0.011;
  CHECK(refused());
  const std::vector<std::string> p = fit_problems(r);
  CHECK(std::find(p.begin(), p.end(),
                  "the error model did not settle: its last relinearisation moved a speed "
                  "factor or an error term by 1.1% (more than 1%), and the prices are that "
                  "round's") != p.end());
}

TEST_CASE("docs/measure.md's sittings: today's fitter beside the one before it",
          "[refits][calib][docs]") {
  // Each shipped sitting with a validation suite: its calibration suite
  // fitted by both fitters (validate --fit-on), its validation suite
  // judged against each. The block is the command and its closing table.
  std::string want;
  int outside_now = 0, outside_old = 0;  // sittings outside the 85-97 % goal
  for (const char* sitting :
       {"idle", "quiet", "fresh", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
        "tenth", "eleventh", "twelfth", "xeon", "xeon-second", "xeon-third"}) {
    const std::string cal = fmt::format("data/measurements/vm-2cpu-{}-calibration.tsv", sitting);
    const std::string val = fmt::format("data/measurements/vm-2cpu-{}-validation.tsv", sitting);
    const std::filesystem::path cwd = std::filesystem::current_path();
    std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
    const CliOutcome o = run_cli({"validate", "--measurements", val, "--fit-on", cal});
    std::filesystem::current_path(cwd);
    INFO(sitting << ": " << o.err);
    REQUIRE(o.status == 0);
    const size_t table = o.out.find("| fitter |");
    REQUIRE(table != std::string::npos);
    want += fmt::format("`simcache validate --measurements {} --fit-on {}`:\n\n{}\n", val, cal,
                        o.out.substr(table));
    // The prose beneath the block: on the first five the older fitter's
    // mean absolute error a little lower, by under two points on four of
    // them and 4.14 on the fifth; on the sixth lower by 0.35 points and
    // on the eighth by 0.13; on the seventh, the ninth to the twelfth and
    // the first two Xeon sittings today's lower; on the third Xeon
    // sitting the older one's, by 0.26 points.
    const double now = last_cell_pct(o.out, "| today's |"),
                 old = last_cell_pct(o.out, "| before the speed factors |");
    const std::string s(sitting);
    const std::string gap = fmt::format("{:.2f}", now - old);
    if (s == "idle" || s == "quiet" || s == "fresh" || s == "fourth" || s == "fifth") {
      CHECK(old < now);
      if (s == "fifth")
        CHECK(gap == "4.14");
      else
        CHECK(now - old < 2);
    } else if (s == "sixth") {
      CHECK(gap == "0.35");
    } else if (s == "eighth") {
      CHECK(gap == "0.13");
    } else if (s == "xeon-third") {
      CHECK(gap == "0.26");
    } else {
      CHECK(now < old);
    }
    for (const char* who : {"| today's |", "| before the speed factors |"}) {
      const std::vector<std::string> c = cells(o.out, who);
      REQUIRE(c.size() == 8);
      const double share = std::stod(c[3].substr(c[3].find('(') + 1));
      (std::string(who) == "| today's |" ? outside_now : outside_old) += share < 85 || share > 97;
      if (std::string(sitting) == "quiet" && std::string(who) == "| today's |") {
        CHECK(share < 85);  // too narrow there
        CHECK(std::stod(c[4]) < std::stod(cells(o.out, "| before the speed factors |")[4]));
      }
    }
    // Every calibration suite: one configuration per workload shape.
    std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
    const CliOutcome c = run_cli({"calibrate", "--measurements", cal});
    std::filesystem::current_path(cwd);
    CHECK(c.out.find("every workload shape holds one configuration") != std::string::npos);
    if (std::string(sitting) == "fifth") {
      // The prose above the block: one configuration measured in both
      // suites minutes apart, and every futex row of the second predicted
      // 23 to 39 % low.
      const RowFigures cal_row = row_figures(c.out, "C-S0-32"),
                       val_row = row_figures(o.out, "V-E0-0");
      CHECK(cal_row.predicted == Approx(val_row.predicted).epsilon(1e-5));
      CHECK(fmt::format("{:.1f} {:.1f}", val_row.measured, cal_row.measured) == "410.5 289.1");
      for (const char* id : {"V-E0-700", "V-E0-0", "V-WV-8x4", "V-WV-8x16", "V-WV-8x32"}) {
        const RowFigures f = row_figures(o.out, id);
        INFO(id);
        CHECK(f.predicted / f.measured - 1 < -0.23);
        CHECK(f.predicted / f.measured - 1 > -0.39);
      }
    }
  }
  CHECK(outside_now > 0);  // neither reaches the goal on every sitting
  CHECK(outside_old > 0);
  check_doc_block("docs/measure.md", "fitters-sittings", want);
}

TEST_CASE("validate --leave-out: one unit is refused, skipped rows are listed", "[calib][cli]") {
  // The scalar wait-wake rows: two groups, one workload shape; and a row
  // that is a difference, not a time.
  std::string text = simcache::testing::kHeader, line;
  {
    std::ifstream in(repo_file("data/measurements/calibration.tsv"));
    std::getline(in, line);
    while (std::getline(in, line))
      for (const char* id : {"WV-019", "WV-020", "WV-021", "WV-057", "WV-058", "WV-059"})
        if (line.rfind(std::string(id) + "\t", 0) == 0) text += line + "\n";
  }
  std::string diff = text.substr(text.find("\nWV-019\t") + 1);
  diff = diff.substr(0, diff.find('\n'));
  std::vector<std::string> f = split_words(diff, '\t');
  f[0] = "WV-X";
  f[5] = "-1.5";
  for (size_t i = 0; i < f.size(); ++i) text += (i ? "\t" : "") + f[i];
  text += "\n";
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("simcache_test_" + std::to_string(::getpid()) + "_scalar.tsv"))
                               .string();
  std::ofstream(path, std::ios::binary) << text;
  const CliOutcome one = run_cli({"validate", "--leave-out", "shape", "--measurements", path});
  CHECK(one.status == 2);
  CHECK(one.err == "simcache: --leave-out shape: " + path +
                       " has 1 workload shape; leaving one out needs two\n");
  const CliOutcome two = run_cli({"validate", "--leave-out", "group", "--measurements", path});
  CHECK(two.status == 0);
  CHECK(two.out.rfind("skipped: " + path + ":8:", 0) == 0);
  CHECK(two.out.find("row WV-X skipped\nEach group left out in turn, over the 2 fits: rows ") !=
        std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("docs/measure.md's worked example is what calibrate prints on its rows",
          "[calib][docs]") {
  // The kit's calibration suite as measured on a 2-vCPU VM
  // (data/measurements/vm-2cpu-calibration.tsv): its rows, and what
  // calibrate prints on them (stdout's summary, stderr's causes).
  const std::string tsv = "data/measurements/vm-2cpu-calibration.tsv";
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(::getpid()) + "_vm.toml"))
                              .string();
  const CliOutcome r = run_cli({"calibrate", "--measurements", repo_file(tsv), "--out", out});
  std::string want = "| row | value | unit |\n|---|---|---|\n";
  std::vector<MeasuredRow> rows;
  std::string err;
  REQUIRE(read_measurements(repo_file(tsv), &rows, &err));
  for (const MeasuredRow& m : rows)
    want += fmt::format("| {} | {:.4g} | {} |\n", m.id, m.value, m.unit);
  std::string e = r.err;
  for (size_t at = e.find(repo_file("")); at != std::string::npos; at = e.find(repo_file("")))
    e.erase(at, repo_file("").size());
  for (size_t at = e.find(out); at != std::string::npos; at = e.find(out))
    e.replace(at, out.size(), "host.toml");
  want += fmt::format("\n```\n$ simcache calibrate --measurements {} --out host.toml\n{}{}(exit "
                      "status {})\n```\n",
                      tsv, report_summary(r.out), e, r.status);
  // A profile is written exactly when the fit is credible.
  CHECK(std::filesystem::exists(out) == (r.status == 0));
  std::filesystem::remove(out);
  check_doc_block("docs/measure.md", "vm-calibrate", want);
  // The text after the block says so: these oldest rows set the level
  // poorly, and since the CQ array's pages are priced the speed factor's
  // search ends high, where the prices it names are refused.
  CHECK(r.status == 3);
  CHECK(r.out.find("speed factor 25.") != std::string::npos);
  // Its error model does not settle either (docs/calibration.md, "The
  // fit"): a cause of its own.
  CHECK(r.err.find("not credible: the error model did not settle") != std::string::npos);
  CHECK(simcache::testing::read_text(repo_file("docs/measure.md"))
            .find("The block above is what calibrate prints today: the fit is refused.") !=
        std::string::npos);
}

TEST_CASE("docs/measure.md's second worked example: one sitting's rows fitted and validated",
          "[refits][calib][docs]") {
  // The calibration and validation suites measured back to back on an
  // idle 2-vCPU VM (data/measurements/vm-2cpu-idle-*.tsv): the profile
  // calibrate writes from the first, and validate's report on the second.
  const std::string cal = "data/measurements/vm-2cpu-idle-calibration.tsv";
  const std::string val = "data/measurements/vm-2cpu-idle-validation.tsv";
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_test_" + std::to_string(::getpid()) + "_idle.toml"))
                              .string();
  const CliOutcome c = run_cli({"calibrate", "--measurements", repo_file(cal), "--out", out});
  REQUIRE(c.status == 0);  // credible: the host profile is fitted
  CHECK(c.out.find("the fit is credible") != std::string::npos);
  const CliOutcome v = run_cli({"validate", "--profile", out, "--measurements", repo_file(val)});
  REQUIRE(v.status == 0);
  // The request path and the cold start are priced by the rows, not by
  // the priors: each is above 0, and the cold start's two per-op prices
  // are pinned.
  CostModel host;
  std::string err;
  REQUIRE(load_profile(out, &host, &err));
  std::filesystem::remove(out);
  for (const CostParam& p : host.params) {
    INFO(p.name);
    if (p.name == "msg_ring_send_fd" || p.name == "fixed_file_install" ||
        p.name == "io_sqe_files_register" || p.name == "futexv_entry" || p.name == "futex_wait")
      CHECK(p.value > 0);
    if (p.name == "idle_gap" || p.name == "idle_cold_slot" || p.name == "idle_cold_install")
      CHECK(p.pinned);
  }
  // The per-row table and the summary (the simulations' list above it
  // is in the rows' shapes).
  const size_t table = v.out.find("\nrow ");
  REQUIRE(table != std::string::npos);
  const std::string v_out = v.out.substr(table + 1);
  const std::string want = fmt::format(
      "```\n$ simcache calibrate --measurements {} --out host.toml\n{}(exit status {})\n"
      "$ simcache validate --profile host.toml --measurements {}\n{}```\n",
      cal, report_summary(c.out), c.status, val, v_out);
  check_doc_block("docs/measure.md", "vm-idle", want);
}

TEST_CASE("docs/measure.md's third worked example: two sittings pooled", "[refits][calib][docs]") {
  // The quiet sitting alone: its gate-passing rows agree to the noise
  // floor, so its intervals leave out how far a measurement moves between
  // sittings. Pooled with the idle sitting of another day (every
  // configuration measured twice), the fit sees that drift as row noise.
  const std::string q_cal = "data/measurements/vm-2cpu-quiet-calibration.tsv";
  const std::string i_cal = "data/measurements/vm-2cpu-idle-calibration.tsv";
  const std::string q_val = "data/measurements/vm-2cpu-quiet-validation.tsv";
  const std::string i_val = "data/measurements/vm-2cpu-idle-validation.tsv";
  const std::string tmp = std::filesystem::temp_directory_path().string() + "/simcache_test_" +
                          std::to_string(::getpid());
  const CliOutcome one = run_cli({"calibrate", "--measurements", repo_file(q_cal), "--out",
                                  tmp + "_quiet.toml"});
  REQUIRE(one.status == 0);  // credible: gate-failed rows judged by their own spread
  const CliOutcome c = run_cli({"calibrate", "--measurements",
                                repo_file(q_cal) + "," + repo_file(i_cal), "--out",
                                tmp + "_pooled.toml"});
  REQUIRE(c.status == 0);
  // 29 rows of each sitting, 28 configurations: the second sitting's
  // ids carry @2.
  CHECK(c.out.find("58 rows") != std::string::npos);
  CHECK(c.out.find("\nC-F0-4096-4096@2 ") != std::string::npos);
  CostModel quiet, pooled;
  std::string err;
  REQUIRE(load_profile(tmp + "_quiet.toml", &quiet, &err));
  REQUIRE(load_profile(tmp + "_pooled.toml", &pooled, &err));
  const CliOutcome vq = run_cli({"validate", "--profile", tmp + "_quiet.toml", "--measurements",
                                 repo_file(q_val) + "," + repo_file(i_val)});
  const CliOutcome vp = run_cli({"validate", "--profile", tmp + "_pooled.toml", "--measurements",
                                 repo_file(q_val) + "," + repo_file(i_val)});
  std::filesystem::remove(tmp + "_quiet.toml");
  std::filesystem::remove(tmp + "_pooled.toml");
  REQUIRE(vq.status == 0);
  REQUIRE(vp.status == 0);
  // Both validation sittings: the pooled profile's intervals cover more
  // of them than the one sitting's.
  CHECK(covered(vp.out) > covered(vq.out) + 10);
  const std::string want = fmt::format(
      "```\n$ simcache calibrate --measurements {} --out quiet.toml\n{}"
      "$ simcache calibrate --measurements {},{} --out pooled.toml\n{}"
      "$ simcache validate --profile quiet.toml --measurements {},{}\n...\n{}"
      "$ simcache validate --profile pooled.toml --measurements {},{}\n...\n{}```\n",
      q_cal, report_summary(one.out), q_cal, i_cal, report_summary(c.out), q_val, i_val,
      tail(vq.out), q_val, i_val, tail(vp.out));
  check_doc_block("docs/measure.md", "vm-pooled", want);
}

TEST_CASE("docs/measure.md's fourth worked example: a third sitting, two prices its rows measure together",
          "[refits][calib][docs]") {
  // A third day on the same kind of VM. Its registrations cost well under
  // a nanosecond a slot beyond a 128-slot table, about what zeroing the
  // table's 8 bytes a slot costs alone; file_table_slot (the per-slot work
  // beyond zeroing) and zero_bytes then move together. Under log-normal
  // priors neither can reach 0, and 3 % less on its 4,096-slot
  // registration moves file_table_slot by a few per cent (the Gaussian
  // fitter before it jumped to the other split there and put it at 0).
  // Its validation rows
  // then judge the profiles of the two earlier sittings, out of sitting:
  // one sitting's alone, and both pooled.
  const std::string d = "data/measurements/";
  const std::string f_cal = d + "vm-2cpu-fresh-calibration.tsv";
  const std::string f_val = d + "vm-2cpu-fresh-validation.tsv";
  const std::string q_cal = d + "vm-2cpu-quiet-calibration.tsv";
  const std::string pooled = q_cal + "," + d + "vm-2cpu-idle-calibration.tsv";
  const std::string tmp = std::filesystem::temp_directory_path().string() + "/simcache_test_" +
                          std::to_string(::getpid());
  const CliOutcome one =
      run_cli({"calibrate", "--measurements", repo_file(f_cal), "--out", tmp + "_fresh.toml"});
  INFO(one.out << one.err);
  REQUIRE(one.status == 0);
  CHECK(one.err.empty());
  // One sitting without repeats: the drift beyond the rows' own errors
  // is near 0 (docs/calibration.md), under a fifth of the inadequacy.
  const auto drift_pct = [](const std::string& out) {
    const size_t b = out.find("% beyond it, a drift between sittings");
    if (b == std::string::npos) return 0.0;
    const size_t a = out.rfind(' ', b);
    return std::stod(out.substr(a + 1, b - a - 1));
  };
  const auto inadequacy_pct = [](const std::string& out) {
    const size_t b = out.find("% per configuration (");
    const size_t a = out.rfind(' ', b);
    return std::stod(out.substr(a + 1, b - a - 1));
  };
  CHECK(drift_pct(one.out) < 0.2 * inadequacy_pct(one.out));
  const CliOutcome q =
      run_cli({"calibrate", "--measurements", repo_file(q_cal), "--out", tmp + "_quiet.toml"});
  const CliOutcome qi = run_cli({"calibrate", "--measurements",
                                 repo_file(q_cal) + "," + repo_file(d + "vm-2cpu-idle-calibration.tsv"),
                                 "--out", tmp + "_pooled.toml"});
  REQUIRE(q.status == 0);
  REQUIRE(qi.status == 0);
  // A fourth sitting judges the three earlier ones pooled.
  const std::string three = q_cal + "," + d + "vm-2cpu-idle-calibration.tsv," + f_cal;
  const std::string fourth_val = d + "vm-2cpu-fourth-validation.tsv";
  const CliOutcome t3 = run_cli({"calibrate", "--measurements",
                                 repo_file(q_cal) + "," +
                                     repo_file(d + "vm-2cpu-idle-calibration.tsv") + "," +
                                     repo_file(f_cal),
                                 "--out", tmp + "_three.toml"});
  REQUIRE(t3.status == 0);
  const auto judge = [&](const char* profile) {
    return run_cli({"validate", "--profile", tmp + profile, "--measurements", repo_file(f_val)});
  };
  const CliOutcome own = judge("_fresh.toml"), vq = judge("_quiet.toml"), vp = judge("_pooled.toml");
  const CliOutcome v4 = run_cli(
      {"validate", "--profile", tmp + "_three.toml", "--measurements", repo_file(fourth_val)});
  CostModel fresh;
  std::string err;
  REQUIRE(load_profile(tmp + "_fresh.toml", &fresh, &err));
  for (const char* f : {"_fresh.toml", "_quiet.toml", "_pooled.toml", "_three.toml"})
    std::filesystem::remove(tmp + f);
  REQUIRE(own.status == 0);
  REQUIRE(vq.status == 0);
  REQUIRE(vp.status == 0);
  REQUIRE(v4.status == 0);
  // The doc's "well under a nanosecond a slot": the serial registrations
  // from 128 to 4,096 slots, measured.
  const auto measured_us = [&](const std::string& id) {
    const size_t r = one.out.find("\n" + id + " ");
    REQUIRE(r != std::string::npos);
    std::istringstream in(one.out.substr(r + id.size() + 2));
    double v = 0;
    std::string unit;
    in >> v >> unit;
    REQUIRE(unit == "us");
    return v;
  };
  const double per_slot_ns =
      1000 * (measured_us("C-LS-4096-4096-reg") - measured_us("C-LS-128-128-reg")) / (4096 - 128);
  CHECK(per_slot_ns > 0);
  CHECK(per_slot_ns < 0.5);
  // The two per-slot prices: the rows measure their sum, each rests
  // mostly on its prior.
  const size_t at = one.out.find("\nfile_table_slot ");
  REQUIRE(at != std::string::npos);
  const size_t end = one.out.find("\n", one.out.find("\n", at + 1) + 1);
  const std::string slot_lines = one.out.substr(at + 1, end - at);
  size_t slot = fresh.params.size(), zero = fresh.params.size();
  for (size_t j = 0; j < fresh.params.size(); ++j) {
    if (fresh.params[j].name == "file_table_slot") slot = j;
    if (fresh.params[j].name == "zero_bytes") zero = j;
  }
  REQUIRE(slot < fresh.params.size());
  REQUIRE(zero < fresh.params.size());
  CHECK(!fresh.params[slot].pinned);
  // -0.67 (below -0.7 until a large kmalloc's memcg slab stat update
  // joined the registration's counts, session 59).
  CHECK(fresh.corr.at(slot * fresh.params.size() + zero) < -0.6);
  CHECK(slot_lines.find("weak: ") != std::string::npos);
  // 3 % less on the 4,096-slot registration: file_table_slot moves by
  // under a tenth and stays weak; the fit stays credible.
  {
    std::string text = simcache::testing::read_text(repo_file(f_cal));
    const size_t row = text.find("\nC-LS-4096-4096-reg\t");
    REQUIRE(row != std::string::npos);
    size_t col = row + 1;
    for (int c = 0; c < 5; ++c) col = text.find('\t', col) + 1;
    const size_t col_end = text.find('\t', col);
    const double v = std::stod(text.substr(col, col_end - col));
    text.replace(col, col_end - col, fmt::format("{:.6f}", v * 0.97));
    simcache::testing::TempFile less("vm-2cpu-fresh-less.tsv", text);
    const CliOutcome lo = run_cli({"calibrate", "--measurements", less.path()});
    INFO(lo.out << lo.err);
    CHECK(lo.status == 0);
    const auto slot_value = [](const std::string& out) {
      const size_t at = out.find("\nfile_table_slot ");
      return at == std::string::npos ? 0.0 : std::stod(out.substr(at + 17));
    };
    const double before = slot_value(one.out), after = slot_value(lo.out);
    CHECK(before > 0);
    CHECK(after > 0.9 * before);
    CHECK(after < before);
    CHECK(lo.out.find("no measured work price more than 3.0 sds of its logarithm below its "
                      "prior") != std::string::npos);
  }
  // Its own sitting's validation rows: at least 85 % inside their
  // intervals with each row's own measurement error added (the row
  // noise's prior puts what the fit cannot explain into the inadequacy the
  // intervals carry); 19 of 23 without it, the four it misses each
  // within 1.5 % of its interval's nearer end (docs/measure.md says so).
  CHECK(covered_with_error(own.out) * 100 >= 85 * 23);
  CHECK(covered(own.out) == 19);
  CHECK(simcache::testing::read_text(repo_file("docs/measure.md"))
            .find("Its intervals cover 19 of its own sitting's\n23 validation rows") !=
        std::string::npos);
  for (const char* id : {"V-F0-16384-16384", "V-E0-0", "V-WV-8x4", "V-POLL-1024"}) {
    const RowFigures f = row_figures(own.out, id);
    INFO(id << " " << f.measured << " [" << f.lo << ", " << f.hi << "]");
    CHECK((f.measured < f.lo || f.measured > f.hi));
    CHECK(std::min(std::fabs(f.lo / f.measured - 1), std::fabs(f.hi / f.measured - 1)) < 0.015);
  }
  // Out of sitting: the quiet sitting's profile alone covers few of this
  // sitting's rows; pooled with the idle sitting, at least 85 % (the drift
  // between sittings is in the pooled profile's inadequacy); the three
  // pooled cover at least 85 % of a fourth sitting's.
  CHECK(covered(vp.out) > covered(vq.out) + 10);
  CHECK(covered(vp.out) * 100 >= 85 * 23);
  CHECK(covered(v4.out) * 100 >= 85 * 23);
  CHECK(t3.out.find("beyond it, a drift between sittings that the profile's time intervals "
                    "carry (model_drift)") != std::string::npos);
  CHECK(drift_pct(t3.out) > 2);  // "several per cent" (docs/calibration.md)
  const std::string want = fmt::format(
      "```\n$ simcache calibrate --measurements {} --out fresh.toml\n{}...\n{}"
      "$ simcache validate --profile fresh.toml --measurements {}\n...\n{}"
      "$ simcache validate --profile quiet.toml --measurements {}\n...\n{}"
      "$ simcache validate --profile pooled.toml --measurements {}\n...\n{}"
      "$ simcache calibrate --measurements {} --out three.toml\n{}"
      "$ simcache validate --profile three.toml --measurements {}\n...\n{}```\n",
      f_cal, report_summary(one.out), slot_lines, f_val, tail(own.out), f_val, tail(vq.out),
      f_val, tail(vp.out), three, report_summary(t3.out), fourth_val, tail(v4.out));
  check_doc_block("docs/measure.md", "vm-fresh", want);
}

TEST_CASE("pooled sittings: each effect against its own sitting's bases, in-sample marks per file",
          "[refits][calib][pooled]") {
  // The shipped rows and a second sitting on a machine 10 % slower: every
  // value times 1.1, so every effect (a ratio to its own sitting's base)
  // is the same.
  std::string text;
  {
    std::ifstream in(repo_file("data/measurements/calibration.tsv"), std::ios::binary);
    std::string line;
    std::getline(in, line);
    text = line + "\n";
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      for (size_t at = 0;;) {
        const size_t tab = line.find('\t', at);
        f.push_back(line.substr(at, tab == std::string::npos ? tab : tab - at));
        if (tab == std::string::npos) break;
        at = tab + 1;
      }
      if (f.size() > 5 && !line.empty() && line[0] != '#')
        f[5] = fmt::format("{:.9g}", 1.1 * std::stod(f[5]));
      for (size_t i = 0; i < f.size(); ++i) text += (i ? "\t" : "") + f[i];
      text += "\n";
    }
  }
  const testing::TempFile copy("second_sitting.tsv", text);
  const std::string cal = repo_file("data/measurements/calibration.tsv");
  const auto effects = [](const std::string& out) {
    const size_t at = out.find(" effects, mean abs error ");
    REQUIRE(at != std::string::npos);
    const size_t n = out.rfind("; ", at) + 2;
    return out.substr(n, out.find(" (raw sign", at) - n);
  };
  const CliOutcome one = run_cli({"validate", "--profile", "i7-12700KF", "--measurements", cal});
  const CliOutcome two =
      run_cli({"validate", "--profile", "i7-12700KF", "--measurements", cal + "," + copy.path()});
  REQUIRE(one.status == 0);
  REQUIRE(two.status == 0);
  // Twice the effects, each measured against the bases of its own file:
  // the same errors, so the same mean, and twice the agreements (against
  // a base pooled over both files, the slower sitting's variants would
  // be about 5 % off).
  const std::string e1 = effects(one.out), e2 = effects(two.out);
  INFO(e1 << " / " << e2);
  CHECK(e1.rfind("22 effects, mean abs error ", 0) == 0);
  CHECK(e2.rfind("44 effects, mean abs error ", 0) == 0);
  CHECK(e1.substr(e1.find("mean abs error"), e1.find(", direction") - e1.find("mean abs error")) ==
        e2.substr(e2.find("mean abs error"), e2.find(", direction") - e2.find("mean abs error")));
  // A profile fitted to both sittings marks a measurement of either file
  // as in-sample: the second file's rows are named "X@2" in its sources.
  const std::string out = std::filesystem::temp_directory_path().string() + "/simcache_test_" +
                          std::to_string(::getpid()) + "_pooled_i7.toml";
  const CliOutcome fit =
      run_cli({"calibrate", "--measurements", cal + "," + copy.path(), "--out", out, "--force"});
  REQUIRE(std::filesystem::exists(out));
  const auto marks = [](const std::string& o) {
    size_t n = 0;
    for (size_t at = o.find("% in-sample"); at != std::string::npos;
         at = o.find("% in-sample", at + 1))
      ++n;
    return n;
  };
  // sparse4096's measured changes, each marked as the shipped profile
  // (fitted to calibration.tsv alone) marks them.
  const size_t shipped = marks(run_cli({"--scenario", "sparse4096"}).out);
  CHECK(shipped >= 7);
  for (const std::string& m : {cal, copy.path()}) {
    INFO(m);
    const CliOutcome r =
        run_cli({"--scenario", "sparse4096", "--profile", out, "--measurements", m});
    REQUIRE(r.status == 0);
    CHECK(marks(r.out) == shipped);
  }
  std::filesystem::remove(out);
}

TEST_CASE("streaming memory work takes its own speed factor: a VM's per-slot price is not driven to 0",
          "[calib][fit][scale]") {
  // The 2-vCPU VM's rows (docs/measure.md) are 7-8 times the priors'
  // machine on request paths, but zero 32 KiB at desktop speed. With one
  // factor for every prior the fit scaled the per-byte and per-slot
  // priors by 7.9 and drove file_table_slot to 0 (a refusal).
  const CostModel priors = prior_model();
  size_t memory = 0;
  for (const CostParam& p : priors.params)
    if (speed_class(p) == SpeedClass::memory) {
      ++memory;
      CHECK((p.name == "zero_bytes" || p.name == "file_table_slot"));
    }
  CHECK(memory == 2);
  Mapping map;
  std::vector<MappedRow> rows;
  std::vector<PerOpCounts> per_op;
  std::string err;
  REQUIRE(load_mapping(repo_file("data/profiles/mapping.toml"), &map, &err));
  std::vector<MeasuredRow> measured;
  REQUIRE(read_measurements(repo_file("data/measurements/vm-2cpu-calibration.tsv"), &measured, &err));
  REQUIRE(map_rows(map, measured, &rows, nullptr, &err));
  REQUIRE(simulate_rows(rows, 2, &per_op, &err));
  const FitReport r = fit_profile(priors, map.fit, rows, per_op, "vm");
  INFO("speed " << r.speed << ", memory " << r.speed_memory);
  // These oldest rows set the level poorly (docs/measure.md, the worked
  // example): the CPU factor ends anywhere from about 10 to 25, the
  // memory factor at under a quarter of it.
  CHECK(r.speed > 5);
  CHECK(r.speed_memory < r.speed / 4);
  for (size_t j = 0; j < r.params.size(); ++j)
    if (r.model.params[j].name == "file_table_slot") {
      CHECK_FALSE(r.params[j].rows.empty());
      CHECK(r.params[j].fitted > 0);
    }
  for (const std::string& p : fit_problems(r)) CHECK(p.find(" is 0 although ") == std::string::npos);
}

TEST_CASE("id ranges compress consecutive ids", "[calib]") {
  CHECK(id_ranges({"SF-001", "SF-002", "SF-003", "SF-197", "WV-001", "WV-003"}) ==
        "SF-001..SF-003, SF-197, WV-001, WV-003");
  CHECK(id_ranges({"A", "B"}) == "A, B");
  CHECK(id_ranges({}).empty());
}

TEST_CASE("a row that failed its stability gate is weighted by its own spread", "[calib][fit]") {
  CHECK(row_spread("stability=pass; max group CV 5.0%; max role drift 9.0%") == 0);
  CHECK(row_spread("no note at all") == 0);
  // The kit's standard error, or half the drift between repeats if larger.
  CHECK(row_spread("stability=gate-fail; max group CV 30.0%; max role drift 1.0%; se 2.5000%") ==
        Approx(0.025));
  CHECK(row_spread("stability=gate-fail; max group CV 3.0%; max role drift 8.0%; se 0.5000%") ==
        Approx(0.04));
  // Without a standard error: the round CV (the shipped SF-250..252).
  CHECK(row_spread("stability=gate-fail; max group CV 1.719130%; max role drift 2.537496%") ==
        Approx(0.0171913));
  CHECK(row_spread("stability=gate-fail; max group CV 250%") == 1.0);
  // Any row's measurement error, passed or failed (validate's coverage
  // with it added): the same figure without the gate.
  // A round's CV over sqrt(rounds), or half the drift if larger.
  CHECK(measurement_spread("stability=pass; max group CV 6.0%; max role drift 1.0%", 9) ==
        Approx(0.02));
  CHECK(measurement_spread("stability=pass; max group CV 6.0%; max role drift 9.0%", 9) ==
        Approx(0.045));
  CHECK(measurement_spread("stability=pass; max role drift 1.6%; se 0.3208%", 9) ==
        Approx(0.008));
  CHECK(measurement_spread("no note at all", 9) == 0);
  // The fit names them.
  const FitReport r = fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  REQUIRE(r.gate_failed.size() == 3);
  CHECK(r.gate_failed[0].first == "SF-250");
  CHECK(r.gate_failed[0].second == Approx(0.0171913));
}

TEST_CASE("docs/validation.md's seed 002 ratio checks are the tool's", "[calib][docs]") {
  const CostModel& m = simcache::testing::default_profile();
  struct Figure {
    const char* what;
    const char* scenario;
    std::vector<std::pair<std::string, std::string>> sets;
    const char* claimed;
    double claimed_effect;
  };
  const Figure figs[] = {
      {"module benchmark, bulk=32, batched / unbatched per object", "memcg-bulk",
       {{"bulk", "32"}}, "174/215 = 0.809 (-19.1 %)", 174.0 / 215 - 1},
      {"module benchmark, bulk=1", "memcg-bulk", {{"bulk", "1"}}, "335/344 = 0.974 (-2.6 %)",
       335.0 / 344 - 1},
      {"io_uring request refill under POLL_ADD", "poll-refill", {}, "-8.7 %", -0.087},
      {"single-allocation path", "memcg-single", {}, "+5.7 %", 0.057},
  };
  std::string want =
      "| figure | claimed | predicted [90 % model interval] | verdict |\n|---|---|---|---|\n";
  for (const Figure& f : figs) {
    RunRequest req;
    req.scenario = f.scenario;
    req.policies = {"unpatched", "memcg-batch-charge"};
    req.sets = f.sets;
    req.event_ns = event_prices(m);
    RunResult r;
    std::string err;
    INFO(f.scenario << ": " << err);
    REQUIRE(run(req, &r, &err));
    const WorkloadResult& w = r.workloads.at(0);
    const PolicyTime a = policy_time(m, w, w.policies.at(0));
    const PolicyTime b = policy_time(m, w, w.policies.at(1));
    const EffectInterval e = effect_interval(m, a, b);
    const bool inside = e.lo <= f.claimed_effect && f.claimed_effect <= e.hi;
    want += fmt::format("| {} | {} | {:+.1f} % [{:+.1f}, {:+.1f}]{} | {} |\n", f.what, f.claimed,
                        e.effect * 100, e.lo * 100, e.hi * 100, e.prior_based ? " (prior)" : "",
                        inside ? "inside" : "outside");
  }
  check_doc_block("docs/validation.md", "seed002-ratios", want);
}
