// Latency distributions of simulated operations: a fixed-size log-linear
// histogram (HdrHistogram's layout: each power of two split into
// kLatSub linear sub-buckets), so memory does not grow with the number
// of operations recorded, and the bpftrace log2 view is derived from it.
// Values are integer ticks of 1/1024 ns, so that 5-50 ns operations keep
// their resolution and nanosecond powers of two fall on bucket edges
// (the log2 view is exact); reports print nanoseconds.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/mm/call_site.h"  // kLog2Buckets

namespace simcache::sim {

inline constexpr int kLatTickBits = 10;  // 1 tick = 2^-10 ns
inline constexpr int kLatSubBits = 5;  // 32 sub-buckets: <= 3.1 % relative error
inline constexpr uint64_t kLatSub = uint64_t{1} << kLatSubBits;
// Values below kLatSub ticks are exact; above, 64 - kLatSubBits ranges of
// kLatSub sub-buckets each.
inline constexpr size_t kLatBuckets = (64 - kLatSubBits + 1) * kLatSub;

class LatencyHist {
 public:
  // Records one operation of `ns` nanoseconds (negative: 0).
  void add_ns(double ns) { add(to_ticks(ns)); }
  void add(uint64_t t) {
    ++count_;
    sum_ += t;
    if (t > max_) max_ = t;
    if (count_ == 1 || t < min_) min_ = t;
    ++b_[index(t)];
  }
  static uint64_t to_ticks(double ns) {
    return ns <= 0 ? 0 : static_cast<uint64_t>(ns * (1 << kLatTickBits) + 0.5);
  }
  static double to_ns(uint64_t t) { return static_cast<double>(t) / (1 << kLatTickBits); }
  LatencyHist& operator+=(const LatencyHist& o);
  uint64_t count() const { return count_; }
  double min_ns() const { return count_ ? to_ns(min_) : 0; }
  double max_ns() const { return to_ns(max_); }
  double mean_ns() const { return count_ ? to_ns(sum_) / static_cast<double>(count_) : 0; }
  // The p-th percentile (0 < p <= 100): the upper edge of the first
  // bucket whose cumulative count reaches ceil(p/100 * count), clamped
  // to max. 0 if empty. Deterministic; error <= 1/kLatSub relative.
  double percentile_ns(double p) const;
  // A 90 % confidence interval for the p-th percentile of the
  // distribution the samples were drawn from (docs/stats.md "Latency
  // percentiles"): the distribution-free order-statistic interval
  // [x_(l), x_(u)] with l, u from Binomial(count, p/100), widened to the
  // edges of the buckets that hold ranks l and u. Unbounded below: 0;
  // unbounded above (too few samples beyond the percentile): +infinity.
  struct Interval {
    double lo_ns = 0, hi_ns = 0;
    uint64_t lo_rank = 0, hi_rank = 0;  // 0 / count + 1: unbounded
  };
  Interval percentile_interval(double p) const;
  // The same for given ranks [l, u] (1-based; 0 and count + 1: unbounded).
  Interval rank_interval(uint64_t l, uint64_t u) const;
  // The lower edge, in ticks, of the bucket that holds the p-th
  // percentile: the samples at or above it are the ones the histogram
  // cannot tell from the percentile. 0 if empty.
  uint64_t percentile_floor_ticks(double p) const;
  // Samples in the bucket holding `t` and above (exact when `t` is a
  // bucket's lower edge, as percentile_floor_ticks() gives).
  uint64_t count_at_or_above(uint64_t t) const;
  // bpftrace hist() buckets over nanoseconds (kLog2Buckets: bucket 0 is
  // [0, 1) ns, bucket k is [2^(k-1), 2^k) ns). Exact: no sub-bucket
  // straddles a power of two.
  std::array<uint64_t, kLog2Buckets> log2_ns() const;
  // Non-empty buckets as (lower edge in ticks, count), ascending (JSON).
  std::vector<std::pair<uint64_t, uint64_t>> nonzero() const;
  static size_t index(uint64_t t) {
    if (t < kLatSub) return static_cast<size_t>(t);
    const int msb = 63 - __builtin_clzll(t);  // >= kLatSubBits
    const int shift = msb - kLatSubBits;
    return static_cast<size_t>((shift + 1) * kLatSub + ((t >> shift) - kLatSub));
  }
  static uint64_t lower_edge(size_t i);
  static uint64_t upper_edge(size_t i);  // exclusive
  friend bool operator==(const LatencyHist&, const LatencyHist&) = default;

 private:
  // The bucket holding the sample of rank ceil(p/100 * count) (count > 0).
  size_t percentile_bucket(double p) const;
  uint64_t count_ = 0, sum_ = 0, min_ = 0, max_ = 0;  // ticks
  std::array<uint64_t, kLatBuckets> b_{};
};

// The upper tail of the samples in the order they came, in batches of
// consecutive samples, for how clustered the tail is (docs/stats.md,
// "Clustered samples"): a background burst delays several operations in a
// row, so their slow samples are not independent draws, and the
// order-statistic interval, which assumes they are, is too narrow. Each
// batch keeps its sample count and its kTop largest samples; batches start
// one sample long, and when 2 x kBatches are full adjacent pairs merge and
// the length doubles. Memory is bounded whatever the samples.
class TailBatches {
 public:
  static constexpr size_t kBatches = 16;
  static constexpr size_t kTop = 32;
  static constexpr uint64_t kMinLen = 8;  // fewer samples a batch: no estimate
  void add(uint64_t t) {
    ++cur_.n;
    if (t >= keep_from_) [[unlikely]] keep(t);
    if (cur_.n == len_) [[unlikely]] close_batch();
  }
  // Another run's batches after these (--seeds: independent runs).
  TailBatches& operator+=(const TailBatches& o);
  // The dispersion of the samples at or above `t` (ticks; `beyond` of
  // them in all, from the histogram) across the batches: the chi-square of
  // their counts against even spreading over its degrees of freedom, at
  // least 1 (1: as if independent). A batch counts at most the kTop it
  // keeps, which only understates it. 1 when it cannot be estimated: fewer
  // than 8 batches, batches shorter than kMinLen (a run of under about 128
  // samples), nothing beyond `t`, or so much that an even spread would put
  // more than kTop / 2 in the longest batch (not a tail: the p50 and p90
  // of long runs).
  double dispersion(uint64_t t, uint64_t beyond) const;
  friend bool operator==(const TailBatches&, const TailBatches&) = default;

 private:
  struct Batch {
    uint64_t n = 0;
    std::vector<uint64_t> top;  // at most kTop, a min-heap
    friend bool operator==(const Batch&, const Batch&) = default;
  };
  void keep(uint64_t t);
  void close_batch();
  std::vector<Batch> done_;
  Batch cur_;
  uint64_t len_ = 1;  // samples per batch
  // The smallest sample the current batch keeps: 0 until it holds kTop,
  // then one above the least it holds (a tie does not replace it).
  uint64_t keep_from_ = 0;
};

// The latency of each operation kind of one policy column, in the order
// kinds first appeared ("futex_wait", "kmalloc", ...), measured rounds'
// timed regions only. Times are virtual: the sum of the priced events
// the operation counted plus the time it waited (locks, idle exit).
struct OpLatency {
  std::string kind;
  LatencyHist hist;  // every sample; with `seeds`, the sum of theirs
  TailBatches tail = {};  // the same samples in order, batched (with `seeds`: each run's in turn)
  // --seeds N: each seed's own histogram, in seed order (empty: one run,
  // or N runs that were identical and so were not pooled).
  std::vector<LatencyHist> seeds = {};
  // The 90 % interval of the p-th percentile (docs/stats.md): the
  // order-statistic interval of `hist`, widened when the samples beyond
  // it cluster (`tail`: the ranks' spread times the square root of the
  // dispersion, i.e. as many independent samples as the count over the
  // dispersion), and with `seeds` widened to hold the distribution-free
  // interval for the median of the seeds' own estimates, which carries
  // what the samples of one run share (a background burst delays several
  // operations in a row).
  LatencyHist::Interval interval(double p) const;
  // Records one sample (Recorder::op_end).
  void add_ns(double ns) {
    const uint64_t t = LatencyHist::to_ticks(ns);
    hist.add(t);
    tail.add(t);
  }
};
using Latencies = std::vector<OpLatency>;

// The ranks [l, u] (1-based) of the order statistics that bound the
// q-quantile of n independent samples with probability >= `level`:
// l the largest with P(B <= l - 1) <= (1 - level) / 2 and u the smallest
// with P(B <= u - 1) >= (1 + level) / 2, B ~ Binomial(n, q). l = 0: no
// lower bound; u = n + 1: no upper bound.
std::pair<uint64_t, uint64_t> quantile_ranks(uint64_t n, double q, double level = 0.9);

}  // namespace simcache::sim
