// OpExec: runs ops on one simulated kernel through the same io_uring and
// mm entry points the scenario drivers call.
#include <algorithm>

#include <fmt/format.h>

#include "sim/replay/ops.h"
#include "model/mm/backend.h"
#include "sim/run/scenarios/common.h"

namespace simcache::sim {

OpExec::OpExec(Env& env, Recorder& rec, const OpNames& names)
    : env_(env), rec_(rec), names_(names), round_start_(env.mm.events()) {}

Task OpExec::task_of(const Op& op) const {
  const bool user = op.task < names_.tasks.size() && names_.tasks[op.task].user;
  return Task{op.cpu, user ? env_.submitter.memcg : kRootMemcg,
              op.site ? 0x20000u + op.site : 0};
}

iou::RingId OpExec::ring(int64_t handle) const {
  auto it = rings_.find(handle);
  return it == rings_.end() ? -2 : it->second;
}

// The cache an op names: an existing one (io_kiocb, a kmalloc cache, one
// created earlier) or kmem_cache_create() from the file's or trace's size.
CacheId OpExec::cache_id(uint32_t ix) {
  if (ix < cache_ids_.size() && cache_ids_[ix] != kNoCache) return cache_ids_[ix];
  if (ix >= names_.caches.size()) return kNoCache;
  if (cache_ids_.size() <= ix) cache_ids_.resize(ix + 1, kNoCache);
  const OpCache& c = names_.caches[ix];
  CacheId s = env_.mm.find_cache(c.name);
  if (s == kNoCache && c.size > 0)
    s = env_.mm.kmem_cache_create(c.name, c.size, c.align, c.flags);
  return cache_ids_[ix] = s;
}

// Every narrowing below is of a field op_in_range() checked (exec()):
// nr, count, off and slots in [0, 2^32), sq and cq within the ring limits.
bool OpExec::exec_ring(const Op& op, iou::RingId r, std::string* error) {
  auto& io = env_.io;
  switch (op.kind) {
    case OpKind::ring_exit: io.ring_exit(r, task_of(op)), rings_.erase(op.ring); break;
    case OpKind::enter_begin: io.enter_begin(r); break;
    case OpKind::enter_end: io.enter_end(r); break;
    case OpKind::reap: io.reap_cq(r); break;
    case OpKind::register_files: io.files_register(r, static_cast<uint32_t>(op.n)); break;
    case OpKind::register_sparse:
      io.files_register_sparse(r, static_cast<uint32_t>(op.n), op.flag != 0);
      break;
    case OpKind::unregister_files: io.files_unregister(r); break;
    case OpKind::files_update:
      if (op.flag) io.files_update_set(r, static_cast<uint32_t>(op.off), static_cast<uint32_t>(op.n));
      else io.files_update_remove(r, static_cast<uint32_t>(op.off), static_cast<uint32_t>(op.n));
      break;
    case OpKind::send_fd: {
      const iou::RingId d = ring(op.ring2);
      if (d == -2) return *error = fmt::format("send_fd: ring {} is not open", op.ring2), false;
      io.msg_ring_send_fd(r, d, static_cast<uint32_t>(op.off),
                          op.slot < 0 ? iou::IORING_FILE_INDEX_ALLOC
                                      : static_cast<uint32_t>(op.slot),
                          op.flag != 0);
      break;
    }
    case OpKind::futex_wait: io.futex_wait(r, op.flag != 0); break;
    case OpKind::futex_waitv: io.futex_waitv(r, static_cast<uint32_t>(op.n), op.flag != 0); break;
    case OpKind::futex_wake: io.futex_wake(r, static_cast<uint32_t>(op.n)); break;
    case OpKind::poll_add: io.poll_add(r); break;
    case OpKind::read_fixed:
      io.read_fixed(r, op.slot < 0 ? iou::kFirstInstalledSlot : static_cast<uint32_t>(op.slot));
      break;
    case OpKind::nop: io.io_uring_enter(r, static_cast<uint32_t>(op.n)); break;
    case OpKind::snapshot:
      if (rec_.measured() && r >= 0) {  // as the drivers do: measured rounds only
        ring_metrics(env_, rec_, r);
        rec_.metric("nodes_unused", unused_nodes(env_.mm.events() - round_start_));
      }
      break;
    default: break;
  }
  return true;
}

bool OpExec::exec_mem(const Op& op, std::string* error) {
  Mm& mm = env_.mm;
  const Task t = task_of(op);
  switch (op.kind) {
    case OpKind::kmalloc:
    case OpKind::cache_alloc: {
      CacheId s = kNoCache;
      if (op.kind == OpKind::cache_alloc && (s = cache_id(op.cache)) == kNoCache)
        return *error = fmt::format("kmem_cache_alloc: no cache '{}' (create it first)",
                                    names_.caches.at(op.cache).name),
               false;
      // One hash lookup per op: replay runs millions of these.
      auto [it, fresh] = objs_.try_emplace(op.obj, Obj{kNull, kNoCache, 0});
      if (!fresh) {
        if (!trace_mode_)
          return *error = fmt::format("{}: object {} is still allocated", op_name(op.kind), op.obj),
                 false;
        free_obj(it->second, t);  // a trace lost this object's free
        ++implicit_frees_;
      }
      // kmalloc takes the size as size_t: above KMALLOC_MAX_SIZE it fails.
      const Ptr p = s == kNoCache ? mm.kmalloc(static_cast<uint64_t>(op.n), op.gfp, t)
                                  : mm.kmem_cache_alloc(s, op.gfp, t);
      last_alloc_ok_ = p != kNull;
      if (p == kNull) {  // -ENOMEM: the caller sees NULL, a failed operation
        rec_.failure("ENOMEM");
        null_objs_.insert(op.obj);  // its free is kfree(NULL)
        return objs_.erase(it), true;
      }
      null_objs_.erase(op.obj);
      it->second = Obj{p, s, op.site};
      if (objs_.size() > peak_objs_) peak_objs_ = objs_.size();
      return true;
    }
    case OpKind::kfree:
    case OpKind::cache_free: {
      auto it = objs_.find(op.obj);
      last_free_ok_ = it != objs_.end();
      if (!last_free_ok_ && null_objs_.erase(op.obj)) return true;  // kfree(NULL): nothing
      if (!last_free_ok_) {
        if (trace_mode_) return ++frees_before_capture_, true;  // allocated before the capture
        return *error = fmt::format("{}: object {} is not allocated", op_name(op.kind), op.obj),
               false;
      }
      Obj o = it->second;
      objs_.erase(it);
      last_freed_site_ = o.site;
      if (op.kind == OpKind::cache_free && op.cache != UINT32_MAX) o.cache = cache_id(op.cache);
      free_obj(o, t);
      return true;
    }
    case OpKind::cache_create:
      if (cache_id(op.cache) == kNoCache) {
        const OpCache& c = names_.caches.at(op.cache);
        return *error = fmt::format("kmem_cache_create: cache '{}' of size {} (align {}) cannot "
                                    "be laid out: its slot must be 1..{} bytes (the kernel "
                                    "returns NULL)",
                                    c.name, c.size, c.align, KMALLOC_MAX_SIZE),
               false;
      }
      return true;
    case OpKind::page_alloc: {
      if (pages_.contains(op.obj))
        return *error = fmt::format("alloc_pages: page {} is still allocated", op.obj), false;
      const uint32_t order = static_cast<uint32_t>(op.n);
      if (order > 10) return *error = fmt::format("alloc_pages: order {} above 10", order), false;
      const uint32_t id = mm.backend().alloc_pages(order, 0, op.gfp, t.cpu);
      if (id) {
        pages_.emplace(op.obj, std::make_pair(id, order));
        null_pages_.erase(op.obj);
      } else {
        rec_.failure("ENOMEM");
        null_pages_.insert(op.obj);
      }
      return true;
    }
    case OpKind::page_free: {
      auto it = pages_.find(op.obj);
      if (it == pages_.end() && null_pages_.erase(op.obj)) return true;  // its allocation failed
      if (it == pages_.end())
        return *error = fmt::format("free_pages: page {} is not allocated", op.obj), false;
      mm.backend().free_pages(it->second.first, it->second.second, t.cpu);
      pages_.erase(it);
      return true;
    }
    default: return true;
  }
}

// What the emitters see: in trace mode, no free of an object from before
// the capture, and an explicit free before an allocation at a live handle,
// so the emitted op file runs without trace mode.
void OpExec::tap_op(const Op& op) {
  const bool alloc = op.kind == OpKind::kmalloc || op.kind == OpKind::cache_alloc;
  const bool free = op.kind == OpKind::kfree || op.kind == OpKind::cache_free;
  if (trace_mode_ && free && !objs_.contains(op.obj)) return;
  if (trace_mode_ && alloc && objs_.contains(op.obj)) {
    Op f = op;
    f.kind = OpKind::kfree;
    tap(f);
  }
  tap(op);
}

bool OpExec::exec(const Op& op, std::string* error) {
  if (!op_in_range(op, error)) return *error = fmt::format("{}: {}", op_name(op.kind), *error), false;
  if (tap) tap_op(op);
  if (op.cpu >= env_.mm.config().nr_cpus)
    return *error = fmt::format("CPU {} is not below cpus = {} (pass --set cpus=N)", op.cpu,
                                env_.mm.config().nr_cpus),
           false;
  switch (op.kind) {
    case OpKind::round_begin:
      rec_.begin_round(op.flag != 0);
      round_start_ = env_.mm.events();
      return true;
    case OpKind::round_end: rec_.end_round(static_cast<uint64_t>(op.n)); return true;
    case OpKind::timed_begin: rec_.timed_begin(); return true;
    case OpKind::timed_end: rec_.timed_end(); return true;
    case OpKind::ring_create: {
      if (rings_.contains(op.ring))
        return *error = fmt::format("ring_create: ring {} is already open", op.ring), false;
      const int id = env_.io.ring_create(task_of(op), {static_cast<uint32_t>(op.n),
                                                      static_cast<uint32_t>(op.off), op.flag != 0,
                                                      op.flag2 != 0});
      rings_[op.ring] = id < 0 ? -1 : id;  // -1: creation failed, later ops get -EBADF
      return true;
    }
    case OpKind::kmalloc: case OpKind::kfree: case OpKind::cache_create:
    case OpKind::cache_alloc: case OpKind::cache_free:
    case OpKind::page_alloc: case OpKind::page_free:
      return exec_mem(op, error);
    default: break;
  }
  const iou::RingId r = ring(op.ring);
  if (r == -2) return *error = fmt::format("{}: ring {} is not open", op_name(op.kind), op.ring), false;
  return exec_ring(op, r, error);
}

bool OpExec::call(const OpProgram& p, const OpNode& n, int depth, std::string* error) {
  if (depth >= 16) return *error = fmt::format("{}:{}:1: macro calls nested deeper than 16", p.file, n.line), false;
  // Only nodes inside an expansion (depth > 0) are looked up by address:
  // they live in expanded_. A streamed program's top-level nodes are
  // parsed into a buffer that the next chunk reuses.
  if (depth > 0)
    if (auto known = by_node_.find(&n); known != by_node_.end())
      return run_nodes(p, *known->second, depth + 1, error);
  auto m = p.macros.find(n.macro);
  if (m == p.macros.end())
    return *error = fmt::format("{}:{}:1: unknown macro '{}'", p.file, n.line, n.macro), false;
  std::string key = n.macro;
  for (const auto& [k, v] : n.args) key += " " + k + "=" + v;
  auto it = expanded_.find(key);
  if (it == expanded_.end()) {
    std::vector<OpNode> body;
    if (!parse_macro_body(m->second, p.file, n.args, names_, &body, error)) return false;
    it = expanded_.emplace(key, std::move(body)).first;
  }
  const std::vector<OpNode>* body = &it->second;
  if (depth > 0) by_node_.emplace(&n, body);
  return run_nodes(p, *body, depth + 1, error);
}

bool OpExec::run_nodes(const OpProgram& p, const std::vector<OpNode>& nodes, int depth,
                       std::string* error) {
  for (const OpNode& n : nodes) {
    bool ok = true;
    if (n.kind == OpNode::kOp) {
      ok = exec(n.op, error);
      if (!ok) *error = fmt::format("{}:{}:1: {}", p.file, n.line, *error);
    } else if (n.kind == OpNode::kRepeat) {
      for (int64_t i = 0; ok && i < n.count; ++i) ok = run_nodes(p, n.body, depth, error);
    } else {
      ok = call(p, n, depth, error);
    }
    if (!ok) return false;
  }
  return true;
}

bool OpExec::run(const OpProgram& p, std::string* error) {
  by_node_.clear();
  for (size_t i = names_.tasks.size(); i < p.names.tasks.size(); ++i) names_.tasks.push_back(p.names.tasks[i]);
  return stream_op_program(
      p, [&](const std::vector<OpNode>& nodes) { return run_nodes(p, nodes, 0, error); }, error);
}

void OpExec::free_obj(const Obj& o, const Task& t) {
  if (o.cache != kNoCache) env_.mm.kmem_cache_free(o.cache, o.p, t);
  else env_.mm.kfree(o.p, t);  // kfree() takes objects of any cache
}

void OpExec::free_all(const Task& t) {
  std::vector<std::pair<uint64_t, Obj>> live(objs_.begin(), objs_.end());
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [h, o] : live) {
    if (o.cache != kNoCache) env_.mm.kmem_cache_free(o.cache, o.p, t);
    else env_.mm.kfree(o.p, t);
  }
  objs_.clear();
  null_objs_.clear();
  null_pages_.clear();
  std::vector<std::pair<uint32_t, uint32_t>> pages;
  for (const auto& [h, pg] : pages_) pages.push_back(pg);
  std::sort(pages.begin(), pages.end());
  for (const auto& [id, order] : pages) env_.mm.backend().free_pages(id, order, t.cpu);
  pages_.clear();
}

void OpExec::finish() {
  std::vector<iou::RingId> open;  // in creation order: the output must not depend on hashing
  for (const auto& [h, r] : rings_)
    if (r >= 0) open.push_back(r);
  std::sort(open.begin(), open.end());
  for (iou::RingId r : open) env_.io.ring_exit(r, env_.kworker);
  rings_.clear();
}

}  // namespace simcache::sim
