// Helpers of the op-format and replay tests: run an op file, a trace or a
// scenario, and compare two runs count for count.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "test_run_util.h"
#include "sim/replay/replay.h"
#include "sim/run/engine.h"

namespace simcache::testing {

inline std::string source_path(const std::string& rel) {
  return std::string(SIMCACHE_SOURCE_DIR) + "/" + rel;
}

inline sim::RunRequest request(std::vector<std::string> policies, const std::string& kernel) {
  sim::RunRequest req;
  req.policies = std::move(policies);
  req.kernel = kernel;
  return req;
}

inline sim::RunResult run_ops(const std::string& path, const sim::RunRequest& req) {
  sim::CustomWorkload w;
  std::string err;
  const bool parsed = sim::ops_workload(path, &w, &err);
  INFO(err);
  REQUIRE(parsed);
  sim::RunResult r;
  const bool ok = sim::run_custom(req, w, &r, &err);
  INFO(err);
  REQUIRE(ok);
  return r;
}

inline sim::RunResult run_trace(const std::string& path, const sim::RunRequest& req,
                                sim::TraceSummary* summary = nullptr) {
  sim::TraceSummary s;
  std::string err;
  sim::ReplayOptions o;
  o.strict = true;
  const bool scanned = sim::scan_trace(path, o, &s, &err);
  INFO(err);
  REQUIRE(scanned);
  if (summary) *summary = s;
  sim::RunResult r;
  const bool ok = sim::run_custom(req, sim::trace_workload(s), &r, &err);
  INFO(err);
  REQUIRE(ok);
  return r;
}

inline sim::RunResult run_scenario(const std::string& name, const sim::RunRequest& base) {
  sim::RunRequest req = base;
  req.scenario = name;
  return run_request_ok(req);
}

// Every counter of the whole run, of the timed region and of each round,
// the metrics `expected` has, and every cache's SLUB stat files.
inline void require_same_counts(const sim::RunResult& expected, const sim::RunResult& got) {
  REQUIRE(expected.workloads.size() == 1);
  REQUIRE(got.workloads.size() == 1);
  const auto& a = expected.workloads[0].policies;
  const auto& b = got.workloads[0].policies;
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("policy " << a[i].policy);
    CHECK(a[i].policy == b[i].policy);
    for (size_t e = 0; e < kNumEvents; ++e) {
      INFO("event " << kEventInfo[e].name);
      CHECK(a[i].total.v[e] == b[i].total.v[e]);
      CHECK(a[i].timed.v[e] == b[i].timed.v[e]);
    }
    CHECK(a[i].rounds == b[i].rounds);
    CHECK(a[i].timed_ops == b[i].timed_ops);
    CHECK(a[i].ops_per_round == b[i].ops_per_round);
    for (const auto& [k, v] : a[i].metrics) {
      // How the driver orders ring teardowns against set-ups: an op
      // stream has no queued teardown, it runs each exit where it stands.
      if (k == "rings_created_teardown_queued") continue;
      INFO("metric " << k);
      REQUIRE(b[i].metrics.count(k));
      CHECK(b[i].metrics.at(k) == v);
    }
    REQUIRE(a[i].caches.size() == b[i].caches.size());
    for (size_t c = 0; c < a[i].caches.size(); ++c) {
      INFO("cache " << a[i].caches[c].name);
      CHECK(a[i].caches[c].name == b[i].caches[c].name);
      CHECK(a[i].caches[c].stat == b[i].caches[c].stat);
    }
    CHECK(a[i].kasan.size() == b[i].kasan.size());
  }
}

inline int64_t metric(const sim::RunResult& r, const std::string& name, size_t col = 0) {
  const auto& m = r.workloads.at(0).policies.at(col).metrics;
  auto it = m.find(name);
  INFO("metric " << name);
  REQUIRE(it != m.end());
  return it->second;
}

inline uint64_t total(const sim::RunResult& r, Event e, size_t col = 0) {
  return r.workloads.at(0).policies.at(col).total[e];
}

}  // namespace simcache::testing
