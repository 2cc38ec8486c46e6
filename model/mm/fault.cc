#include "model/mm/fault.h"

#include <array>

namespace simcache {
namespace {
constexpr std::array<std::string_view, kNumFaultPoints> kNames = {
    "page_alloc", "slab_alloc", "bulk_short", "bulk_zero", "kvmalloc",
    "memcg_charge"};

// splitmix64: a small, well-known generator; deterministic across platforms.
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::string_view fault_point_name(FaultPoint p) {
  return kNames[static_cast<size_t>(p)];
}

bool fault_point_by_name(std::string_view name, FaultPoint* out) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) {
      *out = static_cast<FaultPoint>(i);
      return true;
    }
  }
  return false;
}

void FaultInjector::fail_nth(FaultPoint p, uint64_t nth, uint64_t every) {
  Rule& r = rules_[static_cast<size_t>(p)];
  r = Rule{};
  r.active = true;
  r.nth = nth;
  r.every = every;
}

void FaultInjector::fail_random(FaultPoint p, double prob, uint64_t seed) {
  Rule& r = rules_[static_cast<size_t>(p)];
  r = Rule{};
  r.active = true;
  if (prob >= 1.0) {
    r.prob_scaled = 0xffffffffu;
  } else if (prob > 0) {
    r.prob_scaled = static_cast<uint32_t>(prob * 4294967296.0);
  }
  r.rng = seed;
}

void FaultInjector::clear() { rules_ = {}; }

bool FaultInjector::decide(Rule& r) {
  ++r.calls;
  bool fail;
  if (r.nth) {
    fail = r.calls == r.nth ||
           (r.every && r.calls > r.nth && (r.calls - r.nth) % r.every == 0);
  } else {
    fail = (next(r.rng) >> 32) < r.prob_scaled;
  }
  if (fail) ++r.injected;
  return fail;
}

}  // namespace simcache
