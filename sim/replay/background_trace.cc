// Background load from a kmem trace (background_trace.h).
#include "sim/replay/background_trace.h"

#include <algorithm>
#include <map>
#include <memory>

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include "model/kernel/policy.h"
#include "sim/io/input.h"
#include "sim/replay/trace.h"
#include "sim/replay/trace_dat.h"

namespace simcache::sim {
namespace {

// The field a parse error is about: "no ptr= field" names it, otherwise
// the key of the blank-separated token at the error's column.
std::string field_at(std::string_view line, size_t col, const std::string& why) {
  if (why.rfind("no ", 0) == 0) {
    const std::string w = why.substr(3, why.find_first_of("= ", 3) - 3);
    return w.empty() ? "event" : w;
  }
  size_t b = std::min(col ? col - 1 : 0, line.size());
  while (b > 0 && line[b - 1] != ' ' && line[b - 1] != '\t') --b;
  size_t e = b;
  while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != '=') ++e;
  std::string f(line.substr(b, std::min<size_t>(e - b, 40)));
  while (!f.empty() && f.back() == ':') f.pop_back();
  return f.empty() ? "event" : f;
}

struct Loader {
  BackgroundTrace* out;
  std::map<uint32_t, size_t> by_cpu;               // traced CPU -> out->cpus index
  std::vector<int64_t> last_ts;                     // per out->cpus index
  absl::flat_hash_map<uint64_t, uint32_t> live;    // pointer -> object, while the trace holds it
  int64_t first_ts = -1, end_ts = -1;

  BgTraceCpu& cpu(uint32_t c) {
    auto [it, fresh] = by_cpu.emplace(c, out->cpus.size());
    if (fresh) {
      out->cpus.push_back(BgTraceCpu{c, 0, {}});
      last_ts.push_back(first_ts);
    }
    return out->cpus[it->second];
  }

  void add(const TraceEvent& ev) {
    if (first_ts < 0) first_ts = ev.ts_ns;
    end_ts = std::max(end_ts, ev.ts_ns);
    BgTraceCpu& c = cpu(ev.cpu);
    int64_t& last = last_ts[by_cpu[ev.cpu]];
    // load_background_trace() refuses a step back in time: gaps are >= 0.
    BgTraceOp op{static_cast<uint64_t>(ev.ts_ns - last), 0, 0, BgTraceOp::kNoObj};
    last = ev.ts_ns;
    if (ev.kind == TraceKind::kmalloc || ev.kind == TraceKind::kmem_cache_alloc) {
      op.alloc = 1;
      op.size = static_cast<uint32_t>(ev.bytes_req >= 0 ? ev.bytes_req : ev.bytes_alloc);
      op.obj = out->objects++;
      if (ev.ptr) live[ev.ptr] = op.obj;  // a NULL result is allocated, never freed
    } else if (auto it = live.find(ev.ptr); ev.ptr && it != live.end()) {
      op.obj = it->second;
      live.erase(it);
    }
    c.ops.push_back(op);
    ++out->events;
  }

  void finish() {
    std::sort(out->cpus.begin(), out->cpus.end(),
              [](const BgTraceCpu& a, const BgTraceCpu& b) { return a.cpu < b.cpu; });
    for (BgTraceCpu& c : out->cpus) {
      int64_t last = first_ts;
      for (const BgTraceOp& op : c.ops) last += static_cast<int64_t>(op.gap_ns);
      c.tail_ns = static_cast<uint64_t>(std::max<int64_t>(0, end_ts - last));
    }
    out->span_ns = static_cast<uint64_t>(end_ts - first_ts);
  }
};

// The records a trace.dat may have (every event, kmem or not, is rendered
// before the kmem ones are counted against kMaxEvents): the replay budget.
constexpr uint64_t kMaxDatRecords = 1'000'000'000;

bool is_kmem_object(TraceKind k) {
  return k == TraceKind::kmalloc || k == TraceKind::kmem_cache_alloc || k == TraceKind::kfree ||
         k == TraceKind::kmem_cache_free;
}

}  // namespace

bool load_background_trace(const std::string& path, BackgroundTrace* out, std::string* error) {
  const std::string epath = iou::escape_controls(path);  // the messages stay one line
  auto src = InputSource::open(path, "the background trace", error);
  if (!src) return false;
  // A trace.dat: its records as text, line N being record N ("FILE:record N").
  const bool dat = is_trace_dat(*src);
  if (dat && !(src = trace_dat_as_text(*src, kMaxDatRecords, error))) return false;
  const std::string_view at = dat ? ":record " : ":";
  LineInput r(src);
  *out = BackgroundTrace{};
  out->file = path;
  Loader l{out, {}, {}, {}};
  std::string_view line;
  TraceEvent ev;
  while (r.next(&line)) {
    size_t col = 1;
    std::string why;
    if (!parse_trace_line(line, &ev, &col, &why))
      return *error = fmt::format("{}{}{}: field '{}': {} (column {})", epath, at, r.line_no(),
                                  iou::escape_controls(field_at(line, col, why)),
                                  iou::escape_controls(why.substr(0, 400)), col),
             false;
    if (!is_kmem_object(ev.kind)) continue;
    if (ev.ts_ns < 0)
      return *error = fmt::format("{}{}{}: field 'timestamp': more than 9 digits of seconds", epath,
                                  at, r.line_no()),
             false;
    const int64_t size = ev.bytes_req >= 0 ? ev.bytes_req : ev.bytes_alloc;
    if (!(ev.kind == TraceKind::kfree || ev.kind == TraceKind::kmem_cache_free) &&
        size > INT32_MAX)
      return *error = fmt::format("{}{}{}: field 'bytes_req': {} bytes is more than the model's "
                                  "2 GiB",
                                  epath, at, r.line_no(), size),
             false;
    if (l.end_ts >= 0 && ev.ts_ns < l.end_ts)
      return *error = fmt::format("{}{}{}: field 'timestamp': earlier than an event before it (a "
                                  "background trace must be in time order, as ftrace and "
                                  "trace-cmd report print it)",
                                  epath, at, r.line_no()),
             false;
    if (l.by_cpu.size() == BackgroundTrace::kMaxCpus && !l.by_cpu.count(ev.cpu))
      return *error = fmt::format("{}{}{}: field 'cpu': more than {} traced CPUs", epath,
                                  at, r.line_no(), BackgroundTrace::kMaxCpus),
             false;
    if (out->events == BackgroundTrace::kMaxEvents)
      return *error = fmt::format("{}{}{}: more than {} kmem events (the background trace's limit)",
                                  epath, at, r.line_no(), BackgroundTrace::kMaxEvents),
             false;
    l.add(ev);
  }
  if (r.failed()) return *error = r.error(), false;
  if (out->events == 0)
    return *error = fmt::format("{}: no kmalloc, kmem_cache_alloc, kfree or kmem_cache_free "
                                "events (a background trace replays those)",
                                epath),
           false;
  l.finish();
  return true;
}

bool attach_background_trace(RunRequest* req, std::string* error) {
  auto t = std::make_shared<BackgroundTrace>();
  if (!load_background_trace(req->background_trace, t.get(), error)) return false;
  req->bg_trace = std::move(t);
  return true;
}

}  // namespace simcache::sim
