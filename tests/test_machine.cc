// The many-CPU machine (sim/run/machine.h): scheduling, lock waits by
// hand-computed schedules, PREEMPT_RT priority inheritance.
#include <catch2/catch.hpp>

#include <array>

#include "model/sched/locking.h"
#include "sim/run/machine.h"

using namespace simcache;
using namespace simcache::sim;

namespace {

// Prices: kmalloc = 10 ns (work outside the lock), slab_alloc_slow = 30 ns
// (work inside it), everything else 0.
std::array<double, kNumEvents> test_prices(double outside, double inside) {
  std::array<double, kNumEvents> p{};
  p[static_cast<size_t>(Event::kmalloc)] = outside;
  p[static_cast<size_t>(Event::slab_alloc_slow)] = inside;
  return p;
}

// A step: `outside` work, then list_lock 0 held over `inside` work.
Step locked_step(EventSink& ev, uint32_t lock) {
  ev.add(Event::kmalloc);
  ev.locks->acquire(LockClass::list_lock, lock);
  ev.add(Event::slab_alloc_slow);
  ev.locks->release(LockClass::list_lock, lock);
  return Step::run();
}

}  // namespace

TEST_CASE("machine: a lock nobody else holds adds no wait", "[machine]") {
  EventSink ev;
  const auto prices = test_prices(10, 30);
  Machine m(ev, {2, {}, prices.data(), 1});
  int left[2] = {3, 3};
  // Two CPUs, each its own lock instance: never contended.
  for (CpuId c = 0; c < 2; ++c)
    m.spawn(c, 0, [&, c] { return --left[c] < 0 ? Step::done() : locked_step(ev, c); });
  m.run();
  for (int t = 0; t < 2; ++t) {
    CHECK(m.stats(t).contended == 0);
    CHECK(m.stats(t).wait_ns == 0);
  }
  // The clocks are counts x prices: 3 x (10 + 30).
  CHECK(m.clock(0) == 120);
  CHECK(m.clock(1) == 120);
  CHECK(ev[Event::list_lock_contended] == 0);
}

TEST_CASE("machine: two CPUs on one lock follow the hand-computed schedule", "[machine]") {
  // !RT spinlock. Each step: 10 ns outside, then 30 ns holding lock 0.
  // Both clocks start at 0; the lower CPU wins ties.
  //   CPU0 A1: 0..10, lock 10..40                 (free_at 40)
  //   CPU1 B1: 0..10, spins 10..40, lock 40..70   (wait 30, free_at 70)
  //   CPU0 A2: 40..50, spins 50..70, lock 70..100 (wait 20)
  //   CPU1 B2: 70..80, spins 80..100, lock 100..130 (wait 20)
  //   CPU0 A3: 100..110, spins 110..130, lock 130..160 (wait 20)
  //   CPU1 B3: 130..140, spins 140..160, lock 160..190 (wait 20)
  EventSink ev;
  const auto prices = test_prices(10, 30);
  Machine m(ev, {2, {}, prices.data(), 1});
  int left[2] = {3, 3};
  for (CpuId c = 0; c < 2; ++c)
    m.spawn(c, 0, [&, c] { return --left[c] < 0 ? Step::done() : locked_step(ev, 0); });
  m.run();
  CHECK(m.stats(0).contended == 2);
  CHECK(m.stats(0).wait_ns == 40);
  CHECK(m.stats(1).contended == 3);
  CHECK(m.stats(1).wait_ns == 70);
  CHECK(m.clock(0) == 160);
  CHECK(m.clock(1) == 190);
  CHECK(ev[Event::list_lock_contended] == 5);
  CHECK(ev[Event::list_lock] == 0);  // the hook was called directly, not through Slub
}

namespace {
// A SCHED_OTHER holder on CPU1 takes lock 0 at t = 0 and holds it over
// 100 ns of its own work. Its CPU has two irq loads: irq thread A
// (prio 50) arrives at 20 ns for 50 ns, irq thread B (prio 90) at 60 ns
// for 30 ns. A SCHED_FIFO 80 waiter on CPU0 asks for the lock at 10 ns.
struct PiSetup {
  EventSink ev;
  std::array<double, kNumEvents> prices = test_prices(0, 100);
  Machine m;
  explicit PiSetup(iou::LockRules rules) : m(ev, {2, rules, prices.data(), 1}) {
    m.add_irq(1, {50, 1e9, 20, 0, 50});
    m.add_irq(1, {90, 1e9, 60, 0, 30});
    bool held = false, waited = false;
    m.spawn(1, 0, [this, held]() mutable {
      if (held) return Step::done();
      held = true;
      ev.locks->acquire(LockClass::list_lock, 0);
      ev.add(Event::slab_alloc_slow);
      ev.locks->release(LockClass::list_lock, 0);
      return Step::run();
    });
    m.spawn(0, 80, [this, waited]() mutable {
      if (waited) return Step::done();
      if (m.now() < 10) return Step::sleep_until(10);
      waited = true;
      ev.locks->acquire(LockClass::list_lock, 0);
      ev.locks->release(LockClass::list_lock, 0);
      return Step::run();
    });
    m.run();
  }
};
}  // namespace

TEST_CASE("machine: priority inheritance bounds an RT waiter's wait", "[machine][rt]") {
  SECTION("RT with PI: boosted to 80, A (50) waits, B (90) still preempts") {
    // The holder's own 100 ns + B's 30 ns: released at 130, waited 120.
    PiSetup s({true, true});
    CHECK(s.m.stats(1).wait_ns == 120);
    CHECK(s.m.clock(0) == 130);
    CHECK(s.ev[Event::rt_lock_block] == 1);
    // The holder's CPU still runs A and B: 100 + 50 + 30.
    CHECK(s.m.clock(1) == 180);
  }
  SECTION("RT without PI: A preempts the holder too (priority inversion)") {
    PiSetup s({true, false});
    CHECK(s.m.stats(1).wait_ns == 170);  // 100 + 50 + 30, from 10 to 180
  }
  SECTION("!RT: the holder has interrupts off; A and B run after the unlock") {
    PiSetup s({false, true});
    CHECK(s.m.stats(1).wait_ns == 90);  // spins 10..100
    CHECK(s.ev[Event::rt_lock_block] == 0);
    CHECK(s.m.clock(1) == 180);
  }
}

TEST_CASE("locking rules: release_time applies PI from the block time", "[machine][rt]") {
  const iou::LockRules rt{true, true};
  const iou::HoldPreemption pre[] = {{20, 50, 50}, {60, 30, 90}};
  // Blocking after A arrived: A had already preempted at the holder's own
  // priority, so it counts; B counts too.
  CHECK(iou::release_time(rt, 0, 100, 0, pre, 30, 80) == 180);
  // Blocking before A: only B.
  CHECK(iou::release_time(rt, 0, 100, 0, pre, 10, 80) == 130);
  // A waiter above B: nothing preempts the boosted holder.
  CHECK(iou::release_time(rt, 0, 100, 0, pre, 10, 95) == 100);
  CHECK(iou::effective_priority({false, true}, 0, 80) == 0);  // !RT: no PI
  CHECK(iou::irq_priority({false, true}, 50) == iou::kHardIrqPrio);
}

TEST_CASE("machine: the highest-priority ready task runs, and sleepers wake on time",
          "[machine]") {
  EventSink ev;
  const auto prices = test_prices(10, 0);
  Machine m(ev, {1, {}, prices.data(), 1});
  std::vector<int> order;
  int lo = 2, hi = 2;
  m.spawn(0, 0, [&] {
    if (lo-- == 0) return Step::done();
    ev.add(Event::kmalloc);
    order.push_back(0);
    return Step::run();
  });
  m.spawn(0, 50, [&] {
    if (hi-- == 0) return Step::done();
    ev.add(Event::kmalloc);
    order.push_back(50);
    return Step::sleep_until(100);
  });
  m.run();
  // FIFO 50 first (0..10), sleeps to 100; the SCHED_OTHER task runs
  // 10..20, 20..30 and finishes; the FIFO task wakes at 100 (idle gap).
  CHECK(order == std::vector<int>{50, 0, 0, 50});
  CHECK(m.clock(0) == 110);
  CHECK(m.steps() == 6);
}

TEST_CASE("machine: without prices clocks stay at 0 and nothing contends", "[machine]") {
  EventSink ev;
  Machine m(ev, {2, {}, nullptr, 1});
  int left[2] = {4, 4};
  for (CpuId c = 0; c < 2; ++c)
    m.spawn(c, 0, [&, c] { return --left[c] < 0 ? Step::done() : locked_step(ev, 0); });
  m.run();
  CHECK(m.clock(0) == 0);
  CHECK(m.clock(1) == 0);
  CHECK(ev[Event::list_lock_contended] == 0);
  CHECK(ev[Event::kmalloc] == 8);
}
