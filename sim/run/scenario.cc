#include "sim/run/scenario.h"

#include <charconv>

#include <fmt/format.h>

namespace simcache::sim {

namespace {
// Adds `c` to the phase `name`, appending it on first use (so the phases
// keep the order the operation runs them in).
void add_phase(std::vector<std::pair<std::string, Counters>>* v, const std::string& name,
               const Counters& c) {
  for (auto& [k, acc] : *v)
    if (k == name) {
      acc += c;
      return;
    }
  v->emplace_back(name, c);
}
}  // namespace

void Recorder::begin_round(bool measured) {
  measured_ = measured;
  round_ = Counters{};
  phase_round_.clear();
}

void Recorder::timed_begin(std::string_view phase) {
  in_timed_ = true;
  phase_ = std::string(phase);
  mark_ = mm_.events();
}

void Recorder::timed_end() {
  if (!in_timed_) return;
  in_timed_ = false;
  const Counters d = mm_.events() - mark_;
  round_ += d;
  if (!phase_.empty()) add_phase(&phase_round_, phase_, d);
}

void Recorder::end_round(uint64_t ops) {
  if (!measured_) return;
  rounds_.push_back(round_);
  timed_sum_ += round_;
  for (const auto& [k, c] : phase_round_) add_phase(&phase_sum_, k, c);
  total_ops_ += ops;
  ops_per_round_ = ops;
  measured_ = false;
}

void Recorder::finish(PolicyResult* out) const {
  out->total = mm_.events();
  out->timed = timed_sum_;
  out->rounds = rounds_;
  out->ops_per_round = ops_per_round_;
  out->timed_ops = total_ops_;
  out->metrics = metrics_;
  out->phases = phase_sum_;
}

ScenarioRegistry& ScenarioRegistry::get() {
  static ScenarioRegistry* r = [] {
    auto* reg = new ScenarioRegistry;
#define SIMCACHE_SCENARIO(fn) fn(*reg);
#include "sim/run/scenarios/scenarios.def"
#undef SIMCACHE_SCENARIO
    return reg;
  }();
  return *r;
}

void ScenarioRegistry::add(ScenarioInfo info) { scenarios_.push_back(std::move(info)); }
void ScenarioRegistry::add_preset(PresetInfo info) { presets_.push_back(std::move(info)); }

const ScenarioInfo* ScenarioRegistry::find(std::string_view name) const {
  for (const auto& s : scenarios_)
    if (s.name == name) return &s;
  return nullptr;
}

const PresetInfo* ScenarioRegistry::find_preset(std::string_view name) const {
  for (const auto& p : presets_)
    if (p.name == name) return &p;
  return nullptr;
}

std::string ScenarioRegistry::names() const {
  std::string out;
  for (const auto& p : presets_) out += (out.empty() ? "" : ", ") + std::string(p.name);
  for (const auto& s : scenarios_) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

namespace {
std::string param_names(const ScenarioInfo& s) {
  std::string out;
  for (const auto& p : s.params) out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out.empty() ? "(none)" : out;
}
}  // namespace

bool resolve_params(const ScenarioInfo& s, const Params& preset,
                    const std::vector<std::pair<std::string, std::string>>& user,
                    Params* out, std::string* error) {
  out->clear();
  for (const auto& p : s.params) (*out)[std::string(p.name)] = p.def;
  auto find = [&](std::string_view key) -> const ParamSpec* {
    for (const auto& p : s.params)
      if (p.name == key) return &p;
    return nullptr;
  };
  for (const auto& [k, v] : preset) (*out)[k] = v;
  for (const auto& [key, text] : user) {
    const ParamSpec* spec = find(key);
    if (!spec) {
      *error = fmt::format("unknown parameter '{}' for scenario {} (valid: {})",
                           key, s.name, param_names(s));
      return false;
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      *error = fmt::format("parameter '{}' of scenario {}: '{}' is not an integer",
                           key, s.name, text);
      return false;
    }
    if (v < spec->min || v > spec->max) {
      *error = fmt::format("parameter '{}' of scenario {}: {} is out of range [{}, {}]",
                           key, s.name, v, spec->min, spec->max);
      return false;
    }
    (*out)[std::string(key)] = v;
  }
  return true;
}

}  // namespace simcache::sim
