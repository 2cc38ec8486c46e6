// libFuzzer target: the ftrace / trace-cmd line parser (sim/replay/trace.h)
// on arbitrary bytes, line by line. A malformed line must come back as
// false with a column inside the line (or just past it) and a reason.
// Seeds: fuzz/corpus/<target>/; run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/replay/trace.h"

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
  return 0;
}
