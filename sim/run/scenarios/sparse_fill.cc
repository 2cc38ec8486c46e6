// sparse-fill "F0" (docs/workloads.md §1): MSG_RING SEND_FD first fill of a
// fresh sparse fixed-file table, a new target ring every round.
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

void run_sparse_fill(Env& e, const Params& p, Recorder& rec) {
  const bool defer = p.at("defer_taskrun") != 0;
  const bool lag = p.at("teardown_lag") != 0;
  const bool optin = p.at("prefill_flag") != 0;
  const bool idle = p.at("idle") != 0;
  // Set-up: the source ring with the memfd as its only fixed file.
  const RingId src = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
  if (src < 0) return;  // -ENOMEM (injected failures): nothing to measure
  e.io.files_register(src, 1);
  RingId pending = -1;  // a closed ring whose kworker teardown has not run
  int64_t queued_at_create = 0;  // rings created while `pending` was queued
  bool pending_measured = false;
  bool last_measured = false;  // the source's teardown goes with the last round's
  TeardownClock tc(e, p);
  auto round = [&](bool measured, bool smoke) {
    const int64_t slots = smoke ? 256 : p.at("slots");
    const int64_t installs = smoke ? 256 : p.at("installs");
    rec.begin_round(measured);
    const Counters start = e.mm.events();
    queued_at_create += pending >= 0;  // its teardown is still queued
    const RingId dst = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, defer});
    if (dst < 0) {
      rec.end_round(0);
      return;
    }
    e.io.files_register_sparse(dst, static_cast<uint32_t>(slots), optin);
    snap(e, rec, "registration", src, dst);
    Counters teardown;  // the previous ring's exit inside this round
    if (pending >= 0) {  // the previous ring's teardown overlaps this set-up
      const Counters before = e.mm.events();
      tc.teardown(pending, [&] { exit_ring(e, rec, pending, "target", pending_measured, src); });
      teardown = e.mm.events() - before;
      pending = -1;
    }
    const double begin = tc.now();
    rec.timed_begin();
    if (idle) cold_start_installs(e, installs, p.at("qd"));
    send_fd_fill(e, src, dst, installs, p.at("qd"), defer);
    rec.timed_end();
    tc.operation(begin, tc.now(), measured);
    snap(e, rec, "fill", src, dst);
    if (measured) {
      ring_metrics(e, rec, dst);
      // the teardown drains the previous ring's cache: not this ring's traffic
      rec.metric("nodes_unused", unused_nodes(e.mm.events() - start - teardown));
    }
    if (p.at("verify") != 0) verify_slots(e, dst, installs);
    e.io.files_unregister(dst);  // untimed, on the benchmark's CPU
    snap(e, rec, "unregister", src, dst);
    pending = dst;
    pending_measured = last_measured = measured;
    tc.closed(dst);
    if (!lag) {
      tc.teardown(pending, [&] { exit_ring(e, rec, pending, "target", measured, src); });
      pending = -1;
    }
    // idle: the untimed sleep before the next round (a paced lifecycle's)
    if (idle) tc.sleep(kPacedSleepNs);
    rec.end_round(static_cast<uint64_t>(installs));
  };
  // What decides the next round beyond the model: whether a closed ring
  // waits for its teardown, and whose round it was.
  run_rounds(
      e, rec, p, round,
      [&](StateSig* s) {
        s->add(pending >= 0);
        s->add(pending_measured);
        s->add(last_measured);
      },
      {&queued_at_create});
  if (pending >= 0)
    tc.teardown(pending, [&] { exit_ring(e, rec, pending, "target", pending_measured, src); });
  rec.metric("rings_created_teardown_queued", queued_at_create);
  tc.metrics(rec);
  exit_ring(e, rec, src, "source", last_measured);
}

}  // namespace

// Each round registers `slots` and installs `installs`.
static uint64_t sparse_fill_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"),
                       p.at("slots") + p.at("installs")});
}

void register_sparse_fill(ScenarioRegistry& r) {
  r.add({"sparse-fill",
         "F0: MSG_RING SEND_FD first fill of a sparse table on a new target ring per round",
         "install",
         "ns",
         {
             {"slots", 4096, 1, 1 << 20, "sparse table size S"},
             {"installs", 4096, 0, 1 << 20, "SEND_FD installs per round N (<= slots)"},
             {"qd", 64, 1, 4096, "SQEs per io_uring_enter (batch)"},
             {"rounds", 15, 1, 10000, "measured rounds"},
             {"warmup", 3, 0, 10000, "untimed warm-up rounds"},
             {"smoke", 1, 0, 1, "one untimed 256-slot smoke round first"},
             {"teardown_lag", 1, 0, 1,
              "1: a closed ring's kworker teardown runs after the next ring's set-up"},
             {"defer_taskrun", 0, 0, 1, "target ring uses SINGLE_ISSUER|DEFER_TASKRUN"},
             {"prefill_flag", 0, 0, 1, "registration passes the prefill opt-in flag"},
             {"verify", 1, 0, 1,
              "1: after the fill, the untimed fixed-file READ of every installed slot (the program's verification)"},
             {"idle", 0, 0, 1,
              "1: each round follows an untimed sleep (a paced lifecycle's fill phase): the first batch's installs start cold"},
             rcu_gp_param(),
         },
         program<run_sparse_fill>}, sparse_fill_work, always_one_task);
}

}  // namespace simcache::sim
