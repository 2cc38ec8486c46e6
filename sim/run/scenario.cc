#include "sim/run/scenario.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace simcache::sim {

namespace {
// a += b - c over flat [cache][item] vectors; a cache created since c has
// no mark (zero).
void add_delta(std::vector<uint64_t>* a, const std::vector<uint64_t>& b,
               const std::vector<uint64_t>& c) {
  if (a->size() < b.size()) a->resize(b.size(), 0);
  for (size_t i = 0; i < b.size(); ++i) (*a)[i] += b[i] - (i < c.size() ? c[i] : 0);
}

std::vector<CacheStats> sparse_caches(const Mm& mm, const std::vector<uint64_t>& flat) {
  std::vector<CacheStats> out;
  for (size_t s = 0; s * kNumSlubStats < flat.size(); ++s) {
    const auto first = flat.begin() + static_cast<ptrdiff_t>(s * kNumSlubStats);
    if (std::all_of(first, first + kNumSlubStats, [](uint64_t v) { return v == 0; })) continue;
    CacheStats cs;
    cs.name = mm.info(static_cast<CacheId>(s)).name;
    cs.stat.assign(first, first + kNumSlubStats);
    out.push_back(std::move(cs));
  }
  return out;
}

// Folds one round's [cache][item] deltas into the running minimum and
// maximum; a cache created after `seen` rounds had 0 in those rounds.
void fold_round(std::vector<uint64_t>* mn, std::vector<uint64_t>* mx,
                const std::vector<uint64_t>& r, uint64_t seen) {
  const size_t n = std::max(r.size(), mx->size());
  mn->resize(n, seen ? 0 : UINT64_MAX);
  mx->resize(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t v = i < r.size() ? r[i] : 0;
    (*mn)[i] = std::min((*mn)[i], v);
    (*mx)[i] = std::max((*mx)[i], v);
  }
}

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

int Recorder::op_kind(std::string_view kind) {
  for (size_t i = 0; i < lat_.size(); ++i)
    if (lat_[i].kind == kind) return static_cast<int>(i);
  lat_.push_back({std::string(kind), {}, {}});
  return static_cast<int>(lat_.size() - 1);
}

void Recorder::begin_round(bool measured) {
  measured_ = measured;
  round_ = Counters{};
  round_stats_.clear();
  phase_round_.clear();
  if (keep_rounds_ && measured) {
    round_sites_start_ = timed_sites_;
    round_batches_start_ = timed_batches_;
  }
}

void Recorder::timed_begin(std::string_view phase) {
  in_timed_ = true;
  phase_ = std::string(phase);
  mark_ = mm_.events();
  if (!measured_ || !timed_views_) return;
  mm_.stat_sums(&mark_stats_);
  mark_sites_ = mm_.call_sites();
  mark_batches_ = mm_.batches();
}

void Recorder::timed_end() {
  if (!in_timed_) return;
  in_timed_ = false;
  const Counters d = mm_.events() - mark_;
  round_ += d;
  if (!phase_.empty()) add_phase(&phase_round_, phase_, d);
  if (!measured_ || !timed_views_) return;
  mm_.stat_sums(&now_stats_);
  add_delta(&round_stats_, now_stats_, mark_stats_);
  timed_sites_ += mm_.call_sites() - mark_sites_;
  timed_batches_ += mm_.batches() - mark_batches_;
}

void Recorder::snapshot(const std::string& name, const RingState& st, const MemorySplit& mem) {
  auto it = std::find_if(snapshots_.begin(), snapshots_.end(),
                         [&](const Snapshot& s) { return s.name == name; });
  if (it == snapshots_.end()) it = snapshots_.insert(snapshots_.end(), Snapshot{name, {}, {}, {}});
  auto r = std::find_if(it->rings.begin(), it->rings.end(),
                        [&](const RingState& x) { return x.role == st.role; });
  if (r == it->rings.end())
    it->rings.push_back(st);
  else
    *r = st;
  it->memory = mem;
}

void Recorder::snapshot_caches(const std::string& name) {
  if (!snapshot_caches_) return;
  for (Snapshot& s : snapshots_) {
    if (s.name != name) continue;
    s.caches.clear();
    for (CacheId c : mm_.caches()) s.caches.push_back(mm_.info(c));
  }
}

void Recorder::end_round(uint64_t ops) {
  if (!measured_) return;
  rounds_.push_back(round_);
  timed_sum_ += round_;
  add_delta(&timed_stats_, round_stats_, {});
  fold_round(&round_min_, &round_max_, round_stats_, folded_rounds_++);
  for (const auto& [k, c] : phase_round_) add_phase(&phase_sum_, k, c);
  total_ops_ += ops;
  ops_per_round_ = ops;
  measured_ = false;
  if (!keep_rounds_) return;
  last_.timed = round_;
  last_.stats = round_stats_;
  last_.phases = phase_round_;
  last_.sites = timed_sites_ - round_sites_start_;
  last_.batches = timed_batches_ - round_batches_start_;
  last_.ops = ops;
  last_.metrics = metrics_;
}

void Recorder::repeat_round(const RoundRecord& r) {
  rounds_.push_back(r.timed);
  timed_sum_ += r.timed;
  add_delta(&timed_stats_, r.stats, {});
  fold_round(&round_min_, &round_max_, r.stats, folded_rounds_++);
  for (const auto& [k, c] : r.phases) add_phase(&phase_sum_, k, c);
  timed_sites_ += r.sites;
  timed_batches_ += r.batches;
  total_ops_ += r.ops;
  ops_per_round_ = r.ops;
  ++computed_rounds_;
}

void Recorder::finish(PolicyResult* out) const {
  out->needs_clock |= needs_clock_;
  out->computed_rounds = computed_rounds_;
  out->total = mm_.events();
  out->timed = timed_sum_;
  out->rounds = rounds_;
  out->ops_per_round = ops_per_round_;
  out->timed_ops = total_ops_;
  out->metrics = metrics_;
  for (const auto& [err, n] : failures_) out->failures[err] += n;
  out->timed_caches = sparse_caches(mm_, timed_stats_);
  // Caches some round touched, their minima beside them.
  out->round_max.clear();
  out->round_min.clear();
  for (size_t c = 0; c * kNumSlubStats < round_max_.size(); ++c) {
    const auto at = static_cast<ptrdiff_t>(c * kNumSlubStats);
    const auto mx = round_max_.begin() + at;
    if (std::all_of(mx, mx + kNumSlubStats, [](uint64_t v) { return v == 0; })) continue;
    CacheStats hi, lo;
    hi.name = lo.name = mm_.info(static_cast<CacheId>(c)).name;
    hi.stat.assign(mx, mx + kNumSlubStats);
    lo.stat.assign(round_min_.begin() + at, round_min_.begin() + at + kNumSlubStats);
    out->round_max.push_back(std::move(hi));
    out->round_min.push_back(std::move(lo));
  }
  out->total_sites = mm_.call_sites();
  out->timed_sites = timed_sites_;
  out->total_batches = mm_.batches();
  out->timed_batches = timed_batches_;
  out->snapshots = snapshots_;
  MemorySplit& pk = out->memory_peak;
  pk = {};
  for (const Snapshot& s : snapshots_) {
    pk.payload_bytes = std::max(pk.payload_bytes, s.memory.payload_bytes);
    pk.pointer_array_bytes = std::max(pk.pointer_array_bytes, s.memory.pointer_array_bytes);
    pk.slab_page_bytes = std::max(pk.slab_page_bytes, s.memory.slab_page_bytes);
    pk.large_bytes = std::max(pk.large_bytes, s.memory.large_bytes);
    pk.ring_region_bytes = std::max(pk.ring_region_bytes, s.memory.ring_region_bytes);
    pk.memcg_charged_bytes = std::max(pk.memcg_charged_bytes, s.memory.memcg_charged_bytes);
  }
  out->phases = phase_sum_;
  out->latency.clear();
  for (const OpLatency& l : lat_)
    if (l.hist.count()) out->latency.push_back(l);
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

void ScenarioRegistry::add(ScenarioInfo info, WorkFn work, OneTaskFn one_task) {
  info.work = work;
  info.one_task = one_task;
  scenarios_.push_back(std::move(info));
}

uint64_t work_product(std::initializer_list<int64_t> factors) {
  unsigned __int128 w = 1;
  for (int64_t f : factors) {
    w *= static_cast<uint64_t>(std::max<int64_t>(f, 0));
    if (w > UINT64_MAX) return UINT64_MAX;
  }
  return static_cast<uint64_t>(w);
}
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
