#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>
#include <tuple>

#include "sim/calibrate/calibrate_linalg.h"
#include "sim/run/engine.h"
#include <fmt/format.h>

namespace simcache::sim {
namespace {

// Per-op counts of the events a parameter prices.
Matrix design(const CostModel& m, const std::vector<PerOpCounts>& per_op) {
  Matrix a(per_op.size(), m.params.size());
  for (size_t i = 0; i < per_op.size(); ++i)
    for (size_t j = 0; j < m.params.size(); ++j)
      for (Event e : m.params[j].events) a(i, j) += per_op[i][static_cast<size_t>(e)];
  return a;
}

std::string event_names(const CostParam& p) {
  std::string s;
  for (Event e : p.events)
    s += (s.empty() ? "" : "/") + std::string(kEventInfo[static_cast<size_t>(e)].name);
  return s;
}

// "equals 1 x msg_ring_send_fd + 0.25 x futexv_entry on every row".
std::string collinear_reason(const Matrix& a, const CostModel& m, const std::vector<size_t>& sel,
                             size_t j) {
  std::vector<double> col(a.rows), c;
  for (size_t i = 0; i < a.rows; ++i) col[i] = a(i, j);
  least_squares(a.columns(sel), col, &c);
  std::string terms;
  int shown = 0, more = 0;
  for (size_t k = 0; k < sel.size(); ++k) {
    if (std::fabs(c[k]) < 1e-9) continue;
    if (shown == 4) {
      ++more;
      continue;
    }
    terms += fmt::format("{}{:.4g} x {}", terms.empty() ? "" : " + ", c[k], m.params[sel[k]].name);
    ++shown;
  }
  if (more) terms += fmt::format(" + {} more", more);
  return fmt::format("collinear: on every row its count equals {} (those carry its cost)", terms);
}

struct FreeFit {
  std::vector<double> x, se;  // per free column
  bool converged = true;
};

// NNLS of the free columns against what the fixed ones leave, with the
// standard errors of the unconstrained problem under `noise_cv`.
FreeFit fit_free(const Matrix& aw, const std::vector<size_t>& free,
                 const std::vector<double>& fixed_x, double noise_cv) {
  std::vector<double> b(aw.rows, 1.0);
  for (size_t i = 0; i < aw.rows; ++i)
    for (size_t j = 0; j < aw.cols; ++j) b[i] -= aw(i, j) * fixed_x[j];
  Matrix s = aw.columns(free);
  std::vector<double> scale(free.size(), 1.0);
  for (size_t k = 0; k < free.size(); ++k) {
    double n2 = 0;
    for (size_t i = 0; i < s.rows; ++i) n2 += s(i, k) * s(i, k);
    scale[k] = std::sqrt(n2);
    for (size_t i = 0; i < s.rows; ++i) s(i, k) /= scale[k];
  }
  FreeFit f;
  std::vector<double> y, d;
  f.converged = nnls(s, b, &y);
  const bool full = inverse_gram_diagonal(s, &d);
  for (size_t k = 0; k < free.size(); ++k) {
    f.x.push_back(y[k] / scale[k]);
    f.se.push_back(full ? noise_cv * std::sqrt(d[k]) / scale[k] : INFINITY);
  }
  return f;
}

// Whether column j adds a direction the free columns do not span (in the
// weighted, column-normalised space).
bool independent(const Matrix& aw, const std::vector<size_t>& free, size_t j) {
  auto unit = [&](size_t c) {
    std::vector<double> v(aw.rows);
    for (size_t i = 0; i < aw.rows; ++i) v[i] = aw(i, c);
    const double n = norm(v);
    for (double& x : v) x /= n;
    return v;
  };
  std::vector<std::vector<double>> basis;
  for (size_t c : free) {
    std::vector<double> r = orthogonal_part(basis, unit(c));
    const double n = norm(r);
    for (double& x : r) x /= n;
    basis.push_back(std::move(r));
  }
  return norm(orthogonal_part(basis, unit(j))) >= 1e-9;
}

// Stepwise forward selection in table order: a parameter joins the free
// set if its column adds a direction of its own and, fitted together with
// the free set, every free parameter stays pinned (standard error at most
// pin_threshold x its value). Passes repeat until none joins, so a
// parameter judged while a later one was still missing gets another
// chance. Everything left out keeps its prior.
struct Selector {
  const Matrix& a;
  const Matrix& aw;
  const CostModel& m;
  const FitSettings& fit;
  std::vector<double> prior;

  FreeFit fit_set(const std::vector<size_t>& set) const {
    std::vector<double> fixed_x = prior;
    for (size_t k : set) fixed_x[k] = 0;
    return fit_free(aw, set, fixed_x, fit.noise_cv);
  }
  // The least determined parameter of `set` that is not pinned, or
  // set.size() if all are.
  size_t worst(const std::vector<size_t>& set, const FreeFit& ff) const {
    size_t bad = set.size();
    double worst_ratio = 0;
    for (size_t k = 0; k < set.size(); ++k) {
      const double scale = std::max(ff.x[k], prior[set[k]]);
      const double ratio = scale > 0 ? ff.se[k] / scale : INFINITY;
      if (!(ratio <= fit.pin_threshold) && (bad == set.size() || !(ratio < worst_ratio)))
        bad = k, worst_ratio = ratio;
    }
    return bad;
  }
  std::string weak_reason(const std::vector<size_t>& free, size_t j) const {
    std::vector<size_t> trial = free;
    trial.push_back(j);
    const FreeFit ff = fit_set(trial);
    size_t bad = worst(trial, ff);
    if (bad == trial.size()) bad = trial.size() - 1;
    if (trial[bad] == j)
      return fmt::format("weak: the rows fit {:.4g} +- {:.3g} {}, more than {:.0f}% uncertain",
                         ff.x[bad], ff.se[bad], m.params[j].unit, fit.pin_threshold * 100);
    return fmt::format("weak: fitting it too leaves {} at {:.4g} +- {:.3g} {}",
                       m.params[trial[bad]].name, ff.x[bad], ff.se[bad], m.params[trial[bad]].unit);
  }
  bool try_add(std::vector<size_t>* free, size_t j) const {
    if (!independent(aw, *free, j)) return false;
    std::vector<size_t> trial = *free;
    trial.push_back(j);
    if (worst(trial, fit_set(trial)) != trial.size()) return false;
    *free = std::move(trial);
    std::sort(free->begin(), free->end());
    return true;
  }
};

std::vector<size_t> select_free(const Matrix& a, const Matrix& aw, const CostModel& m,
                                const FitSettings& fit, std::vector<ParamFit>* fits) {
  Selector sel{a, aw, m, fit, {}};
  for (const CostParam& p : m.params) sel.prior.push_back(p.value);
  std::vector<size_t> free;
  for (size_t pass = 0; pass <= a.cols; ++pass) {
    bool added = false;
    for (size_t j = 0; j < a.cols; ++j)
      if (!(*fits)[j].rows.empty() && std::find(free.begin(), free.end(), j) == free.end())
        added |= sel.try_add(&free, j);
    if (!added) break;
  }
  for (size_t j = 0; j < a.cols; ++j) {
    ParamFit& f = (*fits)[j];
    if (std::find(free.begin(), free.end(), j) != free.end()) {
      f.status = PinStatus::pinned;
    } else if (f.rows.empty()) {
      f.status = PinStatus::no_data;
      f.reason = fmt::format("no data: no calibration row counts {}", event_names(m.params[j]));
    } else if (!independent(aw, free, j)) {
      f.status = PinStatus::collinear;
      f.reason = collinear_reason(a, m, free, j);
    } else {
      f.status = PinStatus::weak;
      f.reason = sel.weak_reason(free, j);
    }
  }
  return free;
}

}  // namespace

bool simulate_rows(const std::vector<MappedRow>& rows, int jobs, std::vector<PerOpCounts>* per_op,
                   std::string* error) {
  using Key = std::tuple<std::string, Params, std::string>;
  std::map<Key, std::vector<std::string>> runs;
  for (const MappedRow& r : rows) {
    auto& pols = runs[{r.scenario, r.params, r.kernel}];
    if (std::find(pols.begin(), pols.end(), r.policy) == pols.end()) pols.push_back(r.policy);
  }
  std::map<std::pair<Key, std::string>, PerOpCounts> done;
  for (const auto& [key, pols] : runs) {
    RunRequest req;
    req.scenario = std::get<0>(key);
    for (const auto& [k, v] : std::get<1>(key)) req.sets.emplace_back(k, std::to_string(v));
    req.kernel = std::get<2>(key);
    req.policies = pols;
    req.jobs = jobs;
    RunResult res;
    if (!run(req, &res, error)) return false;
    for (const PolicyResult& p : res.workloads.at(0).policies) {
      PerOpCounts c{};
      for (size_t e = 0; e < kNumEvents; ++e)
        c[e] =
            p.timed_ops ? static_cast<double>(p.timed.v[e]) / static_cast<double>(p.timed_ops) : 0;
      done[{key, p.policy}] = c;
      if (!p.timed_ops) done.erase({key, p.policy});
    }
  }
  per_op->clear();
  for (const MappedRow& r : rows) {
    auto it = done.find({{r.scenario, r.params, r.kernel}, r.policy});
    if (it == done.end()) {
      *error = fmt::format("{}: shape: the simulation of this row times no operation",
                           r.row.where("shape"));
      return false;
    }
    per_op->push_back(it->second);
  }
  return true;
}

double predict_ns(const CostModel& m, const PerOpCounts& c) {
  double t = 0;
  for (const CostParam& p : m.params)
    for (Event e : p.events) t += c[static_cast<size_t>(e)] * p.value;
  return t;
}

FitReport fit_profile(const CostModel& structure, const FitSettings& fit,
                      const std::vector<MappedRow>& rows, const std::vector<PerOpCounts>& per_op,
                      const std::string& name) {
  FitReport rep;
  rep.model = structure;
  rep.model.name = name;
  rep.params.resize(structure.params.size());
  const Matrix a = design(structure, per_op);
  Matrix aw = a;
  for (size_t i = 0; i < a.rows; ++i)
    for (size_t j = 0; j < a.cols; ++j) aw(i, j) /= rows[i].value_ns;
  for (size_t j = 0; j < a.cols; ++j)
    for (size_t i = 0; i < a.rows; ++i)
      if (a(i, j) > 0) rep.params[j].rows.push_back(rows[i].row.id);
  const std::vector<size_t> free = select_free(a, aw, structure, fit, &rep.params);
  std::vector<double> x(a.cols, 0.0);
  for (size_t j = 0; j < a.cols; ++j) x[j] = structure.params[j].value;
  std::vector<double> fixed_x = x;
  for (size_t j : free) fixed_x[j] = 0;
  const FreeFit ff = fit_free(aw, free, fixed_x, fit.noise_cv);
  rep.converged = ff.converged;
  for (size_t k = 0; k < free.size(); ++k) {
    rep.params[free[k]].fitted = x[free[k]] = ff.x[k];
    rep.params[free[k]].stderr_ns = ff.se[k];
  }
  const std::string file =
      rows.empty() ? "" : std::filesystem::path(rows[0].row.file).filename().string();
  for (size_t j = 0; j < a.cols; ++j) {
    CostParam& p = rep.model.params[j];
    const ParamFit& pf = rep.params[j];
    p.pinned = pf.status == PinStatus::pinned;
    if (p.pinned) {
      p.value = x[j];
      p.stderr_ns = pf.stderr_ns;
      p.source = fmt::format("fit: NNLS on relative error to {} rows {}", file, id_ranges(pf.rows));
    } else {
      p.value = structure.params[j].value;
      p.stderr_ns = -1;
      p.source = fmt::format("prior: {}; not pinned by {}: {}", structure.params[j].source, file,
                             pf.reason);
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const double pred = predict_ns(rep.model, per_op[i]);
    rep.predicted.push_back(pred);
    const double rel = pred / rows[i].value_ns - 1;
    rep.rms_rel += rel * rel;
    if (std::fabs(rel) > rep.max_rel) rep.max_rel = std::fabs(rel), rep.max_row = i;
  }
  rep.rms_rel = rows.empty() ? 0 : std::sqrt(rep.rms_rel / static_cast<double>(rows.size()));
  rep.model.noise = derive_noise(rows, fit);
  std::string err;
  rep.model.validate(&err);
  return rep;
}

}  // namespace simcache::sim
