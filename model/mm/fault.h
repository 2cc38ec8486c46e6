// Allocation-failure injection at named points, by count or by
// probability with a seed. Mirrors the effect of failslab / fail_page_alloc
// without their configuration surface.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace simcache {

enum class FaultPoint : uint8_t {
  page_alloc,    // the page allocator refuses (allocate_slab, large kmalloc)
  slab_alloc,    // a single-object slab allocation returns NULL
  bulk_short,    // kmem_cache_alloc_bulk() would be short: all-or-nothing -> 0
  bulk_zero,     // kmem_cache_alloc_bulk() returns 0 outright
  kvmalloc,      // kvmalloc() returns NULL (both kmalloc and vmalloc fail)
  memcg_charge,  // the memcg charge is refused
  kCount
};
inline constexpr size_t kNumFaultPoints = static_cast<size_t>(FaultPoint::kCount);
std::string_view fault_point_name(FaultPoint p);
bool fault_point_by_name(std::string_view name, FaultPoint* out);

class FaultInjector {
 public:
  // Fail the `nth` (1-based) call at `p` and every `every`-th call after it
  // (every = 0: only once).
  void fail_nth(FaultPoint p, uint64_t nth, uint64_t every = 0);
  // Fail each call at `p` with probability `prob`, drawn from a
  // deterministic generator seeded with `seed`.
  void fail_random(FaultPoint p, double prob, uint64_t seed);
  void clear();

  // Whether a rule is set at `p` (should_fail() may then say yes).
  bool armed(FaultPoint p) const { return rules_[static_cast<size_t>(p)].active; }
  // Called at every decision point; true means "fail this one".
  bool should_fail(FaultPoint p) {
    Rule& r = rules_[static_cast<size_t>(p)];
    if (!r.active) return false;
    return decide(r);
  }
  uint64_t injected(FaultPoint p) const { return rules_[static_cast<size_t>(p)].injected; }

 private:
  struct Rule {
    bool active = false;
    uint64_t calls = 0, nth = 0, every = 0, injected = 0;
    uint32_t prob_scaled = 0;  // probability in units of 2^-32
    uint64_t rng = 0;
  };
  bool decide(Rule& r);
  std::array<Rule, kNumFaultPoints> rules_{};
};

}  // namespace simcache
