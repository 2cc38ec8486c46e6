// Trace replay: compiles trace events to ops (ops.h) on the fly and runs
// them on one simulated kernel per policy column. Memory is the live
// objects, rings and call sites, never the trace: the file is read line
// by line, and a free removes its object from every map.
#include "sim/replay/replay.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "model/kernel/policy.h"
#include "sim/replay/text.h"
#include "sim/replay/trace_dat.h"

namespace simcache::sim {
namespace {

// Caches kmem_cache_alloc call sites name, where the kernel's cache is
// known (its kmem_cache_create() flags); other sites get a cache of the
// traced object size.
struct KnownCache {
  std::string_view site, cache;
  slab_flags_t flags;
};
constexpr slab_flags_t kHwPanic = SLAB_HWCACHE_ALIGN | SLAB_PANIC;
constexpr KnownCache kKnown[] = {
    {"getname_flags", "names_cache", kHwPanic},  // vfs_caches_init()
    {"getname_kernel", "names_cache", kHwPanic},
    {"getname", "names_cache", kHwPanic},
    {"prepare_creds", "cred_jar", kHwPanic | SLAB_ACCOUNT},  // cred_init()
    {"prepare_kernel_cred", "cred_jar", kHwPanic | SLAB_ACCOUNT},
    {"vm_area_alloc", "vm_area_struct", SLAB_PANIC | SLAB_ACCOUNT},
    {"vm_area_dup", "vm_area_struct", SLAB_PANIC | SLAB_ACCOUNT},
    {"alloc_empty_file", "filp", kHwPanic | SLAB_ACCOUNT},  // files_init()
    {"__alloc_file", "filp", kHwPanic | SLAB_ACCOUNT},
    {"__d_alloc", "dentry", SLAB_RECLAIM_ACCOUNT | SLAB_PANIC | SLAB_ACCOUNT},
    {"__io_alloc_req_refill", "io_kiocb", 0},  // io_uring_init(): exists in the model
    {"io_alloc_req", "io_kiocb", 0},
    {"io_rsrc_node_alloc", "io_rsrc_node", kHwPanic},
};

const KnownCache* known_by_site(std::string_view fn) {
  for (const KnownCache& k : kKnown)
    if (k.site == fn) return &k;
  return nullptr;
}
const KnownCache* known_by_name(std::string_view name) {
  for (const KnownCache& k : kKnown)
    if (k.cache == name) return &k;
  return nullptr;
}

// "putname+0x47/0x50" -> "putname"; raw hex stays as printed.
std::string_view site_fn(std::string_view cs) {
  const size_t plus = cs.find('+');
  return plus == std::string_view::npos ? cs : cs.substr(0, plus);
}

// io_uring opcodes (include/uapi/linux/io_uring.h) the model runs.
enum : int64_t { kOpNop = 0, kOpPollAdd = 6, kOpRead = 22, kOpMsgRing = 40, kOpFutexWait = 51,
                 kOpFutexWake = 52, kOpFutexWaitv = 53 };
int64_t opcode_of(const TraceEvent& ev) {
  if (ev.opcode >= 0) return ev.opcode;
  struct N { std::string_view n; int64_t op; };
  static constexpr N names[] = {{"NOP", kOpNop}, {"POLL_ADD", kOpPollAdd}, {"READ", kOpRead},
                                {"MSG_RING", kOpMsgRing}, {"FUTEX_WAIT", kOpFutexWait},
                                {"FUTEX_WAKE", kOpFutexWake}, {"FUTEX_WAITV", kOpFutexWaitv}};
  for (const N& x : names)
    if (x.n == ev.opcode_name) return x.op;
  return -1;
}

constexpr int64_t IORING_SETUP_DEFER_TASKRUN = 1 << 13;
constexpr int64_t IORING_REGISTER_FILES = 2, IORING_UNREGISTER_FILES = 3,
                  IORING_REGISTER_FILES2 = 13;

struct SiteStat {
  int64_t allocs = 0, frees = 0, bytes = 0;
};

class Replayer {
 public:
  Replayer(Env& env, Recorder& rec, const TraceSummary& s, const Params& p)
      : env_(env), rec_(rec), s_(s), exec_(env, rec, OpNames{}),
        waitv_width_(p.at("waitv_width")) {
    exec_.set_trace_mode(true);
    if (!s.markers) rec_.begin_round(true), rec_.timed_begin();
  }

  void event(const TraceEvent& ev);
  void end();
  OpExec& exec() { return exec_; }
  // Whether a kmem event of an io_* call site was replayed (and so its
  // handling depended on s.io_uring).
  bool io_site_seen() const { return io_site_; }
  // Frees what the capture ended with (objects and pages), on the kworker.
  void release() { exec_.free_all(env_.kworker); }

 private:
  struct Pending {
    int64_t opcode = -1, ring = -1;
    uint64_t req = 0;
    Op op;
  };
  Op mk(OpKind k, const TraceEvent& ev) {
    Op op;
    op.kind = k;
    op.cpu = static_cast<CpuId>(ev.cpu);
    op.task = task(ev);
    return op;
  }
  uint16_t task(const TraceEvent& ev) {
    if (ev.task.empty()) {  // no task column: one task per CPU
      if (cpu_task_.size() <= ev.cpu) cpu_task_.resize(ev.cpu + 1, UINT16_MAX);
      uint16_t& t = cpu_task_[ev.cpu];
      if (t == UINT16_MAX) t = exec_.names().task(fmt::format("cpu{}", ev.cpu), true);
      return t;
    }
    if (have_last_ && ev.task == last_task_) return last_ix_;
    last_task_.assign(ev.task);
    last_ix_ = exec_.names().task(last_task_, default_user_task(last_task_));
    have_last_ = true;
    return last_ix_;
  }
  void run(const Op& op) {
    std::string err;
    if (!exec_.exec(op, &err)) ++failed_;
    ++replayed_;
  }
  // FUTEX_WAIT(V) requests of the submission being read: whether each
  // armed shows only in its completion, which the kernel posts when the
  // submission's completions are flushed, after the batch's later
  // submits. Until then the waits, and the requests submitted after them,
  // are held in order; the flush runs them all.
  struct Held {
    Op op;
    uint64_t req;  // a wait's request, 0 for others
  };
  void emit(const Op& op) {
    if (held_.empty()) return run(op);
    held_.push_back({op, 0});
    if (held_.size() >= kMaxHeld) flush_held();
  }
  void flush_held() {
    for (const Held& h : held_) run(h.op);
    held_.clear();
    held_complete_ = false;
  }
  static constexpr size_t kMaxHeld = 4096;  // one SQ's worth: memory stays bounded
  void kmem(const TraceEvent& ev);
  void kfree(const TraceEvent& ev);
  void page(const TraceEvent& ev);
  void uring(const TraceEvent& ev);
  void submit(const TraceEvent& ev, int64_t ring);
  void resolve(const TraceEvent* next);
  void complete(const TraceEvent& ev);
  void marker(const TraceEvent& ev);
  // The last few gfp strings and call sites: traces repeat them, and
  // parsing flags or hashing a symbol per line dominated replay.
  gfp_t gfp(std::string_view text) {
    if (text.empty()) text = "GFP_KERNEL";
    for (auto& [t, g] : gfp_memo_)
      if (t == text) return g;
    gfp_t g = 0;
    std::string why;
    parse_gfp(text, false, &g, &why);
    gfp_memo_[gfp_next_++ % gfp_memo_.size()] = {std::string(text), g};
    return g;
  }
  uint32_t site_ix(std::string_view fn) {
    for (auto& [t, ix] : site_memo_)
      if (t == fn) return ix;
    const uint32_t ix = exec_.names().site(fn);
    site_memo_[site_next_++ % site_memo_.size()] = {std::string(fn), ix};
    return ix;
  }
  SiteStat& site(uint32_t ix) {
    if (sites_.size() <= ix) sites_.resize(ix + 1);
    return sites_[ix];
  }

  Env& env_;
  Recorder& rec_;
  const TraceSummary& s_;
  OpExec exec_;
  int64_t waitv_width_;
  absl::flat_hash_map<uint64_t, int64_t> ring_of_;          // ring pointer -> handle (fd)
  absl::flat_hash_map<uint64_t, bool> covered_;             // io_uring's own objects
  absl::flat_hash_map<int64_t, int64_t> entered_;           // task key -> ring in enter
  std::vector<SiteStat> sites_;
  std::array<std::pair<std::string, gfp_t>, 4> gfp_memo_;
  std::array<std::pair<std::string, uint32_t>, 8> site_memo_;
  size_t gfp_next_ = 0, site_next_ = 0;
  Pending pending_;
  std::vector<Held> held_;
  bool held_complete_ = false;  // a completion came since the first held wait
  std::string last_task_;
  std::vector<uint16_t> cpu_task_;
  uint16_t last_ix_ = 0;
  bool have_last_ = false, io_site_ = false;
  bool simcache_markers_ = false;  // a simcache marker came: the trace says when it reaps
  int64_t replayed_ = 0, failed_ = 0, before_capture_ = 0, implicit_free_ = 0, null_free_ = 0,
          covered_count_ = 0, unmodelled_ = 0, peak_pages_ = 0, peak_maps_ = 0;
};

void Replayer::kmem(const TraceEvent& ev) {
  std::string_view fn = site_fn(ev.call_site);
  if (fn == "0x0" || fn == "0") fn = {};  // no call site recorded
  // io_uring's own call sites, and io-wq's worker (the model creates it
  // at a task's first punt, rw.h). Not io_alloc_ocqe: whether a CQ ring
  // overflowed depends on the application's reaping, which the trace does
  // not show, so the model overflows none (OpExec::set_trace_mode) and the
  // kernel's overflow entries replay as the allocations they were.
  const bool io_site =
      (fn.rfind("io_", 0) == 0 || fn.rfind("__io_", 0) == 0 || fn == "create_io_worker") &&
      fn != "io_alloc_ocqe";
  io_site_ |= io_site;
  if (s_.io_uring && io_site) {
    covered_[ev.ptr] = true;  // the io_uring model allocates these itself
    ++covered_count_;
    return;
  }
  const bool cache = ev.kind == TraceKind::kmem_cache_alloc;
  Op op = mk(cache ? OpKind::cache_alloc : OpKind::kmalloc, ev);
  op.obj = ev.ptr;
  op.site = site_ix(fn);
  op.gfp = gfp(ev.gfp);
  if (ev.accounted == 1) op.gfp |= __GFP_ACCOUNT;
  op.n = ev.bytes_req >= 0 ? ev.bytes_req : ev.bytes_alloc;
  if (cache) {
    const KnownCache* k = ev.name.empty() ? known_by_site(fn) : known_by_name(ev.name);
    std::string name = !ev.name.empty() ? std::string(ev.name)
                       : k ? std::string(k->cache)
                           : fmt::format("trace-{}", op.n);
    op.cache = exec_.names().cache(name);
    OpCache& c = exec_.names().caches[op.cache];
    // kmem_cache_alloc's bytes are in [0, KMALLOC_MAX_SIZE] (trace.cc's range).
    if (c.size == 0) c.size = static_cast<uint32_t>(std::max<int64_t>(op.n, 8)), c.flags = k ? k->flags : 0;
  }
  run(op);  // trace mode: an object still live at this pointer is freed first
  if (!exec_.last_alloc_ok()) return;
  SiteStat& st = site(op.site);
  st.allocs++, st.bytes += op.n;
}

void Replayer::kfree(const TraceEvent& ev) {
  if (ev.ptr == 0 || ev.ptr == kZeroSizePtr) return void(++null_free_);
  if (!covered_.empty() && covered_.erase(ev.ptr)) return;
  Op op = mk(ev.kind == TraceKind::kfree ? OpKind::kfree : OpKind::cache_free, ev);
  op.obj = ev.ptr;
  op.cache = UINT32_MAX;
  run(op);  // trace mode: an unknown pointer was allocated before the capture
  if (exec_.last_free_ok()) site(exec_.last_freed_site()).frees++;
  else --replayed_;
}

void Replayer::page(const TraceEvent& ev) {
  if (ev.kind == TraceKind::page_alloc) {
    if (ev.pfn == 0) return;  // a failed allocation (page=(null))
    if (exec_.has_page(ev.pfn)) {  // its free fell outside the trace
      Op f = mk(OpKind::page_free, ev);
      f.obj = ev.pfn;
      run(f);
      ++implicit_free_;
    }
    Op op = mk(OpKind::page_alloc, ev);
    op.obj = ev.pfn, op.n = ev.order;
    op.gfp = gfp(ev.gfp);
    run(op);
    peak_pages_ = std::max<int64_t>(peak_pages_, static_cast<int64_t>(exec_.live_pages()));
  } else if (exec_.has_page(ev.pfn)) {
    Op op = mk(OpKind::page_free, ev);
    op.obj = ev.pfn;
    run(op);
  } else {
    ++before_capture_;
  }
}

void Replayer::resolve(const TraceEvent* next) {
  if (pending_.opcode < 0) return;
  Pending p = pending_;
  pending_.opcode = -1;
  const bool complete = next && next->kind == TraceKind::uring_complete;
  if (p.opcode == kOpMsgRing) {
    auto d = complete && next->req == 0 ? ring_of_.find(next->ring) : ring_of_.end();
    if (d == ring_of_.end()) return void(++unmodelled_);  // no target CQE: target unknown
    p.op.ring2 = d->second;
    return emit(p.op);
  }
}

// A completion of a held FUTEX_WAIT(V): a result >= 0 (woken; a WAITV's
// is the index of the word that woke it) or -ECANCELED (removed at ring
// exit) means it was armed; any other (-EAGAIN: a word did not match;
// -EFAULT, -EINVAL, -ENOMEM) that nothing was armed.
void Replayer::complete(const TraceEvent& ev) {
  if (held_.empty()) return;
  held_complete_ = true;
  for (Held& h : held_)
    if (h.req == ev.req && ev.req != 0) {
      h.op.flag = ev.result >= 0 || ev.result == -125;  // -ECANCELED
      h.req = 0;  // decided
      return;
    }
}

void Replayer::submit(const TraceEvent& ev, int64_t ring) {
  const int64_t opc = opcode_of(ev);
  Op op;
  switch (opc) {
    case kOpNop: op = mk(OpKind::nop, ev), op.n = 1; break;
    case kOpPollAdd: op = mk(OpKind::poll_add, ev); break;
    case kOpFutexWake: op = mk(OpKind::futex_wake, ev), op.n = 1; break;
    case kOpMsgRing: op = mk(OpKind::send_fd, ev), op.off = 0, op.slot = -1; break;
    case kOpFutexWait: op = mk(OpKind::futex_wait, ev); break;
    case kOpFutexWaitv: op = mk(OpKind::futex_waitv, ev), op.n = waitv_width_; break;
    case kOpRead:  // a fixed-file READ (REQ_F_FIXED_FILE, bit 0), as the F0 verification read
      if (ev.flags < 0 || !(ev.flags & 1)) return void(++unmodelled_);
      op = mk(OpKind::read_fixed, ev), op.slot = -1;
      break;
    default: return void(++unmodelled_);  // an opcode the model has no path for
  }
  op.ring = ring;
  // A submit after the held waits' completions were flushed starts the
  // next submission: the held requests run first.
  if (held_complete_) flush_held();
  if (opc == kOpFutexWait || opc == kOpFutexWaitv) {
    op.flag = true;  // armed unless its completion says it failed (complete())
    held_.push_back({op, ev.req});
    if (held_.size() >= kMaxHeld) flush_held();
  } else if (opc == kOpMsgRing) {
    pending_ = {opc, ring, ev.req, op};  // decided by the next io_uring event
  } else {
    emit(op);
  }
}

void Replayer::uring(const TraceEvent& ev) {
  if (ev.kind == TraceKind::uring_create) {
    const int64_t h = ev.fd >= 0 ? ev.fd : (int64_t{1} << 40) + static_cast<int64_t>(ring_of_.size());
    if (exec_.has_ring(h)) {  // its close fell outside the trace
      Op x = mk(OpKind::ring_exit, ev);
      x.ring = h, x.cpu = env_.kworker.cpu, x.task = exec_.names().task("kworker", false);
      run(x);
    }
    ring_of_[ev.ring] = h;
    Op op = mk(OpKind::ring_create, ev);
    op.ring = h, op.n = std::max<int64_t>(ev.sq, 1), op.off = std::max<int64_t>(ev.cq, 0);
    op.flag = ev.flags >= 0 && (ev.flags & IORING_SETUP_DEFER_TASKRUN);
    // A kernel capture does not show when the program reaped its CQEs:
    // taken as in time, so the ring never overflows in the model (the
    // kernel's overflow entries, if any, replay from its io_alloc_ocqe
    // lines). A trace with simcache's markers says when it reaps
    // (`simcache reap`), as simcache's own emitted traces do.
    op.flag2 = !simcache_markers_;
    return run(op);
  }
  auto it = ring_of_.find(ev.ring);
  if (it == ring_of_.end() || !exec_.has_ring(it->second)) return void(++unmodelled_);
  if (ev.kind == TraceKind::uring_submit) return submit(ev, it->second);
  if (ev.kind != TraceKind::uring_register || ev.result < -1) return;
  Op op = mk(OpKind::register_files, ev);
  op.ring = it->second, op.n = std::max<int64_t>(ev.nr_files, 0);
  if (ev.opcode == IORING_REGISTER_FILES2) op.kind = OpKind::register_sparse;
  else if (ev.opcode == IORING_UNREGISTER_FILES) op.kind = OpKind::unregister_files;
  else if (ev.opcode != IORING_REGISTER_FILES) return;
  run(op);
}

void Replayer::marker(const TraceEvent& ev) {
  simcache_markers_ = true;
  const size_t sp = ev.text.find(' ');
  const std::string_view w = ev.text.substr(0, sp);
  const std::string_view args = sp == std::string_view::npos ? "" : ev.text.substr(sp);
  if (w == "task") {
    const std::string_view rest = args.substr(std::min<size_t>(1, args.size()));
    const size_t e = rest.find(' ');
    const std::string name(rest.substr(0, e));
    const uint16_t ix = exec_.names().task(name, default_user_task(name));
    exec_.names().tasks[ix].user = rest.find("memcg=user") != std::string_view::npos ||
                                   (rest.find("memcg=root") == std::string_view::npos &&
                                    default_user_task(name));
    return;
  }
  OpKind k;
  if (!op_kind_by_name(w, &k)) return void(++failed_);
  Op op = mk(k, ev);
  std::string err;
  if (!parse_op_args(k, args, 0, exec_.names(), &op, &err)) return void(++failed_);
  run(op);
}

void Replayer::event(const TraceEvent& ev) {
  const int64_t maps = static_cast<int64_t>(ring_of_.size() + exec_.live_pages() + exec_.live_objects() +
                                            covered_.size() + entered_.size());
  if (maps > peak_maps_) peak_maps_ = maps;
  switch (ev.kind) {
    case TraceKind::kmalloc:
    case TraceKind::kmem_cache_alloc: return kmem(ev);
    case TraceKind::kfree:
    case TraceKind::kmem_cache_free: return kfree(ev);
    case TraceKind::page_alloc:
    case TraceKind::page_free: return page(ev);
    case TraceKind::none: return;
    default: break;
  }
  resolve(&ev);
  if (ev.kind == TraceKind::uring_complete) return complete(ev);  // the model posts its own CQEs
  // Anything but a submit ends the submission being read.
  if (ev.kind != TraceKind::uring_submit && !held_.empty()) flush_held();
  switch (ev.kind) {
    case TraceKind::enter: {
      if (!exec_.has_ring(ev.fd)) return;
      Op op = mk(OpKind::enter_begin, ev);
      op.ring = ev.fd;
      entered_[ev.pid >= 0 ? ev.pid : -1 - int64_t{ev.cpu}] = ev.fd;
      return run(op);
    }
    case TraceKind::enter_exit: {
      auto it = entered_.find(ev.pid >= 0 ? ev.pid : -1 - int64_t{ev.cpu});
      if (it == entered_.end()) return;
      Op op = mk(OpKind::enter_end, ev);
      op.ring = it->second;
      entered_.erase(it);
      if (exec_.has_ring(op.ring)) run(op);
      return;
    }
    case TraceKind::close: {
      if (!exec_.has_ring(ev.fd)) return;
      Op op = mk(OpKind::ring_exit, ev);
      op.ring = ev.fd;
      if (default_user_task(exec_.names().tasks[op.task].name))  // teardown runs on iou_exit's kworker
        op.cpu = env_.kworker.cpu, op.task = exec_.names().task("kworker", false);
      for (auto it = ring_of_.begin(); it != ring_of_.end(); ++it)
        if (it->second == ev.fd) { ring_of_.erase(it); break; }
      return run(op);
    }
    case TraceKind::marker: return marker(ev);
    default: return uring(ev);
  }
}

void Replayer::end() {
  resolve(nullptr);
  flush_held();
  if (!s_.markers) rec_.timed_end(), rec_.end_round(static_cast<uint64_t>(replayed_));
  rec_.metric("trace_events_replayed", replayed_);
  rec_.metric("trace_ops_failed", failed_);
  rec_.metric("trace_free_before_capture", before_capture_ + exec_.frees_before_capture());
  rec_.metric("trace_implicit_free", implicit_free_ + exec_.implicit_frees());
  rec_.metric("trace_kfree_null", null_free_);
  rec_.metric("trace_io_uring_kmem_modelled", covered_count_);
  rec_.metric("trace_unmodelled", unmodelled_);
  rec_.metric("peak_live_objects", static_cast<int64_t>(exec_.peak_live_objects()));
  rec_.metric("peak_live_pages", peak_pages_);
  // Entries of every map replay keeps (rings, pages, objects, io_uring-owned objects, open enters).
  rec_.metric("peak_replay_maps", peak_maps_);
  const auto& sites = exec_.names().sites;
  for (size_t i = 1; i < sites_.size() && i < sites.size(); ++i) {
    if (!sites_[i].allocs && !sites_[i].frees) continue;
    rec_.metric(fmt::format("site:{}:allocs", sites[i]), sites_[i].allocs);
    rec_.metric(fmt::format("site:{}:frees", sites[i]), sites_[i].frees);
    rec_.metric(fmt::format("site:{}:bytes_req", sites[i]), sites_[i].bytes);
  }
}

// "FILE:LINE", or for a trace.dat "FILE:record N".
std::string at_line(const TraceSummary& s, uint64_t n) {
  return s.dat ? fmt::format("{}:record {}", s.file, n) : fmt::format("{}:{}", s.file, n);
}

// The first pass's work on one line (line number `no`, read into `line`):
// the budget, the parse (into `ev`; *parsed is parse_trace_line's
// verdict), a marker's op, and the counts of `s`. False on an error that
// ends the replay (the budget, or --strict), in *error.
class LineCheck {
 public:
  LineCheck(const ReplayOptions& o, TraceSummary* s) : o_(o), s_(s) {}
  bool operator()(std::string_view line, uint64_t no, TraceEvent* ev, bool* parsed,
                  std::string* error) {
    TraceSummary& s = *s_;
    if (s.lines == o_.max_events)
      return *error = fmt::format("{}: the trace has more than {} lines, the replay budget "
                                  "(--max-events N raises it)",
                                  iou::escape_controls(at_line(s, no), 200), o_.max_events),
             false;
    ++s.lines;
    size_t col = 1;
    why_.clear();
    bool ok = *parsed = parse_trace_line(line, ev, &col, &why_);
    if (ok && ev->kind == TraceKind::marker) {  // the op must parse too
      const size_t sp = ev->text.find(' ');
      OpKind k;
      Op op;
      const std::string_view w = ev->text.substr(0, sp);
      const size_t at = static_cast<size_t>(ev->text.data() - line.data());
      if (w != "task" && !op_kind_by_name(w, &k)) ok = false, col = at + 1, why_ = fmt::format("marker: unknown operation '{}'", w);
      else if (w != "task" && !parse_op_args(k, sp == std::string_view::npos ? "" : ev->text.substr(sp), at + sp + 1, scratch_, &op, &why_)) {
        ok = false;
        col = std::stoul(why_.substr(0, why_.find(':')));
        why_ = why_.substr(why_.find(':') + 2);
      }
      s.markers |= ok && (w == "round_begin" || w == "timed_begin");
    }
    if (!ok) {
      // `why` may quote the line: escaped, so the message stays one line.
      const std::string where =
          fmt::format("{}:{}: {}", at_line(s, no), col, iou::escape_controls(why_));
      if (o_.strict) return *error = where, false;
      if (!s.skipped++) s.first_skipped = where;
      return true;
    }
    if (ev->kind == TraceKind::none) return true;
    ++s.events;
    s.max_cpu = std::max(s.max_cpu, ev->cpu);
    // io_uring tracepoints, not syscalls: a kmem trace may record close() too.
    s.io_uring |= ev->kind >= TraceKind::uring_create && ev->kind <= TraceKind::uring_complete;
    return true;
  }

 private:
  const ReplayOptions& o_;
  TraceSummary* s_;
  OpNames scratch_;
  std::string why_;
};

}  // namespace

bool open_trace(const std::string& path, const ReplayOptions& o, TraceSummary* s,
                std::string* error) {
  *s = TraceSummary{};
  s->file = path;
  if (!(s->src = InputSource::open(path, "the trace", error))) return false;
  s->text = s->src;
  if (is_trace_dat(*s->src)) {
    s->dat = true;
    if (!(s->text = trace_dat_as_text(*s->src, o.max_events, error))) return false;
  }
  return true;
}

bool scan_trace(const std::string& path, const ReplayOptions& o, TraceSummary* s,
                std::string* error) {
  if (!open_trace(path, o, s, error)) return false;
  LineInput r(s->text);
  std::string_view line;
  TraceEvent ev;
  LineCheck check(o, s);
  bool parsed = false;
  while (r.next(&line))
    if (!check(line, r.line_no(), &ev, &parsed, error)) return false;
  if (r.failed()) return *error = r.error(), false;
  return true;
}

CustomWorkload trace_workload(const TraceSummary& s, std::function<void(OpExec&)> hook) {
  CustomWorkload w;
  w.name = "replay";
  w.label = fmt::format("replay {}", s.file);
  w.op_unit = s.markers ? "op" : "event";
  w.params = {{"waitv_width", 8, 1, 128, "FUTEX_WAITV entries (traces do not record sqe->len)"}};
  w.run = [s, hook](Env& env, const Params& p, Recorder& rec, std::function<void()>* at_end,
              std::string* error) {
    if (!s.text) return *error = fmt::format("{}: the trace was not scanned", s.file), false;
    LineInput r(s.text);
    auto rp = std::make_shared<Replayer>(env, rec, s, p);
    if (hook) hook(rp->exec());
    std::string_view line;
    TraceEvent ev;
    size_t col;
    std::string why;
    // No more lines than the scan counted (and budgeted), even if the
    // file grew since.
    for (uint64_t n = 0; n < s.lines && r.next(&line); ++n)
      if (parse_trace_line(line, &ev, &col, &why)) rp->event(ev);
    if (r.failed()) return *error = r.error(), false;
    rp->end();
    env.io.task_exit_all();  // the traced program's tasks exit: their io_uring contexts
    // Objects the capture ended with are live, not leaks: free them after
    // the counts are taken.
    *at_end = [rp] { rp->release(); };
    return true;
  };
  return w;
}

CustomWorkload trace_workload_single(std::shared_ptr<SinglePass> sp) {
  CustomWorkload w = trace_workload(sp->opened);
  w.op_unit = "event";  // the guess: no round markers
  w.run = [sp](Env& env, const Params& p, Recorder& rec, std::function<void()>* at_end,
               std::string* error) {
    // This column's own first pass, kept beside the replay.
    auto s = std::make_shared<TraceSummary>(sp->opened);
    s->io_uring = sp->assume_io_uring;
    LineInput r(s->text);
    if (sp->tap && !sp->tap_taken.exchange(true)) r.set_tap(sp->tap);
    auto rp = std::make_shared<Replayer>(env, rec, *s, p);
    LineCheck check(sp->options, s.get());
    auto give_up = [&] {
      sp->invalid = true;
      return *error = fmt::format("{}: the trace needs two passes", s->file), false;
    };
    std::string_view line;
    TraceEvent ev;
    bool parsed = false;
    while (r.next(&line)) {
      const bool io_uring_before = s->io_uring;
      if (!check(line, r.line_no(), &ev, &parsed, error)) return false;
      if (!parsed) continue;
      // max_cpu as the first pass counts it: events only.
      if (s->markers || (!sp->cpus_set && s->max_cpu >= kReplayMinCpus)) return give_up();
      if (s->io_uring && !io_uring_before && rp->io_site_seen()) {
        sp->retry_io_uring = true;
        return give_up();
      }
      if ((s->lines & 4095) == 0 && sp->invalid.load(std::memory_order_relaxed)) return give_up();
      rp->event(ev);
    }
    if (r.failed()) return *error = r.error(), false;
    rp->end();
    env.io.task_exit_all();
    *at_end = [rp, s] { rp->release(); };
    std::lock_guard<std::mutex> lock(sp->mu);
    if (!sp->done) sp->result = *s, sp->done = true;
    return true;
  };
  return w;
}

}  // namespace simcache::sim
