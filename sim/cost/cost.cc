#include "sim/cost/cost.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace simcache::sim {

std::span<const CostParamSpec> default_param_specs() {
  static const CostParamSpec specs[] = {
#define COST_PARAM(name, group, unit, events, prior, prior_sd, prior_source, meaning) \
  {#name, group, unit, events, prior, prior_sd, prior_source, meaning},
#define COST_UNPRICED(event, reason)
#include "sim/cost/cost_params.def"
#undef COST_PARAM
#undef COST_UNPRICED
  };
  return specs;
}

std::span<const UnpricedSpec> unpriced_events() {
  static const UnpricedSpec specs[] = {
#define COST_PARAM(name, group, unit, events, prior, prior_sd, prior_source, meaning)
#define COST_UNPRICED(event, reason) {#event, reason},
#include "sim/cost/cost_params.def"
#undef COST_PARAM
#undef COST_UNPRICED
  };
  return specs;
}

std::vector<std::string> split_words(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    if (end > start || sep != ' ') out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

const NoiseEntry& NoiseModel::lookup(const std::string& scenario,
                                     const std::map<std::string, int64_t>& params) const {
  const NoiseEntry* best = &fallback;
  size_t best_n = 0;
  bool found = false;
  for (const NoiseEntry& e : entries) {
    if (e.scenario != scenario) continue;
    bool ok = true;
    for (const auto& [k, v] : e.params) {
      auto it = params.find(k);
      ok &= it != params.end() && it->second == v;
    }
    if (ok && (!found || e.params.size() > best_n)) {
      best = &e;
      best_n = e.params.size();
      found = true;
    }
  }
  return *best;
}

bool CostModel::validate(std::string* error) {
  param_of_event_.assign(kNumEvents, -1);
  std::set<std::string> names;
  for (size_t i = 0; i < params.size(); ++i) {
    const CostParam& p = params[i];
    if (!names.insert(p.name).second) {
      *error = fmt::format("parameter '{}' is defined twice", p.name);
      return false;
    }
    if (!std::isfinite(p.value) || p.value < 0) {
      *error = fmt::format("parameter '{}': value {} is not a finite number >= 0", p.name, p.value);
      return false;
    }
    for (Event e : p.events) {
      int& owner = param_of_event_[static_cast<size_t>(e)];
      if (owner >= 0) {
        *error = fmt::format("event '{}' is priced by both '{}' and '{}'",
                             kEventInfo[static_cast<size_t>(e)].name,
                             params[static_cast<size_t>(owner)].name, p.name);
        return false;
      }
      owner = static_cast<int>(i);
    }
  }
  return true;
}

std::vector<double> event_prices(const CostModel& m) {
  std::vector<double> out(kNumEvents, 0.0);
  for (const CostParam& p : m.params)
    for (Event e : p.events) out[static_cast<size_t>(e)] = p.value;
  return out;
}

double CostModel::time_ns(const Counters& c) const {
  double t = 0;
  for (const CostParam& p : params)
    for (Event e : p.events) t += static_cast<double>(c[e]) * p.value;
  return t;
}

std::vector<double> CostModel::contributions(const Counters& c) const {
  std::vector<double> out(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i)
    for (Event e : params[i].events) out[i] += static_cast<double>(c[e]) * params[i].value;
  return out;
}

const CostParam* CostModel::find(std::string_view n) const {
  for (const CostParam& p : params)
    if (p.name == n) return &p;
  return nullptr;
}

std::vector<double> CostModel::param_counts(const Counters& c) const {
  std::vector<double> g(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i)
    for (Event e : params[i].events) g[i] += static_cast<double>(c[e]);
  return g;
}

double CostModel::variance(const std::vector<double>& g) const {
  const size_t n = params.size();
  std::vector<double> s(n, 0.0);
  for (size_t i = 0; i < n; ++i) s[i] = g[i] * std::max(params[i].stderr_ns, 0.0);
  double v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == 0) continue;
    v += s[i] * s[i];
    if (corr.size() != n * n) continue;
    for (size_t j = i + 1; j < n; ++j) v += 2 * s[i] * s[j] * corr[i * n + j];
  }
  return std::max(v, 0.0);
}

double CostModel::prior_variance(const std::vector<double>& g) const {
  double v = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double sd = std::max(params[i].prior_sd, 0.0);
    v += g[i] * g[i] * sd * sd;
  }
  return v;
}

double CostModel::predictive_variance(const std::vector<double>& g, double t_ns) const {
  return variance(g) +
         (inadequacy * inadequacy + inadequacy_shape * inadequacy_shape + drift * drift) * t_ns *
             t_ns;
}

bool rests_on_priors(const CostModel& m, const std::vector<double>& g) {
  const double pv = m.prior_variance(g);
  return pv > 0 && m.variance(g) > 0.5 * pv;
}

TimeInterval time_interval(double t, double sd) {
  if (!(sd > 0) || !(t > 0)) return {t, t};
  // log T ~ N(mu, s2) with E T = t, Var T = sd^2.
  const double cv = sd / t;
  const double s2 = std::log1p(cv * cv);
  const double mu = std::log(t) - s2 / 2, s = std::sqrt(s2);
  return {std::exp(mu - kIntervalZ * s), std::exp(mu + kIntervalZ * s)};
}

ShareInterval share_interval(const CostModel& m, const Counters& part, const Counters& whole,
                             double frac) {
  ShareInterval r;
  const double t = m.time_ns(whole), i = m.time_ns(part);
  if (!(t > 0) || !(frac > 0)) return r;
  r.share = frac * i / t;
  // d(i/t)/dx_j = (c_i,j t - c_t,j i) / t^2, per parameter.
  const std::vector<double> ci = m.param_counts(part), ct = m.param_counts(whole);
  std::vector<double> g(ci.size());
  for (size_t j = 0; j < g.size(); ++j) g[j] = frac * (ci[j] * t - ct[j] * i) / (t * t);
  // The rest of the whole, (t - i), may be off by the inadequacy: the
  // share moves by -share (t - i) / t times that.
  const double rest = m.predictive_variance(std::vector<double>(ci.size(), 0.0), t - i);
  const double var = m.variance(g) + r.share * r.share * rest / (t * t);
  // Log-normal on the smaller of the share and its complement, so that
  // the interval stays inside (0, 1): a share near 1 is uncertain in what
  // is left of the whole.
  const double sd = std::sqrt(std::max(var, 0.0));
  if (r.share <= 0.5) {
    const TimeInterval ti = time_interval(r.share, sd);
    r.lo = ti.lo;
    r.hi = std::min(ti.hi, 1.0);
  } else {
    const TimeInterval ti = time_interval(1 - r.share, sd);
    r.lo = std::max(1 - ti.hi, 0.0);
    r.hi = 1 - ti.lo;
  }
  r.prior_based = rests_on_priors(m, g);
  return r;
}

EffectInterval effect_interval(const CostModel& m, const std::vector<double>& bc,
                               const std::vector<double>& vc, EffectRelation rel) {
  EffectInterval r;
  double tb = 0, tv = 0;
  for (size_t i = 0; i < m.params.size(); ++i)
    tb += bc[i] * m.params[i].value, tv += vc[i] * m.params[i].value;
  if (tb <= 0) return r;
  r.effect = tv / tb - 1;
  // d(tv/tb)/dx_j = (vc_j - (tv/tb) bc_j) / tb: exactly 0 for equal
  // counts (tv == tb), so rounding noise cannot mark them "on priors".
  std::vector<double> g(m.params.size());
  const double ratio = tv / tb;
  for (size_t i = 0; i < g.size(); ++i) g[i] = (vc[i] - ratio * bc[i]) / tb;
  double var = m.variance(g);
  const double f2 = (1 + r.effect) * (1 + r.effect);
  if (rel != EffectRelation::same_config) {
    const double sv = std::max(m.inadequacy, m.row_noise);
    var += 2 * sv * sv * f2;
  }
  if (rel == EffectRelation::cross_shape)
    var += 2 * m.inadequacy_shape * m.inadequacy_shape * f2;
  const double sd = std::sqrt(var);
  r.lo = r.effect - kIntervalZ * sd;
  r.hi = r.effect + kIntervalZ * sd;
  r.prior_based = rests_on_priors(m, g);
  return r;
}

EffectInterval effect_interval(const CostModel& m, const PolicyTime& base, const PolicyTime& v) {
  return effect_interval(m, base.counts, v.counts, EffectRelation::same_shape);
}

CostModel prior_model() {
  CostModel m;
  m.name = "prior";
  m.description = "sim/cost_params.def priors, no fit";
  for (const CostParamSpec& s : default_param_specs()) {
    CostParam p;
    p.name = std::string(s.name);
    p.group = std::string(s.group);
    p.unit = std::string(s.unit);
    for (const std::string& ev : split_words(s.events)) {
      Event e;
      if (event_by_name(ev, &e)) p.events.push_back(e);
    }
    p.value = s.prior;
    p.prior = s.prior;
    p.prior_sd = s.prior_sd;
    p.stderr_ns = s.prior_sd;
    p.prior_source = std::string(s.prior_source);
    p.source = "prior: " + p.prior_source;
    p.pinned = false;
    p.meaning = std::string(s.meaning);
    m.params.push_back(std::move(p));
  }
  std::string err;
  m.validate(&err);
  return m;
}

PolicyTime policy_time(const CostModel& m, const WorkloadResult& w, const PolicyResult& p) {
  PolicyTime t;
  const double ops = static_cast<double>(p.timed_ops);
  if (ops > 0) t.per_op_ns = m.time_ns(p.timed) / ops;
  t.breakdown = m.contributions(p.timed);
  for (double& b : t.breakdown) b = ops > 0 ? b / ops : 0.0;
  t.counts = m.param_counts(p.timed);
  for (double& c : t.counts) c = ops > 0 ? c / ops : 0.0;
  t.model_sd_ns = std::sqrt(m.predictive_variance(t.counts, t.per_op_ns));
  const TimeInterval ti = time_interval(t.per_op_ns, t.model_sd_ns);
  t.interval_lo_ns = ti.lo, t.interval_hi_ns = ti.hi;
  t.prior_based = rests_on_priors(m, t.counts);
  for (const auto& [name, c] : p.phases) {
    std::vector<double> g = m.param_counts(c);
    for (double& x : g) x = ops > 0 ? x / ops : 0.0;
    const double ph = ops > 0 ? m.time_ns(c) / ops : 0.0;
    const double sd = std::sqrt(m.predictive_variance(g, ph));
    const TimeInterval pi = time_interval(ph, sd);
    t.phases.push_back({name, ph, sd, pi.lo, pi.hi});
  }
  const double per_round = static_cast<double>(p.ops_per_round);
  for (const Counters& c : p.rounds)
    t.round_per_op_ns.push_back(per_round > 0 ? m.time_ns(c) / per_round : 0.0);
  // The model's own spread over rounds (deterministic, usually ~0) plus
  // the measured per-round CV, as the standard error of the mean.
  const size_t n = t.round_per_op_ns.size();
  double model_cv = 0;
  if (n > 1 && t.per_op_ns > 0) {
    double mean = 0, ss = 0;
    for (double v : t.round_per_op_ns) mean += v;
    mean /= static_cast<double>(n);
    for (double v : t.round_per_op_ns) ss += (v - mean) * (v - mean);
    model_cv = std::sqrt(ss / static_cast<double>(n - 1)) / t.per_op_ns;
  }
  double cv = 0;
  if (m.noise) {
    const NoiseEntry& ne = m.noise->lookup(w.scenario, w.params);
    cv = ne.round_cv;
    t.drift = ne.drift;
  }
  const double rounds = noise_rounds(w.params, static_cast<double>(std::max<size_t>(n, 1)));
  t.stderr_rel = std::sqrt((cv * cv + model_cv * model_cv) / rounds);
  return t;
}

double noise_rounds(const std::map<std::string, int64_t>& params, double fallback) {
  for (const char* k : {"rounds", "groups"}) {
    auto it = params.find(k);
    if (it != params.end() && it->second > 0) return static_cast<double>(it->second);
  }
  return fallback;
}

double delta_noise(const PolicyTime& a, const PolicyTime& b) {
  const double d = std::max(a.drift, b.drift);
  return std::sqrt(a.stderr_rel * a.stderr_rel + b.stderr_rel * b.stderr_rel + d * d);
}

std::string format_time_in(double ns, std::string_view time_unit) {
  const double v = ns / unit_scale(time_unit);
  return time_unit == "ns" ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v);
}

double unit_scale(std::string_view time_unit) {
  if (time_unit == "us") return 1e3;
  if (time_unit == "ms") return 1e6;
  return 1.0;
}

}  // namespace simcache::sim
