// JSON and CSV reports. The JSON layout is documented in docs/output.md;
// keys are the kernel's names (functions, /sys/kernel/slab stat files).
#include <nlohmann/json.hpp>

#include "fmt/format.h"
#include "report.h"

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
    kasan.push_back({{"kind", k.kind}, {"ptr", fmt::format("{:#x}", k.ptr)},
                     {"cache", k.cache}, {"detail", k.detail}});
  j["kasan"] = kasan;
  return j;
}
}  // namespace

std::string format_json(const RunResult& r, const ReportOptions& o) {
  (void)o;
  ordered_json j;
  j["simcache"] = r.version;
  j["scenario"] = r.scenario;
  j["kernel"] = r.kernel;
  j["seed"] = r.seed;
  j["policies"] = r.policies;
  ordered_json ws = ordered_json::array();
  for (const WorkloadResult& w : r.workloads) {
    ordered_json wj;
    wj["label"] = w.label;
    wj["scenario"] = w.scenario;
    wj["params"] = w.params;
    wj["op_unit"] = w.op_unit;
    if (!w.note.empty()) wj["note"] = w.note;
    ordered_json ps = ordered_json::array();
    for (const PolicyResult& p : w.policies) ps.push_back(policy_json(p));
    wj["policies"] = ps;
    ws.push_back(wj);
  }
  j["workloads"] = ws;
  return j.dump(2) + "\n";
}

std::string format_csv(const RunResult& r, const ReportOptions& o) {
  (void)o;
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
      for (const auto& [k, v] : p.metrics) out += pre + fmt::format("metric,{},{}\n", k, v);
      for (const CacheStats& cs : p.caches)
        for (size_t i = 0; i < kNumSlubStats; ++i)
          if (cs.stat[i])
            out += pre + fmt::format("slab:{},{},{}\n", cs.name, kSlubStatInfo[i].sysfs, cs.stat[i]);
    }
  }
  return out;
}

}  // namespace simcache::sim
