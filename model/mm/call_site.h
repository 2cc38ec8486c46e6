// Call-site scopes: which kernel function the mm events happened under,
// the view function_graph gives of a traced region. The io_uring layer
// enters a scope at its kernel-function boundaries (iou::SiteScope); the
// Mm facade keeps the stack. Each site's counts are inclusive (everything
// nested under it) for a short list of events, kept as a flat array
// indexed by (site, event): entry subtracts those counters from the
// site's row, exit adds them back; no heap.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "model/counters.h"
#include "model/mm/batch.h"  // Batch, BatchHists: the other per-run view

namespace simcache {

// One row per kernel function the model enters a scope for.
#define SIMCACHE_CALL_SITES(X)  \
  X(io_ring_ctx_alloc)          \
  X(io_ring_ctx_free)           \
  X(io_sqe_files_register)      \
  X(io_sqe_files_unregister)    \
  X(io_rsrc_slab_prime)         \
  X(io_alloc_cache_prefill)     \
  X(io_files_update)            \
  X(io_msg_send_fd)             \
  X(io_install_fixed_file)      \
  X(io_rsrc_node_alloc)         \
  X(io_free_rsrc_node)          \
  X(io_cache_alloc_new)         \
  X(io_alloc_cache_free)        \
  X(io_futex_wait)              \
  X(io_alloc_ocqe)              \
  X(io_futexv_prep)             \
  X(io_alloc_req_refill)         \
  X(io_allocate_scq_urings)     \
  X(io_uring_alloc_task_context) \
  X(io_wq_create)               \
  X(create_io_worker)           \
  X(io_uring_add_tctx_node)     \
  X(io_uring_clean_tctx)

enum class CallSite : uint8_t {
#define SC_SITE(n) n,
  SIMCACHE_CALL_SITES(SC_SITE)
#undef SC_SITE
  kCount
};
inline constexpr size_t kNumCallSites = static_cast<size_t>(CallSite::kCount);
inline constexpr std::array<std::string_view, kNumCallSites> kCallSiteNames = {{
#define SC_SITE(n) #n,
    SIMCACHE_CALL_SITES(SC_SITE)
#undef SC_SITE
}};
// The caller index of a scope entered with no scope open.
inline constexpr size_t kTopCaller = kNumCallSites;

// The events counted under each scope: the allocator entry points and the
// slab-page events. A short fixed list keeps a scope boundary to a few
// vector operations (every event would cost the whole counter block
// twice per boundary, several times the simulated operation itself).
inline constexpr std::array<Event, 8> kScopedEvents = {
    Event::kmalloc,         Event::kfree,           Event::kmem_cache_alloc,
    Event::kmem_cache_free, Event::kmem_cache_alloc_bulk, Event::slab_alloc_slow,
    Event::allocate_slab,   Event::free_slab};
inline constexpr size_t kNumScoped = kScopedEvents.size();

// Counts by call site. calls[caller * kNumCallSites + site]: entries of
// `site` while `caller` was the innermost open scope (kTopCaller: none);
// inclusive[site][k]: kScopedEvents[k] counted while `site` was open.
struct CallSiteCounts {
  std::array<std::array<uint64_t, kNumScoped>, kNumCallSites> inclusive{};
  std::array<uint64_t, (kNumCallSites + 1) * kNumCallSites> calls{};

  uint64_t calls_from(size_t caller, CallSite s) const {
    return calls[caller * kNumCallSites + static_cast<size_t>(s)];
  }
  uint64_t calls_of(CallSite s) const {
    uint64_t n = 0;
    for (size_t c = 0; c <= kNumCallSites; ++c) n += calls_from(c, s);
    return n;
  }
  // The scoped events under `s` (every other event reads 0).
  Counters under(CallSite s) const {
    Counters c;
    for (size_t k = 0; k < kNumScoped; ++k)
      c.add(kScopedEvents[k], inclusive[static_cast<size_t>(s)][k]);
    return c;
  }
  friend CallSiteCounts operator-(const CallSiteCounts& a, const CallSiteCounts& b) {
    CallSiteCounts r;
    for (size_t i = 0; i < kNumCallSites; ++i)
      for (size_t k = 0; k < kNumScoped; ++k)
        r.inclusive[i][k] = a.inclusive[i][k] - b.inclusive[i][k];
    for (size_t i = 0; i < r.calls.size(); ++i) r.calls[i] = a.calls[i] - b.calls[i];
    return r;
  }
  friend bool operator==(const CallSiteCounts&, const CallSiteCounts&) = default;
  CallSiteCounts& operator+=(const CallSiteCounts& o) {
    for (size_t i = 0; i < kNumCallSites; ++i)
      for (size_t k = 0; k < kNumScoped; ++k) inclusive[i][k] += o.inclusive[i][k];
    for (size_t i = 0; i < calls.size(); ++i) calls[i] += o.calls[i];
    return *this;
  }
};

// The open scopes. A site already open is not re-entered (its inclusive
// row would count the nested part twice); neither is one past kMaxDepth.
class CallSiteStack {
 public:
  static constexpr size_t kMaxDepth = 16;

  bool enter(CallSite s, const Counters& now) {
    const uint32_t bit = 1u << static_cast<unsigned>(s);
    if ((open_ & bit) || depth_ == kMaxDepth) return false;
    const size_t caller = depth_ ? static_cast<size_t>(stack_[depth_ - 1]) : kTopCaller;
    counts_.calls[caller * kNumCallSites + static_cast<size_t>(s)]++;
    auto& row = counts_.inclusive[static_cast<size_t>(s)];
    // Unrolled, each counter's offset is a constant: two instructions a
    // counter instead of a loop over the index table (arm-fail with JSON
    // crosses four boundaries a wait).
#pragma GCC unroll 8
    for (size_t k = 0; k < kNumScoped; ++k) row[k] -= now[kScopedEvents[k]];
    stack_[depth_++] = s;
    open_ |= bit;
    return true;
  }
  void exit(CallSite s, const Counters& now) {
    auto& row = counts_.inclusive[static_cast<size_t>(s)];
#pragma GCC unroll 8
    for (size_t k = 0; k < kNumScoped; ++k) row[k] += now[kScopedEvents[k]];
    --depth_;
    open_ &= ~(1u << static_cast<unsigned>(s));
  }
  // The innermost open scope's name, or "" outside every scope.
  std::string_view current() const {
    return depth_ ? kCallSiteNames[static_cast<size_t>(stack_[depth_ - 1])] : std::string_view{};
  }
  // Valid only with no scope open (rows of open scopes are offset).
  const CallSiteCounts& counts() const { return counts_; }

 private:
  static_assert(kNumCallSites <= 32, "open_ is a 32-bit mask");
  CallSiteCounts counts_;
  std::array<CallSite, kMaxDepth> stack_{};
  uint32_t depth_ = 0;
  uint32_t open_ = 0;
};

}  // namespace simcache
