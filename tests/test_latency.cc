// The latency histogram: exact below 32 ticks, <= 1/32 relative error
// above, an exact log2 view, and merges that equal recording in one.
#include <catch2/catch.hpp>

#include "sim/run/latency.h"

using simcache::sim::LatencyHist;

TEST_CASE("latency histogram edges and percentiles", "[latency]") {
  for (uint64_t t : {0ull, 1ull, 31ull, 32ull, 33ull, 63ull, 64ull, 1000ull, 123456789ull}) {
    const size_t i = LatencyHist::index(t);
    CHECK(LatencyHist::lower_edge(i) <= t);
    CHECK(t < LatencyHist::upper_edge(i));
    CHECK(LatencyHist::upper_edge(i) - LatencyHist::lower_edge(i) <=
          std::max<uint64_t>(1, LatencyHist::lower_edge(i) / 32));
  }
  LatencyHist h;
  for (int i = 1; i <= 1000; ++i) h.add_ns(i);  // 1..1000 ns
  CHECK(h.count() == 1000);
  CHECK(h.min_ns() == 1.0);
  CHECK(h.max_ns() == 1000.0);
  CHECK(h.mean_ns() == Approx(500.5));
  CHECK(h.percentile_ns(50) == Approx(500).epsilon(1.0 / 32));
  CHECK(h.percentile_ns(99) == Approx(990).epsilon(1.0 / 32));
  CHECK(h.percentile_ns(100) == 1000.0);
  const auto l2 = h.log2_ns();
  CHECK(l2[1] == 1);    // [1, 2)
  CHECK(l2[2] == 2);    // [2, 4)
  CHECK(l2[10] == 489); // [512, 1024): 512..1000
  uint64_t sum = 0;
  for (uint64_t c : l2) sum += c;
  CHECK(sum == 1000);
}

TEST_CASE("latency histograms merge exactly", "[latency]") {
  LatencyHist a, b, all;
  for (int i = 0; i < 500; ++i) {
    a.add_ns(i * 0.37);
    all.add_ns(i * 0.37);
    b.add_ns(i * 11.0);
    all.add_ns(i * 11.0);
  }
  a += b;
  CHECK(a == all);
  CHECK(a.nonzero().size() == all.nonzero().size());
}
