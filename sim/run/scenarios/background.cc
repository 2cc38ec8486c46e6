// Background kmalloc users and irq load for the seed 001 mix.
#include "sim/run/scenarios/background.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

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
    ++b.kmallocs;
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

// A pass over a trace lasts at least this long in virtual time, and at
// least kMinNsPerEvent per event of the whole trace, so a trace whose
// events share one timestamp (or are frees that do no mm work) cannot
// spin the machine: steps per virtual ns stay bounded.
constexpr double kMinPassNs = 1000;
constexpr double kMinNsPerEvent = 1;
// A trace's idle gaps can be seconds long, and no task wakes another: a
// trace task sleeps at most this long at a time, so that once the loop is
// done it frees what it holds and ends within 1 ms of virtual time (not
// at the end of a long gap, through every irq arrival before it).
constexpr double kStopPollNs = 1e6;

// The idle time before the task's next op, scaled by bg_trace_speed: a
// pass's first op also waits out the previous pass's tail. The schedule
// is absolute (each op is due a gap after the previous op was due, not
// after it finished), so every CPU's pass lasts the trace's span however
// long its ops and lock waits take, and the CPUs stay in step; a task
// that runs late runs its due ops back to back.
double due_gap(const BackgroundMix& mix, const TraceUser& t) {
  const BgTraceOp& op = t.cpu->ops[t.i];
  if (t.i != 0 || !t.wrapped) return static_cast<double>(op.gap_ns) / mix.speed;
  const double span = static_cast<double>(mix.trace->span_ns) / mix.speed;
  const double floor =
      std::max(kMinPassNs, kMinNsPerEvent * static_cast<double>(mix.trace->events));
  return static_cast<double>(op.gap_ns + t.cpu->tail_ns) / mix.speed +
         std::max(0.0, floor - span);
}

// Frees what the task's allocs hold now (another CPU may have freed some).
int64_t release_trace(BackgroundMix& mix, const TraceUser& t) {
  int64_t n = 0;
  for (const BgTraceOp& op : t.cpu->ops) {
    if (!op.alloc || mix.objs[op.obj] == kNull) continue;
    mix.e->mm.kfree(mix.objs[op.obj], t.task);
    mix.objs[op.obj] = kNull;
    ++n;
  }
  return n;
}

// One traced event: an alloc routed by its size (kmalloc), or the free of
// the object its pointer matched.
Step trace_step(BackgroundMix& mix, TraceUser& t) {
  Env& e = *mix.e;
  if (mix.stop) {
    release_trace(mix, t);
    // How long after the loop the last trace task ended: the 1 ms poll
    // (kStopPollNs) bounds it, whatever the trace's gaps.
    mix.stop_lag_ns = std::max(mix.stop_lag_ns, e.machine->now() - mix.stop_ns);
    mix.rec->metric("bg_trace_stop_lag_ns", static_cast<int64_t>(mix.stop_lag_ns + 0.5));
    return Step::done();
  }
  const BgTraceOp& op = t.cpu->ops[t.i];
  const double t0 = mix.rec->now();
  ++t.events;
  if (op.alloc) {
    mix.objs[op.obj] = e.mm.kmalloc(op.size, GFP_KERNEL, t.task);
    ++t.kmallocs;
    mix.rec->op_end(mix.k_kmalloc, t0);
  } else if (op.obj == BgTraceOp::kNoObj) {
    ++t.unmatched;
  } else if (mix.objs[op.obj] != kNull) {
    e.mm.kfree(mix.objs[op.obj], t.task);
    mix.objs[op.obj] = kNull;
    ++t.kfrees;
    mix.rec->op_end(mix.k_kfree, t0);
  } else {
    ++t.missed;
  }
  if (++t.i == t.cpu->ops.size()) {  // the pass is over: start again with nothing held
    t.pass_frees += release_trace(mix, t);
    t.i = 0;
    t.wrapped = true;
    ++t.passes;
  }
  t.next += due_gap(mix, t);
  return Step::run();
}

// The trace's tasks: traced CPU c on background CPU c mod their number.
void spawn_trace(BackgroundMix& mix, Env& e, const Params& p, CpuId loop_cpu) {
  Machine& m = *e.machine;
  std::vector<CpuId> cpus;
  for (CpuId c = 0; c < m.cpus(); ++c)
    if (c != loop_cpu || p.at("bg_loop_cpu")) cpus.push_back(c);
  if (cpus.empty()) return;  // check_background_trace() refused this
  mix.trace = e.bg_trace;
  mix.speed = static_cast<double>(p.at("bg_trace_speed")) / 1000;
  mix.objs.assign(mix.trace->objects, kNull);
  for (const BgTraceCpu& tc : mix.trace->cpus)
    mix.tracers.push_back(TraceUser{Task{cpus[tc.cpu % cpus.size()], kRootMemcg, 0}, &tc});
  // mix.tracers is complete: the tasks keep pointers into it from here on.
  for (TraceUser& t : mix.tracers) {
    t.next = due_gap(mix, t);
    TraceUser* tp = &t;
    BackgroundMix* mp = &mix;
    t.id = m.spawn(t.task.cpu, static_cast<int>(p.at("bg_prio")),
                   [mp, tp] {
                     const double now = mp->e->machine->now();
                     if (tp->next <= now || mp->stop) return trace_step(*mp, *tp);
                     return Step::sleep_until(std::min(tp->next, now + kStopPollNs));
                   },
                   /*own_counts=*/true);
  }
}

}  // namespace

const std::vector<ParamSpec>& background_trace_params() {
  static const std::vector<ParamSpec> p = {
      {"bg_trace_speed", 1000, 1, 1000000,
       "background trace: its clock runs this many permille of real time (2000: twice as fast)"},
  };
  return p;
}

bool takes_background(const ScenarioInfo& s) {
  return std::any_of(s.params.begin(), s.params.end(),
                     [](const ParamSpec& p) { return p.name == "bg_per_cpu"; });
}

bool check_background_trace(const Params& p, std::string* error) {
  if (p.at("cpus") > 1 || p.at("bg_loop_cpu")) return true;
  *error = "a background trace needs a background CPU: cpus=1 with bg_loop_cpu=0 leaves none";
  return false;
}

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

bool background_params_wanted(const Params& p) {
  return p.at("bg_rate_per_ms") > 0 && (p.at("bg_per_cpu") > 0 || irq_wanted(p));
}

bool background_wanted(const Env& e, const Params& p) {
  return e.bg_trace || background_params_wanted(p);
}

void spawn_background(BackgroundMix& mix, Env& e, const Params& p, Recorder& rec,
                      CpuId loop_cpu) {
  Machine& m = *e.machine;
  mix.e = &e;
  mix.rec = &rec;
  mix.start_ns = e.machine->now();
  const double rate = static_cast<double>(p.at("bg_rate_per_ms"));
  if (rate <= 0 && !e.bg_trace) return;
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
    if (e.bg_trace) continue;  // the trace's tasks replace the synthetic users
    for (int64_t k = 0; k < p.at("bg_per_cpu"); ++k) {
      mix.users.push_back(BackgroundUser{
          Task{c, kRootMemcg, 0}, static_cast<uint32_t>(p.at("bg_size")), p.at("bg_burst"),
          1e6 / rate, std::mt19937_64(e.seed * 7919 + c * 64 + static_cast<uint64_t>(k)), {}, 0,
          0});
    }
  }
  if (e.bg_trace) spawn_trace(mix, e, p, loop_cpu);
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
  TraceUser sum{};
  for (const TraceUser& t : mix.tracers) {
    bw += mix.e->machine->stats(t.id).list_contended;
    bns += mix.e->machine->stats(t.id).list_wait_ns;
    sum.events += t.events, sum.kmallocs += t.kmallocs, sum.kfrees += t.kfrees;
    sum.unmatched += t.unmatched, sum.missed += t.missed, sum.passes += t.passes;
    sum.pass_frees += t.pass_frees;
  }
  rec.metric("bg_list_lock_waits", static_cast<int64_t>(bw));
  rec.metric("bg_list_lock_wait_ns", static_cast<int64_t>(bns + 0.5));
  // Each background task on its own, over the span they all ran (spawn to
  // the loop's end): its kmalloc() rate and its shares of that time
  // waiting for and holding a list_lock, as the smallest, median and
  // largest over the tasks (docs/scenarios.md).
  const double span = std::max(0.0, mix.stop_ns - mix.start_ns);
  std::vector<double> rate, wait, hold;
  double hns = 0;
  const auto one = [&](int id, double kmallocs) {
    const Machine::TaskStats& st = mix.e->machine->stats(id);
    hns += st.list_hold_ns;
    if (span <= 0) return;
    rate.push_back(kmallocs / span * 1e9);
    wait.push_back(st.list_wait_ns / span * 1e6);
    hold.push_back(st.list_hold_ns / span * 1e6);
  };
  for (const BackgroundUser& b : mix.users) one(b.id, static_cast<double>(b.kmallocs));
  for (const TraceUser& t : mix.tracers) one(t.id, static_cast<double>(t.kmallocs));
  if (!mix.users.empty() || !mix.tracers.empty())
    rec.metric("bg_list_lock_hold_ns", static_cast<int64_t>(hns + 0.5));
  const auto spread = [&](const char* name, std::vector<double> v) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    const auto put = [&](const char* which, double x) {
      rec.metric(fmt::format("bg_{}_{}", name, which), static_cast<int64_t>(x + 0.5));
    };
    put("min", v.front());
    put("median", v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
    put("max", v.back());
  };
  spread("kmalloc_per_s", rate);
  spread("list_lock_wait_ppm", wait);
  spread("list_lock_hold_ppm", hold);
  // How heavy the synthetic neighbours are: their number, their kmalloc()
  // calls and the virtual time they ran (spawn to the loop's end).
  if (!mix.users.empty()) {
    uint64_t km = 0;
    for (const BackgroundUser& b : mix.users) km += b.kmallocs;
    rec.metric("bg_tasks", static_cast<int64_t>(mix.users.size()));
    rec.metric("bg_kmallocs", static_cast<int64_t>(km));
    rec.metric("bg_span_ns", static_cast<int64_t>(std::max(0.0, mix.stop_ns - mix.start_ns) + 0.5));
  }
  if (!mix.trace) return;
  rec.metric("bg_trace_tasks", static_cast<int64_t>(mix.tracers.size()));
  rec.metric("bg_trace_events", sum.events);
  rec.metric("bg_trace_kmallocs", sum.kmallocs);
  rec.metric("bg_trace_kfrees", sum.kfrees);
  rec.metric("bg_trace_unmatched_frees", sum.unmatched);
  rec.metric("bg_trace_missed_frees", sum.missed);
  rec.metric("bg_trace_passes", sum.passes);
  rec.metric("bg_trace_pass_frees", sum.pass_frees);
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
