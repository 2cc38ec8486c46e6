// Grid files, their expansion into points, and running a shard of them.
#include "sim/sweep/sweep.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "model/kernel/machine.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "sim/cost/cost.h"
#include "sim/cost/toml_reader.h"
#include "sim/report/record.h"
#include "sim/run/engine.h"

namespace simcache::sim {
namespace {

bool scalar(const toml::node& n, std::string* out) {
  if (n.is_string()) *out = *n.value<std::string>();
  else if (n.is_integer()) *out = std::to_string(*n.value<int64_t>());
  else if (n.is_boolean()) *out = *n.value<bool>() ? "true" : "false";
  else return false;
  return true;
}

// A scalar or an array of scalars, as strings.
bool values(const TomlReader& r, const toml::node& n, const std::string& field,
            std::vector<std::string>* out) {
  std::string s;
  if (scalar(n, &s)) return out->push_back(s), true;
  const toml::array* a = n.as_array();
  if (!a || a->empty()) return r.fail(&n, field, "expected a value or a non-empty array");
  for (const toml::node& e : *a) {
    if (!scalar(e, &s)) return r.fail(&e, field, "expected integers, strings or booleans");
    out->push_back(s);
  }
  return true;
}

bool table_values(const TomlReader& r, const toml::node& n, const std::string& field,
                  std::map<std::string, std::vector<std::string>>* out) {
  const toml::table* t = n.as_table();
  if (!t) return r.fail(&n, field, "expected a table");
  for (const auto& [k, v] : *t)
    if (!values(r, v, field + "." + std::string(k.str()), &(*out)[std::string(k.str())]))
      return false;
  return true;
}

bool grid_key(const TomlReader& r, const std::string& k, const toml::node& v, SweepGrid* g) {
  if (k == "scenario" || k == "scenarios") return values(r, v, k, &g->scenarios);
  if (k == "kernel" || k == "kernels") return values(r, v, k, &g->kernels);
  if (k == "machine" || k == "machines") return values(r, v, k, &g->machines);
  if (k == "policy" || k == "policies") return values(r, v, k, &g->policies);
  if (k == "params") return table_values(r, v, k, &g->params);
  if (k == "knobs") return table_values(r, v, k, &g->knobs);
  if (k == "seed" || k == "seeds") {
    std::vector<std::string> s;
    if (!values(r, v, k, &s)) return false;
    for (const std::string& x : s) {
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(x.data(), x.data() + x.size(), n);
      if (ec != std::errc() || end != x.data() + x.size())
        return r.fail(&v, k, "expected non-negative integers");
      g->seeds.push_back(n);
    }
    return true;
  }
  if (k == "profile" || k == "profiles") return values(r, v, k, &g->cost_profiles);
  if (k == "plot_x") {
    if (!v.is_string()) return r.fail(&v, k, "expected a string");
    g->plot_x = *v.value<std::string>();
    return true;
  }
  return r.fail(&v, k, "unknown field (see docs/sweeps.md)");
}

// The cross product of `m`'s values, keys in order.
std::vector<std::vector<std::pair<std::string, std::string>>> cross(
    const std::map<std::string, std::vector<std::string>>& m) {
  std::vector<std::vector<std::pair<std::string, std::string>>> out(1);
  for (const auto& [k, vs] : m) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& prefix : out)
      for (const std::string& v : vs) {
        next.push_back(prefix);
        next.back().emplace_back(k, v);
      }
    out = std::move(next);
  }
  return out;
}

std::string column_spec(const SweepPoint& p) {
  std::string s = p.policy;
  for (const auto& [k, v] : p.knobs) s += "+" + k + "=" + v;
  return s;
}

}  // namespace

bool load_grid(const std::string& path, SweepGrid* g, std::string* error) {
  std::string text;
  if (!read_input(path, "the sweep grid", &text, error)) return false;
  TomlReader r{path, error};
  toml::table t;
  if (!r.parse(text, &t)) return false;
  g->path = path;
  for (const auto& [k, v] : t)
    if (!grid_key(r, std::string(k.str()), v, g)) return false;
  if (g->scenarios.empty()) return r.fail(&t, "scenario", "missing");
  if (g->kernels.empty()) g->kernels.push_back(std::string(iou::kDefaultProfile));
  if (g->machines.empty()) g->machines.push_back(std::string(iou::kDefaultMachine));
  if (g->policies.empty()) g->policies.push_back("unpatched");
  if (g->seeds.empty()) g->seeds.push_back(1);
  return true;
}

bool expand_grid(const SweepGrid& g, std::vector<SweepPoint>* out, std::string* error,
                 uint32_t shard, uint32_t shards, uint64_t max_points) {
  const ScenarioRegistry& reg = ScenarioRegistry::get();
  for (const std::string& s : g.scenarios)
    if (!reg.find(s) && !reg.find_preset(s))
      return *error = fmt::format("{}: scenario: unknown scenario '{}' (valid: {})", g.path,
                                  escape_line(s),
                                  reg.names()),
             false;
  for (const std::string& k : g.kernels)
    if (!iou::profile_by_name(k, error)) return *error = g.path + ": kernel: " + *error, false;
  for (const std::string& m : g.machines)
    if (!iou::machine_by_name(m, error)) return *error = g.path + ": machine: " + *error, false;
  std::vector<std::string> costs = g.cost_profiles;
  if (costs.empty()) costs.push_back(std::string(kDefaultCostProfile));
  // The points are a mixed-radix count, the first axis most significant:
  // scenario, kernel, machine, profile, seed, each parameter and policy, each knob
  // (keys in order). A shard's points are decoded from their indices, so
  // the grid is sharded before it is expanded and never held whole.
  std::vector<uint64_t> radix = {g.scenarios.size(), g.kernels.size(), g.machines.size(),
                                 costs.size(), g.seeds.size()};
  for (const auto& [k, vs] : g.params) radix.push_back(vs.size());
  radix.push_back(g.policies.size());
  for (const auto& [k, vs] : g.knobs) radix.push_back(vs.size());
  uint64_t total = 1;
  for (uint64_t r : radix)
    if (r == 0 || __builtin_mul_overflow(total, r, &total))
      return *error = fmt::format("{}: the grid has {} points; the budget is {} (--max-points N "
                                  "raises it, --shard i/N splits the grid)",
                                  g.path, r == 0 ? "no" : "more than 2^64", max_points),
             false;
  const uint64_t mine = total > shard ? (total - shard + shards - 1) / shards : 0;
  if (mine > max_points)
    return *error = fmt::format("{}: the grid has {} points, {} of them in this shard; the budget "
                                "is {} points per run (--max-points N raises it, --shard i/N "
                                "splits the grid)",
                                g.path, total, mine, max_points),
           false;
  // Every column must parse without a profile: all of them when there are
  // at most the budget's worth (so every shard fails alike), else those of
  // this shard's points.
  std::set<std::string> checked;
  uint64_t columns = g.policies.size();
  for (const auto& [k, vs] : g.knobs)
    if (__builtin_mul_overflow(columns, vs.size(), &columns)) columns = UINT64_MAX;
  if (columns <= max_points)
    for (const std::string& pol : g.policies)
      for (const auto& ks : cross(g.knobs)) {
        SweepPoint p;
        p.policy = pol;
        p.knobs = ks;
        iou::PolicySet ps;
        MmConfig mc;
        if (checked.insert(column_spec(p)).second &&
            !iou::parse_policies(column_spec(p), nullptr, &ps, &mc, error))
          return *error = g.path + ": policy: " + *error, false;
      }
  out->clear();
  out->reserve(mine);
  std::vector<uint64_t> digit(radix.size());
  for (uint64_t idx = shard; idx < total; idx += shards) {
    uint64_t rest = idx;
    for (size_t d = radix.size(); d-- > 0;) digit[d] = rest % radix[d], rest /= radix[d];
    size_t d = 0;
    SweepPoint p;
    p.index = idx;
    p.scenario = g.scenarios[digit[d++]];
    p.kernel = g.kernels[digit[d++]];
    p.machine = g.machines[digit[d++]];
    const std::string& c = costs[digit[d++]];
    p.cost_profile = c == "none" ? "" : c;
    p.seed = g.seeds[digit[d++]];
    for (const auto& [k, vs] : g.params) p.params.emplace_back(k, vs[digit[d++]]);
    p.policy = g.policies[digit[d++]];
    for (const auto& [k, vs] : g.knobs) p.knobs.emplace_back(k, vs[digit[d++]]);
    if (checked.insert(column_spec(p)).second) {
      iou::PolicySet ps;
      MmConfig mc;
      if (!iou::parse_policies(column_spec(p), nullptr, &ps, &mc, error))
        return *error = g.path + ": policy: " + *error, false;
    }
    out->push_back(std::move(p));
  }
  return true;
}

bool parse_shard(const std::string& s, uint32_t* shard, uint32_t* shards, std::string* error) {
  const size_t slash = s.find('/');
  uint32_t i = 0, n = 0;
  auto num = [](std::string_view t, uint32_t* v) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
    return ec == std::errc() && end == t.data() + t.size() && !t.empty();
  };
  if (slash == std::string::npos || !num(std::string_view(s).substr(0, slash), &i) ||
      !num(std::string_view(s).substr(slash + 1), &n) || n == 0 || n > 100000 || i >= n)
    return *error = fmt::format("--shard '{}': expected i/N with 0 <= i < N <= 100000",
                                escape_line(s)), false;
  *shard = i;
  *shards = n;
  return true;
}

namespace {

nlohmann::json point_head(const SweepPoint& p) {
  nlohmann::json j;
  j["point"] = p.index;
  j["scenario"] = p.scenario;
  j["kernel"] = p.kernel;
  j["machine"] = p.machine;
  j["seed"] = p.seed;
  j["policy"] = p.policy;
  j["cost_profile"] = p.cost_profile;
  j["grid"] = nlohmann::json::object();
  for (const auto& [k, v] : p.params) j["grid"][k] = v;
  j["knobs"] = nlohmann::json::object();
  for (const auto& [k, v] : p.knobs) j["knobs"][k] = v;
  return j;
}

nlohmann::json workload_record(const SweepPoint& pt, const RunResult& r, size_t wi,
                               const CostModel* cost, const std::string& resolved) {
  const WorkloadResult& w = r.workloads[wi];
  const PolicyResult& p = w.policies.at(0);
  nlohmann::json j = point_head(pt);
  j["workload"] = wi;
  j["label"] = w.label;
  j["status"] = "ok";
  j["resolved"] = resolved;
  // The column's every field, typed, with kernel/profile defaults as the
  // run used them (the JSON report's `config`).
  j["config"] = nlohmann::json::parse(typed_config(r.record, p).dump());
  j["op_unit"] = w.op_unit;
  j["timed_ops"] = p.timed_ops;
  j["params"] = w.params;
  j["metrics"] = p.metrics;
  int64_t acc = 0, unacc = 0;
  for (const CacheStats& c : p.caches)
    ((c.info.flags & SLAB_ACCOUNT) ? acc : unacc) += static_cast<int64_t>(c.info.bytes);
  j["accounted_bytes"] = acc;
  j["unaccounted_bytes"] = unacc;
  j["kasan"] = p.kasan.size();
  if (cost) {
    // The time and its 90 % model-uncertainty interval (the profile's
    // posterior; on_priors: it rests mostly on priors), as the report's.
    const PolicyTime t = policy_time(*cost, w, p);
    j["ns_per_op"] = t.per_op_ns;
    j["ns_per_op_lo"] = t.interval_lo_ns;
    j["ns_per_op_hi"] = t.interval_hi_ns;
    j["ns_per_op_on_priors"] = t.prior_based;
    // Counts per operation of each priced parameter (non-zero ones): with
    // the profile they give the interval of an effect between two points
    // (sweep_effects(), docs/sweeps.md "Effects and their intervals").
    nlohmann::json pc = nlohmann::json::object();
    for (size_t i = 0; i < t.counts.size() && i < cost->params.size(); ++i)
      if (t.counts[i] != 0) pc[cost->params[i].name] = t.counts[i];
    j["param_counts"] = std::move(pc);
  }
  return j;
}

// One point: skipped if its column does not apply to its kernel.
bool run_point(const SweepPoint& pt, const CostModel* cost, std::vector<nlohmann::json>* out,
               std::string* error) {
  const iou::KernelProfile* profile = iou::profile_by_name(pt.kernel, nullptr);
  iou::PolicySet ps;
  MmConfig mc;
  std::string why;
  if (!iou::parse_policies(column_spec(pt), profile, &ps, &mc, &why)) {
    nlohmann::json j = point_head(pt);
    j["workload"] = 0;
    j["status"] = "skipped";
    j["reason"] = why;
    out->push_back(std::move(j));
    return true;
  }
  RunRequest req;
  req.scenario = pt.scenario;
  req.kernel = pt.kernel;
  req.machine = pt.machine;
  req.seed = pt.seed;
  req.sets = pt.params;
  req.policies = {pt.policy};
  req.knobs = pt.knobs;
  RunResult r;
  if (!run(req, &r, error)) {
    *error = fmt::format("point {} ({} on {}, {}): {}", pt.index, pt.scenario, pt.kernel,
                         column_spec(pt), *error);
    return false;
  }
  const std::string resolved = iou::knob_spec(ps);
  for (size_t w = 0; w < r.workloads.size(); ++w)
    out->push_back(workload_record(pt, r, w, cost, resolved));
  return true;
}

}  // namespace

bool run_sweep(const std::vector<SweepPoint>& points, const SweepOptions& o,
               std::vector<nlohmann::json>* out, std::string* error) {
  std::vector<const SweepPoint*> mine;
  for (const SweepPoint& p : points)
    if (p.index % o.shards == o.shard) mine.push_back(&p);
  std::vector<std::vector<nlohmann::json>> res(mine.size());
  std::vector<std::string> errs(mine.size());
  std::vector<char> ok(mine.size(), 1);
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mu;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < mine.size();) {
      const auto c = o.costs.find(mine[i]->cost_profile);
      ok[i] = run_point(*mine[i], c == o.costs.end() ? nullptr : c->second, &res[i], &errs[i]);
      const size_t d = ++done;
      if (o.progress) {
        std::lock_guard<std::mutex> l(progress_mu);
        std::fprintf(stderr, "\rsimcache: sweep %zu/%zu points", d, mine.size());
        if (d == mine.size()) std::fputc('\n', stderr);
      }
    }
  };
  const int n = std::max(1, std::min<int>(o.jobs, static_cast<int>(mine.size())));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  out->clear();
  for (size_t i = 0; i < mine.size(); ++i) {
    if (!ok[i]) return *error = errs[i], false;
    for (auto& j : res[i]) out->push_back(std::move(j));
  }
  return true;
}

std::string record_line(const nlohmann::json& r) { return r.dump(); }

std::string records_jsonl(const std::vector<nlohmann::json>& r) {
  std::string s;
  for (const auto& j : r) s += record_line(j) + "\n";
  return s;
}

}  // namespace simcache::sim
