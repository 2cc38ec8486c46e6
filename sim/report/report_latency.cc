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

const OpLatency* find_op(const PolicyResult& p, const std::string& kind) {
  for (const OpLatency& l : p.latency)
    if (l.kind == kind && l.hist.count()) return &l;
  return nullptr;
}
const LatencyHist* find_kind(const PolicyResult& p, const std::string& kind) {
  const OpLatency* l = find_op(p, kind);
  return l ? &l->hist : nullptr;
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

// "992.0..1008.0": the percentile's 90 % interval; "..inf" where the
// samples bound it from below only.
std::string interval_cell(const LatencyHist::Interval& iv, const Unit& u) {
  const std::string lo = fmt::format("{:.{}f}", iv.lo_ns / u.scale, u.decimals);
  if (!std::isfinite(iv.hi_ns)) return lo + "..inf";
  return lo + fmt::format("..{:.{}f}", iv.hi_ns / u.scale, u.decimals);
}

}  // namespace

std::string extension_line(const WorkloadResult& w) {
  const WorkloadResult::TailExtension& e = w.extension;
  if (e.outcome.empty()) return "";
  std::string s = fmt::format("  --until-separated: {}", e.outcome);
  if (!e.kind.empty() && e.rounds_from > 0)
    s += fmt::format(" ({} p99.9), rounds {} -> {} ({} doubling{})", e.kind, e.rounds_from,
                     e.rounds, e.doublings, e.doublings == 1 ? "" : "s");
  return s + "\n";
}

// Tasks contend where a driver runs background users beside the measured
// program (they record lock waits); a single task's latency is its count
// of events times their prices, the same for every operation of a kind.
bool contended(const WorkloadResult& w) {
  for (const PolicyResult& p : w.policies)
    if (p.metrics.count("lock_waits")) return true;
  return false;
}

// --seeds N: what the latency rows pooled.
std::string seeds_line(const WorkloadResult& w) {
  const WorkloadResult::SeedPool& s = w.seeds;
  if (s.count <= 1) return "";
  if (!s.pooled)
    return fmt::format("  --seeds {}: the {} runs (seeds {}..{}) were identical, the workload "
                       "draws nothing from the seed: one run's samples\n",
                       s.count, s.count, s.first, s.first + s.count - 1);
  return fmt::format("  --seeds {}: samples pooled over seeds {}..{}; each interval also holds "
                     "the seeds' own estimates' median (docs/stats.md)\n",
                     s.count, s.first, s.first + s.count - 1);
}

std::string format_latency_block(const WorkloadResult& w, bool hist) {
  const std::vector<std::string> kinds = kinds_of(w);
  if (kinds.empty() || !contended(w)) return "";
  std::vector<Row> rows;
  for (const std::string& kind : kinds) {
    Row n{kind + " ops", {}, {}};
    for (const PolicyResult& p : w.policies) {
      const LatencyHist* h = find_kind(p, kind);
      n.text.push_back(h ? fmt::format("{}", h->count()) : "-");
    }
    rows.push_back(n);
    uint64_t fewest = UINT64_MAX;
    for (const PolicyResult& p : w.policies)
      if (const LatencyHist* h = find_kind(p, kind)) fewest = std::min(fewest, h->count());
    for (const LatencyPoint& pt : kLatencyPoints) {
      std::vector<double> v;
      std::vector<LatencyHist::Interval> iv;
      double top = 0;
      for (const PolicyResult& p : w.policies) {
        const LatencyHist* h = find_kind(p, kind);
        v.push_back(!h ? -1 : pt.p > 0 ? h->percentile_ns(pt.p) : h->max_ns());
        const OpLatency* op = find_op(p, kind);
        iv.push_back(op && pt.p > 0 ? op->interval(pt.p) : LatencyHist::Interval{});
        top = std::max(top, v.back());
        if (std::isfinite(iv.back().hi_ns)) top = std::max(top, iv.back().hi_ns);
      }
      const Unit u = unit_for(top);
      // The samples at or beyond the percentile, in the column with fewest.
      // n - ceil(p n / 100) + 1: the samples from the percentile's rank up.
      const uint64_t rank = static_cast<uint64_t>(std::ceil(pt.p * double(fewest) / 100 - 1e-9));
      const uint64_t beyond = pt.p > 0 && rank <= fewest ? fewest - std::max<uint64_t>(rank, 1) + 1 : 1;
      Row r{fmt::format("  {} {} ({} beyond)", pt.name, u.name, beyond), {}, {}};
      const double base = v.empty() ? -1 : v[0];
      for (size_t i = 0; i < v.size(); ++i)
        r.text.push_back(v[i] < 0 ? "-" : lat_cell(v[i], base < 0 ? v[i] : base, i == 0, u));
      rows.push_back(r);
      if (pt.p <= 0) continue;  // the maximum is exact
      Row ci{"    90% interval", {}, {}};
      for (size_t i = 0; i < v.size(); ++i)
        ci.text.push_back(v[i] < 0 ? "-" : interval_cell(iv[i], u));
      rows.push_back(ci);
    }
  }
  std::string out =
      "  latency per operation in model time (events x prices + lock and idle waits),\n"
      "  measured timed regions; (n beyond): samples at or above the percentile;\n"
      "  90% interval: where the percentile lies (order statistics, widened where the\n"
      "  slow samples cluster; docs/stats.md)\n";
  render(&out, rows, w.policies.size());
  out += extension_line(w);
  out += seeds_line(w);
  // Lock waits of the measured program and of the background users.
  std::vector<Row> waits;
  for (const char* m : {"lock_waits", "lock_wait_ns", "list_lock_waits", "list_lock_wait_ns",
                        "bg_list_lock_waits", "bg_list_lock_wait_ns"}) {
    Row row{m, {}, {}};
    bool any = false;
    for (const PolicyResult& p : w.policies) {
      auto it = p.metrics.find(m);
      row.v.push_back(it == p.metrics.end() ? 0.0 : double(it->second));
      any |= it != p.metrics.end();
    }
    if (any) waits.push_back(std::move(row));
  }
  if (!waits.empty()) {
    out += "  lock waits (whole run, model time):\n";
    render(&out, waits, w.policies.size());
  }
  // The background tasks' load, each task on its own over the span they
  // ran (spawn to the loop's end): the median task, and the smallest and
  // largest, of its kmalloc() calls per us of model time and its shares
  // of that time waiting for and holding a list_lock.
  bool bg = false;
  std::string load =
      "  background load, each task over its span (model time, spawn to the loop's end):\n"
      "  median [smallest..largest] over the tasks\n";
  Row tasks{"  tasks", {}, {}}, rate{"  kmalloc per us", {}, {}}, wait{"  list_lock wait %", {}, {}},
      hold{"  list_lock hold %", {}, {}};
  for (const PolicyResult& p : w.policies) {
    auto m = [&](const std::string& k, double* v) {
      auto it = p.metrics.find(k);
      if (it == p.metrics.end()) return false;
      *v = double(it->second);
      return true;
    };
    double n = 0, t = 0;
    m("bg_tasks", &n);
    m("bg_trace_tasks", &t);
    bg |= n + t > 0;
    tasks.text.push_back(fmt::format("{:.0f}", n + t));
    const auto spread = [&](const std::string& name, double scale, int digits) {
      double lo = 0, mid = 0, hi = 0;
      if (!m("bg_" + name + "_min", &lo) || !m("bg_" + name + "_median", &mid) ||
          !m("bg_" + name + "_max", &hi))
        return std::string("-");
      return fmt::format("{:.{}f} [{:.{}f}..{:.{}f}]", mid * scale, digits, lo * scale, digits,
                         hi * scale, digits);
    };
    rate.text.push_back(spread("kmalloc_per_s", 1e-6, 3));
    wait.text.push_back(spread("list_lock_wait_ppm", 1e-4, 2));
    hold.text.push_back(spread("list_lock_hold_ppm", 1e-4, 2));
  }
  if (bg) {
    out += load;
    render(&out, {tasks, rate, wait, hold}, w.policies.size());
  }
  if (!hist) return out;
  out += "  latency histograms, ns (bpftrace hist() buckets):\n";
  for (const std::string& kind : kinds)
    for (size_t c = 0; c < w.policies.size(); ++c)
      if (const LatencyHist* h = find_kind(w.policies[c], kind))
        out += fmt::format("\n@{}_ns[{}]:\n{}", kind, kNames[c], format_log2_hist(h->log2_ns()));
  return out;
}

}  // namespace simcache::sim
