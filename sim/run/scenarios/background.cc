// Background kmalloc users and irq load for the seed 001 mix.
#include "sim/run/scenarios/background.h"

#include <algorithm>
#include <cmath>

namespace simcache::sim {
namespace {

double exp_gap(std::mt19937_64& rng, double mean) {
  const double u = static_cast<double>(rng() >> 11) * 0x1p-53;
  return -std::log1p(-u) * mean;
}

Step background_step(BackgroundMix& mix, BackgroundUser& b) {
  Env& e = *mix.e;
  if (mix.stop) {
    for (Ptr x : b.held) e.mm.kfree(x, b.task);
    b.held.clear();
    return Step::done();
  }
  const double t0 = mix.rec->now();
  if (b.phase < b.burst) {
    if (Ptr x = e.mm.kmalloc(b.size, GFP_KERNEL, b.task); x != kNull) b.held.push_back(x);
    mix.rec->op_end(mix.k_kmalloc, t0);
  } else {
    if (!b.held.empty()) {
      e.mm.kfree(b.held.back(), b.task);
      b.held.pop_back();
    }
    mix.rec->op_end(mix.k_kfree, t0);
  }
  if (++b.phase < 2 * b.burst) return Step::run();
  b.phase = 0;
  b.next = std::max(b.next, e.machine->now()) + exp_gap(b.rng, b.mean_gap_ns);
  return Step::sleep_until(b.next);
}

bool irq_wanted(const Params& p) { return p.at("irq_dur_ns") > 0 && p.at("irq_period_ns") > 0; }

}  // namespace

std::vector<ParamSpec> background_params(int64_t per_cpu) {
  return {
      {"bg_per_cpu", per_cpu, 0, 16, "background kmalloc users per other CPU"},
      {"bg_rate_per_ms", 100, 0, 100000, "their bursts per ms (seeded Poisson; 0: none)"},
      {"bg_burst", 16, 1, 4096, "kmallocs then as many kfrees per burst"},
      {"bg_size", 192, 1, 8192, "their kmalloc size (io_futex_data: kmalloc-192)"},
      {"bg_prio", 0, 0, 99, "their priority"},
      {"bg_loop_cpu", 1, 0, 1, "1: the loop's CPU has them too (they share its CPU slab)"},
      {"irq_period_ns", 0, 0, 1000000000, "irq load on every background CPU: period (0: none)"},
      {"irq_dur_ns", 0, 0, 1000000000, "its handler's duration"},
      {"irq_prio", 50, 1, 99, "its irq thread's SCHED_FIFO priority on RT"},
  };
}

bool background_wanted(const Params& p) {
  return p.at("bg_rate_per_ms") > 0 && (p.at("bg_per_cpu") > 0 || irq_wanted(p));
}

void spawn_background(BackgroundMix& mix, Env& e, const Params& p, Recorder& rec,
                      CpuId loop_cpu) {
  Machine& m = *e.machine;
  mix.e = &e;
  mix.rec = &rec;
  const double rate = static_cast<double>(p.at("bg_rate_per_ms"));
  if (rate <= 0) return;
  for (CpuId c = 0; c < m.cpus(); ++c) {
    const bool on_loop = c == loop_cpu;
    if (on_loop && !p.at("bg_loop_cpu")) continue;
    if (!on_loop && irq_wanted(p)) {
      IrqLoad q;
      q.prio = static_cast<int>(p.at("irq_prio"));
      q.period_ns = static_cast<double>(p.at("irq_period_ns"));
      q.phase_ns = static_cast<double>(c) * 997;  // CPUs out of step
      q.dur_ns = static_cast<double>(p.at("irq_dur_ns"));
      m.add_irq(c, q);
    }
    for (int64_t k = 0; k < p.at("bg_per_cpu"); ++k) {
      mix.users.push_back(BackgroundUser{
          Task{c, kRootMemcg, 0}, static_cast<uint32_t>(p.at("bg_size")), p.at("bg_burst"),
          1e6 / rate, std::mt19937_64(e.seed * 7919 + c * 64 + static_cast<uint64_t>(k)), {}, 0,
          0});
    }
  }
  // mix.users is complete: the tasks keep pointers into it from here on.
  for (BackgroundUser& b : mix.users) {
    b.next = exp_gap(b.rng, b.mean_gap_ns);
    BackgroundUser* bp = &b;
    BackgroundMix* mp = &mix;
    b.id = m.spawn(b.task.cpu, static_cast<int>(p.at("bg_prio")),
                   [mp, bp] {
                     return bp->next > mp->e->machine->now() ? Step::sleep_until(bp->next)
                                                             : background_step(*mp, *bp);
                   },
                   /*own_counts=*/true);
  }
}

void record_background(const BackgroundMix& mix, Recorder& rec) {
  uint64_t bw = 0;
  double bns = 0;
  for (const BackgroundUser& b : mix.users) {
    bw += mix.e->machine->stats(b.id).list_contended;
    bns += mix.e->machine->stats(b.id).list_wait_ns;
  }
  rec.metric("bg_list_lock_waits", static_cast<int64_t>(bw));
  rec.metric("bg_list_lock_wait_ns", static_cast<int64_t>(bns + 0.5));
}

void LoopWaits::end(const Machine& m, int task) {
  const Machine::TaskStats& now = m.stats(task);
  waits += static_cast<int64_t>(now.list_contended - at0.list_contended);
  wait_ns += now.list_wait_ns - at0.list_wait_ns;
  all_waits += static_cast<int64_t>(now.contended - at0.contended);
  all_wait_ns += now.wait_ns - at0.wait_ns;
}

void LoopWaits::record(Recorder& rec) const {
  rec.metric("list_lock_waits", waits);
  rec.metric("list_lock_wait_ns", static_cast<int64_t>(wait_ns + 0.5));
  rec.metric("lock_waits", all_waits);  // list_lock and zone lock
  rec.metric("lock_wait_ns", static_cast<int64_t>(all_wait_ns + 0.5));
}

}  // namespace simcache::sim
