#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
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

// The regularised fit (docs/calibration.md, "The fit"): minimise
//   sum_i ((a_i x - y_i) / (s y_i))^2 + sum_j ((x_j - mu_j) / tau_j)^2,  x >= 0,
// i.e. the posterior mode of a Gaussian prior N(mu, tau^2) per parameter
// and relative row noise s, with non-negativity. Solved as NNLS in the
// scaled unknowns u = x / tau on the rows stacked over the prior rows.
// The covariance is the Laplace one, (A_w^T A_w + T^-2)^-1. The row noise
// s is estimated from the residuals (at least `s_min`) with the effective
// number of fitted parameters, P - tr(H^-1) in the scaled problem.
struct BayesFit {
  std::vector<double> x;
  Matrix cov;  // posterior covariance of x
  double s = 0, dof = 0;
  bool converged = true;
};

BayesFit bayes_fit(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                   const std::vector<double>& tau, double s_min) {
  const size_t n = a.rows, np = a.cols;
  BayesFit f;
  f.s = s_min;
  for (int iter = 0; iter < 8; ++iter) {
    Matrix m(n + np, np);
    std::vector<double> b(n + np, 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < np; ++j) m(i, j) = a(i, j) * tau[j] / (f.s * y[i]);
      b[i] = 1 / f.s;
    }
    for (size_t j = 0; j < np; ++j) m(n + j, j) = 1, b[n + j] = mu[j] / tau[j];
    std::vector<double> u;
    f.converged = nnls(m, b, &u);
    Matrix h(np, np), hinv;
    for (size_t k = 0; k < m.rows; ++k)
      for (size_t i = 0; i < np; ++i) {
        if (m(k, i) == 0) continue;
        for (size_t j = 0; j < np; ++j) h(i, j) += m(k, i) * m(k, j);
      }
    spd_inverse(h, &hinv);
    f.x.assign(np, 0.0);
    f.dof = static_cast<double>(np);
    for (size_t j = 0; j < np; ++j) f.x[j] = u[j] * tau[j], f.dof -= hinv(j, j);
    f.cov = Matrix(np, np);
    for (size_t i = 0; i < np; ++i)
      for (size_t j = 0; j < np; ++j) f.cov(i, j) = tau[i] * hinv(i, j) * tau[j];
    double ss = 0;
    for (size_t i = 0; i < n; ++i) {
      double pred = 0;
      for (size_t j = 0; j < np; ++j) pred += a(i, j) * f.x[j];
      ss += (pred / y[i] - 1) * (pred / y[i] - 1);
    }
    const double free_rows = static_cast<double>(n) - f.dof;
    const double s_new = free_rows > 0.5 ? std::max(s_min, std::sqrt(ss / free_rows)) : s_min;
    if (std::fabs(s_new - f.s) <= 1e-4 * f.s) break;
    f.s = s_new;
  }
  return f;
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
  // (run, policy, phase) -> per-op counts; phase "" is the whole timed region.
  std::map<std::tuple<Key, std::string, std::string>, PerOpCounts> done;
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
      if (!p.timed_ops) continue;
      auto per_op = [&](const Counters& cnt) {
        PerOpCounts c{};
        for (size_t e = 0; e < kNumEvents; ++e)
          c[e] = static_cast<double>(cnt.v[e]) / static_cast<double>(p.timed_ops);
        return c;
      };
      done[{key, p.policy, ""}] = per_op(p.timed);
      for (const auto& [name, cnt] : p.phases) done[{key, p.policy, name}] = per_op(cnt);
    }
  }
  per_op->clear();
  for (const MappedRow& r : rows) {
    auto it = done.find({{r.scenario, r.params, r.kernel}, r.policy, r.phase});
    if (it == done.end()) {
      *error = r.phase.empty()
                   ? fmt::format("{}: shape: the simulation of this row times no operation",
                                 r.row.where("shape"))
                   : fmt::format("{}: metric: the simulation times no phase '{}'",
                                 r.row.where("metric"), r.phase);
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
  const size_t np = structure.params.size();
  rep.params.resize(np);
  const Matrix a = design(structure, per_op);
  for (size_t j = 0; j < a.cols; ++j)
    for (size_t i = 0; i < a.rows; ++i)
      if (a(i, j) > 0) rep.params[j].rows.push_back(rows[i].row.id);
  std::vector<double> y, mu, tau;
  for (const MappedRow& r : rows) y.push_back(r.value_ns);
  for (const CostParam& p : structure.params) {
    mu.push_back(p.prior >= 0 ? p.prior : p.value);
    // A parameter without a prior uncertainty is held at its value.
    tau.push_back(std::max(p.prior_sd > 0 ? p.prior_sd : 0.0, 1e-9 * (1 + mu.back())));
  }
  const BayesFit bf = bayes_fit(a, y, mu, tau, fit.noise_cv);
  rep.converged = bf.converged;
  rep.row_noise = bf.s;
  rep.effective_params = bf.dof;
  const std::string file =
      rows.empty() ? "" : std::filesystem::path(rows[0].row.file).filename().string();
  rep.model.corr.assign(np * np, 0.0);
  for (size_t j = 0; j < np; ++j) {
    CostParam& p = rep.model.params[j];
    ParamFit& pf = rep.params[j];
    const double sd = std::sqrt(std::max(bf.cov(j, j), 0.0));
    pf.fitted = bf.x[j];
    pf.stderr_ns = sd;
    pf.data_share = tau[j] > 0 ? std::clamp(1 - sd * sd / (tau[j] * tau[j]), 0.0, 1.0) : 0;
    if (pf.rows.empty()) {
      pf.status = PinStatus::no_data;
      pf.reason = fmt::format("no data: no calibration row counts {}", event_names(p));
    } else if (sd <= fit.pin_threshold * tau[j]) {
      pf.status = PinStatus::pinned;
    } else {
      pf.status = PinStatus::weak;
      pf.reason = fmt::format("weak: the rows count it but leave {:.0f}% of its prior variance",
                              100 * (1 - pf.data_share));
    }
    p.value = bf.x[j];
    p.stderr_ns = sd;
    p.prior = mu[j];
    p.prior_sd = structure.params[j].prior_sd;
    p.prior_source = structure.params[j].prior_source;
    p.pinned = pf.status == PinStatus::pinned;
    p.source = p.pinned ? fmt::format("fit: prior + {} rows {} (data share {:.0f}%)", file,
                                      id_ranges(pf.rows), 100 * pf.data_share)
                        : fmt::format("prior, {}", pf.reason);
    for (size_t k = 0; k < np; ++k) {
      const double sk = std::sqrt(std::max(bf.cov(k, k), 0.0));
      rep.model.corr[j * np + k] =
          j == k ? 1.0 : (sd > 0 && sk > 0 ? bf.cov(j, k) / (sd * sk) : 0.0);
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
