#include "sim/cost/shipped.h"

namespace simcache::sim {
namespace {

NoiseEntry noise_entry(const ShippedProfile& p, const ShippedNoise& n) {
  NoiseEntry e;
  e.scenario = std::string(n.scenario);
  e.source = std::string(n.source);
  e.round_cv = n.round_cv;
  e.drift = n.drift;
  for (const ShippedKeyValue& kv : p.noise_params.subspan(n.param_first, n.param_count))
    e.params.emplace(std::string(kv.key), kv.value);
  return e;
}

}  // namespace

const ShippedFile* shipped_match(std::string_view text, bool had_bom) {
  if (had_bom || !generated_shipped_files) return nullptr;
  for (const ShippedFile& f : generated_shipped_files())
    if (f.bytes == text) return &f;
  return nullptr;
}

bool shipped_profile(std::string_view rel, CostModel* out) {
  if (!generated_shipped_profiles) return false;
  for (const ShippedProfile& p : generated_shipped_profiles()) {
    if (p.rel != rel) continue;
    CostModel m;
    m.name = std::string(p.name);
    m.description = std::string(p.description);
    m.statistic = std::string(p.statistic);
    m.inadequacy = p.inadequacy;
    m.inadequacy_shape = p.inadequacy_shape;
    m.drift = p.drift;
    m.row_noise = p.row_noise;
    m.inadequacy_source = std::string(p.inadequacy_source);
    m.params.reserve(p.params.size());
    for (const ShippedParam& s : p.params) {
      CostParam c;
      c.name = std::string(s.name);
      c.group = std::string(s.group);
      c.unit = std::string(s.unit);
      const auto ev = p.events.subspan(s.event_first, s.event_count);
      c.events.assign(ev.begin(), ev.end());
      c.value = s.value;
      c.source = std::string(s.source);
      c.pinned = s.pinned;
      c.stderr_ns = s.stderr_ns;
      c.prior = s.prior;
      c.prior_sd = s.prior_sd;
      c.prior_source = std::string(s.prior_source);
      c.meaning = std::string(s.meaning);
      m.params.push_back(std::move(c));
    }
    if (p.has_corr) {
      const size_t np = m.params.size();
      m.corr.assign(np * np, 0.0);
      for (size_t i = 0; i < np; ++i) m.corr[i * np + i] = 1;
      for (const ShippedCorr& c : p.corr) m.corr[c.i * np + c.j] = m.corr[c.j * np + c.i] = c.value;
    }
    if (p.has_noise && !p.noise.empty()) {
      NoiseModel nm;
      nm.fallback = noise_entry(p, p.noise[0]);
      for (const ShippedNoise& n : p.noise.subspan(1)) nm.entries.push_back(noise_entry(p, n));
      m.noise = std::move(nm);
    }
    std::string error;
    if (!m.validate(&error)) return false;  // it passed at build time: never
    *out = std::move(m);
    return true;
  }
  return false;
}

}  // namespace simcache::sim
