#include "sim/calibrate/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include "sim/calibrate/measure.h"

namespace simcache::sim {
namespace {

int sign(double v) { return v > 1e-9 ? 1 : v < -1e-9 ? -1 : 0; }

// Relative noise of a measured delta between two boots of this row's
// workload: sqrt(2 cv^2 / rounds + drift^2) from the profile's noise model.
double measured_delta_noise(const CostModel& m, const MappedRow& r) {
  if (!m.noise) return 0;
  const NoiseEntry& e = m.noise->lookup(r.scenario, r.params);
  return std::sqrt(2 * e.round_cv * e.round_cv / measured_rounds(r) + e.drift * e.drift);
}

const char* dir_text(int d) { return d > 0 ? "up" : d < 0 ? "down" : "n.s."; }

std::string unit_value(double ns, const std::string& unit) {
  return fmt::format("{:.3f} {}", ns / unit_scale(unit), unit);
}

std::string ids_of(const std::vector<MappedRow>& rows, const std::vector<size_t>& idx) {
  std::vector<std::string> ids;
  for (size_t i : idx) ids.push_back(rows[i].row.id);
  return id_ranges(ids);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median widths of a validation's 90 % intervals: of a row's, relative
// to its predicted time (rows predicted at 0 left out), and of an
// effect's, in its own units. Coverage from width is no coverage: these
// go beside every coverage figure.
std::pair<double, double> median_widths(const Validation& v) {
  std::vector<double> rw, ew;
  for (size_t i = 0; i < v.predicted.size(); ++i)
    if (v.predicted[i] > 0) rw.push_back((v.hi[i] - v.lo[i]) / v.predicted[i]);
  for (const Effect& e : v.effects) ew.push_back(e.hi - e.lo);
  return {median_of(rw), median_of(ew)};
}

}  // namespace

std::vector<double> param_counts(const CostModel& m, const PerOpCounts& c) {
  std::vector<double> g(m.params.size(), 0.0);
  for (size_t j = 0; j < m.params.size(); ++j)
    for (Event e : m.params[j].events) g[j] += c[static_cast<size_t>(e)];
  return g;
}

// One effect of a group: row i against the mean of `bases`.
Effect make_effect(const CostModel& m, const std::vector<MappedRow>& rows, const Validation& v,
                   const std::vector<std::vector<double>>& counts, size_t i,
                   const std::vector<size_t>& bases, const FitSettings& fit) {
  Effect e;
  e.row = i;
  e.bases = bases;
  double bm = 0, bp = 0;
  std::vector<double> bc(m.params.size(), 0.0);
  for (size_t b : bases) {
    bm += rows[b].value_ns, bp += v.predicted[b];
    for (size_t j = 0; j < bc.size(); ++j) bc[j] += counts[b][j] / static_cast<double>(bases.size());
  }
  bm /= static_cast<double>(bases.size());
  bp /= static_cast<double>(bases.size());
  // A twin's effect is the ratio measured round by round beside its
  // anchor, its noise that ratio's standard error (reference.h).
  e.measured = rows[i].twin_ratio > 0 ? rows[i].twin_ratio - 1 : rows[i].value_ns / bm - 1;
  e.model = v.predicted[i] / bp - 1;
  // The least related of its bases decides the inadequacy it carries.
  EffectRelation rel = EffectRelation::same_config;
  for (size_t b : bases) rel = std::max(rel, row_relation(rows[b], rows[i], fit));
  const EffectInterval iv = effect_interval(m, bc, counts[i], rel);
  e.lo = iv.lo;
  e.hi = iv.hi;
  e.prior_based = iv.prior_based;
  e.noise = rows[i].twin_ratio > 0 ? rows[i].twin_se : measured_delta_noise(m, rows[i]);
  e.covered = e.measured >= e.lo && e.measured <= e.hi;
  const double half = (e.hi - e.lo) / 2;
  e.covered_noise = std::fabs(e.measured - e.model) <=
                    std::sqrt(half * half + kIntervalZ * kIntervalZ * e.noise * e.noise);
  e.dir_measured = std::fabs(e.measured) < e.noise ? 0 : sign(e.measured);
  e.dir_model = std::fabs(e.model) < e.noise ? 0 : sign(e.model);
  e.agrees = e.dir_measured == e.dir_model;
  e.same_sign = sign(e.measured) == sign(e.model);
  return e;
}

Validation validate_rows(const CostModel& m, const std::vector<MappedRow>& rows,
                         const std::vector<PerOpCounts>& per_op, const FitSettings& fit) {
  Validation v;
  std::vector<std::vector<double>> counts;
  for (size_t i = 0; i < rows.size(); ++i) {
    counts.push_back(param_counts(m, per_op[i]));
    v.predicted.push_back(predict_ns(m, per_op[i]));
    const double sd = std::sqrt(m.predictive_variance(counts[i], v.predicted[i]));
    const TimeInterval ti = time_interval(v.predicted[i], sd);
    v.lo.push_back(ti.lo);
    v.hi.push_back(ti.hi);
    v.prior_based.push_back(rests_on_priors(m, counts[i]));
    v.rows_covered += rows[i].value_ns >= v.lo[i] && rows[i].value_ns <= v.hi[i];
    if (v.lo[i] > 0 && rows[i].value_ns > 0) {
      // Both as log-normal sds, as time_interval() converts a relative sd.
      const double cv = measurement_spread(rows[i].row.note, measured_rounds(rows[i]));
      const double s_model = std::log(v.hi[i] / v.lo[i]) / (2 * kIntervalZ),
                   s_meas = std::sqrt(std::log1p(cv * cv));
      const double centre = std::log(v.hi[i] * v.lo[i]) / 2;
      v.rows_covered_noise += std::fabs(std::log(rows[i].value_ns) - centre) <=
                              kIntervalZ * std::sqrt(s_model * s_model + s_meas * s_meas);
    }
    const double err = std::fabs(v.predicted[i] / rows[i].value_ns - 1);
    v.mean_abs_err += err;
    if (err > v.max_abs_err) v.max_abs_err = err, v.max_row = i;
  }
  if (!rows.empty()) v.mean_abs_err /= static_cast<double>(rows.size());
  // Effects in the order of their groups' first rows, each against the
  // base rows its mapping rule names (MappedRow::bases).
  std::vector<std::string> order;
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!groups.count(rows[i].group)) order.push_back(rows[i].group);
    groups[rows[i].group].push_back(i);
  }
  for (const std::string& g : order) {
    for (size_t i : groups[g]) {
      if (rows[i].base || rows[i].bases.empty()) continue;
      Effect e = make_effect(m, rows, v, counts, i, rows[i].bases, fit);
      v.effects_covered += e.covered;
      v.effects_covered_noise += e.covered_noise;
      v.agree += e.agrees;
      v.same_sign += e.same_sign;
      v.mean_abs_effect_err += std::fabs(e.model - e.measured) * 100;
      v.effects.push_back(std::move(e));
    }
  }
  if (!v.effects.empty()) v.mean_abs_effect_err /= static_cast<double>(v.effects.size());
  return v;
}

std::string format_validation(const Validation& v, const CostModel& m,
                              const std::vector<MappedRow>& rows, const Mapping& map,
                              const std::string& measurements,
                              const std::vector<std::string>& skipped) {
  namespace fs = std::filesystem;
  std::string out = fmt::format("simcache validate: {} rows of {}, profile {} ({})\n", rows.size(),
                                file_names(measurements), m.name,
                                fs::path(m.path).filename().string());
  for (const std::string& s : skipped) out += "skipped: " + s + "\n";
  std::vector<std::string> confs;
  std::vector<size_t> conf_of;
  for (const MappedRow& r : rows) {
    const std::string d = describe_sim(r, map.fit);
    size_t k = 0;
    while (k < confs.size() && confs[k] != d) ++k;
    if (k == confs.size()) confs.push_back(d);
    conf_of.push_back(k + 1);
  }
  out += "\nsimulations\n";
  for (size_t k = 0; k < confs.size(); ++k) out += fmt::format("  [{}] {}\n", k + 1, confs[k]);
  out +=
      fmt::format("\n{:<8} {:>14} {:>14} {:>8}  {}\n", "row", "measured", "model", "error", "sim");
  for (size_t i = 0; i < rows.size(); ++i) {
    const double s = unit_scale(rows[i].time_unit);
    out += fmt::format("{:<8} {:>14} {:>14} [{:.3f}, {:.3f}]{} {:>+7.2f}%  [{}]\n",
                       rows[i].row.id, unit_value(rows[i].value_ns, rows[i].time_unit),
                       unit_value(v.predicted[i], rows[i].time_unit), v.lo[i] / s, v.hi[i] / s,
                       v.prior_based[i] ? " (prior)" : "",
                       (v.predicted[i] / rows[i].value_ns - 1) * 100, conf_of[i]);
  }
  if (!v.effects.empty()) {
    out +=
        "\neffects: each variant against the base rows of its group (A/B/A: child vs\n"
        "the midpoint of the parents); error in percentage points. Direction: up,\n"
        "down, or n.s. when the effect is within the noise of the profile's [noise]\n"
        "model (noise column); it agrees when model and measurement say the same\n";
    if (std::any_of(v.effects.begin(), v.effects.end(),
                    [&](const Effect& e) { return rows[e.row].twin_ratio > 0; }))
      out += "(a twin: against its anchor, the ratio measured round by round, its noise that\n"
             "ratio's standard error)\n";
    out += fmt::format("{:<8} {:<15} {:>9} {:>28} {:>8} {:>6}  {}\n", "row", "base", "measured",
                       "model [90% model interval]", "error", "noise", "direction (measured/model)");
    for (const Effect& e : v.effects)
      out += fmt::format(
          "{:<8} {:<15} {:>+8.2f}% {:>28} {:>+6.2f}pp {:>5.2f}%  {} ({}/{}){}{}\n",
          rows[e.row].row.id, ids_of(rows, e.bases), e.measured * 100,
          fmt::format("{:+.2f}% [{:+.2f}, {:+.2f}]", e.model * 100, e.lo * 100, e.hi * 100),
          (e.model - e.measured) * 100, e.noise * 100, e.agrees ? "agrees" : "DISAGREES",
          dir_text(e.dir_measured), dir_text(e.dir_model), e.covered ? "" : " outside",
          e.prior_based ? " (prior)" : "");
  }
  out += fmt::format(
      "\nsummary: {} rows, mean abs error {:.2f}% (max {:.2f}% {}); {} effects, mean abs "
      "error {:.2f} pp, direction agrees {}/{} (raw sign {}/{})\n",
      rows.size(), v.mean_abs_err * 100, v.max_abs_err * 100,
      rows.empty() ? "" : rows[v.max_row].row.id, v.effects.size(), v.mean_abs_effect_err, v.agree,
      v.effects.size(), v.same_sign, v.effects.size());
  out += fmt::format(
      "coverage of the {:.0f}% model-uncertainty intervals: rows {}/{} (with each row's own "
      "measurement error added: {}/{}); effects {}/{} (with measurement noise added: {}/{})\n",
      kIntervalLevel * 100, v.rows_covered, rows.size(), v.rows_covered_noise, rows.size(),
      v.effects_covered, v.effects.size(), v.effects_covered_noise, v.effects.size());
  const auto [row_width, effect_width] = median_widths(v);
  out += fmt::format(
      "median width of those intervals: rows {:.1f}% of the predicted time; effects {:.2f} pp\n",
      100 * row_width, 100 * effect_width);
  return out;
}

}  // namespace simcache::sim

namespace simcache::sim {

LeaveOut leave_out(const CostModel& structure, const FitSettings& fit,
                   const std::vector<MappedRow>& rows, const std::vector<PerOpCounts>& per_op,
                   bool by_shape, int jobs, FitMethod method) {
  LeaveOut l;
  l.by_shape = by_shape;
  // Beside rows scaled by a reference, twins and their anchors stay in
  // every fit: a fit takes a pair by its ratio, its level free
  // (fit_profile()), so a pair left out would be judged by a level no fit
  // predicts. Each other row's unit: its group, or the first row of its
  // shape.
  const bool pairs_stay = twin_levels_free(rows);
  constexpr size_t kStays = SIZE_MAX;
  std::vector<size_t> unit_of(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    unit_of[i] = pairs_stay && twin_member(rows[i]) ? kStays : i;
    for (size_t k = 0; k < i && unit_of[i] != kStays; ++k)
      if (unit_of[k] != kStays &&
          (by_shape ? row_relation(rows[k], rows[i], fit) != EffectRelation::cross_shape
                    : rows[k].group == rows[i].group)) {
        unit_of[i] = unit_of[k];
        break;
      }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (unit_of[i] == kStays) continue;
    if (unit_of[i] == i) l.units.emplace_back();
    for (LeaveOutUnit& u : l.units)
      if (unit_of[u.rows.empty() ? i : u.rows[0]] == unit_of[i]) {
        u.rows.push_back(i);
        break;
      }
  }
  // One fit per unit; units are independent, so `jobs` threads take them
  // in turn and each result lands at its unit's index (the output does not
  // depend on the job count).
  const auto run = [&](size_t k) {
    LeaveOutUnit& u = l.units[k];
    std::vector<MappedRow> rest, out;
    std::vector<PerOpCounts> rest_op, out_op;
    std::vector<size_t> at(rows.size(), SIZE_MAX), rest_at(rows.size(), SIZE_MAX);
    for (size_t i = 0; i < rows.size(); ++i) {
      if (std::find(u.rows.begin(), u.rows.end(), i) != u.rows.end()) {
        at[i] = out.size();
        out.push_back(rows[i]);
        out_op.push_back(per_op[i]);
      } else {
        rest_at[i] = rest.size();
        rest.push_back(rows[i]);
        rest_op.push_back(per_op[i]);
      }
    }
    // Bases come from the row's own group, which a unit holds whole
    // (a group is one program and shape); should one fall outside, the
    // effect is not compared. The fitted rest's too: a twin's base is its
    // anchor (fit_profile() fits the pair by its ratio), and a twin whose
    // anchor the unit took (among twins alone) is fitted as a plain row.
    remap_bases(&out, at);
    remap_bases(&rest, rest_at);
    const FitReport f = fit_profile(structure, fit, rest, rest_op, "leave-out", method);
    u.refused = !fit_problems(f).empty();
    u.v = validate_rows(f.model, out, out_op, fit);
  };
  // One unit (or none) leaves nothing to fit: the units, no fits.
  const size_t n = l.units.size();
  if (n < 2) return l;
  const size_t threads = std::clamp<size_t>(static_cast<size_t>(std::max(jobs, 1)), 1, n);
  if (threads <= 1) {
    for (size_t k = 0; k < n; ++k) run(k);
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (size_t k = t; k < n; k += threads) run(k);
      });
    for (std::thread& th : pool) th.join();
  }
  std::vector<double> row_width, eff_width;
  for (const LeaveOutUnit& u : l.units) {
    l.refused += u.refused;
    l.rows_in += u.v.rows_covered;
    l.units_in += u.v.rows_covered == u.rows.size();
    l.rows_in_noise += u.v.rows_covered_noise;
    l.rows_all += u.rows.size();
    for (size_t i = 0; i < u.rows.size(); ++i)
      row_width.push_back((u.v.hi[i] - u.v.lo[i]) / u.v.predicted[i]);
    for (const Effect& e : u.v.effects) {
      l.effects_in += e.covered;
      l.effects_noise += e.covered_noise;
      ++l.effects_all;
      eff_width.push_back(e.hi - e.lo);
    }
  }
  l.median_row_width = median_of(row_width);
  l.median_effect_width = median_of(eff_width);
  return l;
}

std::string format_leave_out(const LeaveOut& l, const std::vector<MappedRow>& rows, bool table) {
  const auto pct = [](size_t a, size_t b) {
    return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  std::string s = fmt::format(
      "Each {} left out in turn, over the {} fits: rows {}/{} ({:.0f} %) and effects {}/{} "
      "({:.0f} %) inside their {:.0f} % model interval ({}/{} {}s with every row inside: a "
      "{}'s rows are predicted from the same prices, so their errors go together), {}/{} rows "
      "with each row's own "
      "measurement error added and {}/{} effects with the noise of the delta added; median "
      "interval width {:.1f} % of the predicted row time and {:.2f} pp of an effect; {} of the "
      "{} fits of the rest are refused by calibrate (not credible).\n",
      l.by_shape ? "workload shape" : "group", l.units.size(), l.rows_in, l.rows_all,
      pct(l.rows_in, l.rows_all), l.effects_in, l.effects_all, pct(l.effects_in, l.effects_all),
      kIntervalLevel * 100, l.units_in, l.units.size(), l.by_shape ? "shape" : "group",
      l.by_shape ? "shape" : "group", l.rows_in_noise, l.rows_all, l.effects_noise, l.effects_all,
      100 * l.median_row_width, 100 * l.median_effect_width, l.refused, l.units.size());
  if (!table) return s;
  s += fmt::format(
      "\n| rows left out | rows inside | error of the prediction | median interval width | rows "
      "outside: error [interval] | effect | measured | predicted [{:.0f} % model interval] |\n"
      "|---|---|---|---|---|---|---|---|\n",
      kIntervalLevel * 100);
  for (const LeaveOutUnit& u : l.units) {
    std::vector<std::string> ids;
    std::string outside;
    for (size_t i = 0; i < u.rows.size(); ++i) {
      const MappedRow& r = rows[u.rows[i]];
      ids.push_back(r.row.id);
      const double meas = r.value_ns, p = u.v.predicted[i];
      if (meas >= u.v.lo[i] && meas <= u.v.hi[i]) continue;
      outside += fmt::format("{}{} {:+.1f} % [{:+.1f}, {:+.1f}]", outside.empty() ? "" : "; ",
                             r.row.id, 100 * (p / meas - 1), 100 * (u.v.lo[i] / meas - 1),
                             100 * (u.v.hi[i] / meas - 1));
    }
    double lo_err = 0, hi_err = 0;
    std::vector<double> width;
    for (size_t i = 0; i < u.rows.size(); ++i) {
      const double err = u.v.predicted[i] / rows[u.rows[i]].value_ns - 1;
      lo_err = i ? std::min(lo_err, err) : err;
      hi_err = i ? std::max(hi_err, err) : err;
      width.push_back((u.v.hi[i] - u.v.lo[i]) / u.v.predicted[i]);
    }
    const std::string err_range =
        u.rows.size() == 1 ? fmt::format("{:+.1f} %", 100 * lo_err)
                           : fmt::format("{:+.1f} to {:+.1f} %", 100 * lo_err, 100 * hi_err);
    std::string first = fmt::format("| {} | {}/{}{} | {} | {:.1f} % | {} |", id_ranges(ids),
                                    u.v.rows_covered, u.rows.size(),
                                    u.refused ? " (fit refused)" : "", err_range,
                                    100 * median_of(width), outside);
    if (u.v.effects.empty()) s += first + " | | |\n";
    for (const Effect& e : u.v.effects) {
      s += fmt::format("{} {} | {:+.2f} % | {:+.2f} % [{:+.2f}, {:+.2f}]{}{} |\n", first,
                       rows[u.rows[e.row]].row.id, 100 * e.measured, 100 * e.model, 100 * e.lo,
                       100 * e.hi, e.covered ? "" : ", outside", e.prior_based ? " (prior)" : "");
      first = "| | | | | |";
    }
  }
  return s;
}

FitterFigures figures_of(const LeaveOut& l, FitMethod method) {
  FitterFigures f;
  f.method = method;
  f.fits = l.units.size() < 2 ? 0 : l.units.size();
  f.refused = l.refused;
  f.rows_in = l.rows_in, f.rows_all = l.rows_all;
  f.effects_in = l.effects_in, f.effects_all = l.effects_all;
  f.median_row_width = l.median_row_width, f.median_effect_width = l.median_effect_width;
  double err = 0;
  for (const LeaveOutUnit& u : l.units)
    err += u.v.mean_abs_err * static_cast<double>(u.rows.size());
  f.mean_abs_err = l.rows_all ? err / static_cast<double>(l.rows_all) : 0;
  return f;
}

FitterFigures figures_of(const Validation& v, const std::vector<MappedRow>& rows,
                         const FitReport& r, FitMethod method) {
  FitterFigures f;
  f.method = method;
  f.fits = 1;
  f.refused = fit_problems(r).empty() ? 0 : 1;
  f.rms_fitted = r.rms_rel;
  f.rows_in = v.rows_covered, f.rows_all = rows.size();
  f.effects_in = v.effects_covered, f.effects_all = v.effects.size();
  std::tie(f.median_row_width, f.median_effect_width) = median_widths(v);
  f.mean_abs_err = v.mean_abs_err;
  return f;
}

std::vector<Repeat> split_repeats(std::vector<MappedRow>* rows, std::vector<PerOpCounts>* per_op,
                                  std::vector<RowFailure>* failed,
                                  const std::vector<MappedRow>& fitted, const FitSettings& fit) {
  std::vector<Repeat> out;
  std::vector<size_t> new_index(rows->size(), SIZE_MAX);
  std::vector<MappedRow> kept_rows;
  std::vector<PerOpCounts> kept_counts;
  // Twins and their anchors stay whatever they repeat: their effect is
  // the pair's, measured round by round (reference.h), and neither was
  // scaled to the fitted rows' reading.
  // Nor is a row a repeat of a fitted twin (unscaled, where the row is
  // scaled to the fitted rows' reading).
  const auto twins_of = [](const std::vector<MappedRow>& v) {
    std::vector<bool> t(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].twin_ratio > 0) {
        t[i] = true;
        for (size_t b : v[i].bases) t[b] = true;
      }
    return t;
  };
  const std::vector<bool> twin = twins_of(*rows), fitted_twin = twins_of(fitted);
  for (size_t i = 0; i < rows->size(); ++i) {
    const MappedRow& v = (*rows)[i];
    Repeat r;
    double sum = 0, se2 = 0;
    // The same configuration measured the same way: the same recorded
    // conditions (a cache share read differently is a change the model
    // prices, not drift), metric and unit.
    for (size_t k = 0; k < fitted.size(); ++k)
      if (const MappedRow& f = fitted[k];
          !twin[i] && !fitted_twin[k] && row_relation(v, f, fit) == EffectRelation::same_config &&
          shape_params(v, fit) == shape_params(f, fit) && v.row.metric == f.row.metric &&
          v.row.unit == f.row.unit) {
        r.of.push_back(f.row.id), sum += f.value_ns;
        const double se = measurement_spread(f.row.note, measured_rounds(f));
        se2 += se * se;
      }
    if (r.of.empty()) {
      new_index[i] = kept_rows.size();
      kept_rows.push_back(std::move((*rows)[i]));
      kept_counts.push_back(std::move((*per_op)[i]));
      continue;
    }
    const double n = static_cast<double>(r.of.size());
    const double se_v = measurement_spread(v.row.note, measured_rounds(v));
    r.fitted_ns = sum / n;
    r.rel_se = std::sqrt(se_v * se_v + se2 / (n * n));
    r.row = std::move((*rows)[i]);
    out.push_back(std::move(r));
  }
  remap_bases(&kept_rows, new_index);  // with a base set apart, no effect
  std::vector<RowFailure> kept_failed;
  for (RowFailure f : *failed)
    if (new_index[f.row] != SIZE_MAX) f.row = new_index[f.row], kept_failed.push_back(std::move(f));
  *rows = std::move(kept_rows);
  *per_op = std::move(kept_counts);
  *failed = std::move(kept_failed);
  return out;
}

std::string format_drift(const std::vector<Repeat>& repeats, const Validation& v,
                         const std::vector<MappedRow>& rows) {
  if (repeats.empty())
    return "\ndrift between the suites: no row repeats a configuration of the fitted rows, so "
           "a change in the machine's speed between the two cannot be told from a shape the "
           "model misses\n";
  const size_t n = repeats.size();
  std::string out = fmt::format(
      "\ndrift between the suites: {} row{} repeat{} a configuration of the fitted rows (set "
      "apart from the rows above; +- the ratio's standard error from the rows' notes)\n",
      n, n == 1 ? "" : "s", n == 1 ? "s" : "");
  // One program run is one ratio: the phases a run reports (a lifecycle's
  // whole, registration and fill rows, one after another) are its median
  // ratio and median standard error, not three independent measurements.
  // An anchor is a run of repeats with no validated row between them (it
  // may hold several runs); a row is also divided by the anchor that ran
  // last before it in its file (a row before every anchor by the
  // machine's move), since a machine of this kind need not move as one
  // across a suite (docs/validation.md).
  struct Group {
    std::string file;
    int line = 0;  // its last repeat's
    std::vector<double> ratios, ses;
    std::vector<std::string> shapes;  // a run's rows, as the kit writes them
    std::string key;                  // a run's shape without its phase
    double ratio() const { return median_of(ratios); }
    double se() const { return median_of(ses); }
  };
  // A phase row's shape names its phase ("... fill phase: ..."); without
  // it, the phases of one run have one shape.
  const auto run_shape = [](const MappedRow& m) {
    std::string shape = m.row.workload + '\x1f' + m.row.shape;
    for (const char* phase : {" registration phase", " removal phase", " refill phase", " fill phase"})
      if (const size_t at = shape.find(phase); at != std::string::npos) shape.erase(at, std::strlen(phase));
    return shape;
  };
  std::vector<Group> runs, anchors;
  for (const Repeat& r : repeats) {
    std::string of;
    for (const std::string& id : r.of) of += (of.empty() ? "" : ", ") + id;
    out += fmt::format("  {:<18} {:>14} against {} {}: {:+.2f}% +- {:.2f}%\n", r.row.row.id,
                       unit_value(r.row.value_ns, r.row.time_unit), of,
                       unit_value(r.fitted_ns, r.row.time_unit), (r.ratio() - 1) * 100,
                       r.rel_se * 100);
    const std::string& file = r.row.row.file;
    const int line = r.row.row.line;
    // A validated row between the last repeat and this one parts them.
    const bool joins =
        !anchors.empty() && anchors.back().file == file &&
        std::none_of(rows.begin(), rows.end(), [&](const MappedRow& m) {
          return m.row.file == file && m.row.line > anchors.back().line && m.row.line < line;
        });
    const std::string shape = run_shape(r.row);
    const bool same_run = joins && runs.back().key == shape &&
                          std::find(runs.back().shapes.begin(), runs.back().shapes.end(),
                                    r.row.row.shape) == runs.back().shapes.end();
    for (auto [list, same] : {std::pair{&runs, same_run}, std::pair{&anchors, joins}}) {
      if (!same) list->push_back({file, 0, {}, {}, {}, shape});
      Group& g = list->back();
      g.line = line;
      g.ratios.push_back(r.ratio());
      g.ses.push_back(r.rel_se);
      g.shapes.push_back(r.row.row.shape);
    }
  }
  std::vector<double> ratios;
  double se2 = 0;
  for (const Group& r : runs) ratios.push_back(r.ratio()), se2 += std::pow(r.se(), 2);
  const size_t nruns = runs.size();
  const double d = median_of(ratios);
  // The standard error of the runs' mean ratio: the move is told from
  // the rows' own noise when it is more than twice that.
  const double se = std::sqrt(se2) / static_cast<double>(nruns);
  const char* verdict = se <= 0 ? "the rows' notes give no standard error"
                        : std::fabs(d - 1) > 2 * se
                            ? "more than twice its error"
                            : "within twice its error, not told from the rows' noise";
  // Rows inside their interval and the mean abs error (%) with each row
  // divided by divisor(i).
  const auto judged = [&](const auto& divisor) {
    size_t inside = 0;
    double err = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const double y = rows[i].value_ns / divisor(i);
      inside += y >= v.lo[i] && y <= v.hi[i];
      err += std::fabs(v.predicted[i] / y - 1);
    }
    return std::pair{inside, rows.empty() ? 0.0 : err / static_cast<double>(rows.size()) * 100};
  };
  const auto [inside, err] = judged([&](size_t) { return d; });
  out += fmt::format(
      "the machine moved by {:+.2f}% (the repeats' {}; +- {:.2f}%: {}); each row above divided "
      "by it: rows inside the {:.0f}% interval {}/{}, mean abs error {:.2f}% (against {}/{} and "
      "{:.2f}% as measured)\n",
      (d - 1) * 100,
      nruns == n ? (n == 1 ? "one ratio" : n == 2 ? "mean" : "median")
                 : nruns == 1 ? std::string("median in one run, its phases as one")
                              : fmt::format("{} over {} runs, a run's phases as one",
                                            nruns == 2 ? "mean" : "median", nruns),
      se * 100, verdict, kIntervalLevel * 100, inside, rows.size(), err, v.rows_covered,
      rows.size(), v.mean_abs_err * 100);
  // The anchor each row meets (anchors.size(): none before it).
  std::vector<size_t> met(rows.size(), anchors.size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t k = 0; k < anchors.size(); ++k)
      if (anchors[k].file == rows[i].row.file && anchors[k].line < rows[i].row.line) met[i] = k;
  // Only where the rows are divided by more than one figure: otherwise the
  // line would repeat the move above or one anchor's ratio for every row.
  std::vector<size_t> figures = met;
  std::sort(figures.begin(), figures.end());
  if (std::unique(figures.begin(), figures.end()) - figures.begin() < 2) return out;
  const bool before_all = figures.back() == anchors.size();
  const auto [inside_near, err_near] = judged(
      [&](size_t i) { return met[i] < anchors.size() ? anchors[met[i]].ratio() : d; });
  std::string each;
  for (const Group& a : anchors)
    each += fmt::format("{}{:+.2f}% +- {:.2f}%", each.empty() ? "" : ", ", (a.ratio() - 1) * 100,
                        a.se() * 100);
  out += fmt::format(
      "in file order ({} anchor{}: {}, each +- its rows' median error): each row divided by the "
      "anchor that ran last before it"
      "{}: rows inside the {:.0f}% interval {}/{}, mean abs error {:.2f}% (against {}/{} and "
      "{:.2f}% as measured)\n",
      anchors.size(), anchors.size() == 1 ? "" : "s", each,
      before_all ? " (a row before every anchor by the machine's move)" : "",
      kIntervalLevel * 100, inside_near, rows.size(), err_near, v.rows_covered, rows.size(),
      v.mean_abs_err * 100);
  return out;
}

std::string format_fitter_comparison(const std::vector<FitterFigures>& fs,
                                     const std::string& what) {
  const auto share = [](size_t a, size_t b) {
    return b ? fmt::format("{}/{} ({:.0f} %)", a, b,
                           100.0 * static_cast<double>(a) / static_cast<double>(b))
             : std::string("0/0");
  };
  std::string s = fmt::format(
      "\nToday's fitter beside the one before the speed factors, {} (docs/validation.md, "
      "\"Today's fitter beside the one before it\"; goal: 85 to 97 % of the rows inside, "
      "from structure, not width):\n\n"
      "| fitter | fits refused | rms on its own rows | rows inside the {:.0f} % interval | "
      "median width | effects inside | median effect width | mean abs error |\n"
      "|---|---|---|---|---|---|---|---|\n",
      what, kIntervalLevel * 100);
  for (const FitterFigures& f : fs)
    s += fmt::format("| {} | {}/{} | {} | {} | {:.1f} % | {} | {} | {:.2f} % |\n",
                     fit_method_label(f.method), f.refused, f.fits,
                     f.rms_fitted < 0 ? std::string("-")
                                      : fmt::format("{:.2f} %", 100 * f.rms_fitted),
                     share(f.rows_in, f.rows_all), 100 * f.median_row_width,
                     f.effects_all ? share(f.effects_in, f.effects_all) : std::string("-"),
                     f.effects_all ? fmt::format("{:.2f} pp", 100 * f.median_effect_width)
                                   : std::string("-"),
                     100 * f.mean_abs_err);
  return s;
}

std::string format_leave_out_comparison(const LeaveOut& today, const LeaveOut& before) {
  return format_fitter_comparison(
      {figures_of(today, FitMethod::current), figures_of(before, FitMethod::unscaled)},
      fmt::format("each {} left out in turn and refitted from the rest",
                  today.by_shape ? "workload shape" : "group"));
}

}  // namespace simcache::sim
