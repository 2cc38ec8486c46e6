// libFuzzer target: the ftrace / trace-cmd line parser (sim/replay/trace.h)
// on arbitrary bytes, line by line. A malformed line must come back as
// false with a column inside the line (or just past it) and a reason.
// The same bytes are then loaded as a background trace
// (sim/replay/background_trace.h): a one-line error, or a load whose
// events, objects and gaps are consistent. Last, a trace whose events ask
// for little work (fuzz_util.h, kMaxWork) replays through the model as
// `simcache replay` replays it, with KASAN histories and the end-of-run
// leak and invariant checks on.
// Seeds: fuzz/corpus/<target>/; run with scripts/fuzz.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "sim/replay/background_trace.h"
#include "sim/replay/replay.h"
#include "sim/replay/trace.h"

namespace {
using simcache::fuzz::add_work;
using simcache::fuzz::kMaxWork;

// What one event costs the model: itself, the bytes and pages it
// allocates, the ring entries and files it sets up; a marker, its op's.
uint64_t event_weight(const simcache::sim::TraceEvent& ev) {
  using namespace simcache::sim;
  uint64_t w = 1;
  auto big = [&](int64_t v, uint64_t unit) {
    if (v > 0) add_work(&w, static_cast<uint64_t>(v) / unit);
  };
  big(ev.bytes_req, 4096);
  big(ev.bytes_alloc, 4096);
  big(ev.sq, 1);
  big(ev.cq, 1);
  big(ev.nr_files, 1);
  if (ev.order > 12) add_work(&w, kMaxWork + 1);
  else if (ev.order > 0) add_work(&w, uint64_t{1} << ev.order);
  if (ev.kind == TraceKind::marker) {  // as scan_trace() reads it
    const size_t sp = ev.text.find(' ');
    OpKind k;
    Op op;
    OpNames names;
    std::string why;
    if (op_kind_by_name(ev.text.substr(0, sp), &k) &&
        parse_op_args(k, sp == std::string_view::npos ? "" : ev.text.substr(sp), 1, names, &op,
                      &why))
      add_work(&w, simcache::fuzz::op_weight(op));
  }
  return w;
}

// Replays the trace file as `simcache replay FILE` does (replay_cli.cc).
void replay(const std::string& path, size_t pick) {
  using namespace simcache::sim;
  TraceSummary s;
  std::string err;
  const bool ok = scan_trace(path, ReplayOptions{}, &s, &err);
  simcache::fuzz::check_error(ok, err);
  if (!ok || s.max_cpu >= 64) return;
  std::vector<std::pair<std::string, std::string>> sets;
  if (s.max_cpu >= 20) sets.emplace_back("cpus", std::to_string(s.max_cpu + 1));
  RunResult two;
  const bool ran = simcache::fuzz::run_model(trace_workload(s), sets, pick, &two);
  // One pass, as replay runs a regular file (docs/ops.md, "One pass"),
  // retried once assuming io_uring events: where its guess holds, the
  // first pass's summary and the same counts; where it fails, a line
  // that breaks it.
  for (bool assume = false;; assume = true) {
    auto sp = std::make_shared<SinglePass>();
    if (!open_trace(path, ReplayOptions{}, &sp->opened, &err)) std::abort();
    sp->assume_io_uring = assume;
    RunResult one;
    const bool one_ok = simcache::fuzz::run_model(trace_workload_single(sp), {}, pick, &one);
    if (sp->invalid) {
      if (s.markers || s.max_cpu >= kReplayMinCpus) return;
      if (!sp->retry_io_uring || assume || !s.io_uring) std::abort();
      continue;
    }
    if (one_ok != ran) std::abort();
    if (!one_ok) return;  // both refused alike (the request itself, before any line)
    if (s.markers || s.max_cpu >= kReplayMinCpus) std::abort();
    const TraceSummary& r = sp->result;
    if (!sp->done || r.lines != s.lines || r.events != s.events || r.skipped != s.skipped ||
        r.first_skipped != s.first_skipped || r.io_uring != s.io_uring)
      std::abort();
    const auto& a = two.workloads.at(0).policies.at(0);
    const auto& b = one.workloads.at(0).policies.at(0);
    for (size_t e = 0; e < simcache::kNumEvents; ++e)
      if (a.total.v[e] != b.total.v[e] || a.timed.v[e] != b.timed.v[e]) std::abort();
    if (a.metrics != b.metrics) std::abort();
    return;
  }
}

void check_background(const uint8_t* data, size_t size, uint64_t work) {
  using namespace simcache::sim;
  const std::string path = "/tmp/simcache-fuzz-bgtrace-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  BackgroundTrace t;
  std::string err;
  const bool ok = load_background_trace(path, &t, &err);
  if (work <= kMaxWork)
    replay(path, std::hash<std::string_view>{}(
                     std::string_view(reinterpret_cast<const char*>(data), size)));
  ::unlink(path.c_str());
  simcache::fuzz::check_error(ok, err);
  if (!ok) return;
  uint64_t events = 0;
  for (size_t c = 0; c < t.cpus.size(); ++c) {
    if (c && t.cpus[c].cpu <= t.cpus[c - 1].cpu) __builtin_trap();  // ascending, distinct
    uint64_t at = 0;
    for (const BgTraceOp& op : t.cpus[c].ops) {
      if (op.obj != BgTraceOp::kNoObj && op.obj >= t.objects) __builtin_trap();
      if (op.alloc && op.obj == BgTraceOp::kNoObj) __builtin_trap();
      at += op.gap_ns;
    }
    if (at + t.cpus[c].tail_ns != t.span_ns) __builtin_trap();
    events += t.cpus[c].ops.size();
  }
  if (events != t.events || events == 0 || events > BackgroundTrace::kMaxEvents) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  TraceEvent ev;
  uint64_t work = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    size_t col = 0;
    std::string why;
    if (!parse_trace_line(line, &ev, &col, &why)) {
      if (why.empty() || col == 0 || col > line.size() + 1) __builtin_trap();
    } else {
      // The marker payload must lie inside the line.
      if (ev.kind == TraceKind::marker &&
          (ev.text.data() < line.data() ||
           ev.text.data() + ev.text.size() > line.data() + line.size()))
        __builtin_trap();
      add_work(&work, event_weight(ev));
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  check_background(data, size, work);
  return 0;
}
