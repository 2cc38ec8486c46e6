// Seed 003's wait programs: fio's t/io_uring low-QD read loop, whose
// waiter has its read in flight, and a waiter with nothing in flight
// (waiting on a timeout or another ring's MSG_RING), so the iowait gate
// (7b72d661f1f2) shows. docs/idle.md has the model, docs/scenarios.md the
// programs.
#include <fmt/format.h>

#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// The I/O-wait share of the round as top or vmstat would show it: the
// waiting CPU's idle time in I/O-wait sleeps over its wall time, in parts
// per million, from the virtual clock (a priced run only: without prices
// there is no time to share).
struct IowaitShare {
  double t0 = 0, iow0 = 0;
  void begin(Env& e, Recorder& rec) {
    t0 = rec.now();
    iow0 = e.io.iowait_ns();
  }
  void end(Env& e, Recorder& rec) const {
    if (!rec.measured()) return;
    rec.mark_needs_clock();  // the table shows the share: an unpriced run is redone with prices
    const double wall = rec.now() - t0;
    if (wall <= 0) return;
    rec.metric("iowait_ppm", static_cast<int64_t>((e.io.iowait_ns() - iow0) / wall * 1e6 + 0.5));
  }
};

iou::CqWait wait_of(const Params& p, uint64_t sleep_us, uint32_t inflight, bool cached_refs) {
  iou::CqWait w;
  w.sleep_us = sleep_us;
  w.predicted_us = p.at("predict_us") ? static_cast<uint64_t>(p.at("predict_us")) : sleep_us;
  w.inflight = inflight;
  w.cached_refs = cached_refs;
  return w;
}

// t/io_uring -d1 -s1 -c1 (the seed's command): per cycle one
// The rounds of a cycle driver: each round times `cycles` operations of
// kind `kind`, each one `op()`, with the round's iowait share around them.
template <class Op>
void timed_cycles(Env& e, const Params& p, Recorder& rec, std::string_view kind, Op op) {
  const int k = rec.op_kind(kind);
  IowaitShare share;
  run_rounds(e, rec, p, [&](bool measured, bool) {
    rec.begin_round(measured);
    rec.timed_begin();
    share.begin(e, rec);
    for (int64_t c = 0; c < p.at("cycles"); ++c) {
      const double t0 = rec.now();
      op();
      rec.op_end(k, t0);
    }
    rec.timed_end();
    share.end(e, rec);
    rec.end_round(static_cast<uint64_t>(p.at("cycles")));
  });
}

// io_uring_enter() submits one read and waits for its CQE (min_complete
// 1); the waiter sleeps `device_us` with the read in flight until the
// completion wakes it. The read's io_uring request is modelled (request,
// SQE, CQE, priced as a NOP's); the block layer, the driver and the device
// are the sleep (docs/idle.md, "The QD-1 read loop").
void run_qd1_read(Env& e, const Params& p, Recorder& rec) {
  const RingId r = e.io.ring_create(e.submitter, {1, 0, false});
  if (r < 0) return;
  const iou::CqWait w = wait_of(p, static_cast<uint64_t>(p.at("device_us")), 1, true);
  timed_cycles(e, p, rec, "read", [&] {
    e.io.enter_begin(r);
    e.io.io_uring_enter(r, 1);  // the read's SQE
    e.io.cqring_wait(r, w);
    e.io.enter_end(r);
  });
  e.io.ring_exit(r, e.kworker);
}

// A waiter with nothing in flight: per cycle one io_uring_enter() waits
// for a CQE that no request of this task will post, and sleeps
// `timeout_us` until its timeout (EXT_ARG) or another task's MSG_RING
// ends the wait; the waker's work is not this CPU's. `submitted` 1: the
// task submitted before (one NOP at set-up), so its tctx holds cached task
// refs, which current_pending_io() counts as in flight (cqwait.h).
void run_idle_wait(Env& e, const Params& p, Recorder& rec) {
  const RingId r = e.io.ring_create(e.submitter, {8, 0, false});
  if (r < 0) return;
  const bool submitted = p.at("submitted") != 0;
  if (submitted) e.io.io_uring_enter(r, 1);
  const iou::CqWait w = wait_of(p, static_cast<uint64_t>(p.at("timeout_us")), 0, submitted);
  timed_cycles(e, p, rec, "wait", [&] {
    e.io.enter_begin(r);
    e.io.cqring_wait(r, w);
    e.io.enter_end(r);
  });
  e.io.ring_exit(r, e.kworker);
}

uint64_t cycles_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"), p.at("cycles"), 4});
}

std::vector<ParamSpec> common_params() {
  return {
      {"cycles", 256, 1, 1 << 20, "waits per round"},
      {"rounds", 3, 1, 10000, "measured rounds"},
      {"warmup", 1, 0, 10000, "untimed warm-up rounds (the cpufreq boost ramps up here)"},
      {"smoke", 0, 0, 1, "untimed smoke round"},
      {"predict_us", 0, 0, 10000000,
       "the idle governor's predicted sleep (0 = the sleep itself, a converged predictor)"},
  };
}

// 003-a: schedule() against io_schedule() at QD 1, on a fast and a flash
// device, without and with a governor that boosts on iowait wake-ups. Run
// it on the seed's machine and kernel: --machine cascadelake-w --kernel
// v6.5-rc2 (docs/idle.md).
PresetInfo qd1_preset() {
  PresetInfo p;
  p.name = "qd1";
  p.summary = "seed 003-a: t/io_uring QD 1 reads, cqring wait in schedule() vs io_schedule()";
  p.policies = {"wait-schedule", "wait-io-schedule"};
  for (int64_t boost : {0, 1})
    for (int64_t dev : {10, 80})
      p.items.push_back({fmt::format("device {} us, {}", dev,
                                     boost ? "iowait-boosting governor (prior)" : "no cpufreq boost"),
                         "qd1-read",
                         {{"device_us", dev}, {"cpufreq_iowait_boost", boost}},
                         {},
                         boost ? "the boost's effect is cpufreq_slow_wake's prior (docs/idle.md)" : ""});
  return p;
}

// 003-b: the kernel's own choice (unpatched) for the three waiters; run
// it per kernel (--kernel v6.5-rc2, v6.5-rc3, ...) or as a sweep over
// kernels (docs/idle.md).
PresetInfo iowait_gate_preset() {
  PresetInfo p;
  p.name = "iowait-gate";
  p.summary = "seed 003-b: the iowait share of a waiter with and without requests in flight";
  p.policies = {"unpatched"};
  p.items = {
      {"QD-1 read in flight", "qd1-read", {{"device_us", 80}}, {}, ""},
      {"nothing in flight, task never submitted", "idle-wait", {{"submitted", 0}}, {},
       "a dedicated waiter thread, a MSG_RING target or an SQPOLL program's waiter"},
      {"nothing in flight, task submitted before", "idle-wait", {{"submitted", 1}}, {},
       "cached task refs count as pending until the 2026 fix (pending_io_counts_cached_refs)"},
  };
  return p;
}

}  // namespace

void register_cqwait(ScenarioRegistry& r) {
  ScenarioInfo q{"qd1-read",
                 "seed 003: t/io_uring -d1 -s1 -c1, one read in flight, wait for its CQE",
                 "read",
                 "us",
                 {{"device_us", 20, 1, 1000000,
                   "the read's device latency: the waiter sleeps this long with it in flight"}},
                 program<run_qd1_read>,
                 {"wait-schedule", "wait-io-schedule"}};
  for (const ParamSpec& s : common_params()) q.params.push_back(s);
  r.add(q, cycles_work);
  ScenarioInfo i{"idle-wait",
                 "seed 003: a waiter with nothing in flight sleeps until a timeout or a MSG_RING",
                 "wait",
                 "us",
                 {{"timeout_us", 1000, 1, 1000000, "how long each wait sleeps"},
                  {"submitted", 1, 0, 1,
                   "1: the task submitted before (cached task refs); 0: it never did"}},
                 program<run_idle_wait>};
  for (const ParamSpec& s : common_params()) i.params.push_back(s);
  r.add(i, cycles_work);
  r.add_preset(qd1_preset());
  r.add_preset(iowait_gate_preset());
}

}  // namespace simcache::sim
