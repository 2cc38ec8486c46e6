// The seam between the mm model and a machine that runs it on many
// simulated CPUs (sim/run/machine.h): the event sink every mm component
// counts into (events and batch sizes), which can also advance the
// running CPU's virtual clock by each event's price, and the lock hook
// the shared locks report to.
// Without a machine the sink only counts (prices all 0, a private clock)
// and no hook is set, so the mm model behaves exactly as on its own.
#pragma once

#include <array>
#include <cstdint>

#include "model/counters.h"
#include "model/mm/batch.h"

namespace simcache {

// The shared locks the model takes. Instance ids: list_lock
// cache * nr_nodes + node (KmemCache::Node::lock_id), zone_lock the node.
enum class LockClass : uint8_t {
  list_lock,  // kmem_cache_node->list_lock (spinlock_t)
  zone_lock,  // zone->lock (spinlock_t), around the page allocator's buddy work
};
inline constexpr int kNumLockClasses = 2;

// Called at every acquisition and release of a shared lock, by the CPU
// that is running (the machine knows which task that is).
class LockHook {
 public:
  virtual ~LockHook() = default;
  virtual void acquire(LockClass cls, uint32_t id) = 0;
  virtual void release(LockClass cls, uint32_t id) = 0;
};

// The counters of record plus the pricing hook: add() also advances
// *clock by price[e] x n (ns) when prices are set. Counts-only runs skip
// the clock: its add is a store-to-load chain through memory on every
// event, and the branch is the same way for the whole run. The machine
// points `clock`
// at the running CPU's clock and `target` at the running task's counters
// (a background task's events are not the measured program's).
class EventSink : public Counters {
 public:
  EventSink() : target_(v.data()), clock_(&own_clock_) {}
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;

  // Every counted event goes through here: always inlined, whatever a
  // unit's inlining budget.
  [[gnu::always_inline]] void add(Event e, uint64_t n = 1) {
    const size_t i = static_cast<size_t>(e);
    target_[i] += n;
    if (price_) *clock_ += price_[i] * static_cast<double>(n);
  }
  // add(a) then add(b), one unit each, with one test for prices: the
  // clock takes the same two additions in the same order.
  void add(Event a, Event b) {
    const size_t i = static_cast<size_t>(a), j = static_cast<size_t>(b);
    target_[i] += 1;
    target_[j] += 1;
    if (price_) {
      *clock_ += price_[i];
      *clock_ += price_[j];
    }
  }
  // Prices (ns per event unit, kNumEvents of them) or nullptr: none.
  void set_prices(const double* p) { price_ = p; }
  bool priced() const { return price_ != nullptr; }
  void set_clock(double* c) { clock_ = c ? c : &own_clock_; }
  double now() const { return *clock_; }
  // Where counts go: nullptr = these counters.
  void set_target(Counters* c) { target_ = c ? c->v.data() : v.data(); }
  LockHook* locks = nullptr;
  // One batch size (model/mm/batch.h): SLUB's sheaf refills and flushes,
  // the facade's bulk calls, io_uring's refills. Not priced and not
  // redirected by set_target(): the histograms are the whole run's.
  void batch(Batch b, uint64_t n) { batches_.add(b, n); }
  const BatchHists& batches() const { return batches_; }

 private:
  uint64_t* target_;
  const double* price_ = nullptr;
  double* clock_;
  double own_clock_ = 0;
  BatchHists batches_;
};

}  // namespace simcache
