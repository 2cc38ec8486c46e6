// The summary screen every table opens with (docs/output.md "Summary"):
// at most 40 lines of at most 80 columns. One row per workload: each
// policy's model time per op, the change against column A with its 90 %
// model interval, the measured change where a measured row maps (marked
// in-sample when the profile was fitted to that row), one memory line
// and one line saying what moved. A workload that compares a pair of its
// own (a preset's hypothesis) takes two lines. Everything else is behind
// the detail flags.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/io_uring/cqwait.h"
#include "model/kernel/machine.h"
#include "sim/cost/cost.h"
#include "sim/report/report.h"
#include "sim/report/table_layout.h"

namespace simcache::sim {

ShareInterval iowait_share(const CostModel& m, const Counters& round) {
  const uint64_t sleeps = round[Event::cqwait_sleep];
  const double frac =
      sleeps ? static_cast<double>(round[Event::cqwait_iowait]) / static_cast<double>(sleeps) : 0;
  return share_interval(m, iou::cqwait_idle_counts(round), round, frac);
}

bool iowait_share(const CostModel* m, const PolicyResult& p, ShareInterval* out) {
  const auto it = p.metrics.find("iowait_ppm");
  if (it == p.metrics.end()) return false;
  const double share = static_cast<double>(it->second) / 1e6;
  *out = {share, share, share, false};
  if (!m || p.rounds.empty()) return true;
  const ShareInterval si = iowait_share(*m, p.rounds.back());
  if (si.share > 0 && share > 0)
    *out = {share, share * si.lo / si.share, std::min(share * si.hi / si.share, 1.0),
            si.prior_based};
  return true;
}
namespace {

constexpr size_t kWidth = 80;

// A change in percent: two decimals below 1 %, one below 1000 %.
std::string pct(double d) {
  const double p = d * 100;
  return std::fabs(p) < 1 ? fmt::format("{:+.2f}%", p) : fmt::format("{:+.1f}%", p);
}

// "[-13.8,-7.9]": no decimals once a bound reaches 100 %.
std::string interval(const EffectInterval& e) {
  const int dec = std::max(std::fabs(e.lo), std::fabs(e.hi)) >= 1 ? 0 : 1;
  return fmt::format("[{:+.{}f},{:+.{}f}]{}", e.lo * 100, dec, e.hi * 100, dec,
                     e.prior_based ? "*" : "");
}

// Bytes, compact: exact below 10 KiB, then KiB / MiB with one decimal.
std::string bytes(int64_t b) {
  if (b < 10240) return fmt::format("{}B", b);
  if (b < 102400) return fmt::format("{:.1f}K", double(b) / 1024);
  if (b < 10 * 1048576) return fmt::format("{:.0f}K", double(b) / 1024);
  return fmt::format("{:.1f}M", double(b) / 1048576);
}

std::string num(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{}", int64_t(std::llround(v)));
  return fmt::format("{:.1f}", v);
}

// "  key text" folded at 80 columns under an indent of two.
std::string fold(const std::string& first, const std::string& text) {
  std::string out, line = first;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (line.size() + 1 + word.size() > kWidth && line.size() > 2)
      out += line + "\n", line = "   ";
    line += (line.empty() || line.back() == ' ' ? "" : " ") + word;
    i = j + 1;
  }
  return out + line + "\n";
}

int64_t metric(const PolicyResult& p, const char* m) {
  auto it = p.metrics.find(m);
  return it == p.metrics.end() ? 0 : it->second;
}

// The io_uring memory held at its highest snapshot: objects held by the
// tables and caches plus the caches' and tables' pointer arrays.
// The most the caches held: at any snapshot, and at the end of the last
// measured round (bytes_retained), so a run without snapshots still shows
// what it held.
int64_t peak_held(const PolicyResult& p) {
  const auto it = p.metrics.find("bytes_retained");
  int64_t peak = it == p.metrics.end() ? 0 : it->second;
  for (const Snapshot& s : p.snapshots)
    peak = std::max(peak, s.memory.payload_bytes + s.memory.pointer_array_bytes);
  return peak;
}

// The measured rows a profile was fitted to, per file: "FILE.tsv rows ID,
// ID..ID" in its parameters' sources, and for pooled sittings several such
// lists separated by "; " ("a.tsv rows X; b.tsv rows X@2": a row whose id
// an earlier file used carries "@K", stripped here, since the file read
// beside the model names it without). Ranges are of one prefix
// ("SF-001..SF-003").
struct Fitted {
  std::map<std::string, std::set<std::string>> ids;  // file -> row ids
};

Fitted fitted_rows(const CostModel& m) {
  Fitted f;
  // The fit's own list of every row (model_inadequacy_source, "fitted to
  // FILE rows ..."), and the rows each pinned parameter names.
  std::vector<std::string_view> sources = {m.inadequacy_source};
  for (const CostParam& p : m.params) sources.push_back(p.source);
  for (std::string_view sv : sources) {
    const std::string s(sv);
    for (size_t at = s.find(" rows "); at != std::string::npos; at = s.find(" rows ", at + 1)) {
      const size_t start = s.rfind(' ', at - 1);
      const std::string file = s.substr(start == std::string::npos ? 0 : start + 1,
                                        at - (start == std::string::npos ? 0 : start + 1));
      if (file.size() < 4 || file.substr(file.size() - 4) != ".tsv") continue;
      std::set<std::string>& ids = f.ids[file];
      size_t i = at + 6;
      while (i < s.size()) {
        size_t j = i;
        while (j < s.size() && s[j] != ',' && s[j] != ' ' && s[j] != '(' && s[j] != ';') ++j;
        std::string tok = s.substr(i, j - i);
        tok = tok.substr(0, tok.find('@'));
        const size_t dash = tok.find('-'), dots = tok.find("..");
        if (dash == std::string::npos || dash == 0) break;
        const std::string prefix = tok.substr(0, dash);
        if (dots == std::string::npos) {
          ids.insert(tok);
        } else {
          const std::string hi = tok.substr(dots + 2);
          const int a = std::atoi(tok.substr(dash + 1, dots - dash - 1).c_str());
          const size_t hd = hi.find('-');
          const int b = hd == std::string::npos ? a : std::atoi(hi.substr(hd + 1).c_str());
          const size_t digits = dots - dash - 1;
          for (int k = a; k <= b && k - a < 100000; ++k)
            ids.insert(fmt::format("{}-{:0{}}", prefix, k, digits));
        }
        if (j < s.size() && (s[j] == '(' || s[j] == ';')) break;
        while (j < s.size() && (s[j] == ',' || s[j] == ' ')) ++j;
        if (j < s.size() && (s[j] == '(' || s[j] == ';')) break;
        i = j;
      }
    }
  }
  return f;
}

bool in_sample_of(const Fitted& f, const ReportOptions& o, const MeasuredPoint& m) {
  const size_t slash = o.measured_file.find_last_of('/');
  const std::string file =
      slash == std::string::npos ? o.measured_file : o.measured_file.substr(slash + 1);
  const auto it = f.ids.find(file);
  if (it == f.ids.end()) return false;
  for (const std::string& id : m.ids)
    if (it->second.count(id)) return true;
  return false;
}

// What moved between column A and column i, per measured round, most
// telling first: the allocations of each phase where they moved from one
// phase to another, then allocator calls, objects allocated, cache hits,
// new slabs, memcg hooks, frees, list_lock acquisitions.
std::vector<std::string> moved(const WorkloadResult& w, size_t i) {
  const PolicyResult& a = w.policies[0];
  const PolicyResult& b = w.policies[i];
  const double ra = a.rounds.empty() ? 1.0 : double(a.rounds.size());
  const double rb = b.rounds.empty() ? 1.0 : double(b.rounds.size());
  auto allocs = [](const Counters& c) {
    return double(c[Event::kmalloc] + c[Event::kmem_cache_alloc] + c[Event::bulk_objects]);
  };
  std::vector<std::string> items;
  if (!a.phases.empty() && a.phases.size() == b.phases.size()) {
    std::string ph;
    bool down = false, up = false;
    for (size_t k = 0; k < a.phases.size(); ++k) {
      if (a.phases[k].first != b.phases[k].first) return {"phases differ"};
      const double x = allocs(a.phases[k].second) / ra, y = allocs(b.phases[k].second) / rb;
      down |= y < x, up |= y > x;
      if (x != y)
        ph += fmt::format("{}{} {}->{}", ph.empty() ? "allocs " : ", ", a.phases[k].first, num(x),
                          num(y));
    }
    if (down && up) items.push_back(ph);  // allocations moved between phases
  }
  auto per = [](const PolicyResult& p, double r, std::initializer_list<Event> evs) {
    uint64_t n = 0;
    for (Event e : evs) n += p.timed[e];
    return double(n) / r;
  };
  struct Item {
    const char* name;
    std::initializer_list<Event> evs;
  };
  const Item cand[] = {
      {"alloc calls", {Event::kmalloc, Event::kmem_cache_alloc, Event::kmem_cache_alloc_bulk}},
      {"allocs", {Event::kmalloc, Event::kmem_cache_alloc, Event::bulk_objects}},
      {"cache hits", {Event::node_cache_hit}},
      {"new slabs", {Event::allocate_slab}},
      {"memcg hooks", {Event::memcg_post_alloc_hook}},
      {"frees", {Event::kfree, Event::kmem_cache_free}},
      {"list_lock", {Event::list_lock}},
  };
  for (const Item& c : cand) {
    const double x = per(a, ra, c.evs), y = per(b, rb, c.evs);
    if (std::fabs(y - x) > 1e-9) items.push_back(fmt::format("{} {}->{}", c.name, num(x), num(y)));
  }
  if (!items.empty()) return items;
  // None of those moved: the counters that changed most, by name.
  std::vector<std::pair<double, std::string>> any;
  for (size_t e = 0; e < kNumEvents; ++e) {
    const double x = double(a.timed.v[e]) / ra, y = double(b.timed.v[e]) / rb;
    if (std::fabs(y - x) > 1e-9)
      any.push_back({-std::fabs(y - x) / std::max({x, y, 1.0}),
                     fmt::format("{} {}->{}", kEventInfo[e].name, num(x), num(y))});
  }
  std::stable_sort(any.begin(), any.end(),
                   [](const auto& p, const auto& q) { return p.first < q.first; });
  for (const auto& [rel, text] : any) items.push_back(text);
  return items;
}

// The moved line: each column's most telling change first, then further
// changes while the line stays within 80 columns.
std::string moved_line(const WorkloadResult& w) {
  const size_t n = w.policies.size();
  std::vector<std::vector<std::string>> items(n);
  std::vector<size_t> used(n, 0);
  for (size_t i = 1; i < n; ++i) items[i] = moved(w, i);
  auto line = [&] {
    std::string s = "  moved:";
    for (size_t i = 1; i < n; ++i) {
      s += fmt::format(" {}", kNames[i]);
      if (used[i] == 0) s += " no count changed";
      for (size_t k = 0; k < used[i]; ++k) s += (k ? ", " : " ") + items[i][k];
      if (i + 1 < n) s += ";";
    }
    return s;
  };
  for (size_t round = 0; round < 4; ++round)
    for (size_t i = 1; i < n; ++i)
      if (used[i] < items[i].size()) {
        ++used[i];
        if (line().size() > kWidth && used[i] > 1) --used[i];
      }
  // Many columns (wrapped into blocks above): the line folds too.
  return line().size() <= kWidth ? line() + "\n" : fold("  ", line().substr(2));
}

struct Ctx {
  const RunResult& r;
  const ReportOptions& o;
  Fitted fitted;
};

// The measured change of column i against A, "*" when in-sample; "-"
// where no row maps to one of the two.
std::string measured_change(const Ctx& c, const WorkloadResult& w, size_t i, bool* any) {
  const MeasuredPoint* m0 = find_measured(c.o, w, w.policies[0]);
  const MeasuredPoint* mi = find_measured(c.o, w, w.policies[i]);
  if (!m0 || !mi || m0->value_ns <= 0) return "-";
  *any = true;
  const bool ins = in_sample_of(c.fitted, c.o, *m0) || in_sample_of(c.fitted, c.o, *mi);
  return pct(mi->value_ns / m0->value_ns - 1) + (ins ? " in-sample" : "");
}

bool same_columns(const RunResult& r, const WorkloadResult& w) {
  if (w.policies.size() != r.policies.size()) return false;
  for (size_t i = 0; i < w.policies.size(); ++i)
    if (w.policies[i].policy != r.policies[i]) return false;
  return true;
}

// A policy by its letter where it is one of the run's columns.
std::string name_of(const RunResult& r, const std::string& policy) {
  for (size_t i = 0; i < r.policies.size(); ++i)
    if (r.policies[i] == policy) return std::string(1, kNames[i]);
  return policy;
}

// The full row of a workload on the run's columns: a grid of the columns
// (wrapped into blocks beyond what fits) and the memory and moved lines.
std::string grid(const Ctx& c, const WorkloadResult& w) {
  const auto& ps = w.policies;
  const std::string unit = w.time_unit.empty() ? "ns" : w.time_unit;
  std::vector<Row> rows;
  if (c.o.cost) {
    std::vector<PolicyTime> t;
    for (const PolicyResult& p : ps) t.push_back(policy_time(*c.o.cost, w, p));
    Row model{"  " + unit + "/" + w.op_unit, {}, {}}, vs{"  vs A", {}, {}}, meas{"  measured", {}, {}};
    bool any = false;
    for (size_t i = 0; i < ps.size(); ++i) {
      model.text.push_back(format_time_in(t[i].per_op_ns, unit));
      if (i == 0 || t[0].per_op_ns <= 0) {
        vs.text.push_back("");
        meas.text.push_back(i == 0 ? "" : "-");
        continue;
      }
      const EffectInterval e = effect_interval(*c.o.cost, t[0], t[i]);
      vs.text.push_back(pct(e.effect) + " " + interval(e));
      meas.text.push_back(measured_change(c, w, i, &any));
    }
    rows.push_back(model);
    if (ps.size() > 1) rows.push_back(vs);
    if (any) rows.push_back(meas);
  }
  Row mem{"  memory", {}, {}};
  for (const PolicyResult& p : ps)
    mem.text.push_back(fmt::format("{}/{}/{}", bytes(metric(p, "bytes_retained")),
                                   metric(p, "nodes_unused"), bytes(peak_held(p))));
  rows.push_back(mem);
  // seed 003: the waiting CPU's share of I/O-wait idle (priced runs),
  // with its interval where the cost model gives one.
  Row iowait{"  iowait %", {}, {}};
  bool has_iowait = false;
  for (const PolicyResult& p : ps) {
    ShareInterval si;
    if (!iowait_share(c.o.cost, p, &si)) {
      iowait.text.push_back("-");
      continue;
    }
    has_iowait = true;
    std::string text = fmt::format("{:.1f}", si.share * 100);
    if (si.hi > si.lo)
      text += fmt::format(" [{:.1f},{:.1f}]{}", si.lo * 100, si.hi * 100,
                          si.prior_based ? "*" : "");
    iowait.text.push_back(text);
  }
  if (has_iowait) rows.push_back(iowait);
  std::string body;
  render(&body, rows, ps.size());
  // The workload's label goes into the first header line, left of the
  // column names, where it fits; else on a line of its own.
  std::string out;
  const size_t nl = body.find('\n');
  const std::string head = body.substr(0, nl);
  const size_t first = head.find_first_not_of(' ');
  if (first != std::string::npos && w.label.size() + 2 <= first)
    out = w.label + head.substr(w.label.size()) + body.substr(nl);
  else
    out = w.label + "\n" + body;
  if (ps.size() > 1) out += moved_line(w);
  if (!w.note.empty()) out += fold("  ", w.note);
  return out;
}

bool memory_zero(const WorkloadResult& w) {
  for (const PolicyResult& p : w.policies)
    if (metric(p, "bytes_retained") || metric(p, "nodes_unused") || peak_held(p)) return false;
  return true;
}

// The compact form of workloads on two columns, for runs whose grids
// would not fit on one screen: a row of model values and the change, then
// one line of the measured change, memory and what moved.
std::string compact(const Ctx& c, const std::vector<const WorkloadResult*>& ws) {
  size_t label = 10;
  for (const WorkloadResult* w : ws) label = std::max(label, std::min<size_t>(w->label.size(), 34));
  const WorkloadResult& w0 = *ws[0];
  const std::string unit = w0.time_unit.empty() ? "ns" : w0.time_unit;
  std::string out;
  if (c.o.cost)
    out += fmt::format("{:<{}} {:>10} {:>10}  B vs A [90%]\n", "", label, "A " + unit + "/" + w0.op_unit,
                       "B");
  bool zero = true;
  for (const WorkloadResult* w : ws) zero &= memory_zero(*w);
  for (const WorkloadResult* w : ws) {
    const std::string wu = w->time_unit.empty() ? "ns" : w->time_unit;
    std::string row = w->label.size() > label ? w->label + "\n" + std::string(label, ' ') : fmt::format("{:<{}}", w->label, label);
    std::string extra;
    if (c.o.cost) {
      const PolicyTime t0 = policy_time(*c.o.cost, *w, w->policies[0]);
      const PolicyTime t1 = policy_time(*c.o.cost, *w, w->policies[1]);
      row += fmt::format(" {:>10} {:>10}", format_time_in(t0.per_op_ns, wu), format_time_in(t1.per_op_ns, wu));
      if (t0.per_op_ns > 0) {
        const EffectInterval e = effect_interval(*c.o.cost, t0, t1);
        row += "  " + pct(e.effect) + " " + interval(e);
        bool any = false;
        const std::string m = measured_change(c, *w, 1, &any);
        if (any) extra += "measured " + m + "; ";
      }
    }
    if (!zero && !memory_zero(*w)) {
      extra += "memory";
      for (size_t i = 0; i < w->policies.size(); ++i)
        extra += fmt::format(" {} {}/{}/{}", kNames[i], bytes(metric(w->policies[i], "bytes_retained")),
                             metric(w->policies[i], "nodes_unused"), bytes(peak_held(w->policies[i])));
      extra += "; ";
    }
    out += row + "\n";
    std::string line = moved_line(*w);  // "  moved: ...\n"
    if (!extra.empty()) {
      if (extra.size() + line.size() <= kWidth + 1) line = "  " + extra + line.substr(2);
      else line = "  " + extra.substr(0, extra.size() - 2) + "\n" + line;
    }
    out += line;
  }
  if (zero) out += "memory: no column retains, idles or holds io_uring memory in any row\n";
  return out;
}

// A workload comparing a pair of its own (a preset's hypothesis): two
// lines, its change (the label's "hypothesis: " moved to the second line)
// and the pair with the workload's note.
std::string pair_rows(const Ctx& c, const WorkloadResult& w) {
  const auto& ps = w.policies;
  std::string label = w.label, kind;
  if (label.rfind("hypothesis: ", 0) == 0) label = label.substr(12), kind = "hypothesis: ";
  std::string nums;
  if (c.o.cost && ps.size() >= 2) {
    const PolicyTime t0 = policy_time(*c.o.cost, w, ps[0]);
    const PolicyTime t1 = policy_time(*c.o.cost, w, ps[1]);
    if (t0.per_op_ns > 0) {
      const EffectInterval e = effect_interval(*c.o.cost, t0, t1);
      bool any = false;
      const std::string m = measured_change(c, w, 1, &any);
      nums = fmt::format("{} {}", pct(e.effect), interval(e));
      if (any) nums += ", measured " + m;
    }
  } else if (ps.size() >= 2) {
    const std::vector<std::string> m = moved(w, 1);
    nums = m.empty() ? "no count changed" : m[0];
  }
  std::string out = label + ": " + nums;
  if (out.size() > kWidth) out = label + "\n  " + nums;
  std::string pair = "  " + kind;
  for (size_t i = ps.size(); i-- > 0;)
    pair += name_of(c.r, ps[i].policy) + (i ? " vs " : "");
  std::string note = w.note;
  if (note.rfind("RFC measured: ", 0) == 0) note = "RFC: " + note.substr(14);
  if (!note.empty()) pair += "; " + note;
  out += "\n" + (pair.size() <= kWidth ? pair + "\n" : fold("  ", pair.substr(2)));
  return out;
}

// What makes a run not measure what it names, whatever the views: failed
// operations, injected faults, KASAN reports (the detail views and JSON
// carry them in full).
std::string troubles(const RunResult& r) {
  std::string out;
  for (const WorkloadResult& w : r.workloads) {
    size_t kasan = 0;
    for (size_t i = 0; i < w.policies.size(); ++i) {
      const PolicyResult& p = w.policies[i];
      kasan += p.kasan.size();
      std::string fails, faults;
      for (const auto& [e, n] : p.failures) fails += fmt::format(" {} x -{}", n, e);
      for (const auto& [pt, n] : p.faults_injected) faults += fmt::format(" {}={}", pt, n);
      if (!fails.empty()) out += fold("", fmt::format("{}: FAILED {}:{}", w.label, kNames[i], fails));
      if (!faults.empty())
        out += fold("", fmt::format("{}: faults injected {}:{}", w.label, kNames[i], faults));
    }
    if (kasan)
      out += fold("", fmt::format("{}: KASAN: {} report(s) (--counts: the first; JSON: all)",
                                   w.label, kasan));
  }
  return out;
}

}  // namespace

bool measured_in_sample(const ReportOptions& o, const MeasuredPoint& m) {
  return o.cost && in_sample_of(fitted_rows(*o.cost), o, m);
}

std::string format_summary(const RunResult& r, const ReportOptions& o) {
  Ctx c{r, o, o.cost ? fitted_rows(*o.cost) : Fitted{}};
  // The digest: what reproduces the run (the whole record: --record, JSON).
  const std::string commit = r.record.git_commit.substr(0, 12);
  std::string out;
  // Shorter forms until it fits: the profile hash to 8 digits, no
  // "simcache", no profile name; never without the hash.
  // The machine row, where it is not the default one.
  std::string machine;
  for (const auto& [k, v] : r.record.machine)
    if (k == "name" && v != iou::kDefaultMachine) machine = " on " + v;
  for (int form = 0; form < 4; ++form) {
    out = fmt::format("{}{} {}{} seed {} git {}", form < 2 ? "simcache " : "", r.scenario, r.kernel,
                      machine, r.seed, commit);
    if (!r.record.cost_profile.empty())
      out += fmt::format(" {}sha256:{}", form < 3 ? r.record.cost_profile + " " : "",
                         r.record.cost_profile_hash.substr(0, form == 0 ? 12 : 8));
    if (out.size() <= kWidth) break;
  }
  out += "\n";
  std::string cols;
  for (size_t i = 0; i < r.policies.size(); ++i)
    cols += fmt::format("{}{} {}", i ? ", " : "", kNames[i], r.policies[i]);
  out += fold("  ", cols);  // "  A unpatched, B ..."
  if (o.cost)
    out += "  model time per op; vs A: change [90% model interval, * on priors];\n"
           "  in-sample: the profile was fitted to that row; memory: retained/idle/peak\n";
  std::vector<const WorkloadResult*> own, mine;
  for (const WorkloadResult& w : r.workloads) (same_columns(r, w) ? mine : own).push_back(&w);
  std::string rows;
  for (const WorkloadResult* w : mine) rows += grid(c, *w);
  size_t lines = 0;
  for (char ch : out + rows) lines += ch == '\n';
  // Grids that would not fit on a screen: two columns take the compact form.
  if (lines + 2 * own.size() > 40 && r.policies.size() == 2 && !mine.empty()) rows = compact(c, mine);
  out += rows;
  for (const WorkloadResult* w : own) out += pair_rows(c, *w);
  out += troubles(r);
  return out;
}

}  // namespace simcache::sim
