// libFuzzer target: the op-format parser (sim/replay/ops.h) on arbitrary
// text. It must return true or false with a "FILE:LINE:COL: why" message,
// never crash, hang or read out of bounds; a parsed program must print
// back (format_op) and reparse.
// Seeds: fuzz/corpus/<target>/; run with scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/replay/ops.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  OpProgram p;
  std::string err;
  if (!parse_op_program(text, "fuzz.ops", &p, &err)) {
    if (err.rfind("fuzz.ops:", 0) != 0) __builtin_trap();
    return 0;
  }
  for (const OpNode& n : p.nodes) {
    if (n.kind != OpNode::kOp) continue;
    const std::string line = format_op(n.op, p.names);
    OpProgram q;
    q.names = p.names;
    if (!parse_op_program(line, "again.ops", &q, &err)) __builtin_trap();
  }
  // Macro bodies parse on call: try each with no arguments.
  for (const auto& [name, m] : p.macros) {
    std::vector<OpNode> body;
    parse_macro_body(m, "fuzz.ops", {}, p.names, &body, &err);
  }
  return 0;
}
