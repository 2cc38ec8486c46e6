// Steady state: once a measurement program's measured rounds repeat, the
// rest are computed instead of simulated.
//
// After each measured round the check takes the model's state signature
// (model/mm/state_sig.h: the allocator, memcg, pages, rings and caches)
// and the driver's own locals that decide what later rounds do, and keeps
// its XXH3-128 digest. When the state after round i has the digest of
// the state after round i - p and after i - 2p, and rounds (i - p, i] recorded exactly what rounds (i - 2p,
// i - p] did (counts, per-cache deltas, phases, call sites, batches,
// metrics), the program is in a cycle of p rounds (p <= kSteadyMaxPeriod):
// the simulation is deterministic, so every later cycle repeats it. The
// whole cycles left are folded into the recorder round by round
// (Recorder::repeat_round()), the event counters and the driver's
// cumulative locals advance by the cycle's difference times the cycles,
// and the rounds left over run as usual, from a state equal to the one a
// full simulation would have reached (its ids, epochs and sequence
// numbers aside).
//
// Only where nothing needs every round (Env::steady): a plain table
// priced after the fact (sim/cli/cli.cc) of a run with no fault
// injection. A check never fires once an operation failed or the model
// reported, and a run whose teardown reports (KASAN, leaks) is
// simulated again in full (sim/run/engine.cc): a report names the
// object's history, whose sequence numbers a computed round does not
// advance.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <vector>

#include "model/mm/state_sig.h"
#include "sim/run/scenario.h"

namespace simcache::sim {

inline constexpr int kSteadyMaxPeriod = 4;
// Points (the start and the first rounds' ends) a check looks at: a
// cycle of every length up to kSteadyMaxPeriod shows twice within them,
// also where the start differs from every round's end (a driver's
// locals: sparse-fill's "the last round was measured").
inline constexpr int kSteadyWindow = 2 * kSteadyMaxPeriod + 2;

class SteadyCheck {
 public:
  // `cumulative`: driver locals that grow round by round and decide
  // nothing later rounds do (counted into a metric after the rounds).
  SteadyCheck(Env& e, Recorder& rec, std::initializer_list<int64_t*> cumulative = {});
  ~SteadyCheck();
  bool on() const { return on_; }
  // Before the first measured round and after each: the driver appends
  // its locals to begin()'s signature, then observe() adds the model's,
  // with `left` measured rounds still to run. Returns how many of them it
  // computed (0: simulate on).
  StateSig& begin();
  int64_t observe(int64_t left);

 private:
  struct Point {
    uint64_t digest[2] = {0, 0};  // XXH3-128 of the state signature's words
    Recorder::RoundRecord round;  // the round that ended here
    bool has_round = false;
    Counters events;
    std::vector<int64_t> cumulative;
  };
  bool cycle(int p) const;
  int64_t stop();
  Env& e_;
  Recorder& rec_;
  std::vector<int64_t*> cumulative_;
  struct Hash;  // the digest being taken (steady.cc)
  std::unique_ptr<Hash> hash_;
  StateSig work_;  // the signature being taken, streamed into hash_
  bool on_;
  std::deque<Point> points_;  // the last 2 * kSteadyMaxPeriod + 1
  int seen_ = 0;              // points taken
};

// Runs `n` measured rounds of `round()` (end_round() included), computing
// the steady tail where the check allows. `locals(StateSig*)` appends the
// driver's state that decides what later rounds do.
template <class Round, class Locals>
void run_measured(Env& e, Recorder& rec, int64_t n, Round&& round, Locals&& locals,
                  std::initializer_list<int64_t*> cumulative = {}) {
  SteadyCheck check(e, rec, cumulative);
  auto observe = [&](int64_t left) {
    if (!check.on()) return int64_t{0};
    locals(&check.begin());
    return check.observe(left);
  };
  int64_t left = n;
  left -= observe(left);
  while (left > 0) {
    round();
    --left;
    left -= observe(left);
  }
}

}  // namespace simcache::sim
