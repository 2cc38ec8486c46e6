// libFuzzer target: the op-format parser (sim/replay/ops.h) on arbitrary
// text, in memory and as a streamed file (the two must agree). It must
// return true or false with a "FILE:LINE:COL: why" message,
// never crash, hang or read out of bounds; a parsed program must print
// back (format_op) and reparse. A parsed program whose expanded work is
// small (fuzz_util.h, kMaxWork) then runs through the model as
// `simcache run-ops` runs it, with KASAN histories and the end-of-run
// leak and invariant checks on.
// Seeds: fuzz/corpus/<target>/; run with scripts/fuzz.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include <absl/container/flat_hash_map.h>

#include "fuzz/fuzz_util.h"
#include "sim/io/output.h"
#include "sim/replay/ops.h"

namespace {
using namespace simcache::sim;
using simcache::fuzz::add_work;
using simcache::fuzz::kMaxWork;

// The work of `nodes` with repeats multiplied out and macro calls
// expanded as OpExec expands them (depth <= 16), saturating at kMaxWork + 1.
// A call's work is memoized by depth, macro and arguments, as the parser's
// own count is: without it a body calling a macro twice re-expands a
// subtree per call (thousands of parses of megabyte arguments, a CI hang),
// although the parser accepted the program (its distinct expansions are
// capped at 64 MiB).
using Memo = absl::flat_hash_map<std::string, uint64_t>;
uint64_t work(const OpProgram& p, const std::vector<OpNode>& nodes, OpNames& names, int depth,
              Memo& memo) {
  uint64_t total = 0;
  for (const OpNode& n : nodes) {
    if (total > kMaxWork) break;
    if (n.kind == OpNode::kOp) {
      add_work(&total, 1);
      add_work(&total, simcache::fuzz::op_weight(n.op));
    } else if (n.kind == OpNode::kRepeat) {
      // At least one per iteration, as the parser counts: an empty body
      // still loops (`repeat 4294967296` of a `repeat 0` hung a run).
      const uint64_t body = std::max<uint64_t>(work(p, n.body, names, depth, memo), 1);
      if (n.count > 0)
        add_work(&total, static_cast<uint64_t>(n.count) > kMaxWork / body
                             ? kMaxWork + 1
                             : static_cast<uint64_t>(n.count) * body);
    } else {
      add_work(&total, 1);
      const auto m = p.macros.find(n.macro);
      if (depth >= 16 || m == p.macros.end()) continue;  // the run stops there
      std::string key = std::to_string(depth) + " " + n.macro;
      for (const auto& [k, v] : n.args) key += " " + k + "=" + v;
      if (auto it = memo.find(key); it != memo.end()) {
        add_work(&total, it->second);
        continue;
      }
      std::vector<OpNode> body;
      std::string err;
      uint64_t w = 0;
      if (parse_macro_body(m->second, p.file, n.args, names, &body, &err))
        w = work(p, body, names, depth + 1, memo);
      memo.emplace(std::move(key), w);
      add_work(&total, w);
    }
  }
  return total;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto prog = std::make_shared<OpProgram>();
  OpProgram& p = *prog;
  std::string err;
  // Macro expansion capped at 1 MiB, not 64: the same refusal, reached
  // sooner (each expansion is parsed again below and by the run).
  OpLimits limits;
  limits.max_expanded_bytes = uint64_t{1} << 20;
  const bool parsed = parse_op_program(text, "fuzz.ops", &p, &err, limits);
  if (!parsed && err.rfind("fuzz.ops:", 0) != 0) __builtin_trap();
  // The same bytes as a file, as run-ops reads one: streamed a piece at a
  // time (load_op_file), with the same verdict and the same message. A
  // byte-order mark is dropped by the file reader only.
  static const std::string path = "fuzz-" + std::to_string(getpid()) + ".ops";
  auto streamed = std::make_shared<OpProgram>();
  bool loaded = false;
  {
    std::string werr, lerr;
    if (!simcache::sim::write_file_atomic(path, std::string(text), &werr)) __builtin_trap();
    const ScopedOpLimits scoped(limits);
    loaded = load_op_file(path, streamed.get(), &lerr);
    std::remove(path.c_str());
    if (text.rfind("\xEF\xBB\xBF", 0) != 0) {
      if (loaded != parsed) __builtin_trap();
      if (!parsed && lerr != path + err.substr(8)) __builtin_trap();  // after "fuzz.ops"
    }
  }
  if (!parsed || !loaded) return 0;
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
  // Execute what was parsed, as run-ops does (sim/replay/emit.cc,
  // make_ops_workload), if it is small enough.
  OpNames scratch = p.names;
  Memo memo;
  if (work(p, p.nodes, scratch, 0, memo) > kMaxWork) return 0;
  CustomWorkload w;
  w.name = "run-ops";
  w.label = "run-ops fuzz.ops";
  w.run = [streamed](Env& env, const Params&, Recorder& rec, std::function<void()>*,
                     std::string* error) {
    OpExec ex(env, rec, streamed->names);
    return ex.run(*streamed, error);
  };
  simcache::fuzz::run_model(w, {}, std::hash<std::string_view>{}(text));
  return 0;
}
