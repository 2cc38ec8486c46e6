// --explain: one policy's time per operation split into its parameters
// (events per op x cost), largest first, then summed by group, e.g. how
// many of 119 ns are slab allocation and how many the fixed io_uring path.
#include <algorithm>
#include <map>

#include "sim/cost/cost.h"
#include <fmt/format.h>
#include "sim/report/report.h"

namespace simcache::sim {
namespace {

const char kNames[] = "ABCDEFGH";

std::string group_line(const CostModel& m, const std::vector<double>& contrib, double total,
                       double scale, const std::string& unit) {
  std::vector<std::pair<std::string, double>> groups;
  for (size_t i = 0; i < m.params.size(); ++i) {
    if (contrib[i] <= 0) continue;
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == m.params[i].group; });
    if (it == groups.end())
      groups.emplace_back(m.params[i].group, contrib[i]);
    else
      it->second += contrib[i];
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out, line = "  by group:";
  for (const auto& [g, v] : groups) {
    const std::string item = fmt::format(" {} {:.4g} {} ({:.1f}%),", g, v / scale, unit,
                                         total > 0 ? 100 * v / total : 0.0);
    if (line.size() + item.size() > 79) out += line + "\n", line = "           ";
    line += item;
  }
  if (line.back() == ',') line.pop_back();
  return out + line + "\n";
}

std::string explain_policy(const CostModel& m, const WorkloadResult& w, const PolicyResult& p,
                           size_t col) {
  const std::string unit = w.time_unit.empty() ? "ns" : w.time_unit;
  const double scale = unit_scale(unit);
  const double ops = static_cast<double>(p.timed_ops);
  const PolicyTime t = policy_time(m, w, p);
  std::string out = fmt::format("\n{}, {} = {}: {:.4g} {}/{}\n", w.label, kNames[col], p.policy,
                                t.per_op_ns / scale, unit, w.op_unit);
  out += fmt::format("  {:<24} {:>12} {:>10} {:>12} {:>7}\n", "parameter", "per " + w.op_unit,
                     "ns each", unit + "/" + w.op_unit, "share");
  std::vector<size_t> order;
  for (size_t i = 0; i < m.params.size(); ++i)
    if (t.breakdown[i] > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.breakdown[a] > t.breakdown[b]; });
  for (size_t i : order) {
    const CostParam& cp = m.params[i];
    double n = 0;
    for (Event e : cp.events) n += static_cast<double>(p.timed[e]);
    out += fmt::format("  {:<24} {:>12.5g} {:>10.4g} {:>12.4g} {:>6.1f}%{}\n", cp.name,
                       ops > 0 ? n / ops : 0.0, cp.value, t.breakdown[i] / scale,
                       t.per_op_ns > 0 ? 100 * t.breakdown[i] / t.per_op_ns : 0.0,
                       cp.pinned ? "" : " *");
  }
  out += group_line(m, t.breakdown, t.per_op_ns, scale, unit);
  return out;
}

}  // namespace

std::string format_explain(const RunResult& r, const ReportOptions& o) {
  if (!o.cost) return "";
  std::string out = fmt::format(
      "\nexplain: time per operation = sum over parameters of events per operation\n"
      "x cost (profile {}); * marks a parameter the calibration rows do not pin\n"
      "down (docs/calibration.md)\n",
      o.cost->name);
  for (const WorkloadResult& w : r.workloads)
    for (size_t i = 0; i < w.policies.size(); ++i)
      out += explain_policy(*o.cost, w, w.policies[i], i);
  return out;
}

}  // namespace simcache::sim
