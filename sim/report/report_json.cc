// JSON and CSV reports. The JSON layout is documented in docs/output.md;
// keys are the kernel's names (functions, /sys/kernel/slab stat files).
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/cost/cost.h"
#include <fmt/format.h>
#include "sim/report/kernel_formats.h"
#include "sim/report/record.h"
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

// A region's per-cache stat deltas: non-zero items only.
ordered_json delta_json(const std::vector<CacheStats>& caches, const std::string& only) {
  ordered_json j = ordered_json::object();
  for (const CacheStats& cs : caches) {
    if (!only.empty() && cs.name != only) continue;
    ordered_json c = ordered_json::object();
    for (size_t i = 0; i < kNumSlubStats; ++i)
      if (cs.stat[i]) c[std::string(kSlubStatInfo[i].sysfs)] = cs.stat[i];
    j[cs.name] = c;
  }
  return j;
}

// The smallest and largest per-round delta of each stat that some round
// counted: {cache: {stat: {"min": a, "max": b}}}.
ordered_json round_range_json(const PolicyResult& p, const std::string& only) {
  ordered_json j = ordered_json::object();
  for (size_t c = 0; c < p.round_max.size() && c < p.round_min.size(); ++c) {
    const CacheStats& hi = p.round_max[c];
    if (!only.empty() && hi.name != only) continue;
    ordered_json cj = ordered_json::object();
    for (size_t i = 0; i < kNumSlubStats; ++i)
      if (hi.stat[i])
        cj[std::string(kSlubStatInfo[i].sysfs)] = {{"min", p.round_min[c].stat[i]},
                                                    {"max", hi.stat[i]}};
    j[hi.name] = cj;
  }
  return j;
}

// Counts by call site: calls, calls by caller, and every non-zero event
// nested under the site (function_graph's scope).
ordered_json sites_json(const CallSiteCounts& s) {
  ordered_json j = ordered_json::object();
  for (size_t i = 0; i < kNumCallSites; ++i) {
    const auto site = static_cast<CallSite>(i);
    if (!s.calls_of(site)) continue;
    ordered_json sj;
    sj["calls"] = s.calls_of(site);
    ordered_json by = ordered_json::object();
    for (size_t c = 0; c <= kNumCallSites; ++c)
      if (uint64_t n = s.calls_from(c, site))
        by[c == kTopCaller ? std::string("(top)") : std::string(kCallSiteNames[c])] = n;
    sj["callers"] = by;
    ordered_json ev = ordered_json::object();
    for (size_t k = 0; k < kNumScoped; ++k)
      if (uint64_t n = s.inclusive[i][k])
        ev[std::string(kEventInfo[size_t(kScopedEvents[k])].name)] = n;
    sj["nested"] = ev;
    j[std::string(kCallSiteNames[i])] = sj;
  }
  return j;
}

// Batch-size histograms: bucket label -> count, non-empty buckets only.
ordered_json batches_json(const BatchHists& h) {
  ordered_json j = ordered_json::object();
  for (size_t b = 0; b < kNumBatches; ++b) {
    ordered_json bj = ordered_json::object();
    for (size_t k = 0; k < kLog2Buckets; ++k)
      if (h.h[b][k]) bj[k == 0 ? std::string("0") : fmt::format("{}", uint64_t{1} << (k - 1))] = h.h[b][k];
    if (!bj.empty()) j[std::string(kBatchNames[b])] = bj;
  }
  return j;
}

ordered_json memory_json(const MemorySplit& m) {
  return {{"payload_bytes", m.payload_bytes},
          {"pointer_array_bytes", m.pointer_array_bytes},
          {"slab_page_bytes", m.slab_page_bytes},
          {"large_bytes", m.large_bytes},
          {"ring_region_bytes", m.ring_region_bytes},
          {"memcg_charged_bytes", m.memcg_charged_bytes}};
}

ordered_json snapshots_json(const std::vector<Snapshot>& snaps) {
  ordered_json a = ordered_json::array();
  for (const Snapshot& s : snaps) {
    ordered_json sj;
    sj["name"] = s.name;
    ordered_json rings = ordered_json::object();
    for (const RingState& r : s.rings)
      rings[r.role] = {{"ring", r.ring},
                       {"live", r.live},
                       {"nodes_cached", r.nodes_cached},
                       {"node_capacity", r.node_capacity},
                       {"futex_cached", r.futex_cached},
                       {"table_nodes", r.table_nodes},
                       {"teardown_freed", r.teardown_freed}};
    sj["rings"] = rings;
    sj["memory"] = memory_json(s.memory);
    a.push_back(sj);
  }
  return a;
}

ordered_json policy_json(const RunRecord& rec, const PolicyResult& p, const ReportOptions& o) {
  ordered_json j;
  j["policy"] = p.policy;
  j["kernel"] = p.kernel;
  j["config"] = typed_config(rec, p);
  ordered_json total = counters_json(p.total);
  for (const auto& [k, v] : p.metrics) total[k] = v;
  std::vector<CacheStats> caches;
  for (const CacheStats& cs : p.caches)
    if (o.cache.empty() || cs.name == o.cache) caches.push_back(cs);
  total["slab"] = slab_json(caches);
  total["sites"] = sites_json(p.total_sites);
  total["batches"] = batches_json(p.total_batches);
  j["total"] = total;
  j["timed"] = counters_json(p.timed);
  j["timed"]["ops"] = p.timed_ops;
  j["timed"]["rounds"] = p.rounds.size();
  j["timed"]["slab"] = delta_json(p.timed_caches, o.cache);
  j["timed"]["sites"] = sites_json(p.timed_sites);
  j["timed"]["batches"] = batches_json(p.timed_batches);
  j["timed"]["slab_per_round"] = round_range_json(p, o.cache);
  ordered_json rounds = ordered_json::array();
  for (size_t r = 0; r < p.rounds.size(); ++r) {
    const Counters& c = p.rounds[r];
    ordered_json rj = ordered_json::object();
    for (size_t i = 0; i < kNumEvents; ++i)
      if (c.v[i]) rj[std::string(kEventInfo[i].name)] = c.v[i];
    rounds.push_back(rj);
  }
  j["rounds"] = rounds;
  j["snapshots"] = snapshots_json(p.snapshots);
  j["memory_peak"] = memory_json(p.memory_peak);
  ordered_json kasan = ordered_json::array();
  for (const KasanReport& k : p.kasan)
    kasan.push_back({{"kind", k.kind},
                     {"ptr", fmt::format("{:#x}", k.ptr)},
                     {"cache", k.cache},
                     {"where", k.where},
                     {"detail", k.detail},
                     {"report", format_kasan(k)}});
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

// Per kind: count, mean, min, max, the percentiles and the non-empty
// buckets as [lower edge ns, upper edge ns, count] (docs/output.md).
ordered_json latency_json(const Latencies& lat) {
  ordered_json j = ordered_json::object();
  for (const OpLatency& l : lat) {
    const LatencyHist& h = l.hist;
    ordered_json k;
    k["count"] = h.count();
    k["mean_ns"] = round6(h.mean_ns());
    k["min_ns"] = h.min_ns();
    k["max_ns"] = h.max_ns();
    for (const LatencyPoint& pt : kLatencyPoints) {
      if (pt.p <= 0) continue;
      const std::string n(pt.name);
      const LatencyHist::Interval iv = l.interval(pt.p);
      k[n + "_ns"] = h.percentile_ns(pt.p);
      k[n + "_ns_lo90"] = iv.lo_ns;  // null: no upper bound from these samples
      k[n + "_ns_hi90"] = std::isfinite(iv.hi_ns) ? ordered_json(iv.hi_ns) : ordered_json(nullptr);
    }
    ordered_json b = ordered_json::array();
    for (const auto& [lo, n] : h.nonzero())
      b.push_back({LatencyHist::to_ns(lo),
                   LatencyHist::to_ns(LatencyHist::upper_edge(LatencyHist::index(lo))), n});
    k["buckets"] = b;
    j[l.kind] = k;
  }
  return j;
}

ordered_json time_json(const WorkloadResult& w, size_t col,
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
  j["interval90_per_op"] = {round6(t.interval_lo_ns / scale), round6(t.interval_hi_ns / scale)};
  j["rests_on_priors"] = t.prior_based;
  if (!t.phases.empty()) {
    ordered_json ph = ordered_json::object();
    for (const PolicyTime::Phase& f : t.phases)
      ph[f.name] = {{"per_op", round6(f.per_op_ns / scale)},
                    {"per_op_ns", round6(f.per_op_ns)},
                    {"model_sd_ns", round6(f.model_sd_ns)}};
    j["phases"] = ph;
  }
  if (ShareInterval si; iowait_share(&m, w.policies[col], &si)) {
    j["iowait_interval90_ppm"] = {round6(si.lo * 1e6), round6(si.hi * 1e6)};
    j["iowait_rests_on_priors"] = si.prior_based;
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
  if (const MeasuredPoint* mp = find_measured(o, w, w.policies[col])) {
    ordered_json mj;
    mj["per_op"] = round6(mp->value_ns / scale);
    mj["per_op_ns"] = round6(mp->value_ns);
    mj["rows"] = mp->ids;
    mj["in_sample"] = measured_in_sample(o, *mp);
    const MeasuredPoint* m0 = find_measured(o, w, w.policies[0]);
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

namespace {
// The run record as JSON (docs/output.md "Run record").
ordered_json run_record_json(const RunResult& r) {
  ordered_json rec;
  rec["command_line"] = r.record.command_line;
  rec["git_commit"] = r.record.git_commit;
  rec["seed"] = r.seed;
  rec["kernel_profile"] = typed_kernel_profile(r.record);
  if (!r.record.kernel_profiles.empty()) {
    ordered_json all = ordered_json::array();
    for (const auto& k : r.record.kernel_profiles) all.push_back(typed_kernel_profile(k));
    rec["kernel_profiles"] = all;
  }
  nlohmann::ordered_json mach = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.record.machine) mach[k] = v;
  rec["machine"] = mach;
  rec["cost_profile"] = r.record.cost_profile;
  rec["cost_profile_sha256"] = r.record.cost_profile_hash;
  ordered_json ins = ordered_json::array();
  for (const RunRecord::Input& in : r.record.inputs) {
    ordered_json ij;
    ij["role"] = in.role;
    ij["path"] = in.path;
    ij["sha256"] = in.sha256;
    if (!in.note.empty()) ij["note"] = in.note;
    ins.push_back(ij);
  }
  rec["inputs"] = ins;
  ordered_json tables = ordered_json::array();
  for (const BuiltTable& t : r.record.compiled_in)
    tables.push_back(ordered_json{{"file", t.file}, {"sha256", t.sha256}});
  rec["compiled_in"] = tables;
  return rec;
}

// What every JSON output of a run opens with.
ordered_json run_head(const RunResult& r) {
  ordered_json j;
  j["simcache"] = r.version;
  j["scenario"] = r.scenario;
  j["kernel"] = r.kernel;
  j["seed"] = r.seed;
  return j;
}
}  // namespace

std::string column_record_json(const RunResult& r, const PolicyResult& p) {
  ordered_json j = run_head(r);
  j["policy"] = p.policy;
  j["kernel"] = p.kernel;
  j["config"] = typed_config(r.record, p);
  j["record"] = run_record_json(r);
  return j.dump(2) + "\n";
}

std::string format_json(const RunResult& r, const ReportOptions& o) {
  ordered_json j = run_head(r);
  j["policies"] = r.policies;
  j["record"] = run_record_json(r);
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
    if (!w.extension.outcome.empty()) {
      const WorkloadResult::TailExtension& e = w.extension;
      wj["extension"] = {{"outcome", e.outcome}, {"kind", e.kind}, {"rounds_from", e.rounds_from},
                         {"rounds", e.rounds}, {"doublings", e.doublings}};
    }
    if (w.seeds.count > 1)
      wj["seeds"] = {{"first", w.seeds.first}, {"count", w.seeds.count}, {"pooled", w.seeds.pooled}};
    ordered_json ps = ordered_json::array();
    for (size_t i = 0; i < w.policies.size(); ++i) {
      ordered_json pj = policy_json(r.record, w.policies[i], o);
      if (o.cost) pj["time"] = time_json(w, i, o);
      // Only when the run recorded latencies, so count-only runs keep their layout.
      if (!w.policies[i].latency.empty()) pj["latency"] = latency_json(w.policies[i].latency);
      ps.push_back(pj);
    }
    wj["policies"] = ps;
    ws.push_back(wj);
  }
  j["workloads"] = ws;
  return j.dump(2) + "\n";
}

std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

namespace {
std::string params_text(const std::map<std::string, int64_t>& p) {
  std::string s;
  for (const auto& [k, v] : p) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s;
}
}  // namespace

// Long format, one value a line; every line carries its context (run,
// workload, parameters, policy) so a filtered subset still says what it is.
std::string format_csv(const RunResult& r, const ReportOptions& o) {
  std::string out =
      "simcache,git_commit,scenario,kernel,seed,cost_profile,workload,params,policy,"
      "scope,name,value\r\n";
  const std::string run = csv_field(r.version) + "," + csv_field(r.record.git_commit) + "," +
                          csv_field(r.scenario) + "," + csv_field(r.kernel) + "," +
                          std::to_string(r.seed) + "," + csv_field(r.record.cost_profile) + ",";
  auto line = [&](const std::string& pre, const std::string& scope, const std::string& name,
                  const std::string& value) {
    out += pre + csv_field(scope) + "," + csv_field(name) + "," + csv_field(value) + "\r\n";
  };
  line(run + ",,,", "record", "command_line", r.record.command_line);
  line(run + ",,,", "record", "cost_profile_sha256", r.record.cost_profile_hash);
  for (const RunRecord::Input& in : r.record.inputs)
    line(run + ",,,", "record", "input." + in.role,
         in.path + " sha256:" + (in.sha256.empty() ? "none (" + in.note + ")" : in.sha256));
  for (const BuiltTable& t : r.record.compiled_in)
    line(run + ",,,", "record", std::string("compiled_in.") + t.file, t.sha256);
  for (const auto& [k, v] : r.record.kernel_profile) line(run + ",,,", "record", "kernel." + k, v);
  // Columns on several kernels: every one's profile, by its name in
  // brackets (kernel names hold dots).
  for (const auto& profile : r.record.kernel_profiles) {
    std::string name;
    for (const auto& [k, v] : profile)
      if (k == "name") name = v;
    for (const auto& [k, v] : profile)
      line(run + ",,,", "record", "kernel_profiles[" + name + "]." + k, v);
  }
  for (const auto& [k, v] : r.record.machine) line(run + ",,,", "record", "machine." + k, v);
  for (const WorkloadResult& w : r.workloads) {
    if (!w.extension.outcome.empty()) {
      const WorkloadResult::TailExtension& e = w.extension;
      const std::string pre =
          run + csv_field(w.label) + "," + csv_field(params_text(w.params)) + ",,";
      line(pre, "extension", "outcome", e.outcome);
      line(pre, "extension", "kind", e.kind);
      line(pre, "extension", "rounds_from", std::to_string(e.rounds_from));
      line(pre, "extension", "rounds", std::to_string(e.rounds));
      line(pre, "extension", "doublings", std::to_string(e.doublings));
    }
    if (w.seeds.count > 1) {
      const std::string pre =
          run + csv_field(w.label) + "," + csv_field(params_text(w.params)) + ",,";
      line(pre, "seeds", "first", std::to_string(w.seeds.first));
      line(pre, "seeds", "count", std::to_string(w.seeds.count));
      line(pre, "seeds", "pooled", w.seeds.pooled ? "true" : "false");
    }
    for (const PolicyResult& p : w.policies) {
      const std::string pre = run + csv_field(w.label) + "," + csv_field(params_text(w.params)) +
                              "," + csv_field(p.policy) + ",";
      for (const auto& [k, v] : resolved_config(r.record, p)) line(pre, "config", k, v);
      for (size_t i = 0; i < kNumEvents; ++i) {
        const std::string n(kEventInfo[i].name);
        line(pre, "total", n, std::to_string(p.total.v[i]));
        line(pre, "timed", n, std::to_string(p.timed.v[i]));
      }
      line(pre, "timed", "ops", std::to_string(p.timed_ops));
      if (o.cost) {
        const PolicyTime t = policy_time(*o.cost, w, p);
        line(pre, "time", "per_op_ns", fmt::format("{}", round6(t.per_op_ns)));
        line(pre, "time", "per_op_ns_lo90", fmt::format("{}", round6(t.interval_lo_ns)));
        line(pre, "time", "per_op_ns_hi90", fmt::format("{}", round6(t.interval_hi_ns)));
        for (const PolicyTime::Phase& f : t.phases)
          line(pre, "time:phase", f.name, fmt::format("{}", round6(f.per_op_ns)));
        for (size_t i = 0; i < o.cost->params.size(); ++i)
          if (t.breakdown[i] > 0)
            line(pre, "time:breakdown_ns", o.cost->params[i].name,
                 fmt::format("{}", round6(t.breakdown[i])));
      }
      for (const OpLatency& l : p.latency) {
        line(pre, "latency:" + l.kind, "count", std::to_string(l.hist.count()));
        for (const LatencyPoint& pt : kLatencyPoints) {
          const std::string n = std::string(pt.name) + "_ns";
          line(pre, "latency:" + l.kind, n,
               fmt::format("{}", pt.p > 0 ? l.hist.percentile_ns(pt.p) : l.hist.max_ns()));
          if (pt.p <= 0) continue;
          const LatencyHist::Interval iv = l.interval(pt.p);
          line(pre, "latency:" + l.kind, n + "_lo90", fmt::format("{}", iv.lo_ns));
          line(pre, "latency:" + l.kind, n + "_hi90", fmt::format("{}", iv.hi_ns));  // inf: none
        }
      }
      for (const auto& [k, v] : p.metrics) line(pre, "metric", k, std::to_string(v));
      for (const auto& [k, v] : p.failures) line(pre, "failure", k, std::to_string(v));
      for (const auto& [k, v] : p.faults_injected)
        line(pre, "fault_injected", k, std::to_string(v));
      for (const CacheStats& cs : p.caches)
        for (size_t i = 0; i < kNumSlubStats; ++i)
          if (cs.stat[i] && (o.cache.empty() || o.cache == cs.name))
            line(pre, "slab:" + cs.name, std::string(kSlubStatInfo[i].sysfs),
                 std::to_string(cs.stat[i]));
      for (const CacheStats& cs : p.timed_caches)
        for (size_t i = 0; i < kNumSlubStats; ++i)
          if (cs.stat[i] && (o.cache.empty() || o.cache == cs.name))
            line(pre, "timed:slab:" + cs.name, std::string(kSlubStatInfo[i].sysfs),
                 std::to_string(cs.stat[i]));
      for (size_t i = 0; i < kNumCallSites; ++i)
        if (uint64_t n = p.timed_sites.calls_of(static_cast<CallSite>(i)))
          line(pre, "timed:site", std::string(kCallSiteNames[i]), std::to_string(n));
    }
  }
  return out;
}

}  // namespace simcache::sim
