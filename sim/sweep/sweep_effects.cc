#include "sim/sweep/sweep_effects.h"

#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "sim/cost/cost.h"
#include "sim/report/record.h"

namespace simcache::sim {
namespace {

std::string text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// The record's coordinates as one key, leaving out the policy when
// `with_policy` is false and the plot_x value when `with_x` is false.
std::string key_of(const nlohmann::json& j, const std::string& plot_x, bool with_policy,
                   bool with_x) {
  std::string k = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", text(j.at("scenario")),
                              text(j.at("workload")), text(j.at("kernel")),
                              text(j.at("machine")), text(j.at("cost_profile")),
                              text(j.at("seed")));
  if (with_policy) k += "\x1fpolicy=" + text(j.at("policy"));
  for (const char* dim : {"grid", "knobs"})
    for (const auto& [name, v] : j.at(dim).items())
      if (with_x || name != plot_x) k += fmt::format("\x1f{}:{}={}", dim, name, text(v));
  return k;
}

// The point's plot_x value as a number: a parameter's, or a knob's when
// it reads as one; nullopt-like `ok` false when it has none.
double x_value(const nlohmann::json& j, const std::string& plot_x, bool* ok) {
  *ok = false;
  const nlohmann::json* v = nullptr;
  if (j.at("params").contains(plot_x)) v = &j.at("params").at(plot_x);
  else if (j.at("knobs").contains(plot_x)) v = &j.at("knobs").at(plot_x);
  if (!v) return 0;
  if (v->is_number()) return *ok = true, v->get<double>();
  const std::string s = text(*v);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  *ok = !s.empty() && *end == 0;
  return d;
}

// Per-op counts in the profile's parameter order; false when a name is
// not one of its parameters (a profile of another simcache).
bool counts_of(const nlohmann::json& j, const CostModel& m, std::vector<double>* out) {
  out->assign(m.params.size(), 0);
  if (!j.contains("param_counts")) return false;
  for (const auto& [name, v] : j.at("param_counts").items()) {
    size_t i = 0;
    while (i < m.params.size() && m.params[i].name != name) ++i;
    if (i == m.params.size()) return false;
    (*out)[i] = v.get<double>();
  }
  return true;
}

SweepEffect effect_between(const CostModel& m, const std::vector<double>& base,
                           const std::vector<double>& v, EffectRelation rel) {
  const EffectInterval e = effect_interval(m, base, v, rel);
  SweepEffect r;
  r.valid = true;
  r.effect = e.effect;
  r.lo = e.lo;
  r.hi = e.hi;
  r.on_priors = e.prior_based;
  r.cross_shape = rel == EffectRelation::cross_shape;
  return r;
}

}  // namespace

std::vector<PointEffects> sweep_effects(const std::vector<nlohmann::json>& records,
                                        const std::string& plot_x,
                                        const std::map<std::string, const CostModel*>& costs) {
  std::vector<PointEffects> out(records.size());
  // Each usable record's model and counts.
  std::vector<const CostModel*> model(records.size(), nullptr);
  std::vector<std::vector<double>> counts(records.size());
  std::string first_policy;
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& j = records[i];
    if (j.at("status") != "ok") continue;
    if (first_policy.empty()) first_policy = text(j.at("policy"));
    const auto c = costs.find(text(j.at("cost_profile")));
    if (c == costs.end() || !c->second || !counts_of(j, *c->second, &counts[i])) continue;
    model[i] = c->second;
  }
  // Bases: the first policy's point per coordinates; the smallest x per
  // series (ties: the first record).
  std::map<std::string, size_t> policy_base, x_base;
  std::map<std::string, double> x_min;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!model[i]) continue;
    const nlohmann::json& j = records[i];
    if (text(j.at("policy")) == first_policy)
      policy_base.emplace(key_of(j, plot_x, false, true), i);
    bool has_x = false;
    const double x = plot_x.empty() ? 0 : x_value(j, plot_x, &has_x);
    if (!has_x) continue;
    const std::string k = key_of(j, plot_x, true, false);
    auto [it, fresh] = x_min.emplace(k, x);
    if (fresh || x < it->second) it->second = x, x_base[k] = i;
  }
  const bool x_is_param = !plot_x.empty() && !records.empty() &&
                          [&] {
                            for (const auto& j : records)
                              if (j.at("grid").contains(plot_x)) return true;
                            return false;
                          }();
  for (size_t i = 0; i < records.size(); ++i) {
    if (!model[i]) continue;
    const nlohmann::json& j = records[i];
    if (text(j.at("policy")) != first_policy) {
      const auto b = policy_base.find(key_of(j, plot_x, false, true));
      if (b != policy_base.end() && model[b->second] == model[i])
        out[i].vs_policy =
            effect_between(*model[i], counts[b->second], counts[i], EffectRelation::same_shape);
    }
    const auto b = x_base.find(key_of(j, plot_x, true, false));
    if (b != x_base.end() && b->second != i && model[b->second] == model[i])
      out[i].vs_x = effect_between(*model[i], counts[b->second], counts[i],
                                   x_is_param ? EffectRelation::cross_shape
                                              : EffectRelation::same_shape);
  }
  return out;
}

bool load_record_profiles(const std::vector<nlohmann::json>& records,
                          std::map<std::string, CostModel>* out, std::string* error) {
  for (const nlohmann::json& j : records) {
    if (j.at("status") != "ok" || !j.contains("param_counts")) continue;
    const std::string name = text(j.at("cost_profile"));
    if (name.empty() || out->count(name)) continue;
    CostModel m;
    if (!resolve_profile(name, &m, error))
      return *error = fmt::format("cost profile '{}' of point {}: {}", name,
                                  text(j.at("point")), *error),
             false;
    const std::string want = j.at("record").at("cost_profile_sha256").get<std::string>();
    std::string why;
    const std::string have = m.path.empty() ? "" : sha256_file(m.path, "cost profile", &why);
    if (want.size() == 64 && have != want)
      return *error = fmt::format(
                 "point {}: field 'record.cost_profile_sha256': {} is not the SHA-256 of "
                 "cost profile '{}' ({}) now; the effects between points would not be the "
                 "sweep's (rerun the sweep, or restore the profile)",
                 text(j.at("point")), want, name, m.path.empty() ? "built in" : m.path),
             false;
    out->emplace(name, std::move(m));
  }
  return true;
}

}  // namespace simcache::sim
