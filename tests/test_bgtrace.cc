// Background load from a kmem trace (--background-trace): loading, the
// tasks' exact replay counts on a hand-timed schedule, list_lock
// contention, and the one-line errors.
#include <catch2/catch.hpp>

#include "sim/cost/cost.h"
#include "sim/replay/background_trace.h"
#include "sim/run/engine.h"
#include <fmt/format.h>

#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::lines;
using simcache::testing::repo_file;
using simcache::testing::TempFile;

namespace {

const std::string kLkml = repo_file("tests/data/traces/lkml-2019-kmem.txt");
const std::string kTwo = repo_file("tests/data/traces/bg-two-cpu-192.txt");

std::shared_ptr<const BackgroundTrace> load(const std::string& path) {
  auto t = std::make_shared<BackgroundTrace>();
  std::string err;
  INFO(err);
  REQUIRE(load_background_trace(path, t.get(), &err));
  return t;
}

// rt-arm-loop, counts only: the loop's work takes no virtual time, so its
// messages arrive at 0, 5000, 10000, ... ns and it stops at the last one,
// (2 x messages - 1) x 5000 ns (one warm-up round, one measured).
RunRequest rt_arm(const std::string& trace, std::vector<std::pair<std::string, std::string>> sets,
                  bool priced = false) {
  RunRequest req;
  req.scenario = "rt-arm-loop";
  req.policies = {"unpatched"};
  req.sets = {{"cpus", "4"}, {"cpu", "0"}, {"kworker_cpu", "1"}, {"bg_loop_cpu", "0"}};
  for (auto& kv : sets) req.sets.push_back(kv);
  req.background_trace = trace;
  req.bg_trace = load(trace);
  if (priced) req.event_ns = event_prices(prior_model());
  return req;
}

const PolicyResult& run_one(const RunRequest& req, RunResult* r) {
  std::string err;
  INFO(err);
  REQUIRE(run(req, r, &err));
  const PolicyResult& p = r->workloads.at(0).policies.at(0);
  CHECK(p.kasan.empty());
  return p;
}

int64_t m(const PolicyResult& p, const std::string& k) { return p.metrics.at(k); }

}  // namespace

TEST_CASE("bgtrace: a trace loads as per-CPU ops with gaps and matched frees", "[bgtrace]") {
  const auto l = load(kLkml);
  CHECK(l->events == 9);
  CHECK(l->objects == 3);
  CHECK(l->span_ns == 34000);  // 808.188897 .. 808.188931
  REQUIRE(l->cpus.size() == 1);
  CHECK(l->cpus[0].cpu == 2);
  const std::vector<BgTraceOp>& o = l->cpus[0].ops;
  REQUIRE(o.size() == 9);
  const uint64_t gaps[] = {0, 1000, 6000, 9000, 4000, 3000, 5000, 1000, 5000};
  for (size_t i = 0; i < 9; ++i) CHECK(o[i].gap_ns == gaps[i]);
  for (size_t i = 0; i < 3; ++i) CHECK(o[i].obj == BgTraceOp::kNoObj);  // freed before it began
  CHECK(o[3].alloc);
  CHECK(o[3].size == 168);  // bytes_req routes, not bytes_alloc (576 on that debug kernel)
  CHECK(o[5].size == 4096);
  CHECK(o[6].obj == o[5].obj);  // putname frees getname_flags' object
  CHECK(o[8].obj == o[3].obj);

  const auto t = load(kTwo);
  REQUIRE(t->cpus.size() == 2);
  CHECK(t->span_ns == 9000);
  CHECK(t->cpus[0].tail_ns == 3000);
  CHECK(t->cpus[1].tail_ns == 0);
  CHECK(t->cpus[1].ops[0].gap_ns == 1000);
  CHECK(t->cpus[1].ops[2].obj == t->cpus[0].ops[1].obj);  // CPU 1 frees CPU 0's B

  // trace-cmd's nanosecond timestamps, a task-pid column, a CPU of its own.
  const TempFile ns("ns.txt",
                    "  kworker/u8:2-417   [005] d..1.    12.000000100: kmalloc: call_site=x "
                    "ptr=ffff888100000a00 bytes_alloc=96 gfp_flags=GFP_KERNEL\n"
                    "  kworker/u8:2-417   [005] d..1.    12.000000350: kfree: call_site=y "
                    "ptr=ffff888100000a00\n");
  const auto n = load(ns.path());
  REQUIRE(n->cpus.size() == 1);
  CHECK(n->cpus[0].cpu == 5);
  CHECK(n->span_ns == 250);
  CHECK(n->cpus[0].ops[1].gap_ns == 250);
  CHECK(n->cpus[0].ops[0].size == 96);  // no bytes_req: bytes_alloc routes
  CHECK(n->cpus[0].ops[1].obj == 0);
}

// bg-two-cpu-192 with bg_loop_cpu=0 on 4 CPUs: traced CPUs 0 and 1 run on
// CPUs 1 and 2. A pass lasts the span, 9 us: CPU 0's events at 9000p +
// {0, 2, 4, 6} us, CPU 1's at 9000p + {1, 3, 5, 9} us. messages=3: the
// loop stops at 25 us = 2 passes + 7 us, so CPU 0 has run 3 passes (12
// events) and CPU 1 2 passes and 3 events (11).
TEST_CASE("bgtrace: two traced CPUs replay exactly the hand-timed events", "[bgtrace]") {
  RunResult r;
  const PolicyResult& p = run_one(rt_arm(kTwo, {{"messages", "3"}}), &r);
  CHECK(m(p, "bg_trace_tasks") == 2);
  CHECK(m(p, "bg_trace_events") == 23);
  CHECK(m(p, "bg_trace_kmallocs") == 6 + 5);    // A, B per pass; C per pass, and D twice
  CHECK(m(p, "bg_trace_kfrees") == 9);          // A, B (by CPU 1), C (by CPU 0) per pass
  CHECK(m(p, "bg_trace_unmatched_frees") == 3);  // CPU 1's first event, each pass
  CHECK(m(p, "bg_trace_missed_frees") == 0);
  CHECK(m(p, "bg_trace_passes") == 3 + 2);
  CHECK(m(p, "bg_trace_pass_frees") == 2);  // D, held at each of CPU 1's pass ends
  CHECK(r.workloads[0].params.at("bg_trace_speed") == 1000);
  // Counts only: nothing contends.
  CHECK(m(p, "bg_list_lock_waits") == 0);
  CHECK(m(p, "list_lock_waits") == 0);

  // Half speed: a pass lasts 18 us. By 25 us: pass 0 (8 events), then CPU
  // 0 at 18 and 22 us (A, B), CPU 1 at 20 and 24 us (unmatched, C).
  RunResult h;
  const PolicyResult& q = run_one(rt_arm(kTwo, {{"messages", "3"}, {"bg_trace_speed", "500"}}), &h);
  CHECK(m(q, "bg_trace_events") == 12);
  CHECK(m(q, "bg_trace_kmallocs") == 7);
  CHECK(m(q, "bg_trace_kfrees") == 3);
  CHECK(m(q, "bg_trace_unmatched_frees") == 2);
  CHECK(m(q, "bg_trace_passes") == 2);
}

// The real capture: one CPU (2, on CPU 2 of {1, 2, 3}), 9 events over 34
// us, 3 of them frees of objects from before it. messages=10: the loop
// stops at 95 us = 2 passes + 27 us (6 more events: 3 unmatched, 3 allocs).
TEST_CASE("bgtrace: the lkml capture loops, its early frees skipped and counted", "[bgtrace]") {
  RunResult r;
  const PolicyResult& p = run_one(rt_arm(kLkml, {{"messages", "10"}}), &r);
  CHECK(m(p, "bg_trace_tasks") == 1);
  CHECK(m(p, "bg_trace_events") == 24);
  CHECK(m(p, "bg_trace_kmallocs") == 9);
  CHECK(m(p, "bg_trace_kfrees") == 6);
  CHECK(m(p, "bg_trace_unmatched_frees") == 9);
  CHECK(m(p, "bg_trace_passes") == 2);
  CHECK(m(p, "bg_trace_pass_frees") == 0);
}

// bg-burst-*: traced CPUs 0 and 1 each kmalloc 16 objects at the trace's
// start. On 7.x (sheaves) at virtual time 0, before the loop's first arm
// (its CPU's clock is past ring set-up, and the machine runs the smallest
// clock first), both background CPUs' first kmalloc finds an empty sheaf
// and an empty barn and refills from slabs under the node's list_lock,
// at the same instant with the same prior events: CPU 1 takes it (ties go
// to the lower CPU), CPU 2 must wait. That lock is their size class's, so
// with kmalloc-64 users the loop's kmalloc-192 never waits.
TEST_CASE("bgtrace: mirrored traced CPUs meet on their class's list_lock", "[bgtrace]") {
  for (const char* size : {"192", "64"}) {
    RunRequest req = rt_arm(repo_file(std::string("tests/data/traces/bg-burst-") + size + ".txt"),
                            {{"messages", "50"}}, /*priced=*/true);
    req.kernel = "v7.1";
    RunResult r;
    const PolicyResult& p = run_one(req, &r);
    INFO(size);
    CHECK(m(p, "bg_trace_tasks") == 2);
    CHECK(m(p, "bg_list_lock_waits") >= 1);
    CHECK(m(p, "bg_list_lock_wait_ns") > 0);
    if (std::string(size) == "64") CHECK(m(p, "list_lock_waits") == 0);
  }
}

namespace {

// 128 kmalloc(size) on each of traced CPUs 0 and 1, then each frees the
// other's: remote frees that overflow the CPU partial lists.
std::string crossed_burst(int size) {
  std::string t;
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 128; ++i)
      t += fmt::format("[{:03}] ....   1.000000: kmalloc: call_site=x ptr=ffff8881{:02x}{:06x} "
                       "bytes_req={} bytes_alloc={} gfp_flags=GFP_KERNEL\n",
                       c, c, i * 256, size, size);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 128; ++i)
      t += fmt::format("[{:03}] ....   1.000050: kfree: call_site=y ptr=ffff8881{:02x}{:06x}\n", c,
                       1 - c, i * 256);
  return t;
}

}  // namespace

// Measured, not hand-timed: traced CPU 0 shares the loop's CPU and its CPU
// slab (bg_loop_cpu=1, 3 CPUs) at 20x speed on v6.18, and in this schedule
// the loop's own kmalloc-192 meets the users on the list_lock; the same
// schedule at kmalloc-64 leaves the loop alone.
TEST_CASE("bgtrace: users of the loop's size class make the loop wait, others do not", "[bgtrace]") {
  int64_t loop[2], bg[2];  // [0]: kmalloc-192 users, [1]: kmalloc-64
  for (int k = 0; k < 2; ++k) {
    const TempFile f(k ? "bg64.txt" : "bg192.txt", crossed_burst(k ? 64 : 192));
    RunRequest req = rt_arm(f.path(), {}, /*priced=*/true);
    // 3 CPUs, the trace's CPU 0 on the loop's.
    req.sets = {{"cpus", "3"}, {"cpu", "0"}, {"kworker_cpu", "1"}, {"bg_loop_cpu", "1"},
                {"messages", "100"}, {"bg_trace_speed", "20000"}};
    RunResult r;
    const PolicyResult& p = run_one(req, &r);
    CHECK(m(p, "bg_trace_kfrees") > 0);
    loop[k] = m(p, "list_lock_waits");
    bg[k] = m(p, "bg_list_lock_waits");
  }
  CHECK(loop[0] > 0);
  CHECK(bg[0] > 0);
  CHECK(loop[1] == 0);
}

TEST_CASE("bgtrace: same trace and seed give byte-identical JSON at 1 and 2 jobs", "[bgtrace][threads]") {
  const std::vector<std::string> base = {"--scenario", "rt-arm-loop", "--background-trace", kTwo,
                                         "--policy", "unpatched,futex-return-to-cache",
                                         "--set", "cpus=4", "--set", "messages=200",
                                         "--format", "json", "--seed", "3"};
  std::vector<std::string> a = base, b = base;
  a.insert(a.end(), {"--jobs", "1"});
  b.insert(b.end(), {"--jobs", "2"});
  const CliOutcome x = run_cli(a), y = run_cli(b);
  INFO(x.err);
  REQUIRE(x.status == 0);
  REQUIRE(y.status == 0);
  CHECK(x.out.find("\"bg_trace_events\"") != std::string::npos);
  // The run record holds the command line, which differs in --jobs only.
  const auto strip = [](std::string s) {
    const size_t at = s.find("\"command_line\"");
    REQUIRE(at != std::string::npos);
    return s.erase(at, s.find('\n', at) - at);
  };
  CHECK(strip(x.out) == strip(y.out));
}

TEST_CASE("bgtrace: bad input is one line and status 2", "[bgtrace][cli]") {
  const auto fails = [](const std::vector<std::string>& args, const std::string& frag) {
    const CliOutcome r = run_cli(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err) == 1);
    CHECK(r.err.find(frag) != std::string::npos);
  };
  const std::vector<std::string> args = {"--scenario", "rt-arm-loop", "--profile", "none",
                                        "--background-trace"};
  const auto with = [&](const std::string& file) {
    std::vector<std::string> a = args;
    a.push_back(file);
    return a;
  };
  const TempFile bad("bad.txt",
                     "# a comment\n[000] ....   1.000000: kmalloc: call_site=x ptr=ffff888100000a00 "
                     "bytes_req=abc bytes_alloc=192\n");
  fails(with(bad.path()), bad.path() + ":2: field 'bytes_req': bytes_req='abc': not a valid value");
  const TempFile noptr("noptr.txt", "[001] ....   1.000000: kfree: call_site=x\n");
  fails(with(noptr.path()), noptr.path() + ":1: field 'ptr': no ptr= field");
  fails(with("/nonexistent/bg.txt"),
        "/nonexistent/bg.txt: cannot read the background trace: No such file");
  fails(with("/nonexistent/b\ng.txt"),
        "/nonexistent/b\\ng.txt: cannot read the background trace: No such file");
  const TempFile back("back.txt",
                      "[000] ....   2.000000: kmalloc: call_site=x ptr=ffff888100000a00 bytes_req=8\n"
                      "[001] ....   1.000000: kfree: call_site=x ptr=ffff888100000a00\n");
  fails(with(back.path()), back.path() + ":2: field 'timestamp': earlier than an event before it");
  std::string many;
  for (size_t c = 0; c <= BackgroundTrace::kMaxCpus; ++c)
    many += fmt::format("[{:03}] ....   1.000000: kfree: call_site=x ptr=1\n", c);
  const TempFile wide("wide.txt", many);
  fails(with(wide.path()), fmt::format("{}:{}: field 'cpu': more than {} traced CPUs", wide.path(),
                                       BackgroundTrace::kMaxCpus + 1, BackgroundTrace::kMaxCpus));
  const std::string io = repo_file("tests/data/traces/ftrace-io_uring-5x.txt");
  fails(with(io), io + ": no kmalloc, kmem_cache_alloc, kfree or kmem_cache_free events");
  fails({"--scenario", "sparse-fill", "--profile", "none", "--background-trace", kTwo},
        "scenario 'sparse-fill' has none (drivers that do: arm-fail, rt-arm-loop)");
  fails({"--scenario", "sparse4096", "--profile", "none", "--background-trace", kTwo},
        "preset 'sparse4096' (its driver 'sparse-fill') has none");
  fails({"--scenario", "rt-arm-loop", "--profile", "none", "--set", "bg_trace_speed=2"},
        "bg_trace_speed");  // only with a trace
  fails({"--scenario", "arm-fail", "--profile", "none", "--background-trace", kTwo, "--set",
         "cpus=1", "--set", "cpu=0", "--set", "kworker_cpu=0", "--set", "bg_loop_cpu=0"},
        "needs a background CPU");
  RunRequest req;
  req.scenario = "rt-arm-loop";
  req.background_trace = kTwo;  // named, not loaded
  RunResult r;
  std::string err;
  CHECK_FALSE(run(req, &r, &err));
  CHECK(err.find("was not loaded") != std::string::npos);
}

TEST_CASE("bgtrace: a run configuration's [background] trace", "[bgtrace][cli]") {
  const TempFile cfg("bg.toml", "scenario = \"rt-arm-loop\"\nprofile = \"none\"\n"
                                "[background]\ntrace = \"" + kTwo + "\"\n"
                                "[set]\ncpus = 4\ncpu = 0\nkworker_cpu = 1\nbg_loop_cpu = 0\n"
                                "messages = 3\nbg_trace_speed = 500\n");
  const CliOutcome r = run_cli({"--config", cfg.path(), "--policy", "unpatched", "--format",
                                "json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("\"bg_trace_events\": 12") != std::string::npos);  // the half-speed case
  const CliOutcome d = run_cli({"--config", cfg.path(), "--dump-config"});
  REQUIRE(d.status == 0);
  CHECK(d.out.find("[background]") != std::string::npos);
  CHECK(d.out.find("bg_trace_speed = 500") != std::string::npos);
  const TempFile typo("bg_typo.toml", "scenario = \"rt-arm-loop\"\n[background]\ntrcae = \"x\"\n");
  const CliOutcome e = run_cli({"--config", typo.path()});
  CHECK(e.status == 2);
  CHECK(lines(e.err) == 1);
  CHECK(e.err.find(typo.path() + ":3") != std::string::npos);
  CHECK(e.err.find("background.trcae") != std::string::npos);
}

// A 100 s gap in the trace: the loop is done long before it ends, and the
// task, polling every 1 ms, frees its object then instead of sleeping
// through 100 s of irq arrivals (run_one checks no leak is reported).
TEST_CASE("bgtrace: a long idle gap ends with the loop", "[bgtrace]") {
  const TempFile gap("gap.txt",
                     "[000] ....   1.000000: kmalloc: call_site=x ptr=ffff888100000a00 "
                     "bytes_req=192\n[000] ....   101.000000: kfree: call_site=x "
                     "ptr=ffff888100000a00\n");
  RunResult r;
  const PolicyResult& p = run_one(rt_arm(gap.path(), {{"messages", "100"},
                                                       {"irq_period_ns", "20000"},
                                                       {"irq_dur_ns", "3000"}}, true),
                                  &r);
  CHECK(m(p, "bg_trace_events") == 1);
  CHECK(m(p, "bg_trace_kmallocs") == 1);
  CHECK(m(p, "bg_trace_passes") == 0);
  // The loop ends at about 100 x 5 us; the task, due at 100 s, ends within
  // one 1 ms poll of it (sleeping to its due time would make this ~100 s).
  CHECK(m(p, "bg_trace_stop_lag_ns") > 0);
  CHECK(m(p, "bg_trace_stop_lag_ns") <= 1000000);
}
