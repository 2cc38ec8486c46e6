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

// The regularised fit (docs/calibration.md, "The fit"): the posterior
// mode of a Gaussian prior N(mu, tau^2) per parameter under x >= 0, with
// the relative error of row i in three parts,
//   y_i = a_i x (1 + u_f(i) + v_c(i) + e_i),
// e ~ N(0, s^2) the row's measurement noise, v ~ N(0, sv^2) the model's
// error on configuration c (rows with identical counts: a repeat measures
// the same v again) and u ~ N(0, su^2) its error shared by every
// configuration of one workload shape f (scenario and shape parameters:
// a mechanism the model lacks for that program). The rows' covariance is
// Sigma = s^2 I + sv^2 Z_c Z_c^T + su^2 Z_f Z_f^T; the fit whitens by its
// Cholesky factor and solves NNLS in the scaled unknowns u = x / tau on
// the whitened rows stacked over the prior rows; the covariance is the
// Laplace one, (A_w^T A_w + T^-2)^-1. (s, sv, su) maximise the marginal
// likelihood of the rows with the parameters integrated over their
// priors (type-II maximum likelihood), s at least `s_min`.
struct BayesFit {
  std::vector<double> x;
  Matrix cov;  // posterior covariance of x
  double s = 0, sv = 0, su = 0, dof = 0;
  size_t configs = 0, shapes = 0;
  bool converged = true;
};

// Index of each row's class among rows with equal keys.
template <class Eq>
std::vector<size_t> classes(size_t n, Eq same, size_t* count) {
  std::vector<size_t> of(n);
  std::vector<size_t> first;
  for (size_t i = 0; i < n; ++i) {
    size_t c = 0;
    while (c < first.size() && !same(first[c], i)) ++c;
    if (c == first.size()) first.push_back(i);
    of[i] = c;
  }
  *count = first.size();
  return of;
}

struct ErrorModel {
  const std::vector<size_t>& config;
  const std::vector<size_t>& shape;
  Matrix sigma(double s, double sv, double su) const {
    const size_t n = config.size();
    Matrix m(n, n);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < n; ++k)
        m(i, k) = (i == k ? s * s : 0) + (config[i] == config[k] ? sv * sv : 0) +
                  (shape[i] == shape[k] ? su * su : 0);
    return m;
  }
};

// -log p(rows | s, sv, su) up to a constant, the parameters integrated
// over their priors: r = 1 - A~ mu, K = Sigma + A~ T^2 A~^T (A~ = A / y).
double neg_log_marginal(const Matrix& g, const std::vector<double>& r, const ErrorModel& em,
                        double s, double sv, double su) {
  Matrix k = em.sigma(s, sv, su), l;
  for (size_t i = 0; i < k.a.size(); ++i) k.a[i] += g.a[i];
  if (!cholesky(k, &l)) return 1e300;
  std::vector<double> z = r;
  forward_solve(l, &z);
  double q = 0, logdet = 0;
  for (size_t i = 0; i < z.size(); ++i) q += z[i] * z[i], logdet += 2 * std::log(l(i, i));
  return 0.5 * (q + logdet);
}

// Coordinate-wise golden-section search of the three log-sds.
void fit_error_model(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                     const std::vector<double>& tau, const ErrorModel& em, double s_min,
                     BayesFit* f) {
  const size_t n = a.rows, np = a.cols;
  Matrix g(n, n);
  std::vector<double> r(n, 1.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < np; ++j) r[i] -= a(i, j) * mu[j] / y[i];
    for (size_t k = 0; k < n; ++k)
      for (size_t j = 0; j < np; ++j)
        g(i, k) += a(i, j) * tau[j] / y[i] * a(k, j) * tau[j] / y[k];
  }
  double th[3] = {std::log(std::max(s_min, 0.01)), std::log(0.01), std::log(0.01)};
  const double lo[3] = {std::log(s_min), std::log(1e-5), std::log(1e-5)};
  const double hi = std::log(0.3);
  auto nll = [&](const double* t) {
    return neg_log_marginal(g, r, em, std::exp(t[0]), std::exp(t[1]), std::exp(t[2]));
  };
  const double phi = 0.6180339887498949;
  for (int sweep = 0; sweep < 6; ++sweep)
    for (int c = 0; c < 3; ++c) {
      double a0 = lo[c], b0 = hi;
      double t[3] = {th[0], th[1], th[2]};
      double x1 = b0 - phi * (b0 - a0), x2 = a0 + phi * (b0 - a0);
      t[c] = x1;
      double f1 = nll(t);
      t[c] = x2;
      double f2 = nll(t);
      for (int it = 0; it < 40; ++it) {
        if (f1 < f2) {
          b0 = x2, x2 = x1, f2 = f1, x1 = b0 - phi * (b0 - a0), t[c] = x1, f1 = nll(t);
        } else {
          a0 = x1, x1 = x2, f1 = f2, x2 = a0 + phi * (b0 - a0), t[c] = x2, f2 = nll(t);
        }
      }
      th[c] = f1 < f2 ? x1 : x2;
    }
  f->s = std::exp(th[0]);
  // A component at the search's floor is absent.
  f->sv = th[1] <= lo[1] + 1e-3 ? 0.0 : std::exp(th[1]);
  f->su = th[2] <= lo[2] + 1e-3 ? 0.0 : std::exp(th[2]);
}

BayesFit bayes_fit(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                   const std::vector<double>& tau, const std::vector<size_t>& config,
                   const std::vector<size_t>& shape, double s_min) {
  const size_t n = a.rows, np = a.cols;
  BayesFit f;
  const ErrorModel em{config, shape};
  fit_error_model(a, y, mu, tau, em, s_min, &f);
  Matrix l;
  if (!cholesky(em.sigma(f.s, f.sv, f.su), &l)) cholesky(em.sigma(f.s, 0, 0), &l);
  Matrix m(n + np, np);
  std::vector<double> b(n + np, 0.0);
  for (size_t j = 0; j < np; ++j) {
    std::vector<double> col(n);
    for (size_t i = 0; i < n; ++i) col[i] = a(i, j) * tau[j] / y[i];
    forward_solve(l, &col);
    for (size_t i = 0; i < n; ++i) m(i, j) = col[i];
    m(n + j, j) = 1;
    b[n + j] = mu[j] / tau[j];
  }
  std::vector<double> one(n, 1.0);
  forward_solve(l, &one);
  for (size_t i = 0; i < n; ++i) b[i] = one[i];
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
  return f;
}

}  // namespace

std::string format_row_failures(const std::vector<MappedRow>& rows,
                                const std::vector<RowFailure>& failed, const FitSettings& fit) {
  std::string out;
  for (const RowFailure& f : failed) {
    std::string what;
    for (const auto& [e, n] : f.failures) what += fmt::format("{}{} x -{}", what.empty() ? "" : ", ", n, e);
    out += fmt::format("failed ops: {} ({}): {}; its counts are not the measured workload\n",
                       rows[f.row].row.id, describe_sim(rows[f.row], fit), what);
  }
  return out;
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
  size_t nconf = 0, nshape = 0;
  const std::vector<size_t> config = classes(
      a.rows,
      [&](size_t i, size_t k) {
        for (size_t j = 0; j < a.cols; ++j)
          if (a(i, j) != a(k, j)) return false;
        return true;
      },
      &nconf);
  const std::vector<size_t> shape = classes(
      rows.size(),
      [&](size_t i, size_t k) {
        return rows[i].scenario == rows[k].scenario &&
               shape_params(rows[i], fit) == shape_params(rows[k], fit) &&
               rows[i].phase == rows[k].phase;
      },
      &nshape);
  const BayesFit bf = bayes_fit(a, y, mu, tau, config, shape, fit.noise_cv);
  rep.converged = bf.converged;
  rep.row_noise = bf.s;
  rep.inadequacy = bf.sv;
  rep.inadequacy_shape = bf.su;
  rep.configs = nconf;
  rep.shapes = nshape;
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
  rep.model.inadequacy = bf.sv;
  rep.model.inadequacy_shape = bf.su;
  rep.model.inadequacy_source = fmt::format(
      "fit: type-II maximum likelihood over {} rows in {} configurations and {} workload "
      "shapes, beside a measurement noise of {:.3g}% per row",
      rows.size(), nconf, nshape, 100 * bf.s);
  std::string err;
  rep.model.validate(&err);
  return rep;
}

}  // namespace simcache::sim
