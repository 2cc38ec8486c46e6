// Building blocks the drivers share: the MSG_RING SEND_FD fill loop of
// the sparse-fill programs, the rounds structure, and the memory metrics.
#pragma once

#include <array>
#include <cassert>

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <span>
#include <tuple>
#include <vector>

#include "sim/run/scenario.h"
#include "sim/run/steady.h"
#include "model/mm/geometry.h"

namespace simcache::sim {

using iou::RingId;

// Queue `installs` IORING_OP_MSG_RING SEND_FDs of the source ring's slot 0
// into `dst` ("allocate any free slot") in batches of `qd`: one
// io_uring_enter() submits a batch and waits for it; the program then
// drains the source and target CQEs. Returns the installs that succeeded;
// `slots`, if given, gets the slot each successful install's CQE reports.
inline int64_t send_fd_fill(Env& e, RingId src, RingId dst, int64_t installs,
                            int64_t qd, bool defer_taskrun,
                            std::vector<uint32_t>* slots = nullptr) {
  int64_t ok = 0;
  const int kind = e.rec ? e.rec->op_kind("msg_ring_send_fd") : 0;
  for (int64_t done = 0; done < installs;) {
    const int64_t batch = std::min(qd, installs - done);
    e.io.enter_begin(src);
    for (int64_t i = 0; i < batch; ++i) {
      const double t0 = e.rec ? e.rec->now() : 0;
      const int r = e.io.msg_ring_send_fd(src, dst, 0, iou::IORING_FILE_INDEX_ALLOC,
                                          defer_taskrun);
      if (e.rec) e.rec->op_end(kind, t0);
      ok += r >= 0;
      if (r >= 0 && slots) slots->push_back(static_cast<uint32_t>(r));
    }
    e.io.enter_end(src);
    e.io.reap_cq(dst);
    done += batch;
  }
  return ok;
}

// The programs' untimed verification after a fill (the F0 program and the
// kit, measure/kit_uring.c kit_verify_slots()): a one-byte fixed-file
// READ of each of the `installs` slots the fill took (the table's first,
// as IORING_FILE_INDEX_ALLOC hands them out into an empty table), 64 SQEs
// per io_uring_enter() on the target ring.
inline void verify_slots(Env& e, RingId dst, int64_t installs) {
  for (int64_t done = 0; done < installs;) {
    const int64_t batch = std::min<int64_t>(64, installs - done);
    e.io.enter_begin(dst);
    for (int64_t i = 0; i < batch; ++i) e.io.read_fixed(dst, static_cast<uint32_t>(done + i));
    e.io.enter_end(dst);
    e.io.reap_cq(dst);
    done += batch;
  }
}

// A ring's SQ entries for `per_enter` SQEs per io_uring_enter(): the
// program's `base`, or the power of two that holds them (a real program
// cannot submit more than its SQ holds in one enter, and its CQ ring,
// twice that, then takes a batch's completions without overflowing).
inline uint32_t ring_entries(int64_t per_enter, uint32_t base) {
  const auto n = static_cast<uint32_t>(std::clamp<int64_t>(per_enter, 1, iou::IORING_MAX_ENTRIES));
  return std::max(base, std::bit_ceil(n));
}

// After an untimed sleep: the installs of the first batch (one
// io_uring_enter() of up to qd SQEs) start cold (idle_cold_install), and
// every install of the operation runs on a core whose clock is still
// ramping up from idle (idle_slow_install): the part of the cold start
// that grows with the operation's length.
inline void cold_start_installs(Env& e, int64_t installs, int64_t qd) {
  const int64_t n = std::min(installs, qd);
  if (n > 0) e.mm.events().add(Event::idle_cold_install, static_cast<uint64_t>(n));
  if (installs > 0) e.mm.events().add(Event::idle_slow_install, static_cast<uint64_t>(installs));
}

// Slot size of the objects a per-ring cache holds.
inline uint64_t cache_slot_size(Env& e, const iou::IoAllocCache& c) {
  if (c.slab != kNoCache) return e.mm.info(c.slab).slab_size;
  if (c.elem_size == 0) return 0;
  if (c.elem_size > KMALLOC_MAX_CACHE_SIZE) return c.elem_size;
  return kmalloc_size(kmalloc_index(c.elem_size));
}

// A ring's io_alloc_caches by the names the metrics give them.
inline std::array<std::pair<const char*, const iou::IoAllocCache*>, 9> ring_caches(
    const iou::IoRingCtx& c) {
  return {{{"apoll_cache", &c.apoll_cache},
           {"netmsg_cache", &c.netmsg_cache},
           {"rw_cache", &c.rw_cache},
           {"cmd_cache", &c.cmd_cache},
           {"msg_cache", &c.msg_cache},
           {"futex_cache", &c.futex_cache},
           {"waitv_cache", &c.waitv_cache},
           {"node_cache", &c.node_cache},
           {"imu_cache", &c.imu_cache}}};
}

// The entries array of one io_alloc_cache: io_alloc_cache_init()'s
// kvmalloc_array() of max_cached pointers (0 for a cache the ring did not
// set up).
inline int64_t entries_bytes(const iou::IoAllocCache& ac) {
  return ac.entries_mem != kNull ? static_cast<int64_t>(ac.max_cached) * 8 : 0;
}

// Bytes a ring's node, futex and (waitv-cache) WAITV caches hold: parked objects plus the
// pointer arrays (the RFC's "4096 x 32 bytes plus a 32 KiB pointer array").
inline int64_t ring_cache_bytes(Env& e, RingId r) {
  const iou::IoRingCtx& c = e.io.ring(r);
  int64_t b = 0;
  for (const iou::IoAllocCache* ac : {&c.node_cache, &c.futex_cache, &c.waitv_cache}) {
    b += static_cast<int64_t>(ac->nr_cached * cache_slot_size(e, *ac));
    b += static_cast<int64_t>(ac->max_cached) * 8;
  }
  return b;
}

// The memory metrics of the measured rings, summed (docs/stats.md "Model
// metrics"). entries_bytes: every cache's entries array together, then
// each cache a ring set up on its own (entries_bytes_node_cache, ...).
// Lifecycle drivers call it once an operation: no allocation beyond the
// metrics' own names.
inline void ring_metrics(Env& e, Recorder& rec, std::span<const RingId> rings) {
  int64_t retained = 0, all = 0;
  constexpr size_t kCaches = std::tuple_size_v<decltype(ring_caches(e.io.ring(0)))>;
  std::array<int64_t, kCaches> each{};
  std::array<bool, kCaches> set_up{};
  for (RingId r : rings) {
    retained += ring_cache_bytes(e, r);
    const iou::IoRingCtx& c = e.io.ring(r);
    const auto caches = ring_caches(c);
    for (size_t i = 0; i < kCaches; ++i) {
      const iou::IoAllocCache& ac = *caches[i].second;
      all += entries_bytes(ac);
      each[i] += entries_bytes(ac);
      set_up[i] = set_up[i] || ac.entries_mem != kNull || &ac == &c.node_cache;
    }
  }
  rec.metric("bytes_retained", retained);
  rec.metric("entries_bytes", all);
  const auto names = ring_caches(e.io.ring(rings[0]));
  for (size_t i = 0; i < kCaches; ++i)
    if (set_up[i]) rec.metric(std::string("entries_bytes_") + names[i].first, each[i]);
}
inline void ring_metrics(Env& e, Recorder& rec, RingId r) { ring_metrics(e, rec, {&r, 1}); }

// The slots of a ring's fixed-file table that hold a node. From 6.13 a
// used slot always holds one (install_allocates_node: install,
// registration and FILES_UPDATE set a slot's bit with its node, and
// removal and unregister clear both), so the bitmap's set bits count
// them, a word at a time, where a look at every slot cost a compare a
// slot at every snapshot (sparse4096: 4,096 slots, four times a
// snapshot). Before 6.13 a used slot holds a file and no node. Builds
// with assertions (the ASan tree) check the count against the slots.
inline uint32_t table_nodes(const iou::IoRingCtx& c, bool install_allocates_node) {
  const auto look = [&c] {
    uint32_t n = 0;
    for (Ptr p : c.files.nodes) n += p != kNull;
    return n;
  };
  if (!install_allocates_node) return look();
  uint32_t n = 0;
  for (uint64_t w : c.files.bitmap) n += static_cast<uint32_t>(std::popcount(w));
  assert(n == look());
  return n;
}

// One ring's io_uring caches now (a closed ring: all zero, not live).
inline RingState ring_state(Env& e, RingId r, const char* role) {
  RingState st;
  st.role = role;
  st.ring = r;
  if (r < 0) return st;
  const iou::IoRingCtx& c = e.io.ring(r);
  st.live = c.live;
  st.nodes_cached = c.node_cache.nr_cached;
  st.node_capacity = c.node_cache.max_cached;
  st.futex_cached = c.futex_cache.nr_cached;
  st.table_nodes = table_nodes(c, e.io.profile().install_allocates_node);
  return st;
}

// Memory held now: io_uring objects of the given rings, their pointer
// arrays, and the allocator-wide slab pages, large pages, ring region
// pages and memcg charge.
inline MemorySplit memory_split(Env& e, std::initializer_list<RingId> rings) {
  MemorySplit m;
  for (RingId r : rings) {
    if (r < 0 || !e.io.ring(r).live) continue;
    const iou::IoRingCtx& c = e.io.ring(r);
    const RingState st = ring_state(e, r, "");
    m.payload_bytes += static_cast<int64_t>((st.table_nodes + st.nodes_cached) *
                                            cache_slot_size(e, c.node_cache));
    m.payload_bytes += static_cast<int64_t>(st.futex_cached * cache_slot_size(e, c.futex_cache));
    for (const iou::IoAllocCache* ac : {&c.apoll_cache, &c.netmsg_cache, &c.rw_cache,
                                        &c.cmd_cache, &c.msg_cache, &c.futex_cache,
                                        &c.node_cache, &c.imu_cache})
      m.pointer_array_bytes += int64_t{ac->max_cached} * 8;
    if (c.files.registered) m.pointer_array_bytes += int64_t{c.files.nr} * 8;
  }
  m.slab_page_bytes = static_cast<int64_t>(e.mm.slab_bytes_total());
  m.large_bytes = static_cast<int64_t>(e.mm.large_bytes_total());
  m.ring_region_bytes = static_cast<int64_t>(e.mm.region_bytes_total());
  m.memcg_charged_bytes = static_cast<int64_t>(e.mm.memcg_charged_bytes(e.submitter.memcg));
  return m;
}

// Snapshot `name` of a measured round: both rings' caches now.
inline void snap(Env& e, Recorder& rec, const char* name, RingId src, RingId dst) {
  if (!rec.measured()) return;
  const MemorySplit m = memory_split(e, {src, dst});
  rec.snapshot(name, ring_state(e, src, "source"), m);
  rec.snapshot(name, ring_state(e, dst, "target"), m);
  rec.snapshot_caches(name);
}

// Seed 004's lifecycle evidence: which operations overlap an older
// ring's node-cache free, with each teardown on a kworker against the
// clock (docs/model-io_uring.md, "Teardown against the clock"). The model
// runs a closed ring's teardown where the driver puts it, and its counts
// stay there; this places it on the timeline the kernel would.
// io_ring_exit_work() reaches io_ring_ctx_free() only once the ring's
// percpu_ref is confirmed dead, an RCU grace period after the close. Grace
// periods run back to back, `rcu_gp_us` each, so a ring closed at t is
// freed from the end of the first one that starts after t; a
// DEFER_TASKRUN ring then waits one more (io_ring_exit_work() calls
// synchronize_rcu() for it before io_ring_ctx_free(), pairing with
// io_req_local_work_add()'s RCU read section). iou_exit is
// WQ_UNBOUND: teardowns run concurrently, each on a kworker of its own. A
// teardown run inline is taken off the submitter's timeline (it ran on
// the kworker's CPU) and a paced program's untimed sleep put on it.
// Priced runs only (without prices there is no clock).
class TeardownClock {
 public:
  TeardownClock(Env& e, const Params& p)
      : e_(e), gp_ns_(static_cast<double>(p.at("rcu_gp_us")) * 1000) {}
  bool on() const { return e_.mm.events().priced(); }
  // The submitter's time on the program's timeline.
  double now() const { return e_.mm.events().now() + shift_; }
  // The program sleeps `ns` (untimed, unpriced).
  void sleep(double ns) { shift_ += ns; }
  // When the teardown of a ring closed at `close_ns` reaches
  // io_ring_ctx_free(): the end of the first grace period (back to back,
  // `gp_ns` each) that starts after the close, one more for DEFER_TASKRUN.
  static double free_start(double close_ns, double gp_ns, bool defer_taskrun) {
    return (std::floor(close_ns / gp_ns) + (defer_taskrun ? 3 : 2)) * gp_ns;
  }
  // Ring `r` closes now.
  void closed(RingId r) {
    closes_.push_back({r, free_start(now(), gp_ns_, e_.io.ring(r).params.defer_taskrun)});
  }
  // Runs ring `r`'s teardown (`run` does it) and places its node-cache
  // free on the kworker's timeline from the close.
  template <class F>
  void teardown(RingId r, F&& run) {
    const double t0 = e_.mm.events().now();
    run();
    const auto it = std::find_if(closes_.begin(), closes_.end(),
                                 [r](const auto& c) { return c.first == r; });
    if (it == closes_.end()) return;  // not a ring the program closed
    const double start = it->second;
    closes_.erase(it);
    if (!on()) return;
    const double t1 = e_.mm.events().now();
    shift_ -= t1 - t0;
    const iou::MmIoUring::NodeFree f = e_.io.last_node_free();
    if (f.objects > 0 && f.end > f.begin)
      frees_.push_back({start + (f.begin - t0), start + (f.end - t0),
                        static_cast<double>(f.objects)});
  }
  // An operation spanning [begin, end] on the timeline; operations come
  // in time order.
  void operation(double begin, double end, bool measured) {
    while (!frees_.empty() && frees_.front().end <= begin) frees_.pop_front();
    if (!measured || !on()) return;
    bool any = false;
    for (const Free& f : frees_) {
      const double o = std::min(end, f.end) - std::max(begin, f.begin);
      if (o <= 0) continue;
      any = true;
      objects_in_ops_ += f.objects * o / (f.end - f.begin);
    }
    overlapped_ += any;
  }
  void metrics(Recorder& rec) const {
    if (!on()) return;
    rec.metric("ops_overlapping_node_free", overlapped_);
    rec.metric("node_frees_during_ops", static_cast<int64_t>(std::llround(objects_in_ops_)));
  }

 private:
  struct Free {
    double begin, end, objects;
  };
  Env& e_;
  double gp_ns_, shift_ = 0, objects_in_ops_ = 0;
  int64_t overlapped_ = 0;
  // Closed rings whose teardown has not run, each with the time its
  // io_ring_ctx_free() starts on the kworker.
  std::vector<std::pair<RingId, double>> closes_;
  std::deque<Free> frees_;  // node-cache frees that may still overlap an operation
};

// The paced programs' untimed pause after each ring close
// (docs/workloads.md, paced-S-N), on TeardownClock's timeline.
inline constexpr double kPacedSleepNs = 50e6;

// The grace period a closed ring's teardown waits for (TeardownClock).
inline ParamSpec rcu_gp_param() {
  return {"rcu_gp_us", 8000, 1, 1000000,
          "RCU grace period a closed ring's teardown waits for (TeardownClock; this VM's live "
          "trace: node-cache frees in bursts 8 ms apart)"};
}

// Last close of a ring, recording in the "teardown" snapshot (when
// `record`) the cached objects io_ring_ctx_free() freed for it.
inline void exit_ring(Env& e, Recorder& rec, RingId r, const char* role, bool record,
                      RingId other = -1) {
  RingState st = ring_state(e, r, role);
  const uint64_t before = e.mm.events()[Event::io_cache_teardown_free];
  e.io.ring_exit(r, e.kworker);
  if (!record) return;
  st.teardown_freed = e.mm.events()[Event::io_cache_teardown_free] - before;
  st.live = false;
  rec.snapshot("teardown", st, memory_split(e, {other}));
  rec.snapshot_caches("teardown");
}

// Nodes a round put into a cache ahead of need (prefill, bulk-refill
// stash) that no install took out again: stashed - hits, floored at 0.
// `reused` is the hits served by nodes the cache held before the round
// (a previous ring's teardown does not fill this ring's cache, but a
// same-ring refill reuses the nodes its removal parked).
inline int64_t unused_nodes(const Counters& round, int64_t reused = 0) {
  const int64_t stashed = static_cast<int64_t>(round[Event::io_cache_prefill] +
                                               round[Event::io_cache_refill_stash]);
  const int64_t hits = static_cast<int64_t>(round[Event::io_cache_get]) - reused;
  return std::max<int64_t>(0, stashed - std::max<int64_t>(hits, 0));
}

// FILES_UPDATE(-1) of exactly the recorded slots: one call per run of
// consecutive slots, split into chunks of at most `span` (the reuse
// program removes what the CQEs reported, not a guessed range).
inline void remove_recorded_slots(Env& e, RingId r, std::vector<uint32_t>* slots, int64_t span) {
  std::sort(slots->begin(), slots->end());
  for (size_t i = 0; i < slots->size();) {
    size_t j = i + 1;
    while (j < slots->size() && (*slots)[j] == (*slots)[j - 1] + 1 &&
           static_cast<int64_t>(j - i) < span)
      ++j;
    e.io.files_update_remove(r, (*slots)[i], static_cast<uint32_t>(j - i));
    i = j;
  }
  slots->clear();
}

// A driver as the measurement program runs: its body, then the program's
// exit, where each task's io_uring context is freed (do_exit(): the io_wq,
// the io_tctx_nodes of rings still open, the io_uring_task). Counted in
// the run's total like the kit's process exit. A driver that leaves
// teardown to tasks it spawned has those rings' nodes freed here instead,
// on the same task, with the same counts.
template <DriverFn F>
void program(Env& e, const Params& p, Recorder& rec) {
  F(e, p, rec);
  e.io.task_exit_all();
}

// Runs `smoke` + `warmup` unmeasured rounds and `rounds` measured ones;
// a steady tail of the measured ones may be computed (sim/run/steady.h):
// `locals(StateSig*)` appends the driver's state that decides later
// rounds, `cumulative` its counters that only grow.
template <class F, class L>
void run_rounds(Env& e, Recorder& rec, const Params& p, F&& round, L&& locals,
                std::initializer_list<int64_t*> cumulative = {}) {
  for (int64_t i = 0; i < p.at("smoke"); ++i) round(/*measured=*/false, /*smoke=*/true);
  for (int64_t i = 0; i < p.at("warmup"); ++i) round(false, false);
  run_measured(e, rec, p.at("rounds"), [&] { round(true, false); }, locals, cumulative);
}
// The same for a driver whose locals decide nothing later rounds do.
template <class F>
void run_rounds(Env& e, Recorder& rec, const Params& p, F&& round) {
  run_rounds(e, rec, p, round, [](StateSig*) {});
}

}  // namespace simcache::sim
