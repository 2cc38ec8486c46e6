// --perf-stat: each column's timed-region counters in the shape of
// `perf stat`: the value first (right-aligned, thousands separated), the
// event name, then after '#' a derived ratio: per operation of the
// workload's unit (per install, per op), and with a cost profile the model
// time per operation.
#include <cmath>

#include <fmt/format.h>

#include "sim/cost/cost.h"
#include "sim/report/report.h"
#include "sim/report/table_layout.h"

namespace simcache::sim {
namespace {

// 1234567 -> "1,234,567", as perf stat prints counts.
std::string grouped(uint64_t v) {
  std::string s = fmt::format("{}", v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string line(const std::string& value, const char* unit, std::string_view name,
                 const std::string& ratio) {
  return fmt::format("{:>18} {:<4} {:<25} # {}\n", value, unit, name, ratio);
}

}  // namespace

std::string format_perf_stat(const RunResult& r, const ReportOptions& o) {
  std::string out;
  std::vector<Event> evs = headline_events();
  if (o.all_counters) {
    evs.clear();
    for (size_t i = 0; i < kNumEvents; ++i) evs.push_back(static_cast<Event>(i));
  }
  for (const WorkloadResult& w : r.workloads) {
    const std::string unit = w.time_unit.empty() ? "ns" : w.time_unit;
    for (size_t c = 0; c < w.policies.size(); ++c) {
      const PolicyResult& p = w.policies[c];
      const uint64_t ops = p.timed_ops;
      out += fmt::format("\n Performance counter stats for '{}', {} = {}\n", w.label, kNames[c],
                         p.policy);
      out += fmt::format(" (timed regions of {} measured round{}, {} {}{}):\n\n", p.rounds.size(),
                         p.rounds.size() == 1 ? "" : "s", grouped(ops), w.op_unit,
                         ops == 1 ? "" : "s");
      for (Event e : evs) {
        const uint64_t n = p.timed[e];
        if (!n) continue;
        const std::string ratio =
            ops ? fmt::format("{:>8.3f} per {}", double(n) / double(ops), w.op_unit) : "";
        out += line(grouped(n), "", kEventInfo[static_cast<size_t>(e)].name, ratio);
      }
      if (o.cost && ops) {
        const double per_op = policy_time(*o.cost, w, p).per_op_ns;
        const uint64_t total = static_cast<uint64_t>(std::llround(per_op * double(ops)));
        out += "\n" + line(grouped(total), "ns", "model-time",
                           fmt::format("{:>8.2f} {}/{}", per_op / unit_scale(unit), unit,
                                       w.op_unit));
      }
    }
  }
  return out;
}

}  // namespace simcache::sim
