// Batch-size histograms: how many objects one bulk call, refill or flush
// moved. Recorded through the event sink (EventSink::batch(),
// model/mm/lock_hook.h), so SLUB records its own without a way up.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace simcache {

// Batch sizes the model can see from the facade and the io_uring layer,
// as log2 histograms (bucket 0: size 0; bucket k: [2^(k-1), 2^k)).
enum class Batch : uint8_t {
  kmem_cache_alloc_bulk,   // objects asked of kmem_cache_alloc_bulk()
  kmem_cache_free_bulk,    // objects passed to kmem_cache_free_bulk()
  io_cache_bulk_refill,    // RFC 2/3: objects one bulk refill got
  io_alloc_cache_prefill,  // RFC 3/3: objects one prefill stashed
  io_alloc_req_refill,     // requests one __io_alloc_req_refill() got
  sheaf_refill,            // 7.x: objects one refill_sheaf() got from slabs
  sheaf_flush,             // 7.x: objects one sheaf_flush_unused() or
                           // sheaf_flush_main() put back to slabs
  kCount
};
inline constexpr size_t kNumBatches = static_cast<size_t>(Batch::kCount);
inline constexpr std::array<std::string_view, kNumBatches> kBatchNames = {
    {"kmem_cache_alloc_bulk", "kmem_cache_free_bulk", "io_cache_bulk_refill",
     "io_alloc_cache_prefill", "io_alloc_req_refill", "sheaf_refill", "sheaf_flush"}};
inline constexpr size_t kLog2Buckets = 65;
struct BatchHists {
  std::array<std::array<uint64_t, kLog2Buckets>, kNumBatches> h{};
  void add(Batch b, uint64_t n) {
    h[static_cast<size_t>(b)][n ? 64 - static_cast<size_t>(__builtin_clzll(n)) : 0]++;
  }
  friend bool operator==(const BatchHists&, const BatchHists&) = default;
  BatchHists& operator+=(const BatchHists& o) {
    for (size_t b = 0; b < kNumBatches; ++b)
      for (size_t i = 0; i < kLog2Buckets; ++i) h[b][i] += o.h[b][i];
    return *this;
  }
  friend BatchHists operator-(BatchHists a, const BatchHists& o) {
    for (size_t b = 0; b < kNumBatches; ++b)
      for (size_t i = 0; i < kLog2Buckets; ++i) a.h[b][i] -= o.h[b][i];
    return a;
  }
};

}  // namespace simcache
