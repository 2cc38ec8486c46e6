// The op format's file structure: task declarations, repeat blocks and
// macros (docs/ops.md). Lines stay small; the tree is what OpExec runs.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "model/io_uring/ctx.h"
#include "model/kernel/policy.h"
#include "sim/io/input.h"
#include "sim/replay/ops.h"
#include "sim/replay/text.h"

namespace simcache::sim {
namespace {

constexpr int64_t kMaxRepeat = int64_t{1} << 32;
constexpr int64_t kMaxCpu = 4095;

struct Tok {
  std::string_view text;
  size_t col;  // 1-based
};

// Splits on blanks up to a '#' comment, into `out` (its capacity reused);
// at most `limit` tokens.
void tokens(std::string_view line, std::vector<Tok>* to, size_t limit = SIZE_MAX) {
  std::vector<Tok>& out = *to;
  out.clear();
  size_t i = 0;
  while (i < line.size() && out.size() < limit) {
    const char c = line[i];
    if (c == '#') break;
    if (c == ' ' || c == '\t' || c == '\r') { ++i; continue; }
    size_t e = i;
    while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != '\r' &&
           line[e] != '#')
      ++e;
    out.push_back({line.substr(i, e - i), i + 1});
    i = e;
  }
}
std::vector<Tok> tokens(std::string_view line) {
  std::vector<Tok> out;
  tokens(line, &out);
  return out;
}

struct Parser {
  const std::string& file;
  OpNames& names;
  OpProgram* prog = nullptr;  // top level only: `unit`
  absl::flat_hash_map<std::string, OpMacro>* macros;  // null inside a macro body
  std::string* error;
  std::vector<std::vector<Tok>> tok_bufs = {};  // one per block depth, kept between lines
  std::string last_task = {};                    // the last op line's task and its index
  int32_t last_task_ix = -1;

  bool fail(uint32_t line, size_t col, const std::string& msg) {
    *error = fmt::format("{}:{}:{}: {}", file, line, col, msg);
    return false;
  }

  bool task_line(uint32_t ln, const std::vector<Tok>& t) {
    if (t.size() < 2 || t[1].text.find('=') != std::string_view::npos)
      return fail(ln, t[0].col, "task needs a name: task NAME [memcg=root|user]");
    bool user = default_user_task(t[1].text);
    for (size_t i = 2; i < t.size(); ++i) {
      if (t[i].text == "memcg=user") user = true;
      else if (t[i].text == "memcg=root") user = false;
      else return fail(ln, t[i].col, fmt::format("'{}': expected memcg=root or memcg=user", t[i].text));
    }
    const uint16_t ix = names.task(t[1].text, user);
    names.tasks[ix].user = user;
    return true;
  }

  bool op_line(uint32_t ln, std::string_view line, const std::vector<Tok>& t, OpNode* n) {
    int64_t cpu = 0;
    std::string why;
    if (!parse_field("cpu", t[0].text, 0, kMaxCpu, &cpu, &why)) {
      if (why.find("is outside") != std::string::npos) return fail(ln, t[0].col, why);
      return fail(ln, t[0].col, fmt::format("'{}': expected a CPU number, or task, repeat, "
                                            "define, call, end", t[0].text));
    }
    if (t.size() < 3) return fail(ln, t[0].col, "expected CPU TASK OP [key=value]...");
    OpKind k;
    if (!op_kind_by_name(t[2].text, &k))
      return fail(ln, t[2].col, fmt::format("unknown operation '{}'", t[2].text));
    n->kind = OpNode::kOp;
    n->line = ln;
    n->op.cpu = static_cast<CpuId>(cpu);
    if (t[1].text != last_task || last_task_ix < 0)  // files run one task for long stretches
      last_task.assign(t[1].text), last_task_ix = names.task(t[1].text);
    n->op.task = static_cast<uint16_t>(last_task_ix);
    const size_t rest = t[2].col - 1 + t[2].text.size();
    std::string_view args = line.substr(rest);
    if (size_t h = args.find('#'); h != std::string_view::npos) args = args.substr(0, h);
    if (!parse_op_args(k, args, rest + 1, names, &n->op, &why)) {
      const size_t colon = why.find(':');
      return fail(ln, std::stoul(why.substr(0, colon)), why.substr(colon + 2));
    }
    return true;
  }

  // Parses lines[i..] into `out` until an `end` (inside a block) or the end.
  bool block(const std::vector<std::pair<uint32_t, std::string_view>>& lines, size_t* i,
             std::vector<OpNode>* out, int depth, uint32_t opened) {
    if (tok_bufs.size() <= static_cast<size_t>(depth)) tok_bufs.resize(17);  // depth <= 16
    std::vector<Tok>& t = tok_bufs[static_cast<size_t>(depth)];
    for (; *i < lines.size(); ++*i) {
      const auto [ln, line] = lines[*i];
      tokens(line, &t, 3);  // an op line needs CPU TASK OP: parse_op_args reads the rest
      if (t.empty()) continue;
      const std::string_view w = t[0].text;
      if (w == "task" || w == "unit" || w == "repeat" || w == "define" || w == "call" ||
          w == "end")
        tokens(line, &t);
      if (w == "end") {
        if (depth == 0) return fail(ln, t[0].col, "'end' without repeat or define");
        return true;
      }
      if (w == "task") {
        if (!task_line(ln, t)) return false;
      } else if (w == "unit") {
        if (!prog || t.size() < 2 || t.size() > 3 ||
            (t.size() == 3 && t[2].text != "ns" && t[2].text != "us"))
          return fail(ln, t[0].col, "expected unit OP_UNIT [ns|us] (top level)");
        prog->op_unit = std::string(t[1].text);
        if (t.size() == 3) prog->time_unit = std::string(t[2].text);
      } else if (w == "repeat") {
        int64_t n = 0;
        std::string why;
        if (t.size() != 2) return fail(ln, t[0].col, "expected repeat N (0..2^32)");
        if (!parse_field("repeat", t[1].text, 0, kMaxRepeat, &n, &why)) {
          if (why.find("is outside") != std::string::npos) return fail(ln, t[1].col, why);
          return fail(ln, t[0].col, "expected repeat N (0..2^32)");
        }
        if (depth >= 16) return fail(ln, t[0].col, "repeat nested deeper than 16");
        OpNode r;
        r.kind = OpNode::kRepeat, r.line = ln, r.count = n;
        ++*i;
        if (!block(lines, i, &r.body, depth + 1, ln)) return false;
        out->push_back(std::move(r));
      } else if (w == "define") {
        if (!macros || depth > 0) return fail(ln, t[0].col, "define only at the top level");
        if (t.size() != 2) return fail(ln, t[0].col, "expected define NAME");
        if (!macro(lines, i, std::string(t[1].text))) return false;
      } else if (w == "call") {
        if (t.size() < 2) return fail(ln, t[0].col, "expected call NAME [key=value]...");
        OpNode c;
        c.kind = OpNode::kCall, c.line = ln, c.macro = std::string(t[1].text);
        for (size_t k = 2; k < t.size(); ++k) {
          const size_t eq = t[k].text.find('=');
          if (eq == std::string_view::npos || eq == 0)
            return fail(ln, t[k].col, fmt::format("'{}': expected key=value", t[k].text));
          c.args.emplace_back(t[k].text.substr(0, eq), t[k].text.substr(eq + 1));
        }
        if (macros && !macros->contains(c.macro))
          return fail(ln, t[1].col, fmt::format("unknown macro '{}'", c.macro));
        out->push_back(std::move(c));
      } else {
        OpNode n;
        if (!op_line(ln, line, t, &n)) return false;
        out->push_back(std::move(n));
      }
    }
    if (depth > 0) return fail(opened, 1, "repeat without 'end'");
    return true;
  }

  bool macro(const std::vector<std::pair<uint32_t, std::string_view>>& lines, size_t* i,
             std::string name) {
    OpMacro m;
    m.line = lines[*i].first;
    int nest = 0;
    for (++*i; *i < lines.size(); ++*i) {
      const std::vector<Tok> t = tokens(lines[*i].second);
      if (!t.empty() && t[0].text == "repeat") ++nest;
      if (!t.empty() && t[0].text == "define")
        return fail(lines[*i].first, t[0].col, "define inside define");
      if (!t.empty() && t[0].text == "end" && nest-- == 0) {
        if (!macros->emplace(name, std::move(m)).second)
          return fail(lines[*i].first, 1, fmt::format("macro '{}' defined twice", name));
        return true;
      }
      m.lines.emplace_back(lines[*i].first, std::string(lines[*i].second));
    }
    return fail(m.line, 1, fmt::format("define {} without 'end'", name));
  }
};

std::vector<std::pair<uint32_t, std::string_view>> split_lines(std::string_view text) {
  std::vector<std::pair<uint32_t, std::string_view>> out;
  uint32_t ln = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    out.emplace_back(++ln, text.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

}  // namespace

bool default_user_task(std::string_view name) {
  for (std::string_view k : {"kworker", "ksoftirqd", "swapper", "<idle>", "rcu_", "migration/",
                             "kthreadd", "iou-", "kcompactd", "kswapd"})
    if (name.rfind(k, 0) == 0) return false;
  return true;
}

namespace {

using Big = unsigned __int128;
constexpr Big kCountCap = Big{1} << 100;  // far above any budget: counts saturate here
Big sat_add(Big a, Big b) { return a + b > kCountCap ? kCountCap : a + b; }  // a, b <= cap
Big sat_mul(Big a, Big b) {
  if (a == 0 || b == 0) return 0;
  return a > kCountCap / b ? kCountCap : a * b;
}

std::string big_text(Big v) {
  if (v >= kCountCap) return "more than 2^100";
  std::string out;
  do out.insert(out.begin(), static_cast<char>('0' + static_cast<int>(v % 10))), v /= 10;
  while (v);
  return out;
}

thread_local OpLimits tl_limits;

// Counts what OpExec::run would execute: repeats multiply their body,
// calls expand their macro (parsed with the call's arguments, as OpExec
// does, into scratch names) at depth + 1, up to the same depth of 16.
struct OpCounter {
  const OpProgram& p;
  std::string* error;
  OpNames scratch;
  absl::flat_hash_map<std::string, Big> memo;  // "depth macro k=v..." -> count
  uint64_t expanded = 0;                        // bytes of macro text expanded so far
  uint64_t max_expanded = OpLimits{}.max_expanded_bytes;

  static Big weight(const Op& op) {
    if (op.kind != OpKind::nop) return 1;
    return static_cast<uint64_t>(
        std::clamp<int64_t>(op.n, 1, static_cast<int64_t>(iou::IORING_MAX_ENTRIES)));
  }

  bool nodes(const std::vector<OpNode>& ns, int depth, Big* out) {
    Big total = 0;
    for (const OpNode& n : ns) {
      Big c = 0;
      if (!node(n, depth, &c)) return false;
      total = sat_add(total, c);
    }
    *out = total;
    return true;
  }

  bool node(const OpNode& n, int depth, Big* out) {
    if (n.kind == OpNode::kOp) return *out = weight(n.op), true;
    if (n.kind == OpNode::kRepeat) {
      if (n.count == 0) return *out = 0, true;  // never runs: nothing in it is reached
      Big body = 0;
      if (!nodes(n.body, depth, &body)) return false;
      // An iteration that does nothing (a body of `repeat 0` blocks, a
      // call of an empty macro) still costs the loop: one each.
      return *out = sat_mul(std::max<Big>(body, 1), static_cast<uint64_t>(n.count)), true;
    }
    if (depth >= 16)
      return *error = fmt::format("{}:{}:1: macro calls nested deeper than 16", p.file, n.line),
             false;
    auto m = p.macros.find(n.macro);
    if (m == p.macros.end())
      return *error = fmt::format("{}:{}:1: unknown macro '{}'", p.file, n.line, n.macro), false;
    std::string key = fmt::format("{} {}", depth, n.macro);
    for (const auto& [k, v] : n.args) key += " " + k + "=" + v;
    if (auto it = memo.find(key); it != memo.end()) return *out = it->second, true;
    // What this expansion costs to parse (and OpExec to keep): bounded, so
    // calls whose arguments grow with every level cannot blow up.
    size_t longest = 0;
    for (const auto& [k, v] : n.args) longest = std::max(longest, v.size());
    uint64_t bytes = key.size();
    for (const auto& [ln, text] : m->second.lines)
      bytes += text.size() + longest * static_cast<uint64_t>(std::count(text.begin(), text.end(), '$'));
    expanded += bytes;
    if (expanded > max_expanded)
      return *error = fmt::format("{}:{}:1: macro expansion passes {} bytes (calls with distinct "
                                  "arguments, each level counted)",
                                  p.file, n.line, max_expanded),
             false;
    std::vector<OpNode> body;
    if (!parse_macro_body(m->second, p.file, n.args, scratch, &body, error)) return false;
    Big c = 0;
    if (!nodes(body, depth + 1, &c)) return false;
    c = std::max<Big>(c, 1);  // a call that expands to nothing still runs: one
    memo.emplace(std::move(key), c);
    return *out = c, true;
  }
};

}  // namespace

const OpLimits& current_op_limits() { return tl_limits; }
ScopedOpLimits::ScopedOpLimits(const OpLimits& l) : saved_(tl_limits) { tl_limits = l; }
ScopedOpLimits::~ScopedOpLimits() { tl_limits = saved_; }

bool parse_op_program(std::string_view text, const std::string& file, OpProgram* out,
                      std::string* error) {
  return parse_op_program(text, file, out, error, current_op_limits());
}

namespace {
bool parse_unescaped(std::string_view text, const std::string& file, OpProgram* out,
                     std::string* error, const OpLimits& limits);
}  // namespace

// Errors quote the file's own bytes (a key, a macro argument): control
// characters in them are escaped here, once, so every error is one line.
bool parse_op_program(std::string_view text, const std::string& file, OpProgram* out,
                      std::string* error, const OpLimits& limits) {
  if (parse_unescaped(text, file, out, error, limits)) return true;
  *error = iou::escape_controls(*error);
  return false;
}

namespace {

// One top-level piece of an op file: a line, or a `define` or `repeat`
// block through its `end` (to the end of the file when it has none, where
// the parser reports it). The file is parsed and run a piece at a time,
// so only blocks are ever held whole, never the file.
struct Chunk {
  enum Kind { kOther, kDefine, kDecl } kind = kOther;  // kDecl: task, unit
  std::vector<std::pair<uint32_t, std::string_view>> lines;
  std::vector<std::string> store;  // the lines' bytes; capacity kept between pieces
  std::vector<Tok> first;          // a line's first token

  // Reads the next piece from next(&line_no, &line); false at the end.
  template <class Next>
  bool read(Next&& next) {
    lines.clear();
    kind = kOther;
    int nest = 0;
    uint32_t ln = 0;
    std::string_view line;
    // The views are taken once the piece is whole: store may grow (and
    // move its short strings) while it is read.
    auto done = [&] {
      for (size_t k = 0; k < lines.size(); ++k) lines[k].second = store[k];
      return !lines.empty();
    };
    while (next(&ln, &line)) {
      tokens(line, &first, 1);
      const std::string_view w = first.empty() ? std::string_view() : first[0].text;
      if (lines.empty() && w.empty()) continue;  // blank or comment between pieces
      if (store.size() <= lines.size()) store.emplace_back();
      store[lines.size()].assign(line);
      lines.emplace_back(ln, std::string_view());
      if (lines.size() == 1)
        kind = w == "define" ? kDefine : w == "task" || w == "unit" ? kDecl : kOther;
      if (w == "repeat" || w == "define") ++nest;
      else if (w == "end") --nest;
      if (nest <= 0) return done();
    }
    return done();
  }
};

// The operations counted so far, and the first top-level line at which
// they passed the budget (0: none).
struct Budget {
  Big sum = 0;
  uint32_t over = 0;
};

bool count_nodes(OpCounter& c, const std::vector<OpNode>& nodes, const OpLimits& limits,
                 Budget* b) {
  for (const OpNode& n : nodes) {
    Big one = 0;
    if (!c.node(n, 0, &one)) return false;
    b->sum = sat_add(b->sum, one);
    if (b->over == 0 && b->sum > limits.max_ops) b->over = n.line;
  }
  return true;
}

bool within_budget(const std::string& file, const Budget& b, const OpLimits& limits,
                   std::string* error) {
  if (b.over == 0) return true;
  *error = fmt::format("{}:{}:1: the program asks for {} operations (repeats, calls and nop nr "
                       "expanded), above the budget of {} (--max-ops N raises it)",
                       file, b.over, big_text(b.sum), limits.max_ops);
  return false;
}

// Pass 1 over an op file, a piece at a time: parses every line (tasks,
// units, macros into `out`; nodes into `keep` when given, else dropped)
// and counts the operations as they come. False on a parse error only: a
// parse error anywhere comes first, as when the whole tree was parsed
// before counting. A count that fails (a macro body calling a macro
// defined further down, or a real error) sets *recount: the caller counts
// again once every macro is known, which finds the real errors.
template <class Next>
bool parse_pieces(Next&& next, const std::string& file, OpProgram* out, std::vector<OpNode>* keep,
                  std::string* error, const OpLimits& limits, Budget* b, bool* recount) {
  out->file = file;
  Parser p{file, out->names, out, &out->macros, error};
  std::string count_error;
  OpCounter c{*out, &count_error, {}, {}, 0, limits.max_expanded_bytes};
  Chunk chunk;
  std::vector<OpNode> nodes;
  *recount = false;
  while (chunk.read(next)) {
    nodes.clear();
    size_t i = 0;
    if (!p.block(chunk.lines, &i, &nodes, 0, 0)) return false;
    if (!*recount && !count_nodes(c, nodes, limits, b)) *recount = true;
    if (keep) std::move(nodes.begin(), nodes.end(), std::back_inserter(*keep));
  }
  return true;
}

// The count again, once every macro is known: over the kept tree, or one
// more read of a loaded file (stream_op_program hands either).
bool count_again(const OpProgram& p, const OpLimits& limits, Budget* b, std::string* error) {
  *b = {};
  OpCounter c{p, error, {}, {}, 0, limits.max_expanded_bytes};
  return stream_op_program(
      p, [&](const std::vector<OpNode>& nodes) { return count_nodes(c, nodes, limits, b); },
      error);
}

bool parse_unescaped(std::string_view text, const std::string& file, OpProgram* out,
                     std::string* error, const OpLimits& limits) {
  const auto lines = split_lines(text);
  size_t at = 0;
  auto next = [&](uint32_t* ln, std::string_view* line) {
    if (at == lines.size()) return false;
    *ln = lines[at].first, *line = lines[at].second;
    ++at;
    return true;
  };
  Budget b;
  bool recount = false;
  if (!parse_pieces(next, file, out, &out->nodes, error, limits, &b, &recount)) return false;
  if (recount && !count_again(*out, limits, &b, error)) return false;
  return within_budget(file, b, limits, error);
}

// A streamed file's lines, numbered from 1; a read error or an over-long
// line ends them with `error` set.
struct StreamLines {
  LineInput in;
  bool operator()(uint32_t* ln, std::string_view* line) {
    if (!in.next(line)) return false;
    *ln = static_cast<uint32_t>(std::min<uint64_t>(in.line_no(), UINT32_MAX));
    return true;
  }
};

}  // namespace

bool load_op_file(const std::string& path, OpProgram* out, std::string* error) {
  auto src = InputSource::open(path, "the op file", error);
  if (!src) return false;
  const OpLimits& limits = current_op_limits();
  StreamLines lines{LineInput(src)};
  Budget b;
  bool recount = false;
  const bool ok = parse_pieces(lines, path, out, nullptr, error, limits, &b, &recount);
  if (lines.in.failed()) return *error = lines.in.error(), false;
  if (!ok) return *error = iou::escape_controls(*error), false;
  out->source = std::move(src);
  if (recount && !count_again(*out, limits, &b, error))  // one more read
    return out->source.reset(), *error = iou::escape_controls(*error), false;
  if (!within_budget(path, b, limits, error)) return out->source.reset(), false;
  return true;
}

bool stream_op_program(const OpProgram& p,
                       const std::function<bool(const std::vector<OpNode>&)>& run,
                       std::string* error) {
  if (!p.source) return run(p.nodes);
  OpNames names = p.names;  // complete after pass 1: lookups only
  Parser parser{p.file, names, nullptr, nullptr, error};
  StreamLines lines{LineInput(p.source)};
  Chunk chunk;
  std::vector<OpNode> nodes;
  while (chunk.read(lines)) {
    if (chunk.kind != Chunk::kOther) continue;  // taken in pass 1
    nodes.clear();
    size_t i = 0;
    if (!parser.block(chunk.lines, &i, &nodes, 0, 0)) {
      *error = iou::escape_controls(*error) + " (the file changed while it ran)";
      return false;
    }
    if (!run(nodes)) return false;
  }
  if (lines.in.failed()) return *error = lines.in.error(), false;
  return true;
}

bool parse_macro_body(const OpMacro& m, const std::string& file,
                      const std::vector<std::pair<std::string, std::string>>& args,
                      OpNames& names, std::vector<OpNode>* out, std::string* error) {
  std::vector<std::string> texts;
  texts.reserve(m.lines.size());
  for (const auto& [ln, line] : m.lines) {
    std::string s = line;
    for (const auto& [k, v] : args) {
      const std::string key = "$" + k;
      for (size_t at = 0; (at = s.find(key, at)) != std::string::npos; at += v.size())
        s.replace(at, key.size(), v);
    }
    if (size_t d = s.find('$'); d != std::string::npos && s.find('#') > d)
      return *error = fmt::format("{}:{}:{}: '{}' is not an argument of this call", file, ln,
                                  d + 1, s.substr(d, s.find_first_of(" \t", d) - d)),
             false;
    texts.push_back(std::move(s));
  }
  std::vector<std::pair<uint32_t, std::string_view>> lines;
  for (size_t i = 0; i < texts.size(); ++i) lines.emplace_back(m.lines[i].first, texts[i]);
  Parser p{file, names, nullptr, nullptr, error};
  size_t i = 0;
  if (p.block(lines, &i, out, 0, 0)) return true;
  *error = iou::escape_controls(*error);  // a macro's arguments are the file's bytes
  return false;
}


}  // namespace simcache::sim
