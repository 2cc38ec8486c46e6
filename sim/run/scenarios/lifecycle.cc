// node-cache cold/warm (docs/workloads.md §2) and the lifecycle family (§3):
// registration cost, fill cost, and same-ring remove + refill.
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// cold: time the first fill of a fresh 128-slot table. warm: fill,
// unregister (the nodes go back to the ring's node cache), register a
// fresh table on the same ring and time the second fill. primed: the
// same with one install before the unregister (the ring's first use
// done, one node cached).
void run_coldwarm(Env& e, const Params& p, Recorder& rec) {
  const int64_t warm = p.at("warm");
  const int64_t slots = p.at("slots");
  const RingId src = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
  if (src < 0) return;
  e.io.files_register(src, 1);
  auto round = [&](bool measured, bool smoke) {
    (void)smoke;
    rec.begin_round(measured);
    const RingId dst = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
    if (dst < 0) return rec.end_round(0);
    e.io.files_register_sparse(dst, static_cast<uint32_t>(slots));
    if (warm != 0) {
      send_fd_fill(e, src, dst, warm == 1 ? slots : 1, p.at("qd"), false);
      e.io.files_unregister(dst);
      e.io.files_register_sparse(dst, static_cast<uint32_t>(slots));
    }
    snap(e, rec, "registration", src, dst);  // warm: the re-registration
    rec.timed_begin();
    send_fd_fill(e, src, dst, slots, p.at("qd"), false);
    rec.timed_end();
    snap(e, rec, "fill", src, dst);
    if (p.at("verify") != 0) verify_slots(e, dst, slots);
    e.io.files_unregister(dst);
    snap(e, rec, "unregister", src, dst);
    exit_ring(e, rec, dst, "target", measured, src);
    rec.end_round(static_cast<uint64_t>(slots));
  };
  run_rounds(e, rec, p, round);
  exit_ring(e, rec, src, "source", true);  // after the last (measured) round
}

enum Mode : int64_t { kSerial = 0, kPaced = 1, kReuse = 2 };

// A closed ring whose teardown has not run yet (serial mode), and whether
// it was a measured operation's (then its teardown is a snapshot).
struct Pending {
  RingId ring = -1;
  bool measured = false;
  int64_t created_behind = 0;  // rings created while a teardown was queued
};

// Tears down the pending ring (on the kworker's timeline, `tc`) and
// returns the counts it made, which belong to that ring, not to the
// operation's cache traffic.
Counters exit_pending(Env& e, Recorder& rec, Pending* pending, RingId src, TeardownClock& tc) {
  if (pending->ring < 0) return {};
  const Counters before = e.mm.events();
  tc.teardown(pending->ring,
              [&] { exit_ring(e, rec, pending->ring, "target", pending->measured, src); });
  pending->ring = -1;
  return e.mm.events() - before;
}

// serial/paced: a new ring and its timed sparse registration, then
// (serial) the previous ring's teardown, which overlaps the operation;
// its counts go to *teardown, the registration's start to *begin.
// Returns the ring, -1 on -ENOMEM.
RingId new_registered(Env& e, Recorder& rec, const Params& p, RingId src, Pending* pending,
                      Counters* teardown, TeardownClock& tc, double* begin) {
  pending->created_behind += pending->ring >= 0;  // its teardown is still queued
  const RingId dst = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
  if (dst < 0) return dst;
  *begin = tc.now();
  rec.timed_begin("registration");
  // paced: the 50 ms untimed sleep before this operation left the
  // caches cold and the CPU idle; the first operation pays for it, a
  // fixed part and a part per slot of the table it registers.
  if (p.at("mode") == kPaced) {
    e.mm.events().add(Event::idle_gap);
    e.mm.events().add(Event::idle_cold_slot, static_cast<uint64_t>(p.at("slots")));
  }
  e.io.files_register_sparse(dst, static_cast<uint32_t>(p.at("slots")),
                             p.at("prefill_flag") != 0);
  rec.timed_end();
  snap(e, rec, "registration", src, dst);
  *teardown = exit_pending(e, rec, pending, src, tc);
  return dst;
}

// One operation of serial-S-N / paced-S-N: a new ring, timed sparse
// registration and fill ("interval"), untimed unregister and close.
// reuse-S-N: on one ring, timed FILES_UPDATE(-1) removal of every
// installed file over contiguous spans, then the SEND_FD refill.
void run_lifecycle(Env& e, const Params& p, Recorder& rec) {
  const auto mode = static_cast<Mode>(p.at("mode"));
  const int64_t slots = p.at("slots"), installs = p.at("installs");
  const int64_t span = p.at("span") ? p.at("span") : std::max<int64_t>(installs, 1);
  const bool optin = p.at("prefill_flag") != 0;
  const RingId src = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
  if (src < 0) return;
  e.io.files_register(src, 1);
  RingId reuse_ring = -1;
  Pending pending;
  TeardownClock tc(e, p);
  std::vector<uint32_t> taken;  // reuse: the slots the CQEs reported
  if (mode == kReuse) {
    reuse_ring = e.io.ring_create(e.submitter, {ring_entries(p.at("qd"), 256), 0, false});
    if (reuse_ring < 0) return e.io.exit_all(e.kworker);
    e.io.files_register_sparse(reuse_ring, static_cast<uint32_t>(slots), optin);
    send_fd_fill(e, src, reuse_ring, installs, p.at("qd"), false, &taken);
  }
  auto op = [&](bool measured) {
    rec.begin_round(measured);
    const Counters start = e.mm.events();
    Counters teardown;  // serial: the previous ring's exit inside this op
    RingId dst = reuse_ring;
    double begin = tc.now();  // the operation's timed span on the timeline
    if (mode == kReuse) {
      rec.timed_begin("removal");
      remove_recorded_slots(e, dst, &taken, span);
      rec.timed_end();
      snap(e, rec, "removal", src, dst);
      rec.timed_begin("refill");
    } else {
      dst = new_registered(e, rec, p, src, &pending, &teardown, tc, &begin);
      if (dst < 0) return rec.end_round(0);
      rec.timed_begin("fill");
      // paced: the sleep's cold start reaches past the registration into
      // the first batch of installs (one io_uring_enter()).
      if (mode == kPaced) cold_start_installs(e, installs, p.at("qd"));
    }
    send_fd_fill(e, src, dst, installs, p.at("qd"), false, mode == kReuse ? &taken : nullptr);
    rec.timed_end();
    tc.operation(begin, tc.now(), measured);
    snap(e, rec, mode == kReuse ? "refill" : "fill", src, dst);
    if (measured) {
      ring_metrics(e, rec, dst);
      // the teardown's counts are not this ring's cache traffic
      rec.metric("nodes_unused", unused_nodes(e.mm.events() - start - teardown));
    }
    if (mode != kReuse) {
      e.io.files_unregister(dst);
      snap(e, rec, "unregister", src, dst);
      pending.ring = dst;
      pending.measured = measured;
      tc.closed(dst);
      if (mode == kPaced) {
        exit_pending(e, rec, &pending, src, tc);
        tc.sleep(kPacedSleepNs);
      }
    }
    rec.end_round(1);
  };
  for (int64_t i = 0; i < p.at("warmup"); ++i) op(false);
  // What decides the next operation beyond the model: a closed ring
  // waiting for its teardown, and the slots the reuse ring's CQEs named.
  run_measured(
      e, rec, p.at("groups") * p.at("ops"), [&] { op(true); },
      [&](StateSig* s) {
        s->add(pending.ring >= 0);
        s->add(pending.measured);
        s->all(taken);
      },
      {&pending.created_behind});
  // The last measured operation's ring, the reuse ring and the source
  // close after the measured rounds: their teardowns are recorded too.
  exit_pending(e, rec, &pending, src, tc);
  if (reuse_ring >= 0) exit_ring(e, rec, reuse_ring, "target", true, src);
  exit_ring(e, rec, src, "source", true);
  rec.metric("rings_created_teardown_queued", pending.created_behind);
  tc.metrics(rec);
}

}  // namespace

// Each round fills `slots` (twice when warm: the first fill warms the cache;
// once and one install when primed).
static uint64_t coldwarm_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"), 2 * p.at("slots")});
}

// Each operation registers `slots` and installs `installs`.
static uint64_t lifecycle_work(const Params& p) {
  // groups x ops is at most 10^8 (the parameters' ranges): no overflow.
  return work_product({p.at("warmup") + p.at("groups") * p.at("ops"),
                       p.at("slots") + p.at("installs")});
}

void register_node_cache_coldwarm(ScenarioRegistry& r) {
  r.add({"node-cache-coldwarm",
         "128-slot fill on a new ring (cold) or after unregister+re-register (warm)",
         "install",
         "ns",
         {
             {"warm", 0, 0, 2,
              "0: cold first fill; 1: second fill on the same ring; 2: primed: the fill after one install, unregister and re-register on the same ring"},
             {"slots", 128, 1, 1 << 20, "table size (= installs)"},
             {"verify", 0, 0, 1,
              "1: after the timed fill, the untimed READ of every slot (the evidence's diagnostic program; the kit's coldwarm reads none)"},
             {"qd", 64, 1, 4096, "SQEs per io_uring_enter"},
             {"rounds", 15, 1, 10000, "measured rounds"},
             {"warmup", 3, 0, 10000, "untimed warm-up rounds"},
             {"smoke", 0, 0, 1, "untimed smoke round"},
         },
         program<run_coldwarm>}, coldwarm_work, always_one_task);
}

void register_lifecycle(ScenarioRegistry& r) {
  r.add({"lifecycle",
         "register/fill per operation: mode 0 serial, 1 paced (50 ms gap), 2 reuse",
         "op",
         "us",
         {
             {"mode", 0, 0, 2, "0 serial-S-N, 1 paced-S-N, 2 reuse-S-N"},
             {"slots", 4096, 1, 1 << 20, "sparse table size S"},
             {"installs", 4096, 0, 1 << 20, "installs per operation N"},
             {"qd", 64, 1, 4096, "SQEs per io_uring_enter"},
             {"span", 0, 0, 1 << 20, "reuse: slots per FILES_UPDATE call (0: all N at once)"},
             {"ops", 32, 1, 10000, "operations per group"},
             {"groups", 15, 1, 10000, "measured groups"},
             {"warmup", 3, 0, 10000, "untimed warm-up operations"},
             {"prefill_flag", 0, 0, 1, "registration passes the prefill opt-in flag"},
             rcu_gp_param(),
         },
         program<run_lifecycle>}, lifecycle_work, always_one_task);
}

}  // namespace simcache::sim
