// run-ops as a workload, and the emitters: executed ops as a flat op file
// or as trace text that `replay` reads back (docs/ops.md).
#include <cstdio>

#include <fmt/format.h>

#include "model/kernel/policy.h"
#include "model/mm/geometry.h"
#include "sim/io/output.h"
#include "sim/replay/replay.h"
#include "sim/replay/text.h"

namespace simcache::sim {
namespace {

using Hook = std::function<void(OpExec&)>;

CustomWorkload make_ops_workload(std::shared_ptr<const OpProgram> prog, Hook hook) {
  CustomWorkload w;
  w.name = "run-ops";
  w.label = fmt::format("run-ops {}", prog->file);
  w.op_unit = prog->op_unit;
  w.time_unit = prog->time_unit;
  w.run = [prog, hook](Env& env, const Params&, Recorder& rec, std::function<void()>*,
                       std::string* error) {
    OpExec ex(env, rec, prog->names);
    if (hook) hook(ex);
    const bool ok = ex.run(*prog, error);
    env.io.task_exit_all();  // the program exits: its tasks' io_uring contexts
    return ok;
  };
  return w;
}

// Writes `fill(FILE*)`'s output to `path` through the one safe writer
// (sim/io/output.h): a temp beside it, put in place only when complete.
bool write_atomic(const std::string& path, const std::function<bool(std::FILE*)>& fill,
                  std::string* error) {
  OutputStream out;
  if (!out.open(path, error)) return false;
  if (!fill(out.file())) {
    if (error->empty()) *error = fmt::format("{}: error writing", iou::escape_controls(path, 200));
    return false;
  }
  return out.finish(error);
}

// An op as an op-file line, declaring its task and cache the first time.
struct OpWriter {
  std::FILE* f;
  const OpNames& names;
  std::vector<bool> tasks, caches;
  void write(const Op& op) {
    if (tasks.size() <= op.task) tasks.resize(op.task + 1u);
    if (!tasks[op.task]) {
      tasks[op.task] = true;
      const OpTask& t = names.tasks[op.task];
      fmt::print(f, "task {} memcg={}\n", op_task_token(t.name), t.user ? "user" : "root");
    }
    const bool named = op.kind == OpKind::cache_alloc && op.cache != UINT32_MAX;
    if (named && (caches.size() <= op.cache || !caches[op.cache])) {
      if (caches.size() <= op.cache) caches.resize(op.cache + 1u);
      caches[op.cache] = true;
      Op c = op;
      c.kind = OpKind::cache_create, c.n = names.caches[op.cache].size;
      fmt::print(f, "{}\n", format_op(c, names));
    }
    if (op.kind == OpKind::cache_create) {
      if (caches.size() <= op.cache) caches.resize(op.cache + 1u);
      caches[op.cache] = true;
    }
    fmt::print(f, "{}\n", format_op(op, names));
  }
};

}  // namespace

CustomWorkload ops_program_workload(std::shared_ptr<const OpProgram> prog) {
  return make_ops_workload(std::move(prog), {});
}

bool ops_workload(const std::string& path, CustomWorkload* w, std::string* error) {
  auto prog = std::make_shared<OpProgram>();
  if (!load_op_file(path, prog.get(), error)) return false;
  *w = make_ops_workload(prog, {});
  return true;
}

void TraceWriter::line(const Op& op, std::string_view event, const std::string& payload) {
  const OpTask& t = names_.tasks.at(op.task);
  fmt::print(out_, "{:>16}-{:<5} [{:03}] ..... {:6}.{:06}: {}: {}\n", t.name, 1000 + op.task,
             op.cpu, usec_ / 1000000, usec_ % 1000000, event, payload);
  ++usec_;
}

void TraceWriter::marker(const Op& op) {
  Op m = op;
  if (m.ring >= 0) m.ring += 3;  // markers name rings by fd, as replay does
  if (m.ring2 >= 0) m.ring2 += 3;
  const std::string text = format_op(m, names_);
  size_t sp = text.find(' ');
  sp = text.find(' ', sp + 1);
  line(op, "tracing_mark_write", "simcache " + text.substr(sp + 1));
}

// kmem and page ops as kmem events; false for the others.
bool TraceWriter::write_mem(const Op& op) {
  auto ptr = [](uint64_t obj) { return fmt::format("{:016x}", obj ^ 0xffff000000000000ull); };
  auto site = [&](uint32_t s) { return s ? names_.sites[s] + "+0x0/0x0" : std::string("0x0"); };
  const char* acct = (op.gfp & __GFP_ACCOUNT) ? "true" : "false";
  switch (op.kind) {
    case OpKind::kmalloc:
      return emit(op, "kmalloc",
                  fmt::format("call_site={} ptr={} bytes_req={} bytes_alloc={} gfp_flags={} "
                              "node=-1 accounted={}", site(op.site), ptr(op.obj), op.n,
                              kmalloc_size_roundup(static_cast<uint64_t>(op.n)),
                              format_gfp(op.gfp), acct));
    case OpKind::page_alloc:
      if (op.obj == 0) return false;  // pfn 0 reads as a failed allocation
      return emit(op, "mm_page_alloc",
                  fmt::format("page={} pfn=0x{:x} order={} migratetype=0 gfp_flags={}",
                              ptr(op.obj), op.obj, op.n, format_gfp(op.gfp)));
    case OpKind::page_free:
      if (op.obj == 0) return false;
      return emit(op, "mm_page_free",
                  fmt::format("page={} pfn=0x{:x} order=0", ptr(op.obj), op.obj));
    case OpKind::kfree:
      return emit(op, "kfree", fmt::format("call_site=0x0 ptr={}", ptr(op.obj)));
    case OpKind::cache_alloc: {
      const OpCache& c = names_.caches.at(op.cache);
      return emit(op, "kmem_cache_alloc",
                  fmt::format("call_site={} ptr={} name={} bytes_req={} bytes_alloc={} "
                              "gfp_flags={} node=-1 accounted={}", site(op.site), ptr(op.obj),
                              c.name, c.size, c.size, format_gfp(op.gfp), acct));
    }
    case OpKind::cache_free:
      return emit(op, "kmem_cache_free",
                  op.cache == UINT32_MAX
                      ? fmt::format("call_site=0x0 ptr={}", ptr(op.obj))
                      : fmt::format("call_site=0x0 ptr={} name={}", ptr(op.obj),
                                    names_.caches.at(op.cache).name));
    default: return false;
  }
}

void TraceWriter::write(const Op& op) {
  if (declared_.size() <= op.task) declared_.resize(op.task + 1u);
  if (!declared_[op.task]) {
    declared_[op.task] = true;
    const OpTask& t = names_.tasks[op.task];
    line(op, "tracing_mark_write",
         fmt::format("simcache task {} memcg={}", op_task_token(t.name), t.user ? "user" : "root"));
  }
  auto ring = [](int64_t h) { return fmt::format("{:016x}", 0xffff888100000000ull + uint64_t(h) * 0x1000); };
  auto submit = [&](const Op& o, int64_t r, std::string_view opc, unsigned flags = 0) {
    line(o, "io_uring_submit_req",
         fmt::format("ring {}, req {:016x}, user_data 0x0, opcode {}, flags 0x{:x}, sq_thread 0",
                     ring(r), 0xffff888200000000ull + ++req_ * 0x100, opc, flags));
  };
  auto complete = [&](const Op& o, int64_t r, uint64_t req, int res) {
    line(o, "io_uring_complete",
         fmt::format("ring {}, req {:016x}, user_data 0x0, result {}, cflags 0x0 extra1 0 extra2 0",
                     ring(r), req, res));
  };
  const uint64_t fd = static_cast<uint64_t>(op.ring + 3);
  if (write_mem(op)) return;
  switch (op.kind) {
    case OpKind::ring_create:
      return line(op, "io_uring_create",
                  fmt::format("ring {}, fd {} sq size {}, cq size {}, flags 0x{:x}", ring(op.ring),
                              fd, op.n, op.off ? op.off : 2 * op.n, op.flag ? 0x3000 : 0));
    case OpKind::ring_exit: return line(op, "sys_enter_close", fmt::format("fd: 0x{:08x}", fd));
    case OpKind::enter_begin:
      return line(op, "sys_enter_io_uring_enter",
                  fmt::format("fd: 0x{:08x}, to_submit: 0x00000000, min_complete: 0x00000000, "
                              "flags: 0x00000000, argp: 0x00000000, argsz: 0x00000000", fd));
    case OpKind::enter_end: return line(op, "sys_exit_io_uring_enter", "0x0");
    case OpKind::register_files:
    case OpKind::unregister_files:
    case OpKind::register_sparse:
      if (op.kind == OpKind::register_sparse && op.flag) break;  // the opt-in flag is not traced
      return line(op, "io_uring_register",
                  fmt::format("ring {}, opcode {}, nr_user_files {}, nr_user_bufs 0, ret 0",
                              ring(op.ring),
                              op.kind == OpKind::register_files ? 2
                              : op.kind == OpKind::register_sparse ? 13 : 3,
                              op.kind == OpKind::unregister_files ? 0 : op.n));
    case OpKind::send_fd:
      if (op.off != 0 || op.slot >= 0 || op.flag) break;
      submit(op, op.ring, "MSG_RING");
      return complete(op, op.ring2, 0, 0);  // the target's CQE carries no request
    case OpKind::futex_wait:
    case OpKind::futex_waitv:
      if (op.kind == OpKind::futex_waitv && op.n != 8) break;  // replay's default width
      submit(op, op.ring, op.kind == OpKind::futex_wait ? "FUTEX_WAIT" : "FUTEX_WAITV");
      if (!op.flag) complete(op, op.ring, 0xffff888200000000ull + req_ * 0x100, -11);
      return;
    case OpKind::futex_wake:
      if (op.n != 1) break;
      return submit(op, op.ring, "FUTEX_WAKE");
    case OpKind::poll_add: return submit(op, op.ring, "POLL_ADD");
    case OpKind::read_fixed:
      if (op.slot >= 0) break;  // the trace names no slot: replay reads the first installed
      submit(op, op.ring, "READ", 0x1);  // REQ_F_FIXED_FILE
      return complete(op, op.ring, 0xffff888200000000ull + req_ * 0x100, 1);
    default: break;
  }
  marker(op);
}

bool emit_ops_run(const std::string& ops_path, const std::string& out_path, bool as_trace,
                  const RunRequest& req, std::string* error) {
  auto prog = std::make_shared<OpProgram>();
  if (!load_op_file(ops_path, prog.get(), error)) return false;
  RunRequest one = req;
  if (one.policies.size() > 1) one.policies.resize(1);
  one.jobs = 1;
  return write_atomic(out_path, [&](std::FILE* f) {
    std::unique_ptr<TraceWriter> tw;
    std::unique_ptr<OpWriter> ow;
    CustomWorkload w = make_ops_workload(prog, [&](OpExec& ex) {
      if (as_trace) {
        tw = std::make_unique<TraceWriter>(f, ex.names());
        ex.tap = [&](const Op& op) { tw->write(op); };
      } else {
        ow = std::make_unique<OpWriter>(OpWriter{f, ex.names(), {}, {}});
        ex.tap = [&](const Op& op) { ow->write(op); };
      }
    });
    if (!as_trace) fmt::print(f, "# {} expanded (simcache run-ops --emit-ops)\nunit {} {}\n",
                              ops_path, prog->op_unit, prog->time_unit);
    RunResult r;
    return run_custom(one, w, &r, error);
  }, error);
}

bool emit_trace_ops(const TraceSummary& s, const std::string& out_path, const RunRequest& req,
                    std::string* error) {
  const std::string& trace_path = s.file;
  RunRequest one = req;
  if (one.policies.size() > 1) one.policies.resize(1);
  one.jobs = 1;
  return write_atomic(out_path, [&](std::FILE* f) {
    std::unique_ptr<OpWriter> ow;
    fmt::print(f, "# {} as ops (simcache replay --emit-ops)\n", trace_path);
    // A trace without round or timed markers is replayed as one measured
    // round timing every event (trace_workload()); the ops say so, so
    // run-ops times what replay timed.
    if (!s.markers) fmt::print(f, "unit event ns\n");
    std::string first_at;  // "CPU TASK" of the first op, for the closing lines
    CustomWorkload w = trace_workload(s, [&](OpExec& ex) {
      ow = std::make_unique<OpWriter>(OpWriter{f, ex.names(), {}, {}});
      ex.tap = [&](const Op& op) {
        if (first_at.empty() && !s.markers) {
          Op open;
          open.cpu = op.cpu, open.task = op.task;
          open.kind = OpKind::round_begin, open.flag = 1;
          ow->write(open);
          open.kind = OpKind::timed_begin;
          ow->write(open);
          first_at = fmt::format("{} {}", op.cpu, op_task_token(ex.names().tasks[op.task].name));
        }
        ow->write(op);
      };
    });
    RunResult r;
    if (!run_custom(one, w, &r, error)) return false;
    // The executor (and its names) are gone now: the closing lines are
    // written from the first op's CPU and task as text.
    if (!first_at.empty())
      fmt::print(f, "{} timed_end\n{} round_end ops={}\n", first_at, first_at,
                 r.workloads.at(0).policies.at(0).timed_ops);
    return true;
  }, error);
}

}  // namespace simcache::sim
