#include "sim/run/machine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace simcache::sim {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}

Machine::Machine(EventSink& sink, const Config& cfg) : sink_(sink), cfg_(cfg) {
  cpus_.resize(std::max<uint16_t>(cfg.cpus, 1));
  while (leaves_ < cpus_.size()) leaves_ *= 2;
  tree_.resize(2 * leaves_);
  for (size_t i = 0; i < leaves_; ++i)
    tree_[leaves_ + i] = {order_key(kNever), static_cast<uint32_t>(i)};
  for (size_t i = leaves_ - 1; i >= 1; --i) tree_[i] = tree_[2 * i];
  sink_.set_prices(cfg.prices);
  sink_.locks = this;
}

Machine::~Machine() {
  sink_.locks = nullptr;
  sink_.set_clock(nullptr);
  sink_.set_target(nullptr);
  sink_.set_prices(nullptr);
}

int Machine::spawn(CpuId cpu, int prio, Body body, bool own_counts) {
  TaskRec t;
  t.cpu = cpu;
  t.prio = prio;
  t.body = std::move(body);
  if (own_counts) t.counts = std::make_unique<Counters>();
  const int id = static_cast<int>(tasks_.size());
  Sched s;
  s.id = id;
  s.prio = prio;
  // A task spawned by a running task starts at its spawner's time.
  s.wake = cur_task_ >= 0 ? now() : 0;
  s.sleeping = s.wake > cpus_[cpu].clock;
  t.slot = static_cast<uint32_t>(cpus_[cpu].tasks.size());
  tasks_.push_back(std::move(t));
  s.rec = &tasks_.back();
  cpus_[cpu].tasks.push_back(s);
  tree_update(cpu);
  return id;
}

double Machine::next_arrival(Irq& q, double after) {
  if (q.load.period_ns > 0) {
    const double k = std::floor((after - q.load.phase_ns) / q.load.period_ns) + 1;
    return q.load.phase_ns + std::max(k, 0.0) * q.load.period_ns;
  }
  if (q.load.rate_per_ms <= 0) return kNever;
  // Exponential gap from 53 uniform bits (the same on every platform).
  const double u = static_cast<double>(q.rng() >> 11) * 0x1p-53;
  return after + -std::log1p(-u) * (1e6 / q.load.rate_per_ms);
}

void Machine::add_irq(CpuId cpu, const IrqLoad& load) {
  Irq q{load, iou::irq_priority(cfg_.rules, load.prio), 0,
        std::mt19937_64(cfg_.seed * 0x9e3779b97f4a7c15ull + cpu * 131 + cpus_[cpu].irqs.size())};
  q.next = load.period_ns > 0 ? load.phase_ns : next_arrival(q, 0);
  if (load.dur_ns <= 0) q.next = kNever;
  cpus_[cpu].irqs.push_back(std::move(q));
}

double Machine::now() const { return sink_.now(); }

// ---- Scheduling.

double Machine::next_time(const Cpu& c) const {
  double wake = kNever;
  for (const Sched& t : c.tasks) {
    if (t.done) continue;
    if (!t.sleeping) return c.clock;
    wake = std::min(wake, t.wake);
  }
  return std::max(wake, c.clock);
}

uint64_t Machine::order_key(double t) {
  const uint64_t b = std::bit_cast<uint64_t>(t + 0.0);  // -0 + 0 = +0
  return b ^ (static_cast<uint64_t>(static_cast<int64_t>(b) >> 63) | (uint64_t{1} << 63));
}

void Machine::tree_update(CpuId c) {
  const double t = next_time(cpus_[c]);
  cpus_[c].next = t;
  uint64_t k = order_key(t);
  uint32_t w = c;
  Node* const tree = tree_.data();
  size_t i = leaves_ + c;
  tree[i] = {k, w};
  for (; i > 1; i /= 2) {
    const Node s = tree[i ^ 1];
    // Ties: the lower CPU id, which is the sibling when it is the left
    // child (i odd). Keys are below 2^64 - 1 (that is a NaN's).
    const bool sib = s.key < k + (i & 1);
    k = sib ? s.key : k;
    w = sib ? s.cpu : w;
    tree[i / 2] = {k, w};
  }
}

Machine::Sched* Machine::pick_task(Cpu& c) {
  Sched* b = nullptr;
  for (Sched& t : c.tasks) {
    if (t.done) continue;
    if (t.sleeping && t.wake <= c.clock) t.sleeping = false;
    if (t.sleeping) continue;
    // Highest priority; among equals, the one that ran longest ago.
    if (!b || t.prio > b->prio || (t.prio == b->prio && t.last_run < b->last_run)) b = &t;
  }
  return b;
}

void Machine::run() {
  const uint64_t never = order_key(kNever);
  while (tree_[1].key < never) run_one(static_cast<CpuId>(tree_[1].cpu));
}

void Machine::run_one(CpuId ci) {
  Cpu& c = cpus_[ci];
  const double t0 = c.next;  // next_time(c), kept by tree_update()
  if (t0 > c.clock) {  // every task sleeps: idle until the first wakes
    int waker = 0;
    for (const Sched& t : c.tasks)
      if (!t.done && t.wake <= t0) waker = std::max(waker, t.prio);
    idle_until(ci, t0, waker);
  }
  const Sched* const pick = pick_task(c);
  if (!pick) return tree_update(ci);
  TaskRec& t = *pick->rec;  // `pick` may move when the body spawns; `t` stays
  cur_cpu_ = ci;
  cur_task_ = pick->id;
  sink_.set_clock(&c.clock);
  sink_.set_target(t.counts.get());
  if (!c.irqs.empty()) catch_up(ci, t.prio);
  const Step s = t.body();
  if (!c.irqs.empty()) catch_up(ci, t.prio);
  ++t.stats.steps;
  ++steps_;
  Sched& st = c.tasks[t.slot];  // after the body: a spawn may move c.tasks
  st.last_run = ++tick_;
  if (s.kind == Step::kDone) st.done = true;
  if (s.kind == Step::kSleep) {
    st.wake = s.until;
    st.sleeping = s.until > c.clock;
  }
  sink_.set_target(nullptr);
  cur_task_ = -1;
  tree_update(ci);
}

// ---- Interference.

void Machine::catch_up(CpuId ci, int running) {
  Cpu& c = cpus_[ci];
  if (c.irqs.empty()) return;
  const bool in_lock = cur_task_ >= 0 && tasks_[cur_task_].nheld > 0;
  for (bool again = true; again;) {
    again = false;
    for (Irq& q : c.irqs) {
      if (q.next > c.clock) continue;
      const bool runs = in_lock ? iou::preempts_holder(cfg_.rules, q.prio, running)
                                : iou::preempts_task(q.prio, running);
      if (!runs) continue;
      const double at = q.next;
      c.clock += q.load.dur_ns;
      if (cur_task_ >= 0) {  // preempts a holder: the locks it holds record it
        const TaskRec& t = tasks_[cur_task_];
        for (int k = 0; k < t.nheld; ++k)
          lock_of(t.held[k]).pre.push_back({at, q.load.dur_ns, q.prio});
      }
      q.next = next_arrival(q, c.clock);  // the pile-up runs once
      again = true;
    }
  }
}

void Machine::idle_until(CpuId ci, double until, int waker) {
  Cpu& c = cpus_[ci];
  double busy = c.clock, late = until;
  for (bool again = true; again;) {
    again = false;
    for (Irq& q : c.irqs) {
      if (q.next >= until) continue;
      busy = std::max(busy, q.next) + q.load.dur_ns;
      if (busy > until && iou::preempts_task(q.prio, waker)) late = std::max(late, busy);
      q.next = next_arrival(q, std::max(busy, q.next));
      again = true;
    }
  }
  c.clock = late;
}

// ---- Locks.

Machine::Lock& Machine::lock_of(uint32_t k) {
  if (k >= locks_.size()) locks_.resize(k + 1);
  return locks_[k];
}

void Machine::acquire(LockClass cls, uint32_t id) {
  if (cur_task_ < 0) return;  // outside run(): set-up code, nothing contends
  TaskRec& t = tasks_[cur_task_];
  const uint32_t k = key(cls, id);
  const bool spins = iou::waiter_spins(cfg_.rules);
  // The holder-to-be may be preempted before it gets there (RT: not with
  // interrupts off on !RT either, since it does not hold the lock yet).
  catch_up(cur_cpu_, t.prio);
  Cpu& c = cpus_[cur_cpu_];
  Lock& l = lock_of(k);
  const double asked = c.clock;
  if (asked < l.free_at) {
    double grant = l.free_at;
    if (!spins) {
      const double work = l.free_at - l.acquired - [&] {
        double s = 0;
        for (const auto& p : l.pre) s += p.dur;
        return s;
      }();
      grant = std::max(asked, iou::release_time(cfg_.rules, l.acquired, work, l.holder_prio,
                                                l.pre, asked, t.prio));
      idle_until(cur_cpu_, grant, t.prio);
      grant = std::max(grant, c.clock);
    }
    c.clock = grant;
    // rtlock_slowlock(): the switch out and back in, priced after the wake.
    if (!spins) sink_.add(Event::rt_lock_block);
    sink_.add(cls == LockClass::list_lock ? Event::list_lock_contended
                                          : Event::zone_lock_contended);
    ++t.stats.contended;
    t.stats.wait_ns += grant - asked;
    if (cls == LockClass::list_lock) {
      ++t.stats.list_contended;
      t.stats.list_wait_ns += grant - asked;
    }
  }
  l.acquired = c.clock;
  l.holder_prio = t.prio;
  l.pre.clear();
  if (t.nheld < 4) t.held[t.nheld++] = k;
}

void Machine::release(LockClass cls, uint32_t id) {
  if (cur_task_ < 0) return;
  TaskRec& t = tasks_[cur_task_];
  const uint32_t k = key(cls, id);
  // RT: what outranks the holder preempts it inside the lock; !RT: the
  // interrupts it held off run right after the unlock.
  if (!iou::waiter_spins(cfg_.rules)) catch_up(cur_cpu_, t.prio);
  Lock& l = lock_of(k);
  l.free_at = cpus_[cur_cpu_].clock;
  if (cls == LockClass::list_lock) t.stats.list_hold_ns += l.free_at - l.acquired;
  for (int i = 0; i < t.nheld; ++i)
    if (t.held[i] == k) {
      t.held[i] = t.held[--t.nheld];
      break;
    }
  if (iou::waiter_spins(cfg_.rules)) catch_up(cur_cpu_, t.prio);
}

}  // namespace simcache::sim
