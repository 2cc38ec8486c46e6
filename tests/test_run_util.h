// Running a scenario in a test: the request, the checks every run gets
// (it succeeds, no model KASAN report) and column access. Shared by the
// scenario, knob and timing-count tests.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/io_uring/io_uring_mm.h"
#include "model/mm/mm.h"
#include "sim/cost/cost.h"
#include "sim/run/engine.h"

namespace simcache::testing {

// The real mm model and io_uring layer of one kernel profile and policy,
// outside the engine (tests that drive the model call by call).
struct RealKernel {
  const iou::KernelProfile* prof = nullptr;
  MmConfig mc;
  iou::PolicySet ps;
  std::unique_ptr<Mm> mm;
  std::unique_ptr<iou::MmIoUring> io;
  explicit RealKernel(const std::string& kernel = "v6.18", const std::string& policy = "unpatched",
                      iou::DebugBug bug = iou::DebugBug::none) {
    std::string err;
    prof = iou::profile_by_name(kernel, &err);
    INFO(err);
    REQUIRE(prof);
    iou::apply_profile(*prof, mc);
    REQUIRE(iou::parse_policies(policy, prof, &ps, &mc, &err));
    ps.debug_bug = bug;
    mm = std::make_unique<Mm>(mc);
    io = std::make_unique<iou::MmIoUring>(*mm, *prof, ps);
  }
};

using Sets = std::vector<std::pair<std::string, std::string>>;

// One measured round, no warm-up, no smoke check: exact counts of one fill.
inline const Sets kOneRound = {{"rounds", "1"}, {"warmup", "0"}, {"smoke", "0"}};

// Runs a request; it must succeed.
inline sim::RunResult run_request_ok(const sim::RunRequest& req) {
  sim::RunResult r;
  std::string err;
  const bool ok = sim::run(req, &r, &err);
  INFO(err);
  REQUIRE(ok);
  return r;
}

// Runs `scenario` with `policies` as its columns; the run must succeed and
// leave no KASAN report in any column.
inline sim::RunResult run_ok(const std::string& scenario, std::vector<std::string> policies,
                             Sets sets = {}, const std::string& kernel = "v6.18") {
  sim::RunRequest req;
  req.scenario = scenario;
  req.policies = std::move(policies);
  req.sets = std::move(sets);
  req.kernel = kernel;
  sim::RunResult r = run_request_ok(req);
  for (const auto& w : r.workloads)
    for (const auto& p : w.policies) {
      for (const auto& k : p.kasan) INFO(k.kind << " " << k.cache << " " << k.detail);
      CHECK(p.kasan.empty());
    }
  return r;
}

// Runs `scenario` with the cost model's prices on the clock (latency,
// iowait shares and the teardown clock need a priced run); it must succeed.
inline sim::RunResult run_priced(const std::string& scenario, std::vector<std::string> policies,
                                 Sets sets, const sim::CostModel& m,
                                 const std::string& kernel = "v6.18",
                                 const std::string& machine = "") {
  sim::RunRequest req;
  req.scenario = scenario;
  req.policies = std::move(policies);
  req.sets = std::move(sets);
  req.kernel = kernel;
  if (!machine.empty()) req.machine = machine;
  req.event_ns = sim::event_prices(m);
  return run_request_ok(req);
}

// Column i of the first workload.
inline const sim::PolicyResult& col(const sim::RunResult& r, size_t i) {
  return r.workloads.at(0).policies.at(i);
}

}  // namespace simcache::testing
