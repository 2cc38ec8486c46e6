// Futex programs: WAITV -> WAKE "v0" and its scalar control "s0"
// (docs/workloads.md §4), and the arm-fail loop "e0" (§5).
#include <memory>

#include "sim/run/machine.h"
#include "sim/run/scenarios/background.h"
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// v0: per cycle, one io_uring_enter submits `vectors` FUTEX_WAITV of
// `width` words without waiting (each prepared: one allocation, armed);
// a second submits `vectors` FUTEX_WAKE on word 3 of each vector and
// waits for all CQEs. Untimed: one WAKE on word 0 per vector finds no
// waiter. s0 (width 0): `vectors` FUTEX_WAIT then as many FUTEX_WAKE.
// wake_delay_us > 0 (seed 003): the first enter waits for its CQEs
// (min_complete = vectors) and sleeps that long in io_cqring_wait; the
// second enter is another task's, whose wakes end the sleep. Nothing else
// changes, so 0 is the program above exactly.
// memcgs > 1 (seed 000-c): that many copies of the program, each a task
// in a memory cgroup of its own with a ring of its own, on the one CPU,
// take turns cycle by cycle, so the CPU's obj stock changes owner at
// every cycle (as on a machine running several containers' event loops).
void run_waitv(Env& e, const Params& p, Recorder& rec) {
  const int64_t vectors = p.at("vectors"), width = p.at("width");
  const auto delay = static_cast<uint64_t>(p.at("wake_delay_us"));
  const auto predict = p.at("predict_us") ? static_cast<uint64_t>(p.at("predict_us")) : delay;
  const uint32_t sq = ring_entries(vectors, 64);
  std::vector<RingId> rings;
  for (int64_t i = 0; i < p.at("memcgs"); ++i) {
    const Task t = p.at("memcgs") == 1
                       ? e.submitter
                       : Task{e.submitter.cpu, e.mm.memcg().create(e.submitter.memcg), 0};
    const RingId r = e.io.ring_create(t, {sq, std::max(128u, 2 * sq), false});
    if (r < 0) break;
    rings.push_back(r);
  }
  if (rings.size() != static_cast<size_t>(p.at("memcgs"))) {  // -ENOMEM (injected failures)
    for (RingId r : rings) e.io.ring_exit(r, e.kworker);
    return;
  }
  auto round = [&](bool measured, bool) {
    rec.begin_round(measured);
    for (int64_t c = 0; c < p.at("cycles"); ++c) {
      const RingId r = rings[static_cast<size_t>(c) % rings.size()];
      rec.timed_begin();
      e.io.enter_begin(r);
      for (int64_t v = 0; v < vectors; ++v) {
        if (width) e.io.futex_waitv(r, static_cast<uint32_t>(width));
        else e.io.futex_wait(r, true);
      }
      e.io.cqring_wait(r, delay, predict);
      e.io.enter_end(r);
      e.io.enter_begin(r);
      for (int64_t v = 0; v < vectors; ++v) e.io.futex_wake(r, 1);
      e.io.enter_end(r);
      rec.timed_end();
      if (width) {  // the residual-waiter check
        e.io.enter_begin(r);
        for (int64_t v = 0; v < vectors; ++v) e.io.futex_wake(r, 1);
        e.io.enter_end(r);
      }
    }
    ring_metrics(e, rec, rings);  // futex_cache, waitv-cache: every program's ring
    rec.end_round(static_cast<uint64_t>(p.at("cycles") * vectors));
  };
  run_rounds(e, rec, p, round);
  for (RingId r : rings) e.io.ring_exit(r, e.kworker);
}

// e0 with the workload mix: the same loop as a task that yields after
// each FUTEX_WAIT and after each cycle's wakes, beside background users.
struct ArmFailLoop {
  Env* e;
  const Params* p;
  Recorder* rec;
  RingId ring = -1;
  int task = -1;
  int k_wait = 0, k_wake = 0;
  BackgroundMix bg;
  int64_t round = 0, cycle = 0, wait = 0, armed = 0, seq = 0;
  bool in_cycle = false;
  LoopWaits lw;
};

// One FUTEX_WAIT arm, a share `fail_permille` failing by error diffusion.
bool arm_one(Env& e, Recorder& rec, RingId r, int k_wait, int64_t permille, int64_t* seq) {
  const bool fail = (*seq + 1) * permille / 1000 > *seq * permille / 1000;
  ++*seq;
  const double t0 = rec.now();
  const bool armed = e.io.futex_wait(r, !fail) == 0;
  rec.op_end(k_wait, t0);
  return armed;
}

// The cycle's other half: one FUTEX_WAKE per armed wait, in one enter.
void wake_armed(Env& e, Recorder& rec, RingId r, int k_wake, int64_t armed) {
  if (!armed) return;
  e.io.enter_begin(r);
  for (int64_t i = 0; i < armed; ++i) {
    const double t0 = rec.now();
    e.io.futex_wake(r, 1);
    rec.op_end(k_wake, t0);
  }
  e.io.enter_end(r);
}

Step arm_fail_step(ArmFailLoop& s) {
  Env& e = *s.e;
  const Params& p = *s.p;
  Machine& m = *e.machine;
  const int64_t unmeasured = p.at("smoke") + p.at("warmup");
  const bool measured = s.round >= unmeasured;
  if (s.round == unmeasured + p.at("rounds")) {
    s.bg.stop = true;
    s.bg.stop_ns = e.machine->now();
    s.lw.record(*s.rec);
    record_background(s.bg, *s.rec);
    e.io.ring_exit(s.ring, e.kworker);
    return Step::done();
  }
  if (s.cycle == 0 && !s.in_cycle) {
    s.rec->begin_round(measured);
    s.rec->timed_begin();
    s.lw.begin(m, s.task);
  }
  if (!s.in_cycle) {
    e.io.enter_begin(s.ring);
    s.in_cycle = true;
    s.armed = 0;
  }
  if (s.wait < p.at("waits")) {
    s.armed += arm_one(e, *s.rec, s.ring, s.k_wait, p.at("fail_permille"), &s.seq);
    ++s.wait;
    return Step::run();
  }
  e.io.enter_end(s.ring);
  wake_armed(e, *s.rec, s.ring, s.k_wake, s.armed);
  s.in_cycle = false;
  s.wait = 0;
  if (++s.cycle == p.at("cycles")) {
    s.rec->timed_end();
    if (measured) s.lw.end(m, s.task);
    s.rec->end_round(static_cast<uint64_t>(p.at("cycles") * p.at("waits")));
    s.cycle = 0;
    ++s.round;
  }
  return Step::run();
}

void run_arm_fail_mix(Env& e, const Params& p, Recorder& rec, RingId r, int k_wait, int k_wake) {
  auto s = std::make_shared<ArmFailLoop>();
  s->e = &e;
  s->p = &p;
  s->rec = &rec;
  s->ring = r;
  s->k_wait = k_wait;
  s->k_wake = k_wake;
  s->bg.k_kmalloc = rec.op_kind("kmalloc");
  s->bg.k_kfree = rec.op_kind("kfree");
  s->task = e.machine->spawn(e.submitter.cpu, static_cast<int>(p.at("loop_prio")),
                             [s] { return arm_fail_step(*s); });
  spawn_background(s->bg, e, p, rec, e.submitter.cpu);
}

// e0: `waits` FUTEX_WAIT per cycle (the re-arm pattern: one enter per
// cycle, as an event loop re-arming per message), a share `fail_permille`
// of which find the word changed and fail to arm (-EAGAIN); the armed ones
// are woken by one FUTEX_WAKE each. The failing share is spread evenly
// (error diffusion), so the counts are exact. Without background users the
// whole run is one step of the program's task; with them, see above.
void run_arm_fail(Env& e, const Params& p, Recorder& rec) {
  const int64_t waits = p.at("waits"), permille = p.at("fail_permille");
  const RingId r = e.io.ring_create(e.submitter, {ring_entries(waits, 256), 0, false});
  if (r < 0) return;
  const int k_wait = rec.op_kind("futex_wait"), k_wake = rec.op_kind("futex_wake");
  if (e.machine && background_wanted(e, p)) return run_arm_fail_mix(e, p, rec, r, k_wait, k_wake);
  int64_t seq = 0;
  auto round = [&](bool measured, bool) {
    rec.begin_round(measured);
    rec.timed_begin();
    for (int64_t c = 0; c < p.at("cycles"); ++c) {
      e.io.enter_begin(r);
      int64_t armed = 0;
      for (int64_t i = 0; i < waits; ++i) armed += arm_one(e, rec, r, k_wait, permille, &seq);
      e.io.enter_end(r);
      wake_armed(e, rec, r, k_wake, armed);
    }
    rec.timed_end();
    rec.end_round(static_cast<uint64_t>(p.at("cycles") * waits));
  };
  // The failing share's error diffusion repeats every 1,000 arms.
  run_rounds(e, rec, p, round, [&](StateSig* s) { s->add(static_cast<uint64_t>(seq % 1000)); });
  e.io.ring_exit(r, e.kworker);
}

}  // namespace

// Per cycle `vectors` waits of `width` words (1 for scalar) and their wakes.
static uint64_t waitv_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"), p.at("cycles"),
                       p.at("vectors"), std::max<int64_t>(p.at("width"), 1) + 2});
}
// Per cycle `waits` arms.
static uint64_t arm_fail_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"), p.at("cycles"),
                       p.at("waits")});
}

void register_waitv(ScenarioRegistry& r) {
  const std::vector<ParamSpec> common = {
      {"cycles", 512, 1, 1 << 20, "cycles per round"},
      {"rounds", 15, 1, 10000, "measured rounds"},
      {"warmup", 3, 0, 10000, "untimed warm-up rounds"},
      {"smoke", 0, 0, 1, "untimed smoke round"},
      {"wake_delay_us", 0, 0, 1000000,
       "seed 003: the waiter sleeps this long in io_cqring_wait before the wake (0 = no sleep)"},
      {"predict_us", 0, 0, 10000000,
       "seed 003: the idle governor's predicted sleep (0 = wake_delay_us, a converged predictor)"},
      {"memcgs", 1, 1, 64,
       "seed 000-c: copies of the program, each in a memcg of its own with its own ring, taking "
       "turns cycle by cycle on the one CPU (the obj stock changes owner)"},
  };
  ScenarioInfo v{"waitv", "v0: FUTEX_WAITV -> FUTEX_WAKE, 8 vectors of 8 words",
                 "pair", "ns",
                 {{"vectors", 8, 1, 64, "WAITV requests per cycle"},
                  {"width", 8, 1, 128, "futex words per vector (FUTEX_WAITV_MAX 128)"}},
                 program<run_waitv>};
  v.params.insert(v.params.end(), common.begin(), common.end());
  r.add(v, waitv_work, always_one_task);
  ScenarioInfo s{"wait-wake", "s0: scalar control, 32 FUTEX_WAIT then 32 FUTEX_WAKE",
                 "pair", "ns",
                 {{"vectors", 32, 1, 4096, "FUTEX_WAIT requests per cycle"},
                  {"width", 0, 0, 0, "0: scalar FUTEX_WAIT"}},
                 program<run_waitv>};
  s.params.insert(s.params.end(), common.begin(), common.end());
  r.add(s, waitv_work, always_one_task);
}

void register_arm_fail(ScenarioRegistry& r) {
  ScenarioInfo info{
      "arm-fail",
      "e0: FUTEX_WAIT re-arms, a share of which fail with -EAGAIN",
      "wait",
      "ns",
      {
          {"fail_permille", 1000, 0, 1000, "arms that fail, per 1000 (390: seed 001's 0.39)"},
          {"waits", 32, 1, 4096, "FUTEX_WAIT per cycle (the re-arm pattern: one enter each)"},
          {"cycles", 3125, 1, 1 << 20, "cycles per round (3125 x 32 = 100,000 waits)"},
          {"rounds", 1, 1, 10000, "measured rounds"},
          {"warmup", 0, 0, 10000, "untimed warm-up rounds"},
          {"smoke", 0, 0, 1, "untimed smoke round"},
          {"loop_prio", 0, 0, 99, "with background users: the loop's priority (0 SCHED_OTHER)"},
          {"rt", 0, 0, 1, "1: CONFIG_PREEMPT_RT"},
      },
      program<run_arm_fail>};
  const std::vector<ParamSpec> mix = background_params(/*per_cpu=*/0);
  info.params.insert(info.params.end(), mix.begin(), mix.end());
  // Background users or an irq source: more tasks (a background trace
  // too, which the CLI checks itself).
  r.add(info, arm_fail_work, [](const Params& p) { return !background_params_wanted(p); });
}

}  // namespace simcache::sim
