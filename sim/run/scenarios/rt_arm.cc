// rt-arm: the seed 001 question on many CPUs. A SCHED_FIFO event loop
// re-arms FUTEX_WAIT per message, a share of which fail (-EAGAIN), while
// background tasks on the other CPUs allocate and free the same kmalloc
// size (io_futex_data: kmalloc-192), so the loop's kmalloc/kfree of a
// failed arm can meet them on the node list_lock. On PREEMPT_RT that lock
// sleeps and inherits priority; irq threads on the holders' CPUs are an
// input. Reports arm latency (PolicyResult::latency) and list_lock waits.
#include <memory>

#include "sim/run/machine.h"
#include "sim/run/scenarios/background.h"
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

struct ArmState {
  Env* e;
  const Params* p;
  Recorder* rec;
  RingId ring = -1;
  int loop_task = -1;
  int k_wait = 0, k_wake = 0;
  BackgroundMix bg;
  // The loop's progress.
  int64_t round = 0, msg = 0, arm = 0, armed = 0, seq = 0;
  double next_msg = 0;
  bool in_msg = false;
  LoopWaits lw;
};

void round_begin(ArmState& s, bool measured) {
  Machine& m = *s.e->machine;
  s.rec->begin_round(measured);
  s.rec->timed_begin();
  s.lw.begin(m, s.loop_task);
}

void round_end(ArmState& s, bool measured) {
  Machine& m = *s.e->machine;
  const Params& p = *s.p;
  s.rec->timed_end();
  if (measured) s.lw.end(m, s.loop_task);
  s.rec->end_round(static_cast<uint64_t>(p.at("messages") * p.at("arms")));
}

// One step of the event loop: one FUTEX_WAIT arm, or the wakes of the
// message's armed waits (the other side of the loop).
Step loop_step(ArmState& s) {
  Env& e = *s.e;
  const Params& p = *s.p;
  const int64_t rounds_total = p.at("smoke") + p.at("warmup") + p.at("rounds");
  const bool measured = s.round >= p.at("smoke") + p.at("warmup");
  if (s.round == rounds_total) {
    s.bg.stop = true;
    s.bg.stop_ns = e.machine->now();
    e.io.ring_exit(s.ring, e.kworker);
    s.lw.record(*s.rec);
    record_background(s.bg, *s.rec);
    return Step::done();
  }
  if (s.msg == 0 && s.arm == 0 && !s.in_msg) round_begin(s, measured);
  if (!s.in_msg) {  // a message arrives: the loop wakes for it
    const double now = e.machine->now();
    if (s.next_msg > now) return Step::sleep_until(s.next_msg);
    s.in_msg = true;
    s.armed = 0;
    e.io.enter_begin(s.ring);
  }
  const int64_t permille = p.at("fail_permille");
  if (s.arm < p.at("arms")) {
    const bool fail = (s.seq + 1) * permille / 1000 > s.seq * permille / 1000;
    ++s.seq;
    const double t0 = s.rec->now();
    s.armed += e.io.futex_wait(s.ring, !fail) == 0;
    s.rec->op_end(s.k_wait, t0);
    ++s.arm;
    return Step::run();
  }
  e.io.enter_end(s.ring);
  if (s.armed) {
    e.io.enter_begin(s.ring);
    for (int64_t i = 0; i < s.armed; ++i) {
      const double t0 = s.rec->now();
      e.io.futex_wake(s.ring, 1);
      s.rec->op_end(s.k_wake, t0);
    }
    e.io.enter_end(s.ring);
  }
  s.in_msg = false;
  s.arm = 0;
  s.next_msg += static_cast<double>(p.at("msg_period_ns"));
  if (++s.msg == p.at("messages")) {
    round_end(s, measured);
    s.msg = 0;
    ++s.round;
  }
  return Step::run();
}

void run_rt_arm(Env& e, const Params& p, Recorder& rec) {
  if (!e.machine) return;
  auto s = std::make_shared<ArmState>();
  s->e = &e;
  s->p = &p;
  s->rec = &rec;
  s->ring = e.io.ring_create(e.submitter, {256, 0, false});
  if (s->ring < 0) return;
  s->k_wait = rec.op_kind("futex_wait");
  s->k_wake = rec.op_kind("futex_wake");
  s->bg.k_kmalloc = rec.op_kind("kmalloc");
  s->bg.k_kfree = rec.op_kind("kfree");
  s->next_msg = e.machine->now();
  s->loop_task = e.machine->spawn(e.submitter.cpu, static_cast<int>(p.at("loop_prio")),
                                  [s] { return loop_step(*s); });
  spawn_background(s->bg, e, p, rec, e.submitter.cpu);
}

}  // namespace

// Per message `arms` arms (the background users are paced by the loop's
// simulated time, not counted here).
static uint64_t rt_arm_work(const Params& p) {
  return work_product({p.at("smoke") + p.at("warmup") + p.at("rounds"), p.at("messages"),
                       p.at("arms")});
}

void register_rt_arm(ScenarioRegistry& r) {
  ScenarioInfo info{
      "rt-arm-loop",
      "seed 001 on many CPUs: a SCHED_FIFO loop re-arms FUTEX_WAIT beside kmalloc-192 users",
      "wait",
      "ns",
      {
          {"fail_permille", 390, 0, 1000, "arms that fail, per 1000 (seed 001: 0.39 per message)"},
          {"arms", 1, 1, 64, "FUTEX_WAIT re-arms per message (the re-arm pattern)"},
          {"messages", 4000, 1, 1 << 22, "messages per round"},
          {"msg_period_ns", 5000, 1, 1000000000, "a message every this many ns"},
          {"loop_prio", 80, 0, 99, "event loop priority (0 SCHED_OTHER, 1-99 SCHED_FIFO)"},
          {"rt", 0, 0, 1, "1: CONFIG_PREEMPT_RT"},
          {"pi", 1, 0, 1, "RT: rt_mutex priority inheritance (0: a what-if without it)"},
          {"rounds", 1, 1, 10000, "measured rounds"},
          {"warmup", 1, 0, 10000, "untimed warm-up rounds"},
          {"smoke", 0, 0, 1, "untimed smoke round"},
      },
      program<run_rt_arm>,
      {"unpatched", "futex-return-to-cache"}};
  const std::vector<ParamSpec> mix = background_params(/*per_cpu=*/1);
  info.params.insert(info.params.begin() + 5, mix.begin(), mix.end());
  r.add(info, rt_arm_work);
}

}  // namespace simcache::sim
