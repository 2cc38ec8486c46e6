// The operation format (docs/ops.md): one operation per line, each naming
// the CPU and task it runs on, plus `task`, `repeat N ... end` and
// `define NAME ... end` / `call NAME k=v` for compact hand-written files.
// Both an op file (run-ops) and a trace (replay) compile to Op values
// executed by OpExec, so the two report the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/container/node_hash_map.h>

#include "sim/run/scenario.h"

namespace simcache::sim {

enum class OpKind : uint8_t {
#define SIMCACHE_OP(id, text) id,
#include "sim/replay/ops.def"
#undef SIMCACHE_OP
};
inline constexpr size_t kNumOpKinds = 0
#define SIMCACHE_OP(id, text) +1
#include "sim/replay/ops.def"
#undef SIMCACHE_OP
    ;
std::string_view op_name(OpKind k);

// One operation. Which fields an op reads is in ops.cc's key table.
struct Op {
  OpKind kind = OpKind::timed_begin;
  CpuId cpu = 0;
  uint16_t task = 0;     // index into OpExec's task table
  int64_t ring = -1;     // ring handle (any integer the file picks)
  int64_t ring2 = -1;    // send_fd: target ring
  int64_t n = 0;         // nr / size / ops / value, by op
  int64_t off = 0;       // files_update offset; send_fd src slot
  int64_t slot = -1;     // send_fd target slot, -1: allocate any free slot
  int64_t flag = 0;      // match / defer_taskrun / prefill_flag / measured / set
  int64_t flag2 = 0;     // ring_create: reaped (the program reaps its CQEs in time)
  uint64_t obj = 0;      // object handle (kmalloc / cache ops)
  gfp_t gfp = 0;
  uint32_t cache = 0;    // cache_alloc/cache_free/cache_create: cache table index
  uint32_t site = 0;     // call-site table index (0: none)
};

// A task of the file: its name and whether it runs in the user memcg.
struct OpTask {
  std::string name;
  bool user = false;
};

// A kmem_cache an op file or a trace names: created on first use.
struct OpCache {
  std::string name;
  uint32_t size = 0, align = 0;
  slab_flags_t flags = 0;
};

// Names shared by the parser and the executor: tasks, caches, call sites.
struct OpNames {
  std::vector<OpTask> tasks;
  std::vector<OpCache> caches;
  std::vector<std::string> sites = {""};  // 0: no site
  absl::flat_hash_map<std::string, uint32_t> task_ix, cache_ix, site_ix;
  // At most kMaxTasks entries: past 65,535 names, every new one maps to
  // the last entry, "(more-tasks)" (docs/ops.md, Limits).
  static constexpr size_t kMaxTasks = 65536;
  uint16_t task(std::string_view name, bool user_default);
  // The same, the default from the name (default_user_task) when new.
  uint16_t task(std::string_view name);
  uint32_t cache(std::string_view name);  // adds an empty entry if new
  uint32_t site(std::string_view name);
};

// Parses "KEY=VALUE ..." arguments of one operation line (after CPU TASK
// OP). Errors name the 1-based column. `names` resolves caches and sites.
bool parse_op_args(OpKind kind, std::string_view args, size_t col0, OpNames& names, Op* op,
                   std::string* error);
bool op_kind_by_name(std::string_view name, OpKind* out);
// Whether every numeric field of `op` is inside its key's range (the
// table of record in ops.cc). OpExec checks it before running an op, so
// ops built by replay obey the same ranges as parsed ones.
bool op_in_range(const Op& op, std::string* why);
// A task name as one token of the format (blanks, '#' and '=' become '_').
std::string op_task_token(std::string_view name);
// One op as a line of the format (inverse of the parser).
std::string format_op(const Op& op, const OpNames& names);

// A parsed op file: a tree of lines. Macro bodies stay text until called,
// so their `$key`s can be substituted.
struct OpNode {
  enum Kind : uint8_t { kOp, kRepeat, kCall } kind = kOp;
  uint32_t line = 0;
  Op op;
  int64_t count = 0;                    // repeat
  std::vector<OpNode> body;             // repeat
  std::string macro;                    // call
  std::vector<std::pair<std::string, std::string>> args;  // call
};
struct OpMacro {
  uint32_t line = 0;
  std::vector<std::pair<uint32_t, std::string>> lines;  // (line, text)
};
class InputSource;
// A parsed op file. From text (parse_op_program) its top-level nodes are
// kept in `nodes`; from a file (load_op_file) they are not: `source` is
// the file, read again a piece at a time by every run (stream_op_program),
// so memory is flat in the file's length (docs/ops.md, Limits).
struct OpProgram {
  std::string file;
  std::string op_unit = "op", time_unit = "ns";  // `unit OP_UNIT [ns|us]`
  OpNames names;
  std::vector<OpNode> nodes;
  absl::flat_hash_map<std::string, OpMacro> macros;
  std::shared_ptr<InputSource> source;
};

// Work budget of an op file (docs/ops.md, "Budgets"): the operations it
// asks for once repeat, define and call are expanded, counted before
// anything runs with arithmetic that cannot overflow. A `nop` counts its
// nr SQEs (at most the 32,768 an SQ holds), every other op 1.
inline constexpr uint64_t kDefaultMaxOps = 100'000'000;
struct OpLimits {
  uint64_t max_ops = kDefaultMaxOps;  // run-ops --max-ops
  // Bytes of macro text all distinct calls may expand to, each level
  // counted (docs/ops.md, Limits). Fixed for users; the fuzz target
  // lowers it to keep every input fast.
  uint64_t max_expanded_bytes = uint64_t{1} << 26;
};
// The limits parse_op_program() and load_op_file() apply when given none:
// this thread's, set by a ScopedOpLimits (the CLI's --max-ops), else the
// defaults. (Callers that cannot pass limits, such as ops_workload(), get
// the flag this way.)
const OpLimits& current_op_limits();
class ScopedOpLimits {
 public:
  explicit ScopedOpLimits(const OpLimits& l);
  ~ScopedOpLimits();
  ScopedOpLimits(const ScopedOpLimits&) = delete;
  ScopedOpLimits& operator=(const ScopedOpLimits&) = delete;

 private:
  OpLimits saved_;
};
// Parses a whole op file's text. Errors: "FILE:LINE:COL: message"; a
// program over its budget is an error at the line that passes it.
bool parse_op_program(std::string_view text, const std::string& file, OpProgram* out,
                      std::string* error);
bool parse_op_program(std::string_view text, const std::string& file, OpProgram* out,
                      std::string* error, const OpLimits& limits);
// Reads an op file once (pass 1): every line is parsed and the operations
// counted as they come, but only the names, units and macros are kept.
// Errors as parse_op_program's, and the input's (a long line, a read error).
bool load_op_file(const std::string& path, OpProgram* out, std::string* error);
// Hands `run` the program's top-level nodes: all of `nodes` at once, or for
// a loaded file each piece (a line, or a repeat block through its end) in
// file order, parsed again from `source`. False when `run` is, or when the
// file cannot be read again as it was.
bool stream_op_program(const OpProgram& p,
                       const std::function<bool(const std::vector<OpNode>&)>& run,
                       std::string* error);
// A macro's body with `$key`s replaced by a call's arguments.
bool parse_macro_body(const OpMacro& m, const std::string& file,
                      const std::vector<std::pair<std::string, std::string>>& args,
                      OpNames& names, std::vector<OpNode>* out, std::string* error);
// Tasks run in the user memcg unless they are kernel threads (kworker/..,
// ksoftirqd/.., swapper, iou-*: the root cgroup).
bool default_user_task(std::string_view name);

// Executes ops on one simulated kernel (one policy column).
class OpExec {
 public:
  OpExec(Env& env, Recorder& rec, const OpNames& names);
  // Returns false (with a message) on an op that cannot run: an unknown
  // ring or object handle, a handle reused while live.
  bool exec(const Op& op, std::string* error);
  // Runs a program; macro calls are expanded (depth <= 16).
  bool run(const OpProgram& p, std::string* error);
  // Every ring still open is torn down on the kworker (end of a trace).
  void finish();
  // Frees every live object on `t`, in handle order (end of a trace).
  void free_all(const Task& t);
  uint64_t live_objects() const { return objs_.size(); }
  uint64_t peak_live_objects() const { return peak_objs_; }

  bool has_obj(uint64_t obj) const { return objs_.contains(obj); }
  // Trace mode: an allocation at a live handle frees the old object first
  // (its free was lost), and a free of an unknown handle is of an object
  // allocated before the capture; both are counted, not errors.
  void set_trace_mode(bool on) { trace_mode_ = on; }
  int64_t implicit_frees() const { return implicit_frees_; }
  int64_t frees_before_capture() const { return frees_before_capture_; }
  bool last_alloc_ok() const { return last_alloc_ok_; }
  bool last_free_ok() const { return last_free_ok_; }
  // The call site of the object the last kfree/kmem_cache_free freed.
  uint32_t last_freed_site() const { return last_freed_site_; }
  bool has_page(uint64_t page) const { return pages_.contains(page); }
  uint64_t live_pages() const { return pages_.size(); }
  bool has_ring(int64_t handle) const { return rings_.contains(handle); }

  // Names can grow while a trace replays (new tasks, caches, sites).
  OpNames& names() { return names_; }
  // Called with every op before it runs (the emitters).
  std::function<void(const Op&)> tap;

 private:
  struct Obj {
    Ptr p;
    CacheId cache;  // kNoCache: from kmalloc
    uint32_t site;  // the allocating op's call site
  };
  Task task_of(const Op& op) const;
  void free_obj(const Obj& o, const Task& t);
  void tap_op(const Op& op);
  CacheId cache_id(uint32_t ix);
  bool run_nodes(const OpProgram& p, const std::vector<OpNode>& nodes, int depth,
                 std::string* error);
  bool call(const OpProgram& p, const OpNode& n, int depth, std::string* error);
  bool exec_ring(const Op& op, iou::RingId r, std::string* error);
  bool exec_mem(const Op& op, std::string* error);
  iou::RingId ring(int64_t handle) const;

  Env& env_;
  Recorder& rec_;
  OpNames names_;
  absl::flat_hash_map<int64_t, iou::RingId> rings_;
  absl::flat_hash_map<uint64_t, Obj> objs_;
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>> pages_;  // handle -> (id, order)
  // Handles whose allocation returned NULL: their free is a no-op, as
  // kfree(NULL) is (a later allocation at the handle takes it back).
  absl::flat_hash_set<uint64_t> null_objs_, null_pages_;
  absl::node_hash_map<std::string, std::vector<OpNode>> expanded_;  // macro calls (stable)
  // The expansion each call node of the running program resolved to. A
  // node's arguments never change, so the second time a node runs it is
  // found by address: the key above (as long as the arguments, which may
  // double at every nesting level) is built once per node, not once per
  // execution. Only nodes inside expanded bodies (depth > 0), which live in
  // expanded_, a node map whose values stay put; cleared by run().
  absl::flat_hash_map<const OpNode*, const std::vector<OpNode>*> by_node_;
  std::vector<CacheId> cache_ids_;
  uint64_t peak_objs_ = 0;
  uint32_t last_freed_site_ = 0;
  bool trace_mode_ = false, last_alloc_ok_ = false, last_free_ok_ = false;
  int64_t implicit_frees_ = 0, frees_before_capture_ = 0;
  Counters round_start_;
};

}  // namespace simcache::sim
