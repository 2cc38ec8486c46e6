// The plain-text table: one block per workload, one column per policy,
// exact per-round counts of the timed region with the delta against the
// first column, then the memory a policy leaves behind.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <absl/strings/str_split.h>

#include "sim/cost/cost.h"
#include <fmt/format.h>
#include "sim/report/kernel_formats.h"
#include "sim/report/report.h"
#include "sim/report/table_layout.h"

namespace simcache::sim {
namespace {

// Mean per measured round; exact integers print without decimals.
std::string fmt_mean(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9)
    return fmt::format("{}", static_cast<int64_t>(std::llround(v)));
  return fmt::format("{:.1f}", v);
}

// LKP style: the value, then its change against column A in percent
// (or the absolute change where A is zero).
std::string cell(double v, double base, bool first) {
  std::string s = fmt_mean(v);
  if (first || v == base) return s;
  if (base == 0) return s + " (+" + fmt_mean(v) + ")";
  return s + fmt::format(" ({:+.1f}%)", (v - base) / base * 100);
}

double per_round(const PolicyResult& p, Event e) {
  return p.rounds.empty() ? 0.0 : double(p.timed[e]) / double(p.rounds.size());
}

std::string row_cell(const Row& r, size_t i, bool deltas) {
  if (!r.text.empty()) return i < r.text.size() ? r.text[i] : "";
  return deltas ? cell(r.v[i], r.v[0], i == 0) : fmt_mean(r.v[i]);
}

}  // namespace

// Renders rows within 80 columns: columns as wide as their widest cell,
// as many per block as fit beside the labels; further columns go into
// further blocks under the same labels. Deltas are dropped only if even
// one column with them does not fit.
void render(std::string* out, const std::vector<Row>& rows, size_t ncols) {
  for (bool deltas : {true, false}) {
    size_t w = 10, label = 8;
    for (const Row& r : rows) {
      label = std::max(label, r.label.size() + 1);
      for (size_t i = 0; i < std::max(r.v.size(), r.text.size()); ++i)
        w = std::max(w, row_cell(r, i, deltas).size() + 2);
    }
    if (deltas && label + w > 80) continue;
    const size_t per = std::max<size_t>(1, (80 - std::min<size_t>(label, 70)) / w);
    for (size_t b0 = 0; b0 < ncols; b0 += per) {
      const size_t b1 = std::min(ncols, b0 + per);
      if (b0) *out += "\n";
      std::string head = fmt::format("{:<{}}", "", label);
      for (size_t i = b0; i < b1; ++i) head += fmt::format("{:>{}}", kNames[i], w);
      *out += head + "\n";
      for (const Row& r : rows) {
        std::string line = fmt::format("{:<{}}", r.label, label);
        for (size_t i = b0; i < b1 && i < std::max(r.v.size(), r.text.size()); ++i)
          line += fmt::format("{:>{}}", row_cell(r, i, deltas), w);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        *out += line + "\n";
      }
    }
    return;
  }
}

namespace {

std::string fmt_delta(double d, double noise) {
  return fmt::format("{:+.2f}%{}", d * 100, std::fabs(d) < noise ? " (n.s.)" : "");
}

// Model time per op with its interval and delta against column A; the
// measured value beside it where a row maps to the column.
void time_rows(const WorkloadResult& w, const ReportOptions& o,
               std::vector<Row>* rows, std::string* foot) {
  const auto& ps = w.policies;
  const std::string unit = w.time_unit.empty() ? "ns" : w.time_unit;
  const std::string per = unit + "/" + w.op_unit;
  std::vector<PolicyTime> t;
  for (const auto& p : ps) t.push_back(policy_time(*o.cost, w, p));
  const double sim_rounds = ps.empty() ? 0.0 : static_cast<double>(ps[0].rounds.size());
  const auto nr = static_cast<int64_t>(noise_rounds(w.params, sim_rounds));
  const bool groups = !w.params.count("rounds") && w.params.count("groups");
  Row model{"model " + per, {}, {}}, iv{"  90% model interval", {}, {}},
      se{fmt::format("  noise +- ({} {})", nr, groups ? "groups" : "rounds"), {}, {}};
  Row delta{"  vs A", {}, {}}, delta_iv{"    90% model interval", {}, {}},
      meas{"measured " + per, {}, {}}, mdelta{"  vs A", {}, {}};
  std::string ids;
  bool any = false;
  std::vector<const MeasuredPoint*> mp;
  for (size_t i = 0; i < ps.size(); ++i) {
    model.text.push_back(format_time_in(t[i].per_op_ns, unit));
    iv.text.push_back(fmt::format("[{}, {}]{}", format_time_in(t[i].interval_lo_ns, unit),
                                  format_time_in(t[i].interval_hi_ns, unit),
                                  t[i].prior_based ? "*" : ""));
    se.text.push_back(fmt::format("+-{:.2f}%", t[i].stderr_rel * 100));
    const double noise = delta_noise(t[0], t[i]);
    std::string d, di;
    if (i > 0 && t[0].per_op_ns > 0) {
      const EffectInterval ei = effect_interval(*o.cost, t[0], t[i]);
      d = fmt_delta(ei.effect, noise);
      di = fmt::format("[{:+.1f}, {:+.1f}]{}", ei.lo * 100, ei.hi * 100, ei.prior_based ? "*" : "");
    }
    delta.text.push_back(d);
    delta_iv.text.push_back(di);
    mp.push_back(find_measured(o, w, ps[i]));
    meas.text.push_back(mp[i] ? format_time_in(mp[i]->value_ns, unit) : "-");
    mdelta.text.push_back(
        i == 0 || !mp[0] || !mp[i] ? "" : fmt_delta(mp[i]->value_ns / mp[0]->value_ns - 1, noise));
    if (mp[i]) {
      any = true;
      std::string list;
      for (const std::string& id : mp[i]->ids) list += (list.empty() ? "" : ",") + id;
      ids += fmt::format("{}{} {}", ids.empty() ? "" : "; ", kNames[i], list);
    }
  }
  rows->push_back(
      {fmt::format("time, profile {}", o.cost->name), {}, std::vector<std::string>(ps.size())});
  rows->push_back(model);
  rows->push_back(iv);
  for (size_t k = 0; o.phases && !t.empty() && k < t[0].phases.size(); ++k) {
    Row ph{"  phase " + t[0].phases[k].name, {}, {}};
    for (size_t i = 0; i < ps.size(); ++i) {
      const PolicyTime::Phase* f = k < t[i].phases.size() ? &t[i].phases[k] : nullptr;
      ph.text.push_back(f ? fmt::format("{} +-{}", format_time_in(f->per_op_ns, unit),
                                        format_time_in(kIntervalZ * f->model_sd_ns, unit))
                          : "-");
    }
    rows->push_back(ph);
  }
  if (o.cost->noise) rows->push_back(se);
  if (ps.size() > 1) rows->push_back(delta), rows->push_back(delta_iv);
  if (!any) return;
  rows->push_back(meas);
  bool any_delta = false;
  for (const std::string& c : mdelta.text) any_delta |= !c.empty();
  if (any_delta) rows->push_back(mdelta);
  const std::string file = std::filesystem::path(o.measured_file).filename().string();
  *foot += fmt::format("  measured ({}{}): {}\n", file,
                       o.measured_statistic.empty()
                           ? std::string()
                           : fmt::format(", their {} rounds", o.measured_statistic),
                       ids);
}

// Per-cache stat rows of the timed region: new and discarded slabs of
// every cache (what "32 new kmalloc-32 slabs during the fill" reads
// from), or every non-zero stat of the --cache one.
void slab_rows(const WorkloadResult& w, const ReportOptions& o, std::vector<Row>* rows) {
  std::vector<std::string> names;
  for (const PolicyResult& p : w.policies)
    for (const CacheStats& cs : p.timed_caches)
      if (std::find(names.begin(), names.end(), cs.name) == names.end() &&
          (o.cache.empty() || o.cache == cs.name))
        names.push_back(cs.name);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    for (size_t i = 0; i < kNumSlubStats; ++i) {
      const auto item = static_cast<SlubStat>(i);
      if (o.cache.empty() && item != SlubStat::ALLOC_SLAB && item != SlubStat::FREE_SLAB) continue;
      Row row{n + " " + std::string(kSlubStatInfo[i].sysfs), {}, {}};
      bool any = false;
      for (const PolicyResult& p : w.policies) {
        double v = 0;
        for (const CacheStats& cs : p.timed_caches)
          if (cs.name == n) v = double(cs.stat[i]);
        row.v.push_back(p.rounds.empty() ? 0.0 : v / double(p.rounds.size()));
        any |= v != 0;
      }
      if (any) rows->push_back(std::move(row));
    }
  }
}

// Every counter of a failure (an event named *fail*) that is non-zero
// anywhere in the run is a row (whole run, not per round). A failed
// allocation or charge is also a warning; a FUTEX_WAIT arm that fails is
// what arm-fail and rt-arm-loop exist to produce: a result, the row only.
std::string failure_rows(const WorkloadResult& w, std::vector<Row>* rows) {
  std::string warn;
  for (size_t i = 0; i < kNumEvents; ++i) {
    if (kEventInfo[i].name.find("fail") == std::string_view::npos) continue;
    Row row{std::string(kEventInfo[i].name) + " (run)", {}, {}};
    bool any = false;
    for (size_t c = 0; c < w.policies.size(); ++c) {
      const uint64_t n = w.policies[c].total.v[i];
      row.v.push_back(double(n));
      if (n) {
        any = true;
        if (kEventInfo[i].name.rfind("futex_", 0) != 0)
          warn += fmt::format("  warning: {} = {}: {} {} in the run\n", kNames[c],
                            w.policies[c].policy, n, kEventInfo[i].name);
      }
    }
    if (any) rows->push_back(std::move(row));
  }
  return warn;
}

void block(std::string* dest, const RunResult& r, const WorkloadResult& w, const ReportOptions& o) {
  const auto& ps = w.policies;
  std::string body;
  std::string* out = &body;
  std::vector<Event> evs = headline_events();
  if (o.all_counters) {
    evs.clear();
    for (size_t i = 0; i < kNumEvents; ++i) evs.push_back(static_cast<Event>(i));
  }
  if (!o.counts) evs.clear();
  std::vector<Row> rows;
  for (Event e : evs) {
    Row row{std::string(kEventInfo[static_cast<size_t>(e)].name), {}, {}};
    bool any = false;
    for (const auto& p : ps) {
      row.v.push_back(per_round(p, e));
      any |= p.timed[e] != 0;
    }
    if (any) rows.push_back(std::move(row));
  }
  if (o.per_cache) slab_rows(w, o, &rows);
  // The memory metrics, the teardowns against the clock, then every
  // cache's entries array (the metrics entries_bytes_*, in name order)
  // where a column has one.
  std::vector<std::string> shown = {"bytes_retained",
                                    "nodes_unused",
                                    "rings_created_teardown_queued",
                                    "ops_overlapping_node_free",
                                    "node_frees_during_ops",
                                    "entries_bytes"};
  std::set<std::string> per_cache;
  for (const auto& p : ps)
    for (const auto& [k, v] : p.metrics)
      if (k.rfind("entries_bytes_", 0) == 0 && v != 0) per_cache.insert(k);
  shown.insert(shown.end(), per_cache.begin(), per_cache.end());
  // Metrics of the whole run, not of a round, are marked as the whole
  // run's counters are.
  const std::set<std::string> whole_run = {
      "rings_created_teardown_queued", "ops_overlapping_node_free", "node_frees_during_ops"};
  for (const std::string& m : shown) {
    if (!o.counts) break;
    Row row{whole_run.count(m) ? m + " (run)" : m, {}, {}};
    bool any = false;
    for (const auto& p : ps) {
      auto it = p.metrics.find(m);
      row.v.push_back(it == p.metrics.end() ? 0.0 : double(it->second));
      any |= it != p.metrics.end();
    }
    if (any) rows.push_back(std::move(row));
  }
  std::string foot = o.counts ? failure_rows(w, &rows) : "";
  if (o.cost && (o.counts || o.phases)) time_rows(w, o, &rows, &foot);
  if (!rows.empty()) render(out, rows, ps.size());
  *out += foot;
  if (o.latency) {
    const std::string lat = format_latency_block(w, o.latency_hist);
    *out += !lat.empty() ? lat
                         : std::string("  no latency block: one task, nothing contends (its latency\n"
                                       "  is its events x their prices, the same for every operation\n"
                                       "  of a kind; --explain splits it)\n");
  }
  size_t kasan = 0;
  for (const auto& p : ps) kasan += p.kasan.size();
  if (kasan) {
    *out += fmt::format("  KASAN: {} report(s) (every one in --format json); the first:\n", kasan);
    for (const auto& p : ps)
      if (!p.kasan.empty()) {
        *out += format_kasan(p.kasan.front());
        break;
      }
  }
  // Failed operations and injected faults, per column: a run with either
  // does not measure the workload it names, so the table says so.
  for (size_t i = 0; i < ps.size(); ++i) {
    std::string fails, faults;
    for (const auto& [e, n] : ps[i].failures) fails += fmt::format(" {} x -{}", n, e);
    for (const auto& [pt, n] : ps[i].faults_injected) faults += fmt::format(" {}={}", pt, n);
    if (!fails.empty())
      *out += fmt::format("  FAILED {}:{} (operations that failed are counted above)\n",
                          kNames[i], fails);
    if (!faults.empty()) *out += fmt::format("  faults injected {}:{}\n", kNames[i], faults);
  }
  if (body.empty()) return;  // nothing this workload shows in the views asked for
  const uint64_t ops = ps.empty() ? 0 : ps[0].ops_per_round;
  const std::string what =
      fmt::format("timed region per round ({} {}{})", ops, w.op_unit, ops == 1 ? "" : "s");
  if (w.label.size() + 2 + what.size() <= 80)
    *dest += fmt::format("\n{}: {}\n", w.label, what);
  else
    *dest += fmt::format("\n{}:\n  {}\n", w.label, what);
  bool same = ps.size() == r.policies.size();
  for (size_t i = 0; same && i < ps.size(); ++i) same = ps[i].policy == r.policies[i];
  if (!same)
    for (size_t i = 0; i < ps.size(); ++i)
      *dest += fmt::format("  {} = {}\n", kNames[i], ps[i].policy);
  *dest += body;
  if (!w.note.empty()) *dest += "  " + w.note + "\n";
}

// "  key: words..." folded at 80 columns.
std::string wrap_words(const std::string& key, const std::string& text) {
  if (text.empty()) return "";
  std::string out, line = key;
  std::vector<std::string> words;
  for (const std::string& wd : std::vector<std::string>(absl::StrSplit(text, ' ', absl::SkipEmpty()))) {
    // A word too long for a line breaks after its commas (policy lists).
    std::string rest = wd;
    while (rest.size() > 80 - key.size() - 1 && rest.find(',') != std::string::npos) {
      size_t cut = rest.rfind(',', 80 - key.size() - 2);
      if (cut == std::string::npos) cut = rest.find(',');
      words.push_back(rest.substr(0, cut + 1));
      rest = rest.substr(cut + 1);
    }
    words.push_back(rest);
  }
  for (const std::string& wd : words) {
    if (line.size() + 1 + wd.size() > 80 && line.size() > key.size())
      out += line + "\n", line = std::string(key.size(), ' ');
    line += " " + wd;
  }
  return out + line + "\n";
}

}  // namespace

const std::vector<Event>& headline_events() {
  static const std::vector<Event> ev = {Event::io_rsrc_node_alloc,
                                        Event::node_cache_hit,
                                        Event::io_cache_alloc_new,
                                        Event::io_cache_put_full,
                                        Event::futex_wait_arm_fail,
                                        Event::kmalloc,
                                        Event::kfree,
                                        Event::kmem_cache_alloc,
                                        Event::kmem_cache_free,
                                        Event::kmem_cache_alloc_bulk,
                                        Event::bulk_objects,
                                        Event::kvmalloc,
                                        Event::slab_alloc_fast,
                                        Event::slab_alloc_slow,
                                        Event::slab_free_fast,
                                        Event::slab_free_slow,
                                        Event::allocate_slab,
                                        Event::free_slab,
                                        Event::list_lock,
                                        Event::memcg_post_alloc_hook,
                                        Event::memcg_charge,
                                        Event::page_counter_charge};
  return ev;
}

const MeasuredPoint* find_measured(const ReportOptions& o, const WorkloadResult& w,
                                   const PolicyResult& p) {
  if (!o.measured) return nullptr;
  for (const MeasuredPoint& m : *o.measured) {
    // A column's policy without its "@KERNEL" (the kernel is p.kernel).
    const std::string_view policy = std::string_view(p.policy).substr(0, p.policy.rfind('@'));
    if (m.scenario != w.scenario || m.kernel != p.kernel || m.policy != policy) continue;
    bool ok = true;
    for (const auto& [k, v] : m.params) {
      auto it = w.params.find(k);
      ok &= it != w.params.end() && it->second == v;
    }
    if (ok) return &m;
  }
  return nullptr;
}

bool table_shows_record(const ReportOptions& o) {
  return o.counts || o.phases || o.per_cache || o.latency || o.explain || o.perf_stat;
}

std::string format_table(const RunResult& r, const ReportOptions& o) {
  std::string out = format_summary(r, o);
  if (!table_shows_record(o)) return out;
  // The details: the whole run record, then each workload's views.
  out += fmt::format("\nsimcache {} (git {}): {} (kernel {}, seed {})\n", r.version,
                     r.record.git_commit.substr(0, 12), r.scenario, r.kernel, r.seed);
  out += wrap_words("  command:", r.record.command_line);
  if (!r.record.cost_profile.empty())
    out += fmt::format("  cost profile {}, sha256:\n    {}\n", r.record.cost_profile,
                       r.record.cost_profile_hash);
  for (const RunRecord::Input& in : r.record.inputs)
    out += fmt::format("  {} {}, sha256:\n    {}\n", in.role, in.path,
                       in.sha256.empty() ? "none (" + in.note + ")" : in.sha256);
  if (!r.record.compiled_in.empty()) {
    out += "  compiled in (sha256 of each table's source at build, first 16 digits):\n";
    for (const BuiltTable& t : r.record.compiled_in)
      out += fmt::format("    {:<36} {}\n", t.file, std::string_view(t.sha256).substr(0, 16));
  }
  for (size_t i = 0; i < r.policies.size(); ++i)
    out += fmt::format("  {} = {}\n", kNames[i], r.policies[i]);
  if (o.cost && (o.counts || o.phases)) {
    out += fmt::format("  time = counted events x costs of profile {} (docs/calibration.md)\n",
                       o.cost->name);
    out += "  [a, b]: 90% model-uncertainty interval (posterior of the profile's parameters;\n"
           "  * = rests mostly on priors); phase rows: time +- half that interval\n";
    if (o.cost->noise)
      out += "  noise +-: expected standard error of a measured mean, from the profile's\n"
             "  [noise] model (not the model's uncertainty); (n.s.): delta within that noise\n";
  }
  for (const auto& w : r.workloads) block(&out, r, w, o);
  if (o.explain && o.cost) out += format_explain(r, o);
  if (o.perf_stat) out += format_perf_stat(r, o);
  return out;
}

}  // namespace simcache::sim
