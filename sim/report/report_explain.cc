// --explain: one policy's time per operation split into its parameters
// (events per op x cost), largest first, then summed by group, e.g. how
// many of 119 ns are slab allocation and how many the fixed io_uring path.
#include <algorithm>
#include <map>

#include "sim/cost/cost.h"
#include <fmt/format.h>
#include "sim/report/report.h"
#include "sim/report/table_layout.h"

namespace simcache::sim {
namespace {

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

// Events shown nested under each call site (function_graph's view).
constexpr Event kNested[] = {Event::kmalloc,        Event::kfree,
                             Event::kmem_cache_alloc, Event::kmem_cache_free,
                             Event::kmem_cache_alloc_bulk, Event::slab_alloc_slow,
                             Event::allocate_slab,  Event::free_slab};

// Counts by call site of the timed region, per round: calls, calls by
// caller, and the slab events nested under each site.
std::string sites_block(const WorkloadResult& w) {
  const auto& ps = w.policies;
  struct Line {
    std::string label;
    std::vector<double> v;
  };
  std::vector<Line> lines;
  auto per_round = [](const PolicyResult& p, uint64_t n) {
    return p.rounds.empty() ? 0.0 : double(n) / double(p.rounds.size());
  };
  for (size_t i = 0; i < kNumCallSites; ++i) {
    const auto site = static_cast<CallSite>(i);
    Line calls{std::string(kCallSiteNames[i]), {}};
    bool any = false;
    for (const auto& p : ps) {
      calls.v.push_back(per_round(p, p.timed_sites.calls_of(site)));
      any |= p.timed_sites.calls_of(site) != 0;
    }
    if (!any) continue;
    lines.push_back(calls);
    for (size_t c = 0; c <= kNumCallSites; ++c) {
      Line from{"  from " + std::string(c == kTopCaller ? "(top)" : kCallSiteNames[c]), {}};
      bool some = false;
      for (const auto& p : ps) {
        from.v.push_back(per_round(p, p.timed_sites.calls_from(c, site)));
        some |= p.timed_sites.calls_from(c, site) != 0;
      }
      if (some && c != kTopCaller) lines.push_back(from);
    }
    for (Event e : kNested) {
      Line n{"  > " + std::string(kEventInfo[size_t(e)].name), {}};
      bool some = false;
      for (const auto& p : ps) {
        n.v.push_back(per_round(p, p.timed_sites.under(site)[e]));
        some |= p.timed_sites.under(site)[e] != 0;
      }
      if (some) lines.push_back(n);
    }
  }
  if (lines.empty()) return "";
  std::string out = fmt::format("\ncall sites, {}: timed region per round\n", w.label);
  constexpr size_t kLabel = 40, kCol = 10, kPer = 4;
  for (size_t b0 = 0; b0 < ps.size(); b0 += kPer) {
    const size_t b1 = std::min(ps.size(), b0 + kPer);
    std::string head(kLabel, ' ');
    for (size_t c = b0; c < b1; ++c) head += fmt::format("{:>{}}", kNames[c], kCol);
    out += head + "\n";
    for (const Line& l : lines) {
      std::string row = fmt::format("{:<{}}", l.label, kLabel);
      for (size_t c = b0; c < b1; ++c) row += fmt::format("{:>{}.6g}", l.v[c], kCol);
      out += row + "\n";
    }
  }
  return out;
}

}  // namespace

std::string format_sites(const RunResult& r) {
  std::string out;
  for (const WorkloadResult& w : r.workloads) out += sites_block(w);
  return out;
}

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
  return out + format_sites(r);
}

}  // namespace simcache::sim
