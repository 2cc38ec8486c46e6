// The plain-text table: one block per workload, one column per policy,
// exact per-round counts of the timed region with the delta against the
// first column, then the memory a policy leaves behind.
#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "report.h"

namespace simcache::sim {
namespace {

const char kNames[] = "ABCDEFGH";

// Mean per measured round; exact integers print without decimals.
std::string fmt_mean(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.1f}", v);
}

std::string cell(double v, double base, bool first) {
  std::string s = fmt_mean(v);
  if (first || v == base) return s;
  const double d = v - base;
  return s + " (" + (d > 0 ? "+" : "") + fmt_mean(d) + ")";
}

double per_round(const PolicyResult& p, Event e) {
  return p.rounds.empty() ? 0.0 : double(p.timed[e]) / double(p.rounds.size());
}

struct Row {
  std::string label;
  std::vector<double> v;
};

// Renders rows so the table stays within 80 columns: columns as wide as
// their widest cell; deltas dropped only if even that does not fit.
void render(std::string* out, const std::vector<Row>& rows, size_t ncols) {
  for (bool deltas : {true, false}) {
    size_t w = 10, label = 8;
    for (const Row& r : rows) {
      label = std::max(label, r.label.size() + 1);
      for (size_t i = 0; i < r.v.size(); ++i) {
        const std::string c = deltas ? cell(r.v[i], r.v[0], i == 0) : fmt_mean(r.v[i]);
        w = std::max(w, c.size() + 2);
      }
    }
    if (deltas && label + ncols * w > 80) continue;
    std::string head = fmt::format("{:<{}}", "", label);
    for (size_t i = 0; i < ncols; ++i) head += fmt::format("{:>{}}", kNames[i], w);
    *out += head + "\n";
    for (const Row& r : rows) {
      std::string line = fmt::format("{:<{}}", r.label, label);
      for (size_t i = 0; i < r.v.size(); ++i)
        line += fmt::format("{:>{}}", deltas ? cell(r.v[i], r.v[0], i == 0) : fmt_mean(r.v[i]), w);
      *out += line + "\n";
    }
    return;
  }
}

void block(std::string* out, const RunResult& r, const WorkloadResult& w,
           const ReportOptions& o) {
  const auto& ps = w.policies;
  const uint64_t ops = ps.empty() ? 0 : ps[0].ops_per_round;
  *out += fmt::format("\n{}: timed region per round ({} {}{})\n", w.label, ops,
                      w.op_unit, ops == 1 ? "" : "s");
  bool same = ps.size() == r.policies.size();
  for (size_t i = 0; same && i < ps.size(); ++i) same = ps[i].policy == r.policies[i];
  if (!same)
    for (size_t i = 0; i < ps.size(); ++i)
      *out += fmt::format("  {} = {}\n", kNames[i], ps[i].policy);
  std::vector<Event> evs = headline_events();
  if (o.all_counters) {
    evs.clear();
    for (size_t i = 0; i < kNumEvents; ++i) evs.push_back(static_cast<Event>(i));
  }
  std::vector<Row> rows;
  for (Event e : evs) {
    Row row{std::string(kEventInfo[static_cast<size_t>(e)].name), {}};
    bool any = false;
    for (const auto& p : ps) {
      row.v.push_back(per_round(p, e));
      any |= p.timed[e] != 0;
    }
    if (any) rows.push_back(std::move(row));
  }
  for (const char* m : {"bytes_retained", "nodes_unused"}) {
    Row row{m, {}};
    bool any = false;
    for (const auto& p : ps) {
      auto it = p.metrics.find(m);
      row.v.push_back(it == p.metrics.end() ? 0.0 : double(it->second));
      any |= it != p.metrics.end();
    }
    if (any) rows.push_back(std::move(row));
  }
  render(out, rows, ps.size());
  size_t kasan = 0;
  for (const auto& p : ps) kasan += p.kasan.size();
  if (kasan) *out += fmt::format("  KASAN: {} report(s); see --format json\n", kasan);
  if (!w.note.empty()) *out += "  " + w.note + "\n";
}

}  // namespace

const std::vector<Event>& headline_events() {
  static const std::vector<Event> ev = {
      Event::io_rsrc_node_alloc, Event::node_cache_hit, Event::io_cache_alloc_new,
      Event::io_cache_put_full, Event::futex_wait_arm_fail,
      Event::kmalloc, Event::kfree, Event::kmem_cache_alloc, Event::kmem_cache_free,
      Event::kmem_cache_alloc_bulk, Event::bulk_objects, Event::kvmalloc,
      Event::slab_alloc_fast, Event::slab_alloc_slow, Event::slab_free_fast,
      Event::slab_free_slow, Event::allocate_slab, Event::free_slab,
      Event::list_lock, Event::memcg_post_alloc_hook, Event::memcg_charge,
      Event::page_counter_charge};
  return ev;
}

std::string format_table(const RunResult& r, const ReportOptions& o) {
  std::string out = fmt::format("simcache {}: {} (kernel {}, seed {})\n", r.version,
                                r.scenario, r.kernel, r.seed);
  for (size_t i = 0; i < r.policies.size(); ++i)
    out += fmt::format("  {} = {}\n", kNames[i], r.policies[i]);
  for (const auto& w : r.workloads) block(&out, r, w, o);
  return out;
}

}  // namespace simcache::sim
