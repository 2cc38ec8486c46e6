// The calibrate command's text, and the noise model derived from the rows.
#include <algorithm>
#include <cmath>
#include <charconv>

#include "sim/calibrate/calibrate.h"
#include <fmt/format.h>

namespace simcache::sim {
namespace {

// RE2 (measure.h) on the user's note; a malformed number is "absent"
// rather than an uncaught std::stod exception.
double note_percent(const std::string& note, const Regex& re) {
  std::vector<std::optional<std::string>> m;
  if (!regex_search(re, note, &m) || !m[1]) return -1;
  double v = -1;
  const auto [p, ec] = std::from_chars(m[1]->data(), m[1]->data() + m[1]->size(), v);
  if (ec != std::errc() || p != m[1]->data() + m[1]->size() || !std::isfinite(v)) return -1;
  return v / 100.0;
}

std::string params_text(const Params& p) {
  std::string s;
  for (const auto& [k, v] : p) s += fmt::format(" {}={}", k, v);
  return s;
}

const char* status_text(PinStatus s) {
  switch (s) {
    case PinStatus::pinned:
      return "pinned";
    case PinStatus::no_data:
      return "prior";
    case PinStatus::collinear:
      return "prior";
    case PinStatus::weak:
      return "prior";
  }
  return "";
}

struct NoiseGroup {
  NoiseEntry e;
  std::vector<std::string> ids;
  double cv = -1, note_drift = -1, pair_drift = -1;
  std::vector<std::string> pair_ids;
};

}  // namespace

double row_spread(const std::string& note) {
  static const Regex gate_re = compile_regex(R"(stability=gate-fail)", nullptr);
  std::vector<std::optional<std::string>> m;
  if (!regex_search(gate_re, note, &m)) return 0;
  return measurement_spread(note, 1);
}

// The repeats of the real measurement, as its shape states them ("15
// measured rounds", "15 groups x 32 ops"); the simulation may use fewer.
// RE2 (measure.h): user data never meets a backtracking engine, and
// the number is checked (stod threw on 400 digits; 0 divided by zero).
double measured_rounds(const MappedRow& r) {
  static const Regex repeats = compile_regex(R"((\d{1,6}) (?:measured rounds|groups))", nullptr);
  std::vector<std::optional<std::string>> mt;
  double rounds = noise_rounds(r.params, 15.0);
  if (regex_search(repeats, r.row.shape, &mt) && mt[1] && std::stoi(*mt[1]) > 0)
    rounds = std::stoi(*mt[1]);
  return rounds;
}

double measurement_spread(const std::string& note, double rounds) {
  static const Regex se_re = compile_regex(R"(; se ([0-9.]{1,20})%)", nullptr);
  static const Regex cv_re = compile_regex(R"(max group CV ([0-9.]{1,20})%)", nullptr);
  static const Regex drift_re = compile_regex(R"(max role drift ([0-9.]{1,20})%)", nullptr);
  // The mean's own uncertainty: the kit's standard error where the note
  // has one, else a round's CV over sqrt(rounds); and half the drift
  // between repeats (the mean of two repeat means is off by up to half
  // their difference). Capped at 100 %.
  double se = note_percent(note, se_re);
  if (se < 0) {
    se = note_percent(note, cv_re);
    if (se > 0 && rounds > 1) se /= std::sqrt(rounds);
  }
  const double drift = note_percent(note, drift_re);
  const double s = std::max({se, drift >= 0 ? drift / 2 : -1.0, 0.0});
  return std::min(s, 1.0);
}

std::string describe_sim(const MappedRow& r, const FitSettings& fit) {
  return fmt::format("{}{} on {}, {}", r.scenario, params_text(shape_params(r, fit)), r.kernel,
                     r.policy);
}

NoiseModel derive_noise(const std::vector<MappedRow>& rows, const FitSettings& fit) {
  static const Regex cv_re = compile_regex(R"(max group CV ([0-9.]{1,20})%)", nullptr);
  static const Regex drift_re = compile_regex(R"(max role drift ([0-9.]{1,20})%)", nullptr);
  std::vector<NoiseGroup> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    const MappedRow& r = rows[i];
    // One configuration whatever condition a row recorded (row_relation).
    Params sp = shape_params(r, fit);
    for (const std::string& k : fit.condition_params) sp.erase(k);
    auto g = std::find_if(groups.begin(), groups.end(), [&](const NoiseGroup& ng) {
      return ng.e.scenario == r.scenario && ng.e.params == sp;
    });
    if (g == groups.end())
      g = groups.insert(groups.end(), NoiseGroup{{r.scenario, sp, 0, 0, ""}, {}, -1, -1, -1, {}});
    g->ids.push_back(r.row.id);
    // A profile's noise fractions are read back within [0, 1]; a noisier
    // row (a CV above 100 % on a loaded machine) saturates there.
    g->cv = std::max(g->cv, std::min(1.0, note_percent(r.row.note, cv_re)));
    g->note_drift = std::max(g->note_drift, std::min(1.0, note_percent(r.row.note, drift_re)));
    for (size_t k = 0; k < i; ++k) {  // a repeated base point: boot-to-boot drift
      const MappedRow& o = rows[k];
      // The same simulation too: rows of one group that recorded other
      // conditions (a cache share) differ by what the model prices.
      if (!r.base || !o.base || o.group != r.group || o.kernel != r.kernel ||
          o.policy != r.policy || o.params != r.params)
        continue;
      g->pair_drift =
          std::max(g->pair_drift, std::min(1.0, std::fabs(r.value_ns - o.value_ns) / o.value_ns));
      g->pair_ids.push_back(o.row.id);
      g->pair_ids.push_back(r.row.id);
    }
  }
  NoiseModel nm;
  std::vector<std::string> cv_ids, drift_ids;
  for (const NoiseGroup& g : groups) {
    if (g.cv > nm.fallback.round_cv) nm.fallback.round_cv = g.cv, cv_ids = g.ids;
    const double d = std::max(g.note_drift, g.pair_drift);
    if (d > nm.fallback.drift) nm.fallback.drift = d, drift_ids = g.ids;
  }
  nm.fallback.source = fmt::format("largest over the rows: CV from {}, drift from {}",
                                   id_ranges(cv_ids), id_ranges(drift_ids));
  for (NoiseGroup& g : groups) {
    const double d = std::max(g.note_drift, g.pair_drift);
    if (g.cv < 0 && d < 0) continue;
    g.e.round_cv = g.cv >= 0 ? g.cv : nm.fallback.round_cv;
    g.e.drift = d >= 0 ? d : nm.fallback.drift;
    std::string src = id_ranges(g.ids) + ": ";
    src += g.cv >= 0 ? fmt::format("max group CV {:.4g}% (notes)", g.cv * 100)
                     : "no CV recorded (the largest CV of the rows is used)";
    if (g.note_drift >= 0)
      src += fmt::format("; max role drift {:.4g}% (notes)", g.note_drift * 100);
    if (g.pair_drift >= 0)
      src += fmt::format("; {:.4g}% between repeated base rows {}", g.pair_drift * 100,
                         id_ranges(g.pair_ids));
    g.e.source = src;
    nm.entries.push_back(g.e);
  }
  return nm;
}

std::string format_fit(const FitReport& r, const std::vector<MappedRow>& rows,
                       const std::string& measurements, const Mapping& m) {
  std::string out = fmt::format(
      "simcache calibrate: {} rows of {}, mapping {}\n"
      "fit: a prior per parameter (sim/cost_params.def: its centre and sd), log-normal\n"
      "for work, Gaussian under x >= 0 for a penalty, times the machine's speed factor\n"
      "(one for CPU work, one for streaming memory work) + rows on relative error, at\n"
      "the posterior mode; rows with identical counts share one\n"
      "model error (inadequacy), so do the rows of one workload shape; row noise at\n"
      "least {:.3g}%; a parameter is pinned when its posterior sd is at most {:.0f}% of\n"
      "its prior's (for work: relative to the value, on its logarithm) and {:.0f}% of its\n"
      "value\n\n",
      rows.size(), measurements, m.path, m.fit.noise_cv * 100, m.fit.pin_threshold * 100,
      m.fit.pin_relative * 100);
  out += fmt::format("{:<8} {:>12} {:>12} {:>7}  {}\n", "row", "measured", "model", "resid",
                     "simulation");
  // A twin's figure is its anchor's times the ratio measured round by
  // round (FitReport::fitted_ns); where the pairs' levels were left free
  // they are listed apart, by their ratios.
  const auto in_pair = [&](size_t i) { return i < r.pair.size() && r.pair[i] != SIZE_MAX; };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (r.levels_free && in_pair(i)) continue;
    const MappedRow& row = rows[i];
    const double s = row.time_unit == "us" ? 1e3 : row.time_unit == "ms" ? 1e6 : 1;
    out += fmt::format("{:<8} {:>9.3f} {:<2} {:>9.3f} {:<2} {:>+6.2f}%  {}\n", row.row.id,
                       r.fitted_ns[i] / s, row.time_unit, r.predicted[i] / s, row.time_unit,
                       r.resid[i] * 100, describe_sim(row, m.fit));
  }
  if (r.twins > 0 && !r.levels_free && r.ratio_round_by_round)
    out += "(a twin's measured figure above is its anchor's times the ratio measured round by "
           "round, the figure the fit takes, not the twin's own)\n";
  if (r.levels_free) {
    out += "twins, each fitted as its ratio to its anchor (the pair's level left free: its own "
           "sitting's, not scaled by a reference)\n";
    out += fmt::format("{:<8} {:<8} {:>9} {:>9} {:>7}  {}\n", "row", "anchor", "measured", "model",
                       "resid", "simulation");
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!in_pair(i) || r.pair[i] == i) continue;
      const size_t a = r.pair[i];
      out += fmt::format("{:<8} {:<8} {:>+8.2f}% {:>+8.2f}% {:>+6.2f}%  {}\n", rows[i].row.id,
                         rows[a].row.id, (rows[i].twin_ratio - 1) * 100,
                         (r.predicted[i] / r.predicted[a] - 1) * 100, r.resid[i] * 100,
                         describe_sim(rows[i], m.fit));
    }
  }
  out += fmt::format(
      "rms relative residual {:.2f}%{}, largest {:+.2f}% ({})\n", r.rms_rel * 100,
      r.levels_free ? fmt::format(" over {} rows and twins' ratios (no anchor's level)", r.rms_rows)
                    : std::string(),
      rows.empty() ? 0.0 : r.resid[r.max_row] * 100, rows.empty() ? "" : rows[r.max_row].row.id);
  out += fmt::format(
      "speed factor {:.4f} x the priors' machine for CPU work, {:.4f} for streaming memory work "
      "(zeroing, a table's slots), by type-II maximum likelihood\n",
      r.speed, r.speed_memory);
  out += fmt::format(
      "measurement noise of a row {:.2f}% (its prior: {}{}); model inadequacy {:.2f}% per "
      "configuration ({} configurations) and {:.2f}% per workload shape ({} shapes), by "
      "type-II maximum likelihood; {:.1f} effective parameters for {} rows\n",
      r.row_noise * 100,
      r.noise_prior_rows == 0
          ? fmt::format("noise_cv {:.2f}%: no row that passed its gate has a standard error",
                        r.noise_prior * 100)
      : r.noise_prior > r.noise_prior_rms
          ? fmt::format("noise_cv {:.2f}%, above the rms {:.2f}% of {} rows' own standard errors",
                        r.noise_prior * 100, r.noise_prior_rms * 100, r.noise_prior_rows)
          : fmt::format("the rms of {} rows' own standard errors, {:.2f}%", r.noise_prior_rows,
                        r.noise_prior * 100),
      r.drift > 0 ? fmt::format("; {:.2f}% beyond it, a drift between sittings that the "
                                "profile's time intervals carry (model_drift)",
                                r.drift * 100)
                  : std::string(),
      r.inadequacy * 100, r.configs, r.inadequacy_shape * 100, r.shapes, r.effective_params,
      rows.size());
  out += fmt::format("rows that disagree most: {}\n", worst_rows(r, rows, 5));
  if (!r.gate_failed.empty()) {
    std::string g;
    for (const auto& [id, s] : r.gate_failed)
      g += fmt::format("{}{} {:.2f}%", g.empty() ? "" : ", ", id, s * 100);
    out += fmt::format(
        "rows that failed their stability gate, weighted by their own spread beside the row "
        "noise: {}\n",
        g);
  }
  const std::vector<std::string> problems = fit_problems(r);
  std::string at_zero;  // measured penalties at 0
  std::string allowed;  // measured work prices at 0 that their rows allow
  for (size_t j = 0; j < r.params.size(); ++j) {
    const ParamFit& f = r.params[j];
    const bool penalty = is_penalty(r.model.params[j]);
    if (f.rows.empty() || f.fitted > 0 || (!penalty && !r.bounded_work)) continue;
    std::string& to = penalty ? at_zero : allowed;
    to += fmt::format("{}{}", to.empty() ? "" : ", ", r.model.params[j].name);
  }
  if (problems.empty())
    out += fmt::format(
        "the fit is credible: {}, no error-model term at a cap, {}{}{}{}\n",
        r.gate_failed.empty()
            ? fmt::format("rms {:.2f}% against its noise-plus-inadequacy estimate {:.2f}%, "
                          "{:.2f} sd in rms whitened (limit {:.2f} for {})",
                          r.rms_rel * 100, expected_rms(r) * 100, r.white_passed,
                          rms_sd_limit(r.passed), half_rows(r, false, ""))
            : fmt::format("{}{:.2f} sd in rms over the {} against {} "
                          "noise-plus-inadequacy estimate {:.2f}% with each one's own spread "
                          "added, whitened (limit {:.2f}; rms relative residual of all {:.2f}%)",
                          r.passed == 0
                              ? std::string("no row passed its stability gate; ")
                              : fmt::format("rms {:.2f}% over the {} against its "
                                            "noise-plus-inadequacy estimate {:.2f}%, {:.2f} sd "
                                            "in rms whitened (limit {:.2f}), and ",
                                            r.rms_passed * 100,
                                            half_rows(r, false,
                                                      " that passed their stability gate"),
                                            expected_rms(r) * 100, r.white_passed,
                                            rms_sd_limit(r.passed)),
                          r.rms_sd_failed, half_rows(r, true, ""), r.passed == 0 ? "its" : "that",
                          expected_rms(r) * 100, rms_sd_limit(r.failed_rows),
                          r.rms_rel * 100),
        allowed.empty()
            ? fmt::format("no measured work price more than {:.1f} sds of its logarithm below "
                          "its prior",
                          kPriorConflictZ)
            : fmt::format("no measured work price pushed below 0 (at 0, which their rows "
                          "allow: {})",
                          allowed),
        at_zero.empty() ? std::string()
                        : fmt::format(" (penalties at 0, which a machine may show: {})",
                                      at_zero),
        r.noise_at_floor ? fmt::format(" (the row noise sits at its floor {:.2f}%: the rows agree "
                                       "better than noise_cv)",
                                       r.row_noise * 100)
                         : std::string(),
        r.shapes > 1 && r.inadequacy_shape <= 0
            ? (r.shapes < r.configs  // some shape holds two configurations (shapes_apart())
                   ? " (the inadequacy per workload shape is 0: each shape's level is carried by "
                     "prices of its own, so a shape not in the rows is as uncertain as those "
                     "prices are; validate --leave-out shape measures it)"
                   : " (every workload shape holds one configuration, so the rows cannot tell "
                     "the inadequacy per shape from the one per configuration: it is all the "
                     "configuration's; validate --leave-out shape measures what a shape not in "
                     "the rows costs)")
            : "");
  for (const std::string& p : problems) out += "NOT CREDIBLE: " + p + "\n";
  out += fmt::format("\n{:<24} {:>11} {:>10} {:>11} {:>10} {:<12} {}\n", "parameter", "value",
                     "sd", "prior", "prior sd", "unit", "status");
  size_t pinned = 0, weak = 0, none = 0;
  for (size_t j = 0; j < r.params.size(); ++j) {
    const CostParam& p = r.model.params[j];
    const ParamFit& f = r.params[j];
    pinned += f.status == PinStatus::pinned;
    weak += f.status == PinStatus::weak || f.status == PinStatus::collinear;
    none += f.status == PinStatus::no_data;
    out += fmt::format("{:<24} {:>11.5g} {:>10.3g} {:>11.5g} {:>10.3g} {:<12} {}\n", p.name,
                       p.value, f.stderr_ns, p.prior, p.prior_sd, p.unit, status_text(f.status));
    if (f.status != PinStatus::pinned) out += fmt::format("    {}\n", f.reason);
  }
  out += fmt::format(
      "\n{} of {} parameters pinned by the rows (posterior sd <= {:.0f}% of the prior's, for work "
      "relative to the value, and <= {:.0f}% of the value); {} rest mostly on their priors with weak data, {} on their priors "
      "alone (no row counts them; sim/cost_params.def)\n",
      pinned, r.params.size(), m.fit.pin_threshold * 100, m.fit.pin_relative * 100, weak, none);
  return out;
}

}  // namespace simcache::sim
