#include "sim/calibrate/calibrate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
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
// mode of a prior per parameter (log-normal for work, Gaussian under
// x >= 0 for a penalty: solve_params_log(); FitMethod::unscaled keeps a
// Gaussian prior under x >= 0 for all, solved as NNLS: solve_params()),
// with the relative error of row i in three parts,
//   y_i = a_i x (1 + u_f(i) + v_c(i) + e_i),
// e ~ N(0, s^2) the row's measurement noise, v ~ N(0, sv^2) the model's
// error on configuration c (rows with identical counts: a repeat measures
// the same v again) and u ~ N(0, su^2) its error shared by every
// configuration of one workload shape f (scenario and shape parameters:
// a mechanism the model lacks for that program). The rows' covariance is
// Sigma = s^2 I + sv^2 Z_c Z_c^T + su^2 Z_f Z_f^T.
//
// The machine's speed is a factor of its own: x_j = k x z_j for every
// parameter whose prior is a price on the priors' machine (z_j with the
// prior (mu_j, tau_j)), x_j = z_j for a definition (a microsecond of sleep is 1000
// ns on any machine). k has a flat prior on its logarithm, so rows all
// 10 % slower give k 10 % larger and the same z: the fit is
// scale-equivariant, and the error model cannot buy a level with a shape
// inadequacy. (k, s, sv, su) maximise the marginal likelihood of the rows
// with z integrated over its prior (type-II maximum likelihood); then the
// fit whitens by Sigma's Cholesky factor and solves NNLS in u = z / tau
// on the whitened rows stacked over the prior rows; the covariance is the
// Laplace one at that k, k^2 T (A_w^T A_w + I)^-1 T.
struct BayesFit {
  std::vector<double> x;
  Matrix cov;  // posterior covariance of x
  double speed = 1, speed_memory = 1, s = 0, sv = 0, su = 0, dof = 0;
  // The factor on parameter j's prior: 1, speed or speed_memory by its class.
  double factor(SpeedClass c) const {
    return c == SpeedClass::none ? 1.0 : c == SpeedClass::memory ? speed_memory : speed;
  }
  bool converged = true;
  // How far the last round of relinearisation moved the error model
  // (bayes_fit()): the largest relative move of a speed factor, or of an
  // error term against the largest of them; at most kStill when the
  // rounds stopped on their own, and 0 when a next point would have
  // predicted a row at 0 and the rounds stopped there.
  double last_move = 0;
  // Bounds of the error-model search each estimate sits at (within 1e-3
  // of the logarithm): the search could not place it.
  bool s_at_floor = false, s_at_cap = false, sv_at_cap = false, su_at_cap = false;
  bool speed_at_bound = false;
  // Per parameter at its bound 0: the score statistic of that bound, the
  // gradient of the log posterior pushing it below 0, in posterior sds
  // given the prices above 0 (g_j over the square root of its Schur
  // complement, in u; solve_params()); 0 off the bound or pulled up.
  std::vector<double> bound_z;
  // FitMethod::current (solve_params_log()): each price's log-normal
  // posterior. prior_z: its mode's distance from its prior's centre in
  // prior log-sds (negative: below it); log_sd the prior's log-sd, and
  // cov_log the Laplace covariance of the logarithms of the prices.
  std::vector<double> prior_z, log_sd;
  Matrix cov_log;
};

constexpr size_t kNoPair = SIZE_MAX;
// The log-sd of a twin pair's level where it is left free (fit_profile()):
// against row errors of a few per cent, no level at all (the pair is
// placed at the model's own level each round: place_free_levels()).
constexpr double kFreeLevelSd = 100.0;

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
  // A row's own relative spread beyond the common noise s: set for rows
  // that failed their stability gate (row_spread()), 0 for the others.
  const std::vector<double>& spread;
  // Twin pairs (fit_profile()): each row's pair, named by its anchor's
  // index (kNoPair: none), and a twin's own variance, its measured
  // ratio's (an anchor's is 0). The rows of a pair share one level term,
  // `level` (a fixed variance), or where it is negative the row noise s
  // with the anchor's spread, instead of a noise each: their difference
  // varies by the ratio's error alone, and a level left free (a large
  // `level`) makes a pair say nothing but its ratio.
  const std::vector<size_t>& pair;
  const std::vector<double>& own;
  double level = -1;
  // The rows' own standard errors' rms, squared (FitReport::noise_prior):
  // a twin's ratio also moves by what the row noise s has beyond it (the
  // drift between runs that no standard error shows).
  double se2 = 0;
  double at(size_t i, size_t k, double s, double sv, double su) const {
    double own_term = 0;  // the rows' own noise, or a pair's level and a twin's ratio
    if (pair[i] != kNoPair && pair[i] == pair[k]) {
      const double sa = spread[pair[i]];
      own_term = (level >= 0 ? level : s * s + sa * sa) +
                 (i == k && own[i] > 0 ? own[i] + std::max(s * s - se2, 0.0) : 0);
    } else if (i == k) {
      own_term = s * s + spread[i] * spread[i];
    }
    return own_term + (config[i] == config[k] ? sv * sv : 0) +
           (shape[i] == shape[k] ? su * su : 0);
  }
  Matrix sigma(double s, double sv, double su) const {
    const size_t n = config.size();
    Matrix m(n, n);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < n; ++k) m(i, k) = at(i, k, s, sv, su);
    return m;
  }
};

// The rows' prior predictive as a function of the speed factors, on
// the logarithm of a row's time (the errors are relative: log y_i =
// log(a_i x) + u + v + e), with log(a_i x) linearised at x^ = K z^ (z^
// the prior means, then the fit's own shape: a Laplace approximation at
// the mode; the memory work's part after the first round at the previous
// round's factor instead of the trial one: neg_log_marginal()): with
// p_i = a_i x^, the mean is log p_i + a_i (K mu - x^) / p_i and the
// covariance (A K T)(A K T)^T / (p p^T) (K: k on the scaled parameters,
// 1 on definitions). On the log scale no speed factor
// makes every residual small at once: a row predicted at 0 is infinitely
// wrong, where 1 - a_i x / y_i would be a bounded 100 % that a shape
// inadequacy at its cap absorbs. For rows of CPU work only, the
// residuals and the covariance do not depend on k beyond log k itself.
struct PriorPredictive {
  // Per row and speed class c (none, cpu, memory): a_i z^ and
  // a_i (mu - z^) over the class's parameters; per pair, sum_j a_ij
  // tau_j^2 a_kj. `memory_counted`: some row counts a memory-class price.
  std::vector<double> ly, p[3], o[3];
  Matrix g[3];
  bool memory_counted = false;
  PriorPredictive(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                  const std::vector<double>& tau, const std::vector<SpeedClass>& cls,
                  const std::vector<double>& zhat)
      : ly(a.rows) {
    const size_t n = a.rows, np = a.cols;
    for (int c = 0; c < 3; ++c) p[c].assign(n, 0.0), o[c].assign(n, 0.0), g[c] = Matrix(n, n);
    for (size_t i = 0; i < n; ++i) {
      ly[i] = std::log(y[i]);
      for (size_t j = 0; j < np; ++j) {
        const int c = static_cast<int>(cls[j]);
        p[c][i] += a(i, j) * zhat[j];
        o[c][i] += a(i, j) * (mu[j] - zhat[j]);
        memory_counted |= cls[j] == SpeedClass::memory && a(i, j) > 0;
      }
    }
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < n; ++k)
        for (size_t j = 0; j < np; ++j)
          g[static_cast<int>(cls[j])](i, k) += a(i, j) * tau[j] * a(k, j) * tau[j];
  }
};

// The memory factor's prior relative to the CPU one: log(km / k) ~ N(0,
// sd^2) with sd = log 10 (a 90 % range of 1/44 to 44 times: a bare-metal
// desktop beside a VM whose kernel paths are several times slower).
// Without it, rows that do not separate the two would leave km anywhere.
constexpr double kMemoryRatioSd = 2.302585092994046;

// kNoisePriorSd (calibrate.h): the row noise's prior.

// -log p(log rows | k, s, sv, su) up to a constant, z integrated over its
// prior. `ke_held`: the previous round's memory factor, at whose prices
// the memory-class work stays linearised while the trial factors move
// (0: at the trial factors' own prior means, the first round). Moved
// with the trial factor, those few prices fed each round's memory factor
// into the next one's point and the rounds could orbit; the CPU work's
// point moves with k, as the rows' level does (docs/calibration.md, "The
// fit", says why both).
double neg_log_marginal(const PriorPredictive& pp, const ErrorModel& em, double k, double ke,
                        double s, double sv, double su, double ke_held = 0) {
  const size_t n = pp.ly.size();
  const double f[3] = {1.0, k, ke};
  const double at[3] = {1.0, k, ke_held > 0 ? ke_held : ke};
  std::vector<double> p(n), z(n);
  for (size_t i = 0; i < n; ++i) {
    double prior = 0;  // a_i K mu: the row at the priors' centres on these factors
    p[i] = 0;
    for (int c = 0; c < 3; ++c)
      p[i] += at[c] * pp.p[c][i], prior += f[c] * (pp.o[c][i] + pp.p[c][i]);
    if (!(p[i] > 0)) return 1e300;
    z[i] = pp.ly[i] - std::log(p[i]) - (prior - p[i]) / p[i];
  }
  // The lower triangle only: all that cholesky() reads (the search
  // evaluates this thousands of times a fit).
  Matrix m(n, n), l;
  const double k2 = k * k, ke2 = ke * ke;
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c <= i; ++c)
      m(i, c) = em.at(i, c, s, sv, su) +
                (pp.g[0](i, c) + k2 * pp.g[1](i, c) + ke2 * pp.g[2](i, c)) / (p[i] * p[c]);
  if (!cholesky(m, &l)) return 1e300;
  forward_solve(l, &z);
  double q = 0, logdet = 0;
  for (size_t i = 0; i < n; ++i) q += z[i] * z[i], logdet += 2 * std::log(l(i, i));
  const double r = std::log(ke / k) / kMemoryRatioSd;
  return 0.5 * (q + logdet + r * r);
}

// Minimises f over each coordinate in turn within [lo, hi]: a scan of the
// whole range on a grid (so a coordinate goes to the best of its modes,
// not the nearest), then a golden-section search within one grid step of
// the best point; sweeps until no coordinate moves by 1e-7.
template <class F>
void coordinate_search(F f, size_t dims, const double* lo, const double* hi, double* th) {
  const double phi = 0.6180339887498949;
  const int grid = 24;
  double best = f(th);
  for (int sweep = 0; sweep < 40; ++sweep) {
    double moved = 0;
    for (size_t c = 0; c < dims; ++c) {
      std::vector<double> t(th, th + dims);
      const double step = (hi[c] - lo[c]) / grid;
      double arg = th[c], val = best;
      for (int g = 0; g <= grid; ++g) {
        t[c] = lo[c] + step * g;
        const double v = f(t.data());
        if (v < val) val = v, arg = t[c];
      }
      double a0 = std::max(lo[c], arg - step), b0 = std::min(hi[c], arg + step);
      double x1 = b0 - phi * (b0 - a0), x2 = a0 + phi * (b0 - a0);
      t[c] = x1;
      double f1 = f(t.data());
      t[c] = x2;
      double f2 = f(t.data());
      for (int it = 0; it < 48; ++it) {
        if (f1 < f2) {
          b0 = x2, x2 = x1, f2 = f1, x1 = b0 - phi * (b0 - a0), t[c] = x1, f1 = f(t.data());
        } else {
          a0 = x1, x1 = x2, f1 = f2, x2 = a0 + phi * (b0 - a0), t[c] = x2, f2 = f(t.data());
        }
      }
      if (std::min(f1, f2) < val) val = std::min(f1, f2), arg = f1 < f2 ? x1 : x2;
      moved = std::max(moved, std::fabs(arg - th[c]));
      th[c] = arg, best = val;
    }
    if (moved < 1e-7) break;
  }
}

// Whether some workload shape holds two configurations: only then can
// the rows tell the inadequacy per shape from the one per configuration.
bool shapes_apart(const ErrorModel& em) {
  return std::set<size_t>(em.shape.begin(), em.shape.end()).size() <
         std::set<size_t>(em.config.begin(), em.config.end()).size();
}

// The speed factors and the three log-sds. The CPU speed factor k is
// searched relative to k0, the geometric mean of measured over
// prior-predicted row times, within a factor of 30 either way (the search
// itself scales with the rows); the memory factor as its ratio to k,
// within a factor of 100 either way, under its prior (kMemoryRatioSd).
void fit_error_model(const PriorPredictive& pp, const ErrorModel& em, double s_min,
                     double s_prior, BayesFit* f, double ke_held = 0) {
  const size_t n = pp.ly.size();
  double lk0 = 0;
  size_t used = 0;
  for (size_t i = 0; i < n; ++i) {
    // A pair placed at the model's own level (a free level) tells nothing
    // of the machine's.
    if (em.level >= 0 && em.pair[i] != kNoPair) continue;
    const double scaled = pp.p[1][i] + pp.p[2][i];
    if (scaled > 0 && std::exp(pp.ly[i]) > pp.p[0][i])
      lk0 += std::log((std::exp(pp.ly[i]) - pp.p[0][i]) / scaled), ++used;
  }
  lk0 = used ? lk0 / static_cast<double>(used) : 0;
  const double span = std::log(30.0), rspan = pp.memory_counted ? std::log(100.0) : 0,
               cap = std::log(0.3);
  // Where every workload shape holds one configuration the two
  // inadequacies are one variance per row, and the search would leave the
  // split where it started: it all goes to the configuration's, which
  // every prediction carries and no effect within a shape cancels.
  const bool shape_apart = shapes_apart(em);
  const double lo[5] = {lk0 - span, -rspan, std::log(s_min), std::log(1e-5), std::log(1e-5)};
  const double hi[5] = {lk0 + span, rspan, cap, cap, shape_apart ? cap : std::log(1e-5)};
  double th[5] = {lk0, 0, std::log(std::max(s_min, 0.01)), std::log(0.01),
                  shape_apart ? std::log(0.01) : lo[4]};
  coordinate_search(
      [&](const double* t) {
        const double r = s_prior > 0 ? (t[2] - std::log(s_prior)) / kNoisePriorSd : 0.0;
        return neg_log_marginal(pp, em, std::exp(t[0]), std::exp(t[0] + t[1]), std::exp(t[2]),
                                std::exp(t[3]), std::exp(t[4]), ke_held) +
               0.5 * r * r;
      },
      5, lo, hi, th);
  f->speed = std::exp(th[0]);
  f->speed_memory = std::exp(th[0] + th[1]);
  f->s = std::exp(th[2]);
  // A component at the search's floor is absent.
  f->sv = th[3] <= lo[3] + 1e-3 ? 0.0 : std::exp(th[3]);
  f->su = th[4] <= lo[4] + 1e-3 ? 0.0 : std::exp(th[4]);
  f->speed_at_bound = th[0] <= lo[0] + 1e-3 || th[0] >= hi[0] - 1e-3 ||
                      (pp.memory_counted && (th[1] <= lo[1] + 1e-3 || th[1] >= hi[1] - 1e-3));
  f->s_at_floor = th[2] <= lo[2] + 1e-3 && s_min > 0;
  f->s_at_cap = th[2] >= cap - 1e-3;
  f->sv_at_cap = th[3] >= cap - 1e-3;
  f->su_at_cap = th[4] >= cap - 1e-3;
}

// FitMethod::unscaled's error model: no speed factor (k = km = 1), and
// (s, sv, su) maximise the marginal likelihood of the relative residuals
// r_i = 1 - a_i mu / y_i, whose covariance is Sigma + (A T / y)(A T / y)^T,
// s at least `s_min`, no prior on it. Each coordinate in turn is searched
// by golden section over its whole range, six sweeps: a local search
// that keeps the first mode it narrows onto, as that fitter's did.
void fit_error_model_unscaled(const PriorPredictive& pp, const ErrorModel& em, double s_min,
                              BayesFit* f) {
  const size_t n = pp.ly.size();
  std::vector<double> y(n), r(n);
  for (size_t i = 0; i < n; ++i) {
    y[i] = std::exp(pp.ly[i]);
    r[i] = 1 - (pp.p[0][i] + pp.p[1][i] + pp.p[2][i]) / y[i];
  }
  const auto nll = [&](const double* t) {
    const double s = std::exp(t[0]), sv = std::exp(t[1]), su = std::exp(t[2]);
    Matrix m(n, n), l;  // the lower triangle: all cholesky() reads
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c <= i; ++c)
        m(i, c) = em.at(i, c, s, sv, su) +
                  (pp.g[0](i, c) + pp.g[1](i, c) + pp.g[2](i, c)) / (y[i] * y[c]);
    if (!cholesky(m, &l)) return 1e300;
    std::vector<double> z = r;
    forward_solve(l, &z);
    double q = 0, logdet = 0;
    for (size_t i = 0; i < n; ++i) q += z[i] * z[i], logdet += 2 * std::log(l(i, i));
    return 0.5 * (q + logdet);
  };
  const double cap = std::log(0.3);
  const double lo[3] = {std::log(s_min), std::log(1e-5), std::log(1e-5)};
  double th[3] = {std::log(std::max(s_min, 0.01)), std::log(0.01), std::log(0.01)};
  const double phi = 0.6180339887498949;
  for (int sweep = 0; sweep < 6; ++sweep)
    for (int c = 0; c < 3; ++c) {
      double t[3] = {th[0], th[1], th[2]};
      double a0 = lo[c], b0 = cap;
      double x1 = b0 - phi * (b0 - a0), x2 = a0 + phi * (b0 - a0);
      t[c] = x1;
      double f1 = nll(t);
      t[c] = x2;
      double f2 = nll(t);
      for (int it = 0; it < 40; ++it) {
        if (f1 < f2)
          b0 = x2, x2 = x1, f2 = f1, x1 = b0 - phi * (b0 - a0), t[c] = x1, f1 = nll(t);
        else
          a0 = x1, x1 = x2, f1 = f2, x2 = a0 + phi * (b0 - a0), t[c] = x2, f2 = nll(t);
      }
      th[c] = f1 < f2 ? x1 : x2;
    }
  f->speed = f->speed_memory = 1;
  f->s = std::exp(th[0]);
  f->sv = th[1] <= lo[1] + 1e-3 ? 0.0 : std::exp(th[1]);
  f->su = th[2] <= lo[2] + 1e-3 ? 0.0 : std::exp(th[2]);
  f->s_at_floor = th[0] <= lo[0] + 1e-3 && s_min > 0;
  f->s_at_cap = th[0] >= cap - 1e-3;
  f->sv_at_cap = th[1] >= cap - 1e-3;
  f->su_at_cap = th[2] >= cap - 1e-3;
}

// Given the error model and the speed factor: the posterior mode of z
// (NNLS in u = z / tau on the whitened rows over the prior rows) and the
// Laplace covariance of x = K z.
void solve_params(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                  const std::vector<double>& tau, const std::vector<SpeedClass>& cls,
                  const ErrorModel& em, BayesFit* f) {
  const size_t n = a.rows, np = a.cols;
  std::vector<double> k(np);
  for (size_t j = 0; j < np; ++j) k[j] = f->factor(cls[j]);
  Matrix l;
  if (!cholesky(em.sigma(f->s, f->sv, f->su), &l)) cholesky(em.sigma(f->s, 0, 0), &l);
  Matrix m(n + np, np);
  std::vector<double> b(n + np, 0.0);
  for (size_t j = 0; j < np; ++j) {
    std::vector<double> col(n);
    for (size_t i = 0; i < n; ++i) col[i] = a(i, j) * k[j] * tau[j] / y[i];
    forward_solve(l, &col);
    for (size_t i = 0; i < n; ++i) m(i, j) = col[i];
    m(n + j, j) = 1;
    b[n + j] = mu[j] / tau[j];
  }
  std::vector<double> one(n, 1.0);
  forward_solve(l, &one);
  for (size_t i = 0; i < n; ++i) b[i] = one[i];
  std::vector<double> u;
  f->converged = nnls(m, b, &u);
  Matrix h(np, np), hinv;
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t i = 0; i < np; ++i) {
      if (m(r, i) == 0) continue;
      for (size_t j = 0; j < np; ++j) h(i, j) += m(r, i) * m(r, j);
    }
  spd_inverse(h, &hinv);
  f->x.assign(np, 0.0);
  f->dof = static_cast<double>(np);
  for (size_t j = 0; j < np; ++j) f->x[j] = u[j] * k[j] * tau[j], f->dof -= hinv(j, j);
  f->cov = Matrix(np, np);
  for (size_t i = 0; i < np; ++i)
    for (size_t j = 0; j < np; ++j) f->cov(i, j) = k[i] * tau[i] * hinv(i, j) * tau[j] * k[j];
  // The score test of each bound the solution sits at: the residual's
  // pull g_j on u_j (negative: the rows and the prior together want it
  // below 0), in sds of u_j given the free prices F (those above 0), which
  // move with it, and the other prices at 0, which stay there: g_j over
  // the square root of the Schur complement H_jj - H_jF H_FF^-1 H_Fj.
  std::vector<double> resid(b);
  for (size_t r = 0; r < m.rows; ++r)
    for (size_t j = 0; j < np; ++j) resid[r] -= m(r, j) * u[j];
  std::vector<size_t> free_set;
  for (size_t j = 0; j < np; ++j)
    if (u[j] > 0) free_set.push_back(j);
  const size_t nf = free_set.size();
  Matrix hff(nf, nf), hff_inv;
  for (size_t a = 0; a < nf; ++a)
    for (size_t c = 0; c < nf; ++c) hff(a, c) = h(free_set[a], free_set[c]);
  const bool have_inv = nf == 0 || spd_inverse(hff, &hff_inv);
  f->bound_z.assign(np, 0.0);
  for (size_t j = 0; j < np; ++j) {
    if (u[j] > 0) continue;
    double g = 0;
    for (size_t r = 0; r < m.rows; ++r) g += m(r, j) * resid[r];
    if (g >= 0) continue;
    double schur = h(j, j);
    if (have_inv)
      for (size_t a = 0; a < nf; ++a)
        for (size_t c = 0; c < nf; ++c)
          schur -= h(j, free_set[a]) * hff_inv(a, c) * h(free_set[c], j);
    // The prior row alone gives H_jj >= 1 and a Schur complement > 0; a
    // rounding to 0 or below reads as no information beyond the prior.
    f->bound_z[j] = g / std::sqrt(std::max(schur, 1e-12));
  }
}

// FitMethod::current's prices. Work has a log-normal prior, so that no
// price of work the rows measure can reach 0 (work costs something on
// every machine): z_j = exp(w_j), w_j ~ N(log mu_j, sl_j^2), sl_j = tau_j /
// mu_j (its median the prior's centre, its relative width the prior's;
// the delta method gives it the prior's sd there). A penalty (the extra a
// cold or remote state costs) may be 0 on a machine: it keeps the
// Gaussian prior N(mu_j, tau_j^2) with z_j >= 0, as does a price whose
// centre is not above 0. In v (w_j = log mu_j + sl_j v_j; z_j = mu_j +
// tau_j v_j) the posterior mode minimises
//   |L^-1 (1 - A K z(v) / y)|^2 + |v|^2
// by Newton steps damped as Levenberg-Marquardt's, from the prior's
// centre v = 0, a penalty at its bound 0 held there while the gradient
// pushes it below (projected). The covariance is the Laplace one in v (the
// inverse of the objective's Hessian, the rows' curvature included),
// carried to each price by the delta method; a price is reported at the
// mode.
void solve_params_log(const Matrix& a, const std::vector<double>& y, const std::vector<double>& mu,
                      const std::vector<double>& tau, const std::vector<SpeedClass>& cls,
                      const std::vector<bool>& penalty, const ErrorModel& em, BayesFit* f) {
  const size_t n = a.rows, np = a.cols;
  // Per price: its factor k, and either the log-normal's centre and
  // log-sd (work) or, for a penalty, lin: z = mu + tau v with v >= vmin.
  std::vector<double> k(np), lm(np), sl(np), vmin(np, -HUGE_VAL);
  std::vector<bool> lin(np);
  for (size_t j = 0; j < np; ++j) {
    k[j] = f->factor(cls[j]);
    lin[j] = penalty[j] || !(mu[j] > 0);
    sl[j] = lin[j] ? 0.0 : tau[j] / mu[j];
    lm[j] = lin[j] ? 0.0 : std::log(mu[j]);
    if (lin[j]) vmin[j] = -std::max(mu[j], 0.0) / tau[j];
  }
  const auto price = [&](const std::vector<double>& v, size_t j) {
    if (lin[j]) return v[j] <= vmin[j] ? 0.0 : std::max(mu[j] + tau[j] * v[j], 0.0);
    return std::exp(lm[j] + sl[j] * v[j]);
  };
  // dz_j / dv_j.
  const auto slope_of = [&](double z, size_t j) { return lin[j] ? tau[j] : z * sl[j]; };
  Matrix l;
  if (!cholesky(em.sigma(f->s, f->sv, f->su), &l)) cholesky(em.sigma(f->s, 0, 0), &l);
  // Whitened row residuals and their Jacobian in v at v.
  const auto rows_at = [&](const std::vector<double>& v, std::vector<double>* r, Matrix* jac) {
    std::vector<double> z(np);
    for (size_t j = 0; j < np; ++j) z[j] = price(v, j);
    r->assign(n, 1.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < np; ++j) (*r)[i] -= a(i, j) * k[j] * z[j] / y[i];
    forward_solve(l, r);
    if (!jac) return;
    *jac = Matrix(n, np);
    for (size_t j = 0; j < np; ++j) {
      std::vector<double> col(n);
      for (size_t i = 0; i < n; ++i) col[i] = -a(i, j) * k[j] * slope_of(z[j], j) / y[i];
      forward_solve(l, &col);
      for (size_t i = 0; i < n; ++i) (*jac)(i, j) = col[i];
    }
  };
  const auto objective = [&](const std::vector<double>& v) {
    std::vector<double> r;
    rows_at(v, &r, nullptr);
    double q = 0;
    for (double e : r) q += e * e;
    for (double e : v) q += e * e;
    return q;
  };
  std::vector<double> v(np, 0.0), r;
  Matrix jac;
  double obj = objective(v), lambda = 0;
  f->converged = false;
  // The Hessian of the objective's half: J^T J + I (Gauss-Newton), plus
  // the rows' curvature, which is diagonal as each price enters through
  // exp(w_j) alone: d2 r / dv_j^2 = sl_j dr / dv_j, so sl_j (J^T r)_j on
  // the diagonal. Without it the steps converge only linearly when the
  // residuals are not small.
  const auto hessian = [&](const Matrix& jm, const std::vector<double>& rr, Matrix* h,
                           std::vector<double>* g) {
    *h = Matrix(np, np);
    g->assign(v.begin(), v.end());
    for (size_t i = 0; i < np; ++i) (*h)(i, i) = 1;
    for (size_t q = 0; q < n; ++q)
      for (size_t i = 0; i < np; ++i) {
        if (jm(q, i) == 0) continue;
        (*g)[i] += jm(q, i) * rr[q];
        for (size_t j = 0; j < np; ++j) (*h)(i, j) += jm(q, i) * jm(q, j);
      }
  };
  for (int it = 0; it < 200 && !f->converged; ++it) {
    rows_at(v, &r, &jac);
    Matrix h;
    std::vector<double> g;
    hessian(jac, r, &h, &g);
    std::vector<bool> at_bound(np);
    double slope = 0;  // the projected gradient's largest component: 0 at the mode
    for (size_t j = 0; j < np; ++j) {
      at_bound[j] = lin[j] && v[j] <= vmin[j] && g[j] > 0;
      if (at_bound[j]) g[j] = 0;
      slope = std::max(slope, std::fabs(g[j]));
    }
    if (slope <= 1e-9) {
      f->converged = true;
      break;
    }
    // Where no step gains any more, the mode to rounding if the gradient
    // is this small; otherwise a stall, reported as not converged.
    const bool flat = slope <= 1e-6 * std::max(1.0, std::sqrt(obj));
    bool stepped = false, stalled = false;
    while (!stepped && lambda < 1e12) {
      // Damped on the Gauss-Newton diagonal, which is at least 1.
      Matrix hd = h, lh;
      for (size_t j = 0; j < np; ++j) hd(j, j) += sl[j] * (g[j] - v[j]) + lambda * h(j, j);
      // A penalty at its bound that the gradient pushes below it stays
      // there: out of this step (projected Newton).
      for (size_t j = 0; j < np; ++j)
        if (at_bound[j])
          for (size_t c = 0; c < np; ++c) hd(j, c) = hd(c, j) = c == j ? 1.0 : 0.0;
      // The step -hd^-1 g by hd's Cholesky factor; one that does not
      // factor (indefinite: the rows' curvature) takes more damping.
      if (!cholesky(hd, &lh)) {
        lambda = std::max(lambda * 10, 1e-6);
        continue;
      }
      std::vector<double> step(g);
      forward_solve(lh, &step);
      backward_solve(lh, &step);
      std::vector<double> next(v);
      double moved = 0;
      for (size_t i = 0; i < np; ++i) {
        next[i] = std::max(next[i] - step[i], vmin[i]);
        moved = std::max(moved, std::fabs(next[i] - v[i]));
      }
      const double o = objective(next);
      if (o <= obj) {
        // A pure Newton step this small: the mode to rounding. A damped
        // one that gains nothing: the search can go no further.
        if (lambda == 0 && moved < 1e-10) f->converged = true;
        if (lambda >= 1 && obj - o <= 1e-14 * obj) stalled = true;
        v = next, stepped = true, lambda = lambda / 10 < 1e-9 ? 0.0 : lambda / 10;
        obj = o;
      } else {
        lambda = std::max(lambda * 10, 1e-6);
      }
    }
    // No step lowers it, however short.
    if (!stepped) stalled = true;
    if (stalled) {
      f->converged = f->converged || flat;
      break;
    }
  }
  rows_at(v, &r, &jac);
  Matrix h, hinv;
  std::vector<double> g;
  hessian(jac, r, &h, &g);
  // The Laplace covariance: the inverse of the objective's full Hessian
  // at the mode, or the Gauss-Newton one's should the rows' curvature
  // leave it indefinite. At the mode J^T r = -v, so the curvature on a
  // price of work's diagonal is -sl_j v_j: a price fitted above its
  // prior's centre (v_j > 0) can come out wider on its logarithm than
  // its prior; with every price at or below its centre none can.
  Matrix full = h;
  std::vector<double> curv(np, 0.0);
  for (size_t j = 0; j < np; ++j) curv[j] = sl[j] * (g[j] - v[j]), full(j, j) += curv[j];
  if (!spd_inverse(full, &hinv)) spd_inverse(h, &hinv), curv.assign(np, 0.0);
  f->x.assign(np, 0.0);
  f->dof = static_cast<double>(np);
  f->prior_z = v;
  for (size_t j = 0; j < np; ++j)
    if (lin[j]) f->prior_z[j] = 0;  // a penalty's distance is not on a log scale
  f->cov = Matrix(np, np);
  f->cov_log = Matrix(np, np);
  for (size_t i = 0; i < np; ++i)
    for (size_t j = 0; j < np; ++j) f->cov_log(i, j) = sl[i] * hinv(i, j) * sl[j];
  // Each price at the mode, with the delta method's covariance d_i
  // (H^-1)_ij d_j, d_j = k_j dz_j / dv_j (x_j sl_j for work, k_j tau_j
  // for a penalty): a price the rows leave alone keeps its prior's centre
  // and sd. The effective number of parameters is tr(H^-1 J^T J) = np -
  // sum_j (H^-1)_jj (1 + curv_j).
  std::vector<double> d(np);
  for (size_t j = 0; j < np; ++j) {
    const double z = price(v, j);
    f->x[j] = k[j] * z, f->dof -= hinv(j, j) * (1 + curv[j]);
    d[j] = k[j] * slope_of(z, j);
  }
  for (size_t i = 0; i < np; ++i)
    for (size_t j = 0; j < np; ++j) f->cov(i, j) = d[i] * hinv(i, j) * d[j];
  f->log_sd.assign(sl.begin(), sl.end());
  f->bound_z.assign(np, 0.0);
}

// The error model linearised at the prior means, then at the fit's own
// shape z^ = x / K (the memory work's held at the previous round's
// factor: neg_log_marginal()), until (k, km, s, sv, su) move by less
// than kStill or after 8 rounds.
// Twin pairs whose level is left free (fit_profile()): per row, its
// pair's anchor (kNoPair: none) and its figure over the anchor's (1 for
// the anchor itself).
struct FreeLevels {
  std::vector<size_t> anchor;
  std::vector<double> ratio;
};

// Places each free pair at the level the prices x (ns) predict for its
// anchor, its twin at that times the measured ratio: the rows' relative
// residuals are taken against the model's own level, so the measured
// level (another sitting's, unscaled) enters nowhere and a twin's
// difference from its anchor is its ratio's error at full weight.
void place_free_levels(const Matrix& a, const FreeLevels& fl, const std::vector<double>& x,
                       std::vector<double>* y) {
  for (size_t i = 0; i < fl.anchor.size(); ++i) {
    if (fl.anchor[i] == kNoPair) continue;
    double p = 0;
    for (size_t j = 0; j < a.cols; ++j) p += a(fl.anchor[i], j) * x[j];
    if (p > 0) (*y)[i] = p * fl.ratio[i];
  }
}

BayesFit bayes_fit(const Matrix& a, std::vector<double>* y_io, const std::vector<double>& mu,
                   const std::vector<double>& tau, const std::vector<SpeedClass>& cls,
                   const std::vector<bool>& penalty, const ErrorModel& em,
                   const FreeLevels& free_levels, double s_min, double s_prior, FitMethod method) {
  const size_t np = a.cols;
  BayesFit f;
  std::vector<double>& y = *y_io;
  place_free_levels(a, free_levels, mu, &y);
  if (method == FitMethod::unscaled) {  // linear in the prices: no relinearisation
    fit_error_model_unscaled(PriorPredictive(a, y, mu, tau, cls, mu), em, s_min, &f);
    solve_params(a, y, mu, tau, cls, em, &f);
    if (std::none_of(free_levels.anchor.begin(), free_levels.anchor.end(),
                     [](size_t k) { return k != kNoPair; }))
      return f;
    // Free pairs: once more at the level those prices predict.
    place_free_levels(a, free_levels, f.x, &y);
    fit_error_model_unscaled(PriorPredictive(a, y, mu, tau, cls, mu), em, s_min, &f);
    solve_params(a, y, mu, tau, cls, em, &f);
    return f;
  }
  std::vector<double> zhat = mu;
  for (int round = 0; round < 8; ++round) {
    const BayesFit prev = f;
    fit_error_model(PriorPredictive(a, y, mu, tau, cls, zhat), em, s_min, s_prior, &f,
                    round > 0 ? prev.speed_memory : 0);
    std::vector<double> x(np);
    for (size_t j = 0; j < np; ++j) x[j] = f.factor(cls[j]) * zhat[j];
    place_free_levels(a, free_levels, x, &y);
    solve_params_log(a, y, mu, tau, cls, penalty, em, &f);
    // The largest move this round: a speed factor's relative to itself,
    // an error term's relative to the largest of them (one that appears
    // or vanishes at the search's floor is no move of the error model).
    const auto move = [](double p, double q) {
      return std::max(p, q) > 0 ? std::fabs(p - q) / std::max(p, q) : 0.0;
    };
    const double err = std::max({prev.s, prev.sv, prev.su, f.s, f.sv, f.su});
    const auto err_move = [err](double p, double q) { return err > 0 ? std::fabs(p - q) / err : 0.0; };
    f.last_move = round == 0 ? 1.0
                             : std::max({move(prev.speed, f.speed),
                                         move(prev.speed_memory, f.speed_memory),
                                         err_move(prev.s, f.s), err_move(prev.sv, f.sv),
                                         err_move(prev.su, f.su)});
    if (f.last_move <= kStill) break;
    // The next linearisation point; a row it would predict at 0 keeps the
    // previous one.
    std::vector<double> next(np);
    for (size_t j = 0; j < np; ++j) next[j] = f.x[j] / f.factor(cls[j]);
    bool positive = true;
    for (size_t i = 0; i < a.rows && positive; ++i) {
      double p = 0;
      for (size_t j = 0; j < np; ++j) p += a(i, j) * next[j];
      positive = p > 0;
    }
    if (!positive) {  // no next point: the fit stays where this round put it
      f.last_move = 0;
      break;
    }
    zhat = next;
    place_free_levels(a, free_levels, f.x, &y);
  }
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

EffectRelation row_relation(const MappedRow& a, const MappedRow& b, const FitSettings& fit) {
  // A condition the row recorded (fit.condition_params) is the machine's,
  // not the workload's: two readings of it leave one configuration.
  const auto identity = [&fit](const MappedRow& r) {
    Params p = shape_params(r, fit);
    for (const std::string& k : fit.condition_params) p.erase(k);
    return p;
  };
  if (a.scenario != b.scenario || a.phase != b.phase || identity(a) != identity(b))
    return EffectRelation::cross_shape;
  return a.kernel == b.kernel && a.policy == b.policy ? EffectRelation::same_config
                                                      : EffectRelation::same_shape;
}

// The speed factors scale every prior but a definition's and a hardware
// latency's; streaming memory work's by the memory factor
// (sim/cost/cost_params.def says which by the source's prefix).
SpeedClass speed_class(const CostParam& p) {
  if (p.prior_source.rfind("definition", 0) == 0 || p.prior_source.rfind("hardware:", 0) == 0)
    return SpeedClass::none;
  return p.prior_source.rfind("memory:", 0) == 0 ? SpeedClass::memory : SpeedClass::cpu;
}
bool speed_scaled(const CostParam& p) { return speed_class(p) != SpeedClass::none; }

bool is_penalty(const CostParam& p) { return p.prior_source.rfind("penalty:", 0) == 0; }

double predict_ns(const CostModel& m, const PerOpCounts& c) {
  double t = 0;
  for (const CostParam& p : m.params)
    for (Event e : p.events) t += c[static_cast<size_t>(e)] * p.value;
  return t;
}

FitReport fit_profile(const CostModel& structure, const FitSettings& fit,
                      const std::vector<MappedRow>& rows, const std::vector<PerOpCounts>& per_op,
                      const std::string& name, FitMethod method) {
  const bool unscaled = method == FitMethod::unscaled;
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
  std::vector<SpeedClass> cls;
  for (const MappedRow& r : rows) y.push_back(r.value_ns);
  for (const CostParam& p : structure.params) {
    mu.push_back(p.prior >= 0 ? p.prior : p.value);
    // A parameter without a prior uncertainty is held at its value.
    tau.push_back(std::max(p.prior_sd > 0 ? p.prior_sd : 0.0, 1e-9 * (1 + mu.back())));
    cls.push_back(speed_class(p));
  }
  size_t nconf = 0, nshape = 0;
  // FitMethod::unscaled: a configuration is the rows of identical counts.
  const auto same_counts = [&](size_t i, size_t k) {
    for (size_t j = 0; j < a.cols; ++j)
      if (a(i, j) != a(k, j)) return false;
    return true;
  };
  const std::vector<size_t> config = classes(
      rows.size(),
      [&](size_t i, size_t k) {
        return unscaled ? same_counts(i, k)
                        : row_relation(rows[i], rows[k], fit) == EffectRelation::same_config;
      },
      &nconf);
  const std::vector<size_t> shape = classes(
      rows.size(),
      [&](size_t i, size_t k) {
        return row_relation(rows[i], rows[k], fit) != EffectRelation::cross_shape;
      },
      &nshape);
  // Twins (FitSettings::twin_params; apply_reference()): a row measured
  // round by round beside its anchor, the same program in another
  // condition. Its measurement is the ratio: the twin is fitted at its
  // anchor's figure times it, and the two share one level term, so that
  // their difference varies by the ratio's standard error alone (at least
  // noise_cv). Beside rows scaled by a reference, a pair's level (its own
  // sitting's, unscaled) is left free and the pair fits its ratio only.
  std::vector<size_t>& pair = rep.pair;
  pair.assign(rows.size(), kNoPair);
  std::vector<double> own(rows.size(), 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    const MappedRow& r = rows[i];
    if (!(r.twin_ratio > 0) || r.bases.size() != 1 || r.bases[0] >= rows.size() ||
        rows[r.bases[0]].twin_ratio > 0)
      continue;  // a twin whose anchor a leave-out unit took is a row as measured
    pair[i] = pair[r.bases[0]] = r.bases[0];
    own[i] = std::pow(std::max(r.twin_se, fit.noise_cv), 2);
    y[i] = y[r.bases[0]] * r.twin_ratio;
    ++rep.twins;
    rep.ratio_round_by_round |= r.twin_round_by_round;
  }
  // A twin or an anchor whose partner is not among the rows is one
  // alone: beside rows scaled by a reference its level is free too, and it
  // tells the fit nothing.
  rep.levels_free = twin_levels_free(rows);
  for (size_t i = 0; i < rows.size() && rep.levels_free; ++i)
    if (pair[i] == kNoPair && twin_member(rows[i])) pair[i] = i;
  // Whether a row's noise is its pair's terms instead of its own: a
  // twin's is its ratio's error, a free level has none.
  const auto pair_noise = [&](size_t i) {
    return pair[i] != kNoPair && (pair[i] != i || rep.levels_free);
  };
  // Rows that failed their stability gate count with their own spread:
  // weighted by it, never fitted as if they were as good as the others.
  std::vector<double>& spread = rep.spread;
  spread.assign(rows.size(), 0.0);
  for (size_t i = 0; i < rows.size() && !unscaled; ++i) {
    if (pair_noise(i)) continue;
    spread[i] = row_spread(rows[i].row.note);
    if (spread[i] > 0) rep.gate_failed.push_back({rows[i].row.id, spread[i]});
  }
  // The row noise's prior centre (kNoisePriorSd): the rms of the own
  // standard errors of the rows that passed their gate, at least
  // noise_cv; noise_cv alone when none passed or none has one (a
  // gate-failed row's spread is already its own term of the error model).
  double se2 = 0;
  size_t nse = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (spread[i] > 0 || pair_noise(i)) continue;
    const double se = measurement_spread(rows[i].row.note, measured_rounds(rows[i]));
    if (se > 0) se2 += se * se, ++nse;
  }
  rep.noise_prior_rms = nse ? std::sqrt(se2 / static_cast<double>(nse)) : 0.0;
  rep.noise_prior = std::max(fit.noise_cv, rep.noise_prior_rms);
  rep.noise_prior_rows = nse;
  std::vector<bool> penalty;
  for (const CostParam& p : structure.params) penalty.push_back(is_penalty(p));
  const ErrorModel em{config,
                      shape,
                      spread,
                      pair,
                      own,
                      rep.levels_free ? kFreeLevelSd * kFreeLevelSd : -1.0,
                      // the older fitter reports no drift: none in a ratio either
                      unscaled ? HUGE_VAL : rep.noise_prior * rep.noise_prior};
  FreeLevels free_levels{std::vector<size_t>(rows.size(), kNoPair),
                         std::vector<double>(rows.size(), 1.0)};
  for (size_t i = 0; i < rows.size() && rep.levels_free; ++i)
    if (pair[i] != kNoPair)
      free_levels.anchor[i] = pair[i],
      free_levels.ratio[i] = pair[i] == i ? 1.0 : rows[i].twin_ratio;
  const BayesFit bf = bayes_fit(a, &y, mu, tau, cls, penalty, em, free_levels, fit.noise_cv,
                                unscaled ? 0.0 : rep.noise_prior, method);
  // The priors on this machine: the priors' machine's, times its speed.
  for (size_t j = 0; j < np; ++j) mu[j] *= bf.factor(cls[j]), tau[j] *= bf.factor(cls[j]);
  rep.converged = bf.converged;
  rep.error_model_move = bf.last_move;
  rep.bounded_work = unscaled;
  rep.speed = bf.speed;
  rep.speed_memory = bf.speed_memory;
  rep.row_noise = bf.s;
  // The row noise beyond what the rows' own standard errors explain: how
  // far a row moves between sittings or boots. A time predicted for a new
  // sitting must carry it: the profile records it as model_drift.
  rep.drift = unscaled
                  ? 0.0
                  : std::sqrt(std::max(bf.s * bf.s - rep.noise_prior * rep.noise_prior, 0.0));
  rep.inadequacy = bf.sv;
  rep.inadequacy_shape = bf.su;
  rep.configs = nconf;
  rep.shapes = nshape;
  rep.effective_params = bf.dof;
  rep.noise_at_cap = bf.s_at_cap;
  rep.noise_at_floor = bf.s_at_floor;
  rep.inadequacy_at_cap = bf.sv_at_cap;
  rep.inadequacy_shape_at_cap = bf.su_at_cap;
  rep.speed_at_bound = bf.speed_at_bound;
  // Rows named by the file they came from: "a.tsv rows X, Y", and pooled
  // sittings "a.tsv rows X, Y; b.tsv rows X@2, Z" (the report finds a
  // measurement's in-sample mark per file: report_summary.cc).
  std::map<std::string, std::string> file_of;
  std::vector<std::string> files;
  for (const MappedRow& r : rows) {
    const std::string f = std::filesystem::path(r.row.file).filename().string();
    file_of[r.row.id] = f;
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  }
  const auto by_file = [&](const std::vector<std::string>& ids) {
    std::string out;
    for (const std::string& f : files) {
      std::vector<std::string> mine;
      for (const std::string& id : ids)
        if (file_of[id] == f) mine.push_back(id);
      if (!mine.empty()) out += fmt::format("{}{} rows {}", out.empty() ? "" : "; ", f, id_ranges(mine));
    }
    return out;
  };
  rep.model.corr.assign(np * np, 0.0);
  for (size_t j = 0; j < np; ++j) {
    CostParam& p = rep.model.params[j];
    ParamFit& pf = rep.params[j];
    const double sd = std::sqrt(std::max(bf.cov(j, j), 0.0));
    pf.fitted = bf.x[j];
    pf.stderr_ns = sd;
    // In the log-normal fit, the data share and the pin test are on the
    // price's logarithm: its posterior log-sd against its prior's, and
    // (the delta method's sd over value) against pin_relative.
    const bool in_log = !unscaled && bf.log_sd[j] > 0;
    const double sdl = in_log ? std::sqrt(std::max(bf.cov_log(j, j), 0.0)) : 0.0;
    const bool narrow = in_log ? sdl <= fit.pin_threshold * bf.log_sd[j]
                               : sd <= fit.pin_threshold * tau[j];
    pf.data_share = in_log    ? std::clamp(1 - sdl * sdl / (bf.log_sd[j] * bf.log_sd[j]), 0.0, 1.0)
                    : tau[j] > 0 ? std::clamp(1 - sd * sd / (tau[j] * tau[j]), 0.0, 1.0)
                                 : 0;
    if (!unscaled) pf.prior_z = bf.prior_z[j];
    if (pf.rows.empty()) {
      pf.status = PinStatus::no_data;
      pf.reason = fmt::format("no data: no calibration row counts {}", event_names(p));
    } else if (narrow && sd <= fit.pin_relative * bf.x[j]) {
      pf.status = PinStatus::pinned;
    } else if (narrow) {
      pf.status = PinStatus::weak;
      pf.reason = fmt::format(
          "weak: the rows remove {:.0f}% of its prior variance, but its posterior sd is {} its "
          "value",
          100 * pf.data_share,
          bf.x[j] > 0 ? fmt::format("{:.0f}% of", 100 * sd / bf.x[j]) : std::string("above"));
    } else {
      pf.status = PinStatus::weak;
      pf.reason = fmt::format("weak: the rows count it but leave {:.0f}% of its prior variance",
                              100 * (1 - pf.data_share));
    }
    pf.bound_z = bf.bound_z[j];
    if (!pf.rows.empty() && bf.x[j] <= 0 && is_penalty(p))
      pf.reason += "; a penalty at 0: these rows show no such extra cost on this machine";
    else if (unscaled && !pf.rows.empty() && bf.x[j] <= 0) {
      // The price above 0 that the rows move with it most, by posterior
      // correlation: with it at |r| >= kAllowedPartnerCorr the rows
      // measure their sum, and the sum is above 0.
      size_t with = j;
      double corr = 0;
      for (size_t k = 0; k < np; ++k) {
        const double d = bf.cov(j, j) * bf.cov(k, k);
        if (k == j || d <= 0 || !(bf.x[k] > 0)) continue;
        const double c = bf.cov(j, k) / std::sqrt(d);
        if (std::fabs(c) > std::fabs(corr)) corr = c, with = k;
      }
      if (with != j && std::fabs(corr) >= kAllowedPartnerCorr)
        pf.partner = structure.params[with].name;
      pf.allowed_at_zero = pf.bound_z >= -kBoundRefuseZ && !pf.partner.empty();
      if (pf.allowed_at_zero)
        pf.reason += fmt::format(
            "; at 0, which its rows allow: they measure its sum with {} (posterior correlation "
            "{:+.2f}) and push it below 0 by {:.2f} sd (a refusal needs {:.2f})",
            structure.params[with].name, corr, -pf.bound_z, kBoundRefuseZ);
    }
    p.value = bf.x[j];
    p.stderr_ns = sd;
    p.prior = mu[j];
    p.prior_sd = bf.factor(cls[j]) * structure.params[j].prior_sd;
    p.prior_source = structure.params[j].prior_source;
    p.pinned = pf.status == PinStatus::pinned;
    p.source = p.pinned ? fmt::format("fit: prior + {} (data share {:.0f}%)", by_file(pf.rows),
                                      100 * pf.data_share)
                        : fmt::format("prior, {}", pf.reason);
    for (size_t k = 0; k < np; ++k) {
      const double sk = std::sqrt(std::max(bf.cov(k, k), 0.0));
      rep.model.corr[j * np + k] =
          j == k ? 1.0 : (sd > 0 && sk > 0 ? bf.cov(j, k) / (sd * sk) : 0.0);
    }
  }
  for (size_t i = 0; i < rows.size(); ++i)
    rep.predicted.push_back(predict_ns(rep.model, per_op[i]));
  // Each row's residual: against its measurement, a twin's against its
  // anchor's figure times its ratio, or where the pair's level was left
  // free, its ratio's against the measured one (its anchor's level then
  // counts in no rms).
  const Matrix sigma = em.sigma(bf.s, bf.sv, bf.su);
  rep.fitted_ns = y;
  rep.resid.assign(rows.size(), 0.0);
  rep.resid_sd.assign(rows.size(), 0.0);
  rep.counted.assign(rows.size(), true);
  size_t counted = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t a = pair[i];
    const bool twin = a != kNoPair && a != i;
    rep.resid[i] = rep.levels_free && twin
                       ? rep.predicted[i] / rep.predicted[a] / rows[i].twin_ratio - 1
                       : rep.predicted[i] / y[i] - 1;
    rep.resid_sd[i] =
        twin ? std::sqrt(std::max(sigma(i, i) + (rep.levels_free
                                                     ? sigma(a, a) - 2 * sigma(i, a)
                                                     : 0.0),
                                  0.0))
             : row_sd(rep, i);
    if (rep.levels_free && a == i) rep.counted[i] = false;
    if (!rep.counted[i]) continue;
    ++counted;
    const double rel = rep.resid[i];
    rep.rms_rel += rel * rel;
    if (std::fabs(rel) > rep.max_rel) rep.max_rel = std::fabs(rel), rep.max_row = i;
  }
  rep.rms_rel = counted ? std::sqrt(rep.rms_rel / static_cast<double>(counted)) : 0;
  rep.rms_rows = counted;
  // The two halves' residuals, each whitened by its own block of the
  // rows' covariance (a row's relative residual against the fitted
  // error model; the Laplace covariance of the prices is left out, as
  // fitting only shrinks the residuals). A pair whose level was left
  // free counts as one row, its ratio.
  // A pair goes whole to its anchor's half.
  const auto failed_row = [&](size_t i) { return spread[pair[i] != kNoPair ? pair[i] : i] > 0; };
  const auto whitened = [&](bool failed_half, size_t* count) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < rows.size(); ++i)
      if (failed_row(i) == failed_half) idx.push_back(i);
    *count = idx.size();
    for (size_t i : idx) *count -= !rep.counted[i];
    if (idx.empty()) return 0.0;
    Matrix m(idx.size(), idx.size()), l;
    std::vector<double> z(idx.size());
    for (size_t a = 0; a < idx.size(); ++a) {
      z[a] = rep.predicted[idx[a]] / y[idx[a]] - 1;
      for (size_t c = 0; c < idx.size(); ++c) m(a, c) = sigma(idx[a], idx[c]);
    }
    double q = 0;
    // As solve_params() whitens: should the full covariance not factor,
    // the row noise (and spreads) alone.
    if (!cholesky(m, &l)) {
      const Matrix diag = em.sigma(bf.s, 0, 0);
      for (size_t a = 0; a < idx.size(); ++a)
        for (size_t c = 0; c < idx.size(); ++c) m(a, c) = diag(idx[a], idx[c]);
      if (!cholesky(m, &l)) {  // no error model at all: any residual is infinitely off
        for (double v : z) q += v != 0 ? HUGE_VAL : 0.0;
        return *count ? std::sqrt(q / static_cast<double>(*count)) : 0.0;
      }
    }
    forward_solve(l, &z);
    for (double v : z) q += v * v;
    return *count ? std::sqrt(q / static_cast<double>(*count)) : 0.0;
  };
  rep.white_passed = whitened(false, &rep.passed);
  rep.rms_sd_failed = whitened(true, &rep.failed_rows);
  double sum_passed = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rep.counted[i]) continue;
    const bool twin = pair[i] != kNoPair && pair[i] != i;
    if (failed_row(i)) {
      rep.failed_twins += twin;
    } else {
      sum_passed += rep.resid[i] * rep.resid[i];
      rep.passed_twins += twin;
    }
  }
  rep.rms_passed = rep.passed ? std::sqrt(sum_passed / static_cast<double>(rep.passed)) : 0;
  rep.model.noise = derive_noise(rows, fit);
  rep.model.inadequacy = bf.sv;
  rep.model.drift = rep.drift;
  // The noise within a sitting: s without the drift between sittings
  // (model_drift), which an effect between two columns never carries.
  rep.model.row_noise = std::sqrt(std::max(bf.s * bf.s - rep.drift * rep.drift, 0.0));
  rep.model.inadequacy_shape = bf.su;
  // Every row the fit used, named (the report marks a measurement the
  // profile was fitted to as in-sample from this list).
  std::vector<std::string> ids;
  for (const MappedRow& r : rows) ids.push_back(r.row.id);
  rep.model.inadequacy_source = fmt::format(
      "fit: type-II maximum likelihood over {} rows in {} configurations and {} workload "
      "shapes, beside a measurement noise of {:.3g}% per row and speed factors of {:.4g} "
      "(CPU work) and {:.4g} (streaming memory work) on the priors; model_drift is the row "
      "noise beyond the rows' own standard errors, model_row_noise the row noise without it (the "
      "least inadequacy an effect between two configurations carries); fitted to {}",
      rows.size(), nconf, nshape, 100 * bf.s, bf.speed, bf.speed_memory, by_file(ids));
  std::string err;
  rep.model.validate(&err);
  return rep;
}

const char* fit_method_label(FitMethod m) {
  return m == FitMethod::unscaled ? "before the speed factors" : "today's";
}

double expected_rms(const FitReport& r) {
  return std::sqrt(r.row_noise * r.row_noise + r.inadequacy * r.inadequacy +
                   r.inadequacy_shape * r.inadequacy_shape);
}

double row_sd(const FitReport& r, size_t i) {
  const double e = expected_rms(r), s = i < r.spread.size() ? r.spread[i] : 0.0;
  return std::sqrt(e * e + s * s);
}

double rms_sd_limit(size_t n) {
  if (n == 0) return 0;
  // sqrt(q / n), q the 99th percentile of chi-square on n degrees of
  // freedom by the Wilson-Hilferty cube (within 1 % of the exact quantile
  // from n = 1 up: 6.63 exact at n = 1, 6.59 here).
  const double v = 2.0 / (9.0 * static_cast<double>(n)), z = 2.3263478740408408;
  const double c = 1 - v + z * std::sqrt(v);
  return std::sqrt(c * c * c);
}

bool twin_member(const MappedRow& r) { return r.twin_ratio > 0 || r.twin_anchor; }

bool twin_levels_free(const std::vector<MappedRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), twin_member) &&
         std::any_of(rows.begin(), rows.end(),
                     [](const MappedRow& r) { return r.reference_scaled; });
}

std::string half_rows(const FitReport& r, bool failed, const std::string& what) {
  const size_t twins = failed ? r.failed_twins : r.passed_twins;
  // Free pairs (levels_free) are all in the passed half, each one
  // residual: its twin's ratio, which no stability gate judged.
  const size_t ratios = r.levels_free && !failed ? twins : 0;
  const size_t n = (failed ? r.failed_rows : r.passed) - ratios;
  std::string s = fmt::format("{} {}rows{}", n, failed ? "gate-failed " : "", what);
  if (ratios) return s + fmt::format(" and {} twins' ratios", ratios);
  if (twins) s += fmt::format(" ({} of them twins, each judged with its anchor)", twins);
  return s;
}

std::vector<std::string> fit_problems(const FitReport& r) {
  std::vector<std::string> out;
  const double e = expected_rms(r);
  // A row that failed its stability gate is weighted by its own spread in
  // the fit, so it is judged against it here too; the rows that passed
  // are judged on their own (white_passed, rms_sd_failed: each half's
  // residuals whitened by its covariance under the fitted error model,
  // so rows that share a configuration or a workload shape count as the
  // correlated rows they are). Each half refuses beyond what its number
  // of rows reaches 1 % of the time when the model holds
  // (rms_sd_limit()): an estimate fitted to the same rows sits near
  // their rms, on either side by chance.
  const std::string terms = fmt::format(
      "(row noise {:.2f}%, inadequacy {:.2f}% per configuration, {:.2f}% per workload shape)",
      100 * r.row_noise, 100 * r.inadequacy, 100 * r.inadequacy_shape);
  if (r.passed > 0 && r.white_passed > rms_sd_limit(r.passed))
    out.push_back(fmt::format(
        "the residuals of the {} are {:.2f} sd in rms against the fit's own "
        "noise-plus-inadequacy estimate {:.2f}% {}, with the inadequacies that rows of one "
        "configuration or shape share whitened (plain rms {:.2f}%): beyond the {:.2f} that {} "
        "such rows exceed 1% of the time",
        half_rows(r, false, r.gate_failed.empty() ? "" : " that passed their stability gate"),
        r.white_passed, 100 * e, terms, 100 * r.rms_passed, rms_sd_limit(r.passed), r.passed));
  if (!r.gate_failed.empty() && r.rms_sd_failed > rms_sd_limit(r.failed_rows))
    out.push_back(fmt::format(
        "the {}' residuals are {:.2f} sd in rms against the fit's own "
        "noise-plus-inadequacy estimate {:.2f}% with each row's own spread added and the "
        "shared inadequacies whitened: beyond the {:.2f} that {} such rows exceed 1% of the "
        "time",
        half_rows(r, true, ""), r.rms_sd_failed, 100 * e, rms_sd_limit(r.failed_rows),
        r.failed_rows));
  const auto cap = [&](bool at, const char* what, double v) {
    if (at)
      out.push_back(fmt::format("the {} sits at its cap ({:.0f}%): the search could not place it",
                                what, 100 * v));
  };
  cap(r.noise_at_cap, "row noise", r.row_noise);
  cap(r.inadequacy_at_cap, "model inadequacy per configuration", r.inadequacy);
  cap(r.inadequacy_shape_at_cap, "model inadequacy per workload shape", r.inadequacy_shape);
  if (r.speed_at_bound)
    out.push_back(fmt::format(
        "a speed factor ({:.4g} CPU work, {:.4g} streaming memory work) sits at the end of its search "
        "(a factor of 30 from the rows' level, or 100 between the two): the priors cannot be "
        "scaled to the rows",
        r.speed, r.speed_memory));
  for (size_t j = 0; j < r.params.size(); ++j) {
    const ParamFit& f = r.params[j];
    // A penalty (a cold or remote state's extra over the warm path) may
    // be 0 on a machine; work cannot.
    // "6 rows count it (WV-019..WV-021, ...)": the rows that measure it.
    const size_t shown = std::min<size_t>(3, f.rows.size());
    const std::string counted = fmt::format(
        "{} {} it ({}{})", f.rows.size(), f.rows.size() == 1 ? "row counts" : "rows count",
        id_ranges({f.rows.begin(), f.rows.begin() + static_cast<std::ptrdiff_t>(shown)}),
        shown < f.rows.size() ? ", ..." : "");
    if (!f.rows.empty() && !is_penalty(r.model.params[j]) && f.prior_z < -kPriorConflictZ) {
      out.push_back(fmt::format(
          "{} is {:.3g}% of its prior although {}: the fit drove a price the rows measure "
          "{:.1f} sds of its logarithm below its prior (beyond {:.1f})",
          r.model.params[j].name, 100 * f.fitted / std::max(r.model.params[j].prior, 1e-300),
          counted, -f.prior_z, kPriorConflictZ));
      continue;
    }
    if (!r.bounded_work || f.rows.empty() || f.fitted > 0 || is_penalty(r.model.params[j]) ||
        f.allowed_at_zero)
      continue;
    out.push_back(fmt::format(
        "{} is 0 although {}: the fit drove a price the rows measure to its bound ({})",
        r.model.params[j].name, counted,
        f.partner.empty()
            ? fmt::format("no price above 0 moves with it; they push it below 0 by {:.1f} sd",
                          -f.bound_z)
            : fmt::format("they push it below 0 by {:.1f} sd", -f.bound_z)));
  }
  if (!r.converged)
    out.push_back("the prices' search did not converge: the values are its last point");
  if (r.error_model_move > kSettled)
    out.push_back(fmt::format(
        "the error model did not settle: its last relinearisation moved a speed factor or an "
        "error term by {:.3g}% (more than {:g}%), and the prices are that round's",
        100 * r.error_model_move, 100 * kSettled));
  return out;
}

std::string worst_rows(const FitReport& r, const std::vector<MappedRow>& rows, size_t n) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < rows.size(); ++i)
    if (r.counted[i]) idx.push_back(i);  // not an anchor whose level was left free
  const auto rel = [&](size_t i) { return r.resid[i]; };
  // Largest against what the fit expects of the row (a gate-failed row
  // with its own spread, a twin's ratio its own error), then largest
  // residual.
  const auto z = [&](size_t i) {
    const double sd = r.resid_sd[i];
    return sd > 0 ? std::fabs(rel(i)) / sd : 0.0;
  };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    if (z(a) != z(b)) return z(a) > z(b);
    return std::fabs(rel(a)) > std::fabs(rel(b));
  });
  std::string out;
  for (size_t k = 0; k < std::min(n, idx.size()); ++k) {
    const size_t i = idx[k];
    out += fmt::format("{}{} {:+.2f}%", k ? ", " : "", rows[i].row.id, 100 * rel(i));
    if (r.resid_sd[i] > 0) out += fmt::format(" ({:.1f} sd)", z(i));
  }
  return out;
}

}  // namespace simcache::sim
