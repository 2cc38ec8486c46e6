// The ftrace / trace-cmd text parser (trace.h). Formats it takes, as the
// kernel prints them (include/trace/events/kmem.h, io_uring.h):
//   kmalloc / kmem_cache_alloc: call_site=%pS|%lx ptr=%p [name=%s] bytes_req=%zu
//       bytes_alloc=%zu gfp_flags=%s [node=%d] [accounted=%s]
//   kfree: call_site ptr; kmem_cache_free: call_site ptr [name=%s] (5.12+)
//   mm_page_alloc: page=%p pfn=%lu|0x%lx order=%d migratetype=%d gfp_flags=%s
//   mm_page_free: page=%p pfn order=%d
//   io_uring_create: "ring %p, fd %d sq size %d, cq size %d, flags 0x%x"
//   io_uring_register: "ring %p, opcode %d, nr_user_files %d, nr_user_bufs %d, ret %ld"
//   io_uring_submit_req: "ring %p, req %p, user_data 0x%llx, opcode %s, flags 0x%llx, sq_thread %d"
//   io_uring_complete: "ring %p, req %p, user_data 0x%llx, result %d, cflags 0x%x ..."
// and the `fields` option's "key=0x8 (8)" decimal annotations (a one-byte
// field is its annotation alone: "accounted=(1)"). Line prefixes: see
// parse_prefix().
#include "sim/replay/trace.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "sim/replay/text.h"

namespace simcache::sim {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// Blanks and control characters separate tokens (one compare per char).
bool is_space(char c) { return static_cast<unsigned char>(c) <= ' '; }

// Tokens are separated by spaces or tabs (token_end(), text.h).
struct Cursor {
  std::string_view s;
  size_t i = 0;
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  // The next blank-separated token (empty at the end).
  std::string_view token() {
    skip();
    const size_t b = i;
    i = token_end(s, b);
    return s.substr(b, i - b);
  }
};

struct EventName {
  std::string_view name;
  TraceKind kind;
};
constexpr EventName kEvents[] = {
    {"kmalloc", TraceKind::kmalloc},
    {"kmalloc_node", TraceKind::kmalloc},
    {"kmem_cache_alloc", TraceKind::kmem_cache_alloc},
    {"kmem_cache_alloc_node", TraceKind::kmem_cache_alloc},
    {"kfree", TraceKind::kfree},
    {"kmem_cache_free", TraceKind::kmem_cache_free},
    {"mm_page_alloc", TraceKind::page_alloc},
    {"mm_page_free", TraceKind::page_free},
    {"mm_page_free_batched", TraceKind::page_free},
    {"io_uring_create", TraceKind::uring_create},
    {"io_uring_register", TraceKind::uring_register},
    {"io_uring_submit_req", TraceKind::uring_submit},
    {"io_uring_submit_sqe", TraceKind::uring_submit},
    {"io_uring_complete", TraceKind::uring_complete},
    {"sys_enter_io_uring_enter", TraceKind::enter},
    {"sys_exit_io_uring_enter", TraceKind::enter_exit},
    {"sys_enter_close", TraceKind::close},
    {"tracing_mark_write", TraceKind::marker},
    {"print", TraceKind::marker},
};

TraceKind kind_of(std::string_view name) {
  for (const EventName& n : kEvents)
    if (n.name == name) return n.kind;
  return TraceKind::none;
}

// "(null)", "0000000000000000", "0x...", "ffff8880..." -> value.
bool parse_ptr(std::string_view v, uint64_t* out) {
  if (v == "(null)" || v == "(nil)") return *out = 0, true;
  return parse_hex(v, out);
}

bool fail(size_t* col, size_t at, std::string* why, std::string msg) {
  *col = at + 1;
  *why = std::move(msg);
  return false;
}

// The numeric fields of the trace format and their ranges, checked as
// each is read (docs/ops.md, "Ranges"): a value outside is a malformed
// line "field 'NAME': V is outside [LO, HI]".
struct Range {
  int64_t lo, hi;
};
constexpr int64_t kTraceMax = INT64_MAX;
constexpr Range kCpuRange{0, 4095};                 // [CPU], as the op format's CPU
constexpr Range kPidRange{0, 4194304};              // PID_MAX_LIMIT (64-bit)
constexpr Range kBytesRange{0, kTraceMax};            // kmalloc: size_t bytes_req/bytes_alloc
constexpr Range kCacheBytesRange{0, 4194304};       // kmem_cache_alloc: a slab object, <= KMALLOC_MAX_SIZE
constexpr Range kNodeRange{-1, 1023};               // NUMA_NO_NODE .. MAX_NUMNODES - 1
constexpr Range kBoolRange{0, 1};                   // accounted=0|1
constexpr Range kOrderRange{0, 10};                 // MAX_PAGE_ORDER
constexpr Range kFdRange{-1, INT32_MAX};            // io_uring_create "fd %d"
constexpr Range kSqRange{1, 32768};                 // IORING_MAX_ENTRIES
constexpr Range kCqRange{1, 65536};                 // IORING_MAX_CQ_ENTRIES
constexpr Range kFlagsRange{0, kTraceMax};            // "flags 0x%x" / "0x%llx"
constexpr Range kOpcodeRange{0, 255};               // sqe->opcode is a u8
constexpr Range kNrFilesRange{0, INT32_MAX};        // nr_user_files %d
constexpr Range kResultRange{INT32_MIN, INT32_MAX};  // result %d / ret %ld of an int

// A numeric field: a range error names the field, anything else that
// is not a number keeps the "KEY='V': not a valid value" wording.
bool num_field(std::string_view name, std::string_view v, Range r, int64_t* out,
               std::string* msg) {
  // The `fields` option prints an int field's raw 32 bits in hex
  // (node=0xffffffff (-1)): a signed field reads them as an int.
  uint64_t raw = 0;
  if (r.lo < 0 && v.size() > 2 && v[0] == '0' && v[1] == 'x' && parse_u64(v, &raw) &&
      raw > INT32_MAX && raw <= UINT32_MAX) {
    const int64_t x = static_cast<int64_t>(raw) - (int64_t{1} << 32);
    if (x >= r.lo && x <= r.hi) return *out = x, true;
    return *msg = outside(name, v, r.lo, r.hi), false;
  }
  if (parse_field(name, v, r.lo, r.hi, out, msg)) return true;
  if (msg->find("is outside") == std::string::npos)
    *msg = fmt::format("{}='{}': not a valid value", name, v);
  return false;
}

// kmem events: key=value tokens; "(123)" annotations skipped.
bool parse_kmem(std::string_view s, size_t base, TraceEvent* ev, size_t* col, std::string* why) {
  ev->call_site = ev->gfp = ev->name = {};
  ev->ptr = ev->pfn = ev->req = 0;
  ev->bytes_req = ev->bytes_alloc = ev->node = ev->accounted = ev->order = -1;
  Cursor c{s};
  bool have_ptr = false, have_pfn = false;
  for (;;) {
    const std::string_view t = c.token();
    if (t.empty()) break;
    const size_t at = base + (c.i - t.size());
    if (t[0] == '(') continue;  // the fields option's decimal value
    const size_t eq = t.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return fail(col, at, why, fmt::format("'{}': expected key=value", t));
    const std::string_view k = t.substr(0, eq);
    std::string_view v = t.substr(eq + 1);
    size_t vat = at + eq + 1;
    // The fields option's one-byte field ("accounted=(1)"), not "(null)".
    if (int64_t x = 0; v.size() > 2 && v.front() == '(' && v.back() == ')' &&
                       parse_i64(v.substr(1, v.size() - 2), &x))
      v = v.substr(1, v.size() - 2), ++vat;
    bool ok = true;
    std::string msg;  // set by num_field
    const Range bytes = ev->kind == TraceKind::kmem_cache_alloc ? kCacheBytesRange : kBytesRange;
    // Dispatch on the first letter: this loop runs for every field of every line.
    const char k0 = k[0];
    if (k0 == 'c' && k == "call_site") ev->call_site = v;
    else if (k0 == 'p' && k == "ptr") ok = have_ptr = parse_ptr(v, &ev->ptr);
    else if (k0 == 'b' && k == "bytes_req") ok = num_field(k, v, bytes, &ev->bytes_req, &msg);
    else if (k0 == 'b' && k == "bytes_alloc") ok = num_field(k, v, bytes, &ev->bytes_alloc, &msg);
    else if (k0 == 'g' && k == "gfp_flags") ev->gfp = v;
    else if (k0 == 'n' && k == "node") ok = num_field(k, v, kNodeRange, &ev->node, &msg);
    else if (k0 == 'a' && k == "accounted") {
      if (v == "true") ev->accounted = 1;
      else if (v == "false") ev->accounted = 0;
      else ok = num_field(k, v, kBoolRange, &ev->accounted, &msg);
    } else if (k == "name") ev->name = v;
    else if (k == "pfn") ok = have_pfn = parse_u64(v, &ev->pfn);  // any 64-bit frame number
    else if (k == "order") ok = num_field(k, v, kOrderRange, &ev->order, &msg);
    else if (k == "page") ok = parse_ptr(v, &ev->req);  // the page, if no pfn is printed
    // other keys (migratetype, percpu_refill, cold, ...) are read and ignored
    if (!ok)
      return fail(col, vat, why, msg.empty() ? fmt::format("{}='{}': not a valid value", k, v) : msg);
  }
  const bool alloc = ev->kind == TraceKind::kmalloc || ev->kind == TraceKind::kmem_cache_alloc;
  if ((alloc || ev->kind == TraceKind::kfree || ev->kind == TraceKind::kmem_cache_free) &&
      !have_ptr)
    return fail(col, base, why, "no ptr= field");
  if (alloc && ev->bytes_req < 0 && ev->bytes_alloc < 0)
    return fail(col, base, why, "no bytes_req= or bytes_alloc= field");
  if (ev->kind == TraceKind::page_alloc || ev->kind == TraceKind::page_free) {
    if (!have_pfn && ev->req == 0) return fail(col, base, why, "no pfn= or page= field");
    if (!have_pfn) ev->pfn = ev->req;
    if (ev->order < 0) ev->order = 0;
  }
  return true;
}

// io_uring events: "key value" pairs separated by commas and blanks.
bool parse_uring(std::string_view s, size_t base, TraceEvent* ev, size_t* col, std::string* why) {
  ev->ring = ev->req = 0;
  ev->fd = ev->sq = ev->cq = ev->flags = ev->opcode = ev->nr_files = ev->result = -1;
  ev->opcode_name = {};
  Cursor c{s};
  std::string_view prev;
  bool have_ring = false;
  for (;;) {
    std::string_view k = c.token();
    if (k.empty()) break;
    if (k.back() == ',') k.remove_suffix(1);
    auto value = [&](auto parse, auto* out) {
      std::string_view v = c.token();
      const size_t at = base + (c.i - v.size());
      if (!v.empty() && v.back() == ',') v.remove_suffix(1);
      if (!parse(v, out)) return fail(col, at, why, fmt::format("{} '{}': not a valid value", k, v));
      return true;
    };
    // A numeric field read through its range (the name as printed: "sq size").
    auto num = [&](std::string_view name, Range r, int64_t* out) {
      std::string_view v = c.token();
      const size_t at = base + (c.i - v.size());
      if (!v.empty() && v.back() == ',') v.remove_suffix(1);
      std::string msg;
      if (num_field(name, v, r, out, &msg)) return true;
      if (msg.find("is outside") == std::string::npos)
        msg = fmt::format("{} '{}': not a valid value", k, v);
      return fail(col, at, why, std::move(msg));
    };
    bool ok = true;
    if (k == "ring") ok = have_ring = value(parse_ptr, &ev->ring);
    else if (k == "req" || k == "request") ok = value(parse_ptr, &ev->req);
    else if (k == "fd") ok = num("fd", kFdRange, &ev->fd);
    else if (k == "size" && prev == "sq") ok = num("sq size", kSqRange, &ev->sq);
    else if (k == "size" && prev == "cq") ok = num("cq size", kCqRange, &ev->cq);
    else if (k == "flags") ok = num("flags", kFlagsRange, &ev->flags);
    else if (k == "nr_user_files") ok = num(k, kNrFilesRange, &ev->nr_files);
    else if (k == "result" || k == "ret") ok = num(k, kResultRange, &ev->result);
    else if (k == "opcode") {
      std::string_view v = c.token();
      const size_t at = base + (c.i - v.size());
      if (!v.empty() && v.back() == ',') v.remove_suffix(1);
      ev->opcode_name = v;  // 5.19+: a name; older kernels: the number
      std::string msg;
      if (!parse_field("opcode", v, kOpcodeRange.lo, kOpcodeRange.hi, &ev->opcode, &msg)) {
        if (msg.find("is outside") != std::string::npos) return fail(col, at, why, std::move(msg));
        ev->opcode = -1;
      }
    }
    if (!ok) return false;
    prev = k;
  }
  if (!have_ring) return fail(col, base, why, "no 'ring' field");
  return true;
}

// Syscall events, as ftrace ("sys_io_uring_enter(fd: 3, ...)", "sys_close
// -> 0x0") or trace-cmd ("sys_enter_io_uring_enter: fd: 0x00000003, ...")
// prints them. Only the fd matters.
bool parse_fd(std::string_view s, size_t base, TraceEvent* ev, size_t* col, std::string* why) {
  ev->fd = -1;
  const size_t at = s.find("fd:");
  if (at == std::string_view::npos) return fail(col, base, why, "no 'fd:' argument");
  Cursor c{s, at + 3};
  std::string_view v = c.token();
  const size_t vat = base + c.i - v.size();
  while (!v.empty() && (v.back() == ',' || v.back() == ')')) v.remove_suffix(1);
  uint64_t fd = 0;
  if (!parse_hex(v, &fd)) return fail(col, base + at + 3, why, fmt::format("fd '{}': not a valid value", v));
  if (fd > INT32_MAX) return fail(col, vat, why, outside("fd", v, 0, INT32_MAX));
  ev->fd = static_cast<int64_t>(fd);
  return true;
}

// "SECS.FRACTION" (digits and dots, as time_token() checked) in ns, exact
// to 9 fraction digits (ftrace prints 6, trace-cmd 6 or 9); -1 if the
// seconds do not fit.
int64_t timestamp_ns(std::string_view t) {
  static constexpr int64_t kPow10[10] = {1000000000, 100000000, 10000000, 1000000, 100000,
                                         10000,      1000,      100,      10,      1};
  const size_t dot = t.find('.');
  const std::string_view secs = t.substr(0, dot);
  if (secs.size() > 9) return -1;
  int64_t ns = 0;
  for (char ch : secs) ns = ns * 10 + (ch - '0');
  int64_t frac = 0;
  size_t digits = 0;
  if (dot != std::string_view::npos)
    for (size_t k = dot + 1; k < t.size() && is_digit(t[k]) && digits < 9; ++k, ++digits)
      frac = frac * 10 + (t[k] - '0');
  return ns * 1000000000 + frac * kPow10[digits];
}

// The timestamp column, as the layouts print it:
//   "808.188897:"            ftrace, trace-cmd report (6 or 9 digits)
//   "36620513295us :"        ftrace's latency-format (microseconds; the
//   "36620513295us+:"        delay mark ' ', '+', '!', '#', '*', '@', '$')
// Reads the token(s) at `c` (the ':' may stand alone); false if they are
// not a timestamp. *ns is -1 when the value does not fit.
bool time_token(Cursor* c, int64_t* ns) {
  Cursor k = *c;
  std::string_view t = k.token();
  bool colon = false;
  if (!t.empty() && t.back() == ':') colon = true, t.remove_suffix(1);
  if (t.empty() || !is_digit(t[0])) return false;  // before the suffix checks: cheap refusal
  switch (t.back()) {  // latency-format's delay mark
    case '+': case '!': case '#': case '*': case '@': case '$':
      if (t.size() > 1) t.remove_suffix(1);
      break;
    default:
      break;
  }
  bool us = false;
  if (t.size() > 2 && t[t.size() - 2] == 'u' && t.back() == 's') us = true, t.remove_suffix(2);
  if (t.empty() || !is_digit(t[0])) return false;
  for (char ch : t)
    if (!is_digit(ch) && (ch != '.' || us)) return false;
  if (!colon) {  // "us :": the mark is a blank
    if (k.token() != ":") return false;
  }
  if (!us) {
    *ns = timestamp_ns(t);
  } else {
    int64_t v = 0;
    *ns = t.size() > 15 || !parse_i64(t, &v) ? -1 : v * 1000;
  }
  *c = k;
  return true;
}

// ftrace's latency-format and trace-cmd report -l print the CPU without
// brackets, its flags right after it: "cat-22191     1..... 3662us : ".
// The first token from `c` of 1-4 digits, an irqs-off flag ('.', d, D, b,
// X) and at most 5 more flag characters, followed by a timestamp; its
// start and the position after it, or false.
bool latency_cpu(Cursor c, size_t* at, size_t* after, std::string_view* digits) {
  for (;;) {
    const std::string_view t = c.token();
    if (t.empty()) return false;
    size_t n = 0;
    while (n < t.size() && is_digit(t[n])) ++n;
    if (n >= 1 && n <= 4 && n < t.size() && std::strchr(".dDbX", t[n]) && t.size() - n <= 6) {
      Cursor k = c;
      int64_t ns = 0;
      if (time_token(&k, &ns)) {
        *at = c.i - t.size(), *after = c.i, *digits = t.substr(0, n);
        return true;
      }
    }
  }
}

// "[INSTANCE:] [TASK-PID [(TGID)]] [CPU] [FLAGS] TIME:" up to the event name.
bool parse_prefix(std::string_view line, TraceEvent* ev, size_t* pos, size_t* col,
                  std::string* why) {
  size_t b = 0;
  while (b < line.size() && is_space(line[b])) ++b;
  size_t i = b, after = 0;
  std::string_view digits;
  for (;; ++i) {  // the first " [digits]" is the CPU column
    i = line.find('[', i);
    if (i == std::string_view::npos) break;
    if (i != b && !is_space(line[i - 1])) continue;
    size_t j = i + 1;
    while (j < line.size() && is_digit(line[j])) ++j;
    if (j > i + 1 && j < line.size() && line[j] == ']' && j - i <= 6) {
      digits = line.substr(i + 1, j - i - 1);
      after = j + 1;
      break;
    }
  }
  if (i == std::string_view::npos && !latency_cpu(Cursor{line, b}, &i, &after, &digits))
    return fail(col, b, why, "no [CPU] column");
  int64_t cpu = 0;
  std::string msg;
  if (!parse_field("cpu", digits, kCpuRange.lo, kCpuRange.hi, &cpu, &msg))
    return fail(col, static_cast<size_t>(digits.data() - line.data()), why, std::move(msg));
  ev->cpu = static_cast<uint32_t>(cpu);  // in [0, 4095]
  std::string_view tp = line.substr(b, i - b);
  auto trim = [](std::string_view* v) {
    while (!v->empty() && is_space(v->back())) v->remove_suffix(1);
    while (!v->empty() && is_space(v->front())) v->remove_prefix(1);
  };
  trim(&tp);
  // The record-tgid option's column: "(  22191)" or "(-------)".
  if (!tp.empty() && tp.back() == ')')
    if (const size_t open = tp.rfind('('); open != std::string_view::npos && open > 0 &&
                                           is_space(tp[open - 1]))
      tp = tp.substr(0, open), trim(&tp);
  // trace-cmd report's buffer instance name: "simcache_fx:      cat-22091".
  for (size_t k = 0; k + 1 < tp.size(); ++k) {
    if (is_space(tp[k])) {
      if (k > 0 && tp[k - 1] == ':') tp.remove_prefix(k), trim(&tp);
      break;
    }
  }
  if (const size_t dash = tp.rfind('-'); dash != std::string_view::npos && dash + 1 < tp.size()) {
    int64_t pid = 0;
    const std::string_view pd = tp.substr(dash + 1);
    if (parse_i64(pd, &pid) && tp[dash + 1] != '-') {
      if (pid > kPidRange.hi)
        return fail(col, static_cast<size_t>(pd.data() - line.data()), why,
                    outside("pid", pd, kPidRange.lo, kPidRange.hi));
      ev->pid = pid;
      tp = tp.substr(0, dash);
    }
  }
  ev->task = tp;
  Cursor c{line, after};
  c.skip();
  // The flags column ("d..1.", "....") cannot be a timestamp: skip it.
  if (c.i < line.size() && !is_digit(line[c.i])) c.token();
  if (!time_token(&c, &ev->ts_ns)) {
    c.token();  // the irqs-off / need-resched / preempt flags column
    if (!time_token(&c, &ev->ts_ns)) {
      Cursor k{line, c.i};
      const std::string_view t = k.token();
      return fail(col, k.i - t.size(), why, "expected a timestamp 'SECS.USECS:'");
    }
  }
  *pos = c.i;
  return true;
}

}  // namespace

bool parse_trace_line(std::string_view line, TraceEvent* ev, size_t* col, std::string* why) {
  // Only the prefix is reset here; each payload parser resets its own
  // fields (a whole-struct reset was a seventh of the parse time).
  ev->kind = TraceKind::none;
  ev->task = ev->event = {};
  ev->pid = -1;
  ev->cpu = 0;
  ev->ts_ns = -1;
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  size_t b = 0;
  while (b < line.size() && is_space(line[b])) ++b;
  if (b == line.size() || line[b] == '#') return true;
  const std::string_view head = line.substr(b);
  if (head.rfind("cpus=", 0) == 0 || head.rfind("version", 0) == 0 ||
      (head.rfind("CPU", 0) == 0 && head.find("is empty") != std::string_view::npos))
    return true;  // trace-cmd report header lines
  size_t pos = 0;
  if (!parse_prefix(line, ev, &pos, col, why)) return false;
  Cursor c{line, pos};
  std::string_view name = c.token();
  const size_t name_at = c.i - name.size();
  std::string_view rest = line.substr(c.i);
  if (name.rfind("sys_", 0) == 0 && name.find('(') != std::string_view::npos) {
    // ftrace's own syscall output: "sys_io_uring_enter(fd: 3, ...)"
    const std::string_view call = name.substr(4, name.find('(') - 4);
    ev->kind = call == "io_uring_enter" ? TraceKind::enter
               : call == "close"        ? TraceKind::close
                                        : TraceKind::none;
    rest = line.substr(name_at);
  } else if (name.rfind("sys_", 0) == 0 && rest.find("->") != std::string_view::npos) {
    ev->kind = name == "sys_io_uring_enter" ? TraceKind::enter_exit : TraceKind::none;
    ev->event = name;
    return true;
  } else {
    if (name.size() < 2 || name.back() != ':')
      return fail(col, name_at, why, fmt::format("'{}': expected an event name 'NAME:'", name));
    name.remove_suffix(1);
    if (const size_t sys = name.rfind(':'); sys != std::string_view::npos) name = name.substr(sys + 1);
    ev->kind = kind_of(name);
  }
  ev->event = name;
  const size_t base = line.size() - rest.size();
  switch (ev->kind) {
    case TraceKind::none: return true;
    case TraceKind::kmalloc: case TraceKind::kmem_cache_alloc: case TraceKind::kfree:
    case TraceKind::kmem_cache_free: case TraceKind::page_alloc: case TraceKind::page_free:
      return parse_kmem(rest, base, ev, col, why);
    case TraceKind::uring_create: case TraceKind::uring_register:
    case TraceKind::uring_submit: case TraceKind::uring_complete:
      return parse_uring(rest, base, ev, col, why);
    case TraceKind::enter: case TraceKind::close: return parse_fd(rest, base, ev, col, why);
    case TraceKind::enter_exit: return true;
    case TraceKind::marker: {
      Cursor m{rest};
      std::string_view w = m.token();
      if (w == "tracing_mark_write:") w = m.token();  // trace-cmd's "print: tracing_mark_write: "
      ev->text = {};
      if (w != "simcache") return ev->kind = TraceKind::none, true;  // someone else's marker
      m.skip();
      ev->text = rest.substr(m.i);
      while (!ev->text.empty() && is_space(ev->text.back())) ev->text.remove_suffix(1);
      return true;
    }
  }
  return true;
}

}  // namespace simcache::sim
