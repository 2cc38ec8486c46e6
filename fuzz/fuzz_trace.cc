// libFuzzer target: the ftrace / trace-cmd line parser (sim/replay/trace.h)
// on arbitrary bytes, line by line. A malformed line must come back as
// false with a column inside the line (or just past it) and a reason.
// The same bytes are then loaded as a background trace
// (sim/replay/background_trace.h): a one-line error, or a load whose
// events, objects and gaps are consistent.
// Seeds: fuzz/corpus/<target>/; run with scripts/fuzz.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

#include "fuzz/fuzz_util.h"
#include "sim/replay/background_trace.h"
#include "sim/replay/trace.h"

namespace {
void check_background(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  const std::string path = "/tmp/simcache-fuzz-bgtrace-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  BackgroundTrace t;
  std::string err;
  const bool ok = load_background_trace(path, &t, &err);
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
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    size_t col = 0;
    std::string why;
    if (!parse_trace_line(line, &ev, &col, &why)) {
      if (why.empty() || col == 0 || col > line.size() + 1) __builtin_trap();
    } else if (ev.kind == TraceKind::marker) {
      // The marker payload must lie inside the line.
      if (ev.text.data() < line.data() || ev.text.data() + ev.text.size() > line.data() + line.size())
        __builtin_trap();
    }
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  check_background(data, size);
  return 0;
}
