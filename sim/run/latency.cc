#include "sim/run/latency.h"

#include <cmath>

namespace simcache::sim {

LatencyHist& LatencyHist::operator+=(const LatencyHist& o) {
  if (!o.count_) return *this;
  if (!count_ || o.min_ < min_) min_ = o.min_;
  if (o.max_ > max_) max_ = o.max_;
  count_ += o.count_;
  sum_ += o.sum_;
  for (size_t i = 0; i < kLatBuckets; ++i) b_[i] += o.b_[i];
  return *this;
}

uint64_t LatencyHist::lower_edge(size_t i) {
  if (i < kLatSub) return i;
  const size_t shift = i / kLatSub - 1;
  return (kLatSub + i % kLatSub) << shift;
}

uint64_t LatencyHist::upper_edge(size_t i) {
  if (i < kLatSub) return i + 1;
  const size_t shift = i / kLatSub - 1;
  return (kLatSub + i % kLatSub + 1) << shift;
}

double LatencyHist::percentile_ns(double p) const {
  if (!count_) return 0;
  // p / 100 is inexact (99.9 / 100 * 1000 = 999.0000000000001): the
  // tolerance keeps an exact rank from rounding up to the next one.
  const double want = std::ceil(p / 100.0 * static_cast<double>(count_) - 1e-6);
  const uint64_t rank = want < 1 ? 1 : static_cast<uint64_t>(want);
  uint64_t cum = 0;
  for (size_t i = 0; i < kLatBuckets; ++i) {
    cum += b_[i];
    if (cum >= rank) {
      const uint64_t up = upper_edge(i) - 1;  // largest value in the bucket
      return to_ns(up < max_ ? up : max_);
    }
  }
  return to_ns(max_);
}

std::array<uint64_t, kLog2Buckets> LatencyHist::log2_ns() const {
  std::array<uint64_t, kLog2Buckets> out{};
  for (size_t i = 0; i < kLatBuckets; ++i) {
    if (!b_[i]) continue;
    const uint64_t ns = lower_edge(i) >> kLatTickBits;
    out[ns ? 64 - static_cast<size_t>(__builtin_clzll(ns)) : 0] += b_[i];
  }
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> LatencyHist::nonzero() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (size_t i = 0; i < kLatBuckets; ++i)
    if (b_[i]) out.emplace_back(lower_edge(i), b_[i]);
  return out;
}

}  // namespace simcache::sim
