#include "sim/run/latency.h"

#include <algorithm>
#include <cmath>
#include <limits>

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

size_t LatencyHist::percentile_bucket(double p) const {
  // p / 100 is inexact (99.9 / 100 * 1000 = 999.0000000000001): the
  // tolerance keeps an exact rank from rounding up to the next one.
  const double want = std::ceil(p / 100.0 * static_cast<double>(count_) - 1e-6);
  const uint64_t rank = want < 1 ? 1 : static_cast<uint64_t>(want);
  uint64_t cum = 0;
  for (size_t i = 0; i < kLatBuckets; ++i) {
    cum += b_[i];
    if (cum >= rank) return i;
  }
  return kLatBuckets;
}

double LatencyHist::percentile_ns(double p) const {
  if (!count_) return 0;
  const size_t i = percentile_bucket(p);
  if (i == kLatBuckets) return to_ns(max_);
  const uint64_t up = upper_edge(i) - 1;  // largest value in the bucket
  return to_ns(up < max_ ? up : max_);
}

LatencyHist::Interval LatencyHist::percentile_interval(double p) const {
  if (!count_) return {};
  const auto [l, u] = quantile_ranks(count_, p / 100.0);
  return rank_interval(l, u);
}

uint64_t LatencyHist::count_at_or_above(uint64_t t) const {
  uint64_t n = 0;
  for (size_t i = index(t); i < kLatBuckets; ++i) n += b_[i];
  return n;
}

uint64_t LatencyHist::percentile_floor_ticks(double p) const {
  if (!count_) return 0;
  const size_t i = percentile_bucket(p);
  return i == kLatBuckets ? max_ : std::max(lower_edge(i), min_);
}

LatencyHist::Interval LatencyHist::rank_interval(uint64_t l, uint64_t u) const {
  Interval iv;
  if (!count_) return iv;
  iv.lo_rank = l;
  iv.hi_rank = u;
  iv.lo_ns = 0;
  iv.hi_ns = std::numeric_limits<double>::infinity();
  uint64_t cum = 0;
  for (size_t i = 0; i < kLatBuckets; ++i) {
    if (!b_[i]) continue;
    const uint64_t before = cum;
    cum += b_[i];
    if (l >= 1 && before < l && cum >= l) {  // x_(l) >= the bucket's lower edge
      const uint64_t lo = lower_edge(i);
      iv.lo_ns = to_ns(lo > min_ ? lo : min_);
    }
    if (u <= count_ && before < u && cum >= u) {  // x_(u) <= its last value
      const uint64_t up = upper_edge(i) - 1;
      iv.hi_ns = to_ns(up < max_ ? up : max_);
      break;
    }
  }
  return iv;
}

void TailBatches::keep(uint64_t t) {
  std::vector<uint64_t>& top = cur_.top;
  if (top.size() < kTop) {
    top.push_back(t);
    std::push_heap(top.begin(), top.end(), std::greater<>());
  } else {
    std::pop_heap(top.begin(), top.end(), std::greater<>());
    top.back() = t;
    std::push_heap(top.begin(), top.end(), std::greater<>());
  }
  if (top.size() == kTop) keep_from_ = top.front() + 1;
}

void TailBatches::close_batch() {
  done_.push_back(std::move(cur_));
  cur_ = {};
  cur_.top.reserve(kTop);
  keep_from_ = 0;
  if (done_.size() < 2 * kBatches) return;
  // Adjacent pairs merge: each keeps the kTop largest of the two.
  std::vector<Batch> merged(done_.size() / 2);
  for (size_t i = 0; i < merged.size(); ++i) {
    Batch& m = merged[i];
    const Batch &a = done_[2 * i], &b = done_[2 * i + 1];
    m.n = a.n + b.n;
    m.top = a.top;
    m.top.insert(m.top.end(), b.top.begin(), b.top.end());
    std::sort(m.top.begin(), m.top.end(), std::greater<>());
    if (m.top.size() > kTop) m.top.resize(kTop);
    std::make_heap(m.top.begin(), m.top.end(), std::greater<>());
  }
  done_ = std::move(merged);
  len_ *= 2;
}

TailBatches& TailBatches::operator+=(const TailBatches& o) {
  // This run's partial batch closes; the other run's batches follow as
  // they are (their lengths may differ: each counts its own samples).
  if (cur_.n) {
    done_.push_back(std::move(cur_));
    cur_ = {};
    keep_from_ = 0;
  }
  done_.insert(done_.end(), o.done_.begin(), o.done_.end());
  if (o.cur_.n) done_.push_back(o.cur_);
  len_ = std::max(len_, o.len_);
  return *this;
}

double TailBatches::dispersion(uint64_t t, uint64_t beyond) const {
  std::vector<const Batch*> all;
  for (const Batch& b : done_) all.push_back(&b);
  if (cur_.n) all.push_back(&cur_);
  if (all.size() < 8 || len_ < kMinLen) return 1;
  double n = 0, longest = 0;
  for (const Batch* b : all) {
    n += static_cast<double>(b->n);
    longest = std::max(longest, static_cast<double>(b->n));
  }
  const double r = static_cast<double>(beyond) / n;
  // Not a tail: an even spread would put more than kTop / 2 in a batch,
  // where kTop cannot count them.
  if (r <= 0 || r >= 1 || longest * r > static_cast<double>(kTop) / 2) return 1;
  double chi = 0;
  for (const Batch* b : all) {
    // A batch holding kTop at or above t may hold more: kTop is a lower
    // bound there, which only understates the dispersion.
    double e = 0;
    for (uint64_t v : b->top) e += v >= t;
    const double want = static_cast<double>(b->n) * r;
    chi += (e - want) * (e - want) / (want * (1 - r));
  }
  return std::max(1.0, chi / static_cast<double>(all.size() - 1));
}

LatencyHist::Interval OpLatency::interval(double p) const {
  LatencyHist::Interval iv = hist.percentile_interval(p);
  // Clustered samples beyond the percentile: as many independent samples
  // as the count over the dispersion, their ranks scaled back.
  const uint64_t floor = hist.percentile_floor_ticks(p);
  const double phi = tail.dispersion(floor, hist.count_at_or_above(floor));
  if (phi > 1 && hist.count() > 0) {
    const uint64_t n = hist.count();
    const auto neff = std::max<uint64_t>(
        1, static_cast<uint64_t>(std::floor(static_cast<double>(n) / phi)));
    const auto [l, u] = quantile_ranks(neff, p / 100.0);
    const uint64_t lw = static_cast<uint64_t>(std::floor(static_cast<double>(l) * phi));
    const uint64_t uw =
        u > neff ? n + 1
                 : std::min<uint64_t>(n + 1, static_cast<uint64_t>(std::ceil(static_cast<double>(u) * phi)));
    const LatencyHist::Interval w = hist.rank_interval(std::min(lw, n), uw);
    if (w.lo_ns < iv.lo_ns) iv.lo_ns = w.lo_ns, iv.lo_rank = w.lo_rank;
    if (w.hi_ns > iv.hi_ns) iv.hi_ns = w.hi_ns, iv.hi_rank = w.hi_rank;
  }
  if (seeds.size() < 2) return iv;
  std::vector<double> est;
  for (const LatencyHist& h : seeds)
    if (h.count()) est.push_back(h.percentile_ns(p));
  std::sort(est.begin(), est.end());
  const auto [l, u] = quantile_ranks(est.size(), 0.5);
  const double lo = l >= 1 ? est[l - 1] : 0;
  const double hi = u <= est.size() ? est[u - 1] : std::numeric_limits<double>::infinity();
  iv.lo_ns = std::min(iv.lo_ns, lo);
  iv.hi_ns = std::max(iv.hi_ns, hi);
  return iv;
}

std::pair<uint64_t, uint64_t> quantile_ranks(uint64_t n, double q, double level) {
  if (n == 0) return {0, 1};
  q = std::clamp(q, 0.0, 1.0);
  const double tail = (1 - level) / 2;
  if (q <= 0) return {0, 1};  // the minimum: x_(1) bounds it from above
  if (q >= 1) return {n, n + 1};
  // The binomial pmf over a window around its mode wide enough that the
  // mass outside it is negligible (> 12 standard deviations), by the
  // ratio recurrence from the mode (lgamma once): deterministic and
  // O(sqrt(n)) however many samples.
  const double nd = static_cast<double>(n);
  const double sd = std::sqrt(nd * q * (1 - q));
  const auto mode = static_cast<uint64_t>(std::min(nd, std::floor((nd + 1) * q)));
  const auto w = static_cast<uint64_t>(std::ceil(12 * sd)) + 20;
  const uint64_t lo = mode > w ? mode - w : 0, hi = std::min(n, mode + w);
  std::vector<double> pmf(hi - lo + 1);
  const double lm = std::lgamma(nd + 1) - std::lgamma(double(mode) + 1) -
                    std::lgamma(nd - double(mode) + 1) + double(mode) * std::log(q) +
                    (nd - double(mode)) * std::log1p(-q);
  pmf[mode - lo] = std::exp(lm);
  const double odds = q / (1 - q);
  for (uint64_t k = mode; k > lo; --k)  // pmf(k-1) = pmf(k) k / (n-k+1) / odds
    pmf[k - 1 - lo] = pmf[k - lo] * double(k) / (nd - double(k) + 1) / odds;
  for (uint64_t k = mode; k < hi; ++k)  // pmf(k+1) = pmf(k) (n-k) / (k+1) odds
    pmf[k + 1 - lo] = pmf[k - lo] * (nd - double(k)) / (double(k) + 1) * odds;
  // cdf(k) = P(B <= k); below the window 0, above it 1.
  std::vector<double> cdf(pmf.size());
  double c = 0;
  for (size_t i = 0; i < pmf.size(); ++i) cdf[i] = c += pmf[i];
  auto cdf_at = [&](uint64_t k) { return k < lo ? 0.0 : k > hi ? 1.0 : cdf[k - lo]; };
  // l: the largest in 1..n with cdf(l - 1) <= tail (0 if none).
  uint64_t l = 0;
  if (cdf_at(0) <= tail) {
    uint64_t a = 1, b = n;  // cdf(a - 1) <= tail holds; find the last such
    while (a < b) {
      const uint64_t m = a + (b - a + 1) / 2;
      if (cdf_at(m - 1) <= tail) a = m;
      else b = m - 1;
    }
    l = a;
  }
  // u: the smallest in 1..n with cdf(u - 1) >= 1 - tail (n + 1 if none).
  uint64_t u = n + 1;
  if (cdf_at(n - 1) >= 1 - tail) {
    uint64_t a = 1, b = n;
    while (a < b) {
      const uint64_t m = a + (b - a) / 2;
      if (cdf_at(m - 1) >= 1 - tail) b = m;
      else a = m + 1;
    }
    u = a;
  }
  return {l, u};
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
