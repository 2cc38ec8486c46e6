// JSON and CSV reports. The JSON layout is documented in docs/output.md;
// keys are the kernel's names (functions, /sys/kernel/slab stat files).
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cost/cost.h"
#include <fmt/format.h>
#include "sim/report/report.h"

namespace simcache::sim {
namespace {
using nlohmann::ordered_json;

ordered_json counters_json(const Counters& c) {
  ordered_json j = ordered_json::object();
  for (size_t i = 0; i < kNumEvents; ++i) j[std::string(kEventInfo[i].name)] = c.v[i];
  return j;
}

ordered_json slab_json(const std::vector<CacheStats>& caches) {
  ordered_json j = ordered_json::object();
  for (const CacheStats& cs : caches) {
    ordered_json c = ordered_json::object();
    for (size_t i = 0; i < kNumSlubStats; ++i)
      if (cs.stat[i]) c[std::string(kSlubStatInfo[i].sysfs)] = cs.stat[i];
    c["objs_per_slab"] = cs.info.objs_per_slab;
    c["order"] = cs.info.order;
    c["slabs"] = cs.info.slabs;
    c["partial"] = cs.info.partial;
    c["objects"] = cs.info.objects;
    c["total_objects"] = cs.info.total_objects;
    if (!cs.info.aliases.empty()) c["aliases"] = cs.info.aliases;
    j[cs.name] = c;
  }
  return j;
}

ordered_json policy_json(const PolicyResult& p) {
  ordered_json j;
  j["policy"] = p.policy;
  ordered_json total = counters_json(p.total);
  for (const auto& [k, v] : p.metrics) total[k] = v;
  total["slab"] = slab_json(p.caches);
  j["total"] = total;
  j["timed"] = counters_json(p.timed);
  j["timed"]["ops"] = p.timed_ops;
  j["timed"]["rounds"] = p.rounds.size();
  ordered_json rounds = ordered_json::array();
  for (const Counters& c : p.rounds) {
    ordered_json rj = ordered_json::object();
    for (size_t i = 0; i < kNumEvents; ++i)
      if (c.v[i]) rj[std::string(kEventInfo[i].name)] = c.v[i];
    rounds.push_back(rj);
  }
  j["rounds"] = rounds;
  ordered_json kasan = ordered_json::array();
  for (const KasanReport& k : p.kasan)
    kasan.push_back({{"kind", k.kind},
                     {"ptr", fmt::format("{:#x}", k.ptr)},
                     {"cache", k.cache},
                     {"detail", k.detail}});
  j["kasan"] = kasan;
  // Present only when non-empty, so runs without failures keep their layout.
  if (!p.failures.empty()) j["failures"] = p.failures;
  if (!p.faults_injected.empty()) j["faults_injected"] = p.faults_injected;
  return j;
}
// Rounds a derived figure to 6 significant digits so the document does
// not depend on the last bits of a floating-point sum.
double round6(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double mag = std::pow(10.0, 5 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * mag) / mag;
}

ordered_json time_json(const RunResult& r, const WorkloadResult& w, size_t col,
                       const ReportOptions& o) {
  const CostModel& m = *o.cost;
  const PolicyTime t = policy_time(m, w, w.policies[col]);
  const PolicyTime t0 = policy_time(m, w, w.policies[0]);
  const double scale = unit_scale(w.time_unit);
  ordered_json j;
  j["per_op"] = round6(t.per_op_ns / scale);
  j["per_op_ns"] = round6(t.per_op_ns);
  ordered_json rounds = ordered_json::array();
  for (double v : t.round_per_op_ns) rounds.push_back(round6(v));
  j["rounds_per_op_ns"] = rounds;
  j["model_sd_ns"] = round6(t.model_sd_ns);
  j["interval90_per_op"] = {round6((t.per_op_ns - kIntervalZ * t.model_sd_ns) / scale),
                            round6((t.per_op_ns + kIntervalZ * t.model_sd_ns) / scale)};
  j["rests_on_priors"] = t.prior_based;
  if (!t.phases.empty()) {
    ordered_json ph = ordered_json::object();
    for (const PolicyTime::Phase& f : t.phases)
      ph[f.name] = {{"per_op", round6(f.per_op_ns / scale)},
                    {"per_op_ns", round6(f.per_op_ns)},
                    {"model_sd_ns", round6(f.model_sd_ns)}};
    j["phases"] = ph;
  }
  j["noise_stderr_pct"] = round6(t.stderr_rel * 100);
  j["drift_pct"] = round6(t.drift * 100);
  const double noise = delta_noise(t0, t);
  if (col > 0 && t0.per_op_ns > 0) {
    const double d = t.per_op_ns / t0.per_op_ns - 1;
    j["delta_pct"] = round6(d * 100);
    const EffectInterval ei = effect_interval(m, t0, t);
    j["delta_interval90_pct"] = {round6(ei.lo * 100), round6(ei.hi * 100)};
    j["significant"] = std::fabs(d) >= noise;
  }
  ordered_json b = ordered_json::object();
  for (size_t i = 0; i < m.params.size(); ++i)
    if (t.breakdown[i] > 0) b[m.params[i].name] = round6(t.breakdown[i]);
  j["breakdown_ns"] = b;
  if (const MeasuredPoint* mp = find_measured(o, r, w, w.policies[col])) {
    ordered_json mj;
    mj["per_op"] = round6(mp->value_ns / scale);
    mj["per_op_ns"] = round6(mp->value_ns);
    mj["rows"] = mp->ids;
    const MeasuredPoint* m0 = find_measured(o, r, w, w.policies[0]);
    if (col > 0 && m0) {
      const double d = mp->value_ns / m0->value_ns - 1;
      mj["delta_pct"] = round6(d * 100);
      mj["significant"] = std::fabs(d) >= noise;
    }
    mj["error_pct"] = round6((t.per_op_ns / mp->value_ns - 1) * 100);
    j["measured"] = mj;
  }
  return j;
}

}  // namespace

std::string format_json(const RunResult& r, const ReportOptions& o) {
  ordered_json j;
  j["simcache"] = r.version;
  j["scenario"] = r.scenario;
  j["kernel"] = r.kernel;
  j["seed"] = r.seed;
  j["policies"] = r.policies;
  if (o.cost) {
    ordered_json pj;
    pj["name"] = o.cost->name;
    pj["file"] = std::filesystem::path(o.cost->path).filename().string();
    pj["noise"] = o.cost->noise.has_value();
    j["profile"] = pj;
    if (o.measured) j["measurements"] = std::filesystem::path(o.measured_file).filename().string();
  }
  ordered_json ws = ordered_json::array();
  for (const WorkloadResult& w : r.workloads) {
    ordered_json wj;
    wj["label"] = w.label;
    wj["scenario"] = w.scenario;
    wj["params"] = w.params;
    wj["op_unit"] = w.op_unit;
    wj["time_unit"] = w.time_unit;
    if (!w.note.empty()) wj["note"] = w.note;
    ordered_json ps = ordered_json::array();
    for (size_t i = 0; i < w.policies.size(); ++i) {
      ordered_json pj = policy_json(w.policies[i]);
      if (o.cost) pj["time"] = time_json(r, w, i, o);
      ps.push_back(pj);
    }
    wj["policies"] = ps;
    ws.push_back(wj);
  }
  j["workloads"] = ws;
  return j.dump(2) + "\n";
}

std::string format_csv(const RunResult& r, const ReportOptions& o) {
  std::string out = "workload,policy,scope,name,value\n";
  auto q = [](const std::string& s) { return "\"" + s + "\""; };
  for (const WorkloadResult& w : r.workloads) {
    for (const PolicyResult& p : w.policies) {
      const std::string pre = q(w.label) + "," + q(p.policy) + ",";
      for (size_t i = 0; i < kNumEvents; ++i) {
        out += pre + fmt::format("total,{},{}\n", kEventInfo[i].name, p.total.v[i]);
        out += pre + fmt::format("timed,{},{}\n", kEventInfo[i].name, p.timed.v[i]);
      }
      out += pre + fmt::format("timed,ops,{}\n", p.timed_ops);
      if (o.cost) {
        const PolicyTime t = policy_time(*o.cost, w, p);
        out += pre + fmt::format("time,per_op_ns,{}\n", round6(t.per_op_ns));
        out += pre + fmt::format("time,per_op_ns_lo90,{}\n",
                                 round6(t.per_op_ns - kIntervalZ * t.model_sd_ns));
        out += pre + fmt::format("time,per_op_ns_hi90,{}\n",
                                 round6(t.per_op_ns + kIntervalZ * t.model_sd_ns));
        for (const PolicyTime::Phase& f : t.phases)
          out += pre + fmt::format("time:phase,{},{}\n", f.name, round6(f.per_op_ns));
        for (size_t i = 0; i < o.cost->params.size(); ++i)
          if (t.breakdown[i] > 0)
            out += pre + fmt::format("time:breakdown_ns,{},{}\n", o.cost->params[i].name,
                                     round6(t.breakdown[i]));
      }
      for (const auto& [k, v] : p.metrics) out += pre + fmt::format("metric,{},{}\n", k, v);
      for (const auto& [k, v] : p.failures) out += pre + fmt::format("failure,{},{}\n", k, v);
      for (const auto& [k, v] : p.faults_injected)
        out += pre + fmt::format("fault_injected,{},{}\n", k, v);
      for (const CacheStats& cs : p.caches)
        for (size_t i = 0; i < kNumSlubStats; ++i)
          if (cs.stat[i])
            out +=
                pre + fmt::format("slab:{},{},{}\n", cs.name, kSlubStatInfo[i].sysfs, cs.stat[i]);
    }
  }
  return out;
}

}  // namespace simcache::sim
