// The table's latency block: for each operation kind, every policy's
// percentiles of the virtual-time latency (sim/run/latency.h) with the
// change against column A, and on request a bpftrace log2 histogram per
// kind and policy through the one histogram printer (kernel_formats.h).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include "sim/report/kernel_formats.h"
#include "sim/report/report.h"
#include "sim/report/table_layout.h"

namespace simcache::sim {
namespace {

// Kinds in the order they first appear, column A's first.
std::vector<std::string> kinds_of(const WorkloadResult& w) {
  std::vector<std::string> kinds;
  for (const PolicyResult& p : w.policies)
    for (const OpLatency& l : p.latency)
      if (std::find(kinds.begin(), kinds.end(), l.kind) == kinds.end()) kinds.push_back(l.kind);
  return kinds;
}

const LatencyHist* find_kind(const PolicyResult& p, const std::string& kind) {
  for (const OpLatency& l : p.latency)
    if (l.kind == kind && l.hist.count()) return &l.hist;
  return nullptr;
}

// One unit for a row, from its largest value: ns below 10 us, us below
// 10 ms, then ms, so cells keep 3-5 significant digits.
struct Unit {
  const char* name;
  double scale;
  int decimals;
};
Unit unit_for(double max_ns) {
  if (max_ns < 1e4) return {"ns", 1, 1};
  if (max_ns < 1e7) return {"us", 1e3, 2};
  return {"ms", 1e6, 2};
}

// "12.5 (+4.0%)": LKP's change against column A (absolute where A is 0).
std::string lat_cell(double v, double base, bool first, const Unit& u) {
  std::string s = fmt::format("{:.{}f}", v / u.scale, u.decimals);
  if (first || v == base) return s;
  if (base == 0) return s + fmt::format(" (+{:.{}f})", v / u.scale, u.decimals);
  return s + fmt::format(" ({:+.1f}%)", (v - base) / base * 100);
}

}  // namespace

std::string format_latency_block(const WorkloadResult& w, bool hist) {
  const std::vector<std::string> kinds = kinds_of(w);
  if (kinds.empty()) return "";
  std::vector<Row> rows;
  for (const std::string& kind : kinds) {
    Row n{kind + " ops", {}, {}};
    for (const PolicyResult& p : w.policies) {
      const LatencyHist* h = find_kind(p, kind);
      n.text.push_back(h ? fmt::format("{}", h->count()) : "-");
    }
    rows.push_back(n);
    for (const LatencyPoint& pt : kLatencyPoints) {
      std::vector<double> v;
      double top = 0;
      for (const PolicyResult& p : w.policies) {
        const LatencyHist* h = find_kind(p, kind);
        v.push_back(!h ? -1 : pt.p > 0 ? h->percentile_ns(pt.p) : h->max_ns());
        top = std::max(top, v.back());
      }
      const Unit u = unit_for(top);
      Row r{fmt::format("  {} {}", pt.name, u.name), {}, {}};
      const double base = v.empty() ? -1 : v[0];
      for (size_t i = 0; i < v.size(); ++i)
        r.text.push_back(v[i] < 0 ? "-" : lat_cell(v[i], base < 0 ? v[i] : base, i == 0, u));
      rows.push_back(r);
    }
  }
  std::string out = "  latency per operation (virtual time, measured timed regions):\n";
  render(&out, rows, w.policies.size());
  if (!hist) return out;
  out += "  latency histograms, ns (bpftrace hist() buckets):\n";
  for (const std::string& kind : kinds)
    for (size_t c = 0; c < w.policies.size(); ++c)
      if (const LatencyHist* h = find_kind(w.policies[c], kind))
        out += fmt::format("\n@{}_ns[{}]:\n{}", kind, kNames[c], format_log2_hist(h->log2_ns()));
  return out;
}

}  // namespace simcache::sim
