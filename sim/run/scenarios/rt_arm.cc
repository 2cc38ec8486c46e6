// rt-arm: the seed 001 question on many CPUs. A SCHED_FIFO event loop
// re-arms FUTEX_WAIT per message, a share of which fail (-EAGAIN), while
// background tasks on the other CPUs allocate and free the same kmalloc
// size (io_futex_data: kmalloc-192), so the loop's kmalloc/kfree of a
// failed arm can meet them on the node list_lock. On PREEMPT_RT that lock
// sleeps and inherits priority; irq threads on the holders' CPUs are an
// input. Reports arm latency (PolicyResult::latency) and list_lock waits.
#include <cmath>
#include <memory>
#include <random>

#include "sim/run/machine.h"
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// One background task: bursts of `burst` kmallocs then as many kfrees,
// bursts arriving seeded-Poisson at `rate` per ms.
struct Background {
  Task task;
  uint32_t size;
  int64_t burst;
  double mean_gap_ns;
  std::mt19937_64 rng;
  std::vector<Ptr> held;
  int64_t phase = 0;  // 0..burst-1 allocs, burst..2*burst-1 frees
  double next = 0;
  int id = -1;  // its machine task
};

struct ArmState {
  Env* e;
  const Params* p;
  Recorder* rec;
  RingId ring = -1;
  bool stop = false;
  int loop_task = -1;
  int k_wait = 0, k_wake = 0, k_kmalloc = 0, k_kfree = 0;
  std::vector<Background> bg;
  // The loop's progress.
  int64_t round = 0, msg = 0, arm = 0, armed = 0, seq = 0;
  double next_msg = 0;
  bool in_msg = false;
  Machine::TaskStats at0;  // the loop's lock stats at the round's start
  int64_t waits = 0, all_waits = 0;
  double wait_ns = 0, all_wait_ns = 0;
};

double exp_gap(std::mt19937_64& rng, double mean) {
  const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
  return -std::log1p(-u) * mean;
}

Step background_step(ArmState& s, Background& b) {
  Env& e = *s.e;
  if (s.stop) {
    for (Ptr x : b.held) e.mm.kfree(x, b.task);
    b.held.clear();
    return Step::done();
  }
  const double t0 = s.rec->now();
  if (b.phase < b.burst) {
    if (Ptr x = e.mm.kmalloc(b.size, GFP_KERNEL, b.task); x != kNull) b.held.push_back(x);
    s.rec->op_end(s.k_kmalloc, t0);
  } else {
    if (!b.held.empty()) {
      e.mm.kfree(b.held.back(), b.task);
      b.held.pop_back();
    }
    s.rec->op_end(s.k_kfree, t0);
  }
  if (++b.phase < 2 * b.burst) return Step::run();
  b.phase = 0;
  b.next = std::max(b.next, s.e->machine->now()) + exp_gap(b.rng, b.mean_gap_ns);
  return Step::sleep_until(b.next);
}

void round_begin(ArmState& s, bool measured) {
  Machine& m = *s.e->machine;
  s.rec->begin_round(measured);
  s.rec->timed_begin();
  s.at0 = m.stats(s.loop_task);
}

void round_end(ArmState& s, bool measured) {
  Machine& m = *s.e->machine;
  const Params& p = *s.p;
  s.rec->timed_end();
  if (measured) {
    const Machine::TaskStats& now = m.stats(s.loop_task);
    s.waits += static_cast<int64_t>(now.list_contended - s.at0.list_contended);
    s.wait_ns += now.list_wait_ns - s.at0.list_wait_ns;
    s.all_waits += static_cast<int64_t>(now.contended - s.at0.contended);
    s.all_wait_ns += now.wait_ns - s.at0.wait_ns;
  }
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
    s.stop = true;
    e.io.ring_exit(s.ring, e.kworker);
    s.rec->metric("list_lock_waits", s.waits);
    s.rec->metric("list_lock_wait_ns", static_cast<int64_t>(s.wait_ns + 0.5));
    s.rec->metric("lock_waits", s.all_waits);  // list_lock and zone lock
    s.rec->metric("lock_wait_ns", static_cast<int64_t>(s.all_wait_ns + 0.5));
    uint64_t bw = 0;
    double bns = 0;
    for (const Background& b : s.bg) {  // the whole run: theirs is not a timed region
      bw += e.machine->stats(b.id).list_contended;
      bns += e.machine->stats(b.id).list_wait_ns;
    }
    s.rec->metric("bg_list_lock_waits", static_cast<int64_t>(bw));
    s.rec->metric("bg_list_lock_wait_ns", static_cast<int64_t>(bns + 0.5));
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

void spawn_background(ArmState& s) {
  Env& e = *s.e;
  const Params& p = *s.p;
  Machine& m = *e.machine;
  const double rate = static_cast<double>(p.at("bg_rate_per_ms"));
  if (rate <= 0) return;
  for (CpuId c = 0; c < m.cpus(); ++c) {
    const bool loop_cpu = c == e.submitter.cpu;
    if (loop_cpu && !p.at("bg_loop_cpu")) continue;
    if (!loop_cpu && p.at("irq_dur_ns") > 0 && p.at("irq_period_ns") > 0) {
      IrqLoad q;
      q.prio = static_cast<int>(p.at("irq_prio"));
      q.period_ns = static_cast<double>(p.at("irq_period_ns"));
      q.phase_ns = static_cast<double>(c) * 997;  // CPUs out of step
      q.dur_ns = static_cast<double>(p.at("irq_dur_ns"));
      m.add_irq(c, q);
    }
    for (int64_t k = 0; k < p.at("bg_per_cpu"); ++k) {
      s.bg.push_back(Background{Task{c, kRootMemcg, 0}, static_cast<uint32_t>(p.at("bg_size")),
                                p.at("bg_burst"), 1e6 / rate,
                                std::mt19937_64(e.seed * 7919 + c * 64 + static_cast<uint64_t>(k)),
                                {}, 0, 0});
    }
  }
  // s.bg is complete: the tasks keep pointers into it from here on.
  for (Background& b : s.bg) {
    b.next = exp_gap(b.rng, b.mean_gap_ns);
    Background* bp = &b;
    ArmState* sp = &s;
    b.id = m.spawn(b.task.cpu, static_cast<int>(p.at("bg_prio")),
            [sp, bp] { return bp->next > sp->e->machine->now() ? Step::sleep_until(bp->next)
                                                               : background_step(*sp, *bp); },
            /*own_counts=*/true);
  }
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
  s->k_kmalloc = rec.op_kind("kmalloc");
  s->k_kfree = rec.op_kind("kfree");
  s->next_msg = e.machine->now();
  s->loop_task = e.machine->spawn(e.submitter.cpu, static_cast<int>(p.at("loop_prio")),
                                  [s] { return loop_step(*s); });
  spawn_background(*s);
}

}  // namespace

void register_rt_arm(ScenarioRegistry& r) {
  r.add({"rt-arm",
         "seed 001 on many CPUs: a SCHED_FIFO loop re-arms FUTEX_WAIT beside kmalloc-192 users",
         "wait",
         "ns",
         {
             {"fail_permille", 390, 0, 1000, "arms that fail, per 1000 (seed 001: 0.39 per message)"},
             {"arms", 1, 1, 64, "FUTEX_WAIT re-arms per message (the re-arm pattern)"},
             {"messages", 4000, 1, 1 << 22, "messages per round"},
             {"msg_period_ns", 5000, 1, 1000000000, "a message every this many ns"},
             {"loop_prio", 80, 0, 99, "event loop priority (0 SCHED_OTHER, 1-99 SCHED_FIFO)"},
             {"bg_per_cpu", 1, 0, 16, "background kmalloc users per other CPU"},
             {"bg_rate_per_ms", 100, 0, 100000, "their bursts per ms (seeded Poisson; 0: none)"},
             {"bg_burst", 16, 1, 4096, "kmallocs then as many kfrees per burst"},
             {"bg_size", 192, 1, 8192, "their kmalloc size (io_futex_data: kmalloc-192)"},
             {"bg_prio", 0, 0, 99, "their priority"},
             {"bg_loop_cpu", 1, 0, 1, "1: the loop's CPU has them too (they share its CPU slab)"},
             {"irq_period_ns", 0, 0, 1000000000, "irq load on every background CPU: period (0: none)"},
             {"irq_dur_ns", 0, 0, 1000000000, "its handler's duration"},
             {"irq_prio", 50, 1, 99, "its irq thread's SCHED_FIFO priority on RT"},
             {"rt", 0, 0, 1, "1: CONFIG_PREEMPT_RT"},
             {"pi", 1, 0, 1, "RT: rt_mutex priority inheritance (0: a what-if without it)"},
             {"rounds", 1, 1, 10000, "measured rounds"},
             {"warmup", 1, 0, 10000, "untimed warm-up rounds"},
             {"smoke", 0, 0, 1, "untimed smoke round"},
         },
         run_rt_arm,
         {"unpatched", "futex-return-to-cache"}});
}

}  // namespace simcache::sim
