#include "sim/run/steady.h"

#include <algorithm>
#include <new>

#include <xxhash.h>

namespace simcache::sim {

// XXH3-128's streaming state: the signature's words are hashed chunk by
// chunk as the walk writes them.
struct SteadyCheck::Hash {
  XXH3_state_t* state = XXH3_createState();
  Hash() {
    if (!state) throw std::bad_alloc();
  }
  ~Hash() { XXH3_freeState(state); }
  static void feed(void* ctx, const uint64_t* words, size_t n) {
    XXH3_128bits_update(static_cast<XXH3_state_t*>(ctx), words, n * sizeof(uint64_t));
  }
};

SteadyCheck::SteadyCheck(Env& e, Recorder& rec, std::initializer_list<int64_t*> cumulative)
    : e_(e), rec_(rec), cumulative_(cumulative), on_(e.steady && !e.mm.events().priced()) {
  if (on_) rec_.keep_rounds();
}

SteadyCheck::~SteadyCheck() = default;

StateSig& SteadyCheck::begin() {
  if (!hash_) hash_ = std::make_unique<Hash>();
  work_.clear();
  work_.stream_to(&Hash::feed, hash_->state);
  XXH3_128bits_reset(hash_->state);
  return work_;
}

// The points after rounds i - 2p, i - p and i hold one state, and the
// two cycles between them recorded the same rounds.
bool SteadyCheck::cycle(int p) const {
  const size_t up = static_cast<size_t>(p);
  if (points_.size() < 2 * up + 1) return false;
  const size_t i = points_.size() - 1;
  auto same = [&](const Point& a, const Point& b) {
    return a.digest[0] == b.digest[0] && a.digest[1] == b.digest[1];
  };
  if (!same(points_[i], points_[i - up]) || !same(points_[i], points_[i - 2 * up])) return false;
  for (size_t j = 0; j < up; ++j) {
    const Point& a = points_[i - j];
    const Point& b = points_[i - up - j];
    if (!a.has_round || !b.has_round || !(a.round == b.round)) return false;
  }
  return true;
}

// The check is over: its points, buffers and the recorder's round copies
// go.
int64_t SteadyCheck::stop() {
  on_ = false;
  points_.clear();
  points_.shrink_to_fit();
  work_ = StateSig();
  hash_.reset();
  rec_.keep_rounds(false);
  return 0;
}

int64_t SteadyCheck::observe(int64_t left) {
  if (!on_) return 0;
  // A cycle of one round shows after two more and computes at least one:
  // fewer rounds than that, or none left, need no signature. Nor does a
  // program whose first kSteadyWindow points hold no cycle: the check
  // gives up (it costs a walk of the whole model each round).
  if (seen_ == 0 && left < 3) on_ = false;
  if (left <= 0 || seen_ >= kSteadyWindow) on_ = false;
  if (!on_) return stop();
  ++seen_;
  if (!e_.mm.kasan_reports().empty() || rec_.any_failure() || !e_.io.failures().empty()) {
    return stop();  // a report or a failure: every round is simulated
  }
  Point pt;
  // After the driver's locals (begin()), the rings: the objects they hold
  // name slabs in ring order.
  e_.io.signature(&work_);
  e_.mm.signature(&work_);
  // Kept as a 128-bit digest: a point costs 16 bytes, not the model's
  // size (two different states collide with probability 2^-128).
  work_.flush();
  const XXH128_hash_t h = XXH3_128bits_digest(hash_->state);
  pt.digest[0] = h.low64;
  pt.digest[1] = h.high64;
  pt.has_round = !points_.empty();  // the first point is before any round
  if (pt.has_round) pt.round = rec_.last_round();
  pt.events = e_.mm.events();
  for (const int64_t* c : cumulative_) pt.cumulative.push_back(*c);
  points_.push_back(std::move(pt));
  if (points_.size() > 2 * kSteadyMaxPeriod + 1) points_.pop_front();
  for (int p = 1; p <= kSteadyMaxPeriod; ++p) {
    if (!cycle(p)) continue;
    const int64_t cycles = left / p;
    if (cycles == 0) return 0;
    const size_t i = points_.size() - 1, up = static_cast<size_t>(p);
    for (int64_t c = 0; c < cycles; ++c)
      for (size_t j = up; j-- > 0;) rec_.repeat_round(points_[i - j].round);
    const Counters d = points_[i].events - points_[i - up].events;
    Counters& ev = e_.mm.events();
    for (size_t k = 0; k < kNumEvents; ++k) ev.v[k] += d.v[k] * static_cast<uint64_t>(cycles);
    for (size_t k = 0; k < cumulative_.size(); ++k)
      *cumulative_[k] += (points_[i].cumulative[k] - points_[i - up].cumulative[k]) * cycles;
    stop();  // the rounds left over run from the cycle's state
    return cycles * p;
  }
  return 0;
}

}  // namespace simcache::sim
