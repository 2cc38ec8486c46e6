// Whole scenarios: the sparse4096 preset (in process, and as the user runs
// it: the simcache binary end to end) and the arm-fail scenario's rate of
// simulated allocator operations. Goals in docs/performance.md.
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>

#include <string>

#include "sim/report/report.h"
#include "sim/run/engine.h"

extern char** environ;

namespace {
using namespace simcache;

// Calls into the mm layer that are allocator operations: every kmalloc,
// kfree, kmem_cache_* (a bulk call counts once), kvmalloc and kvfree.
uint64_t allocator_ops(const Counters& c) {
  return c[Event::kmalloc] + c[Event::kfree] + c[Event::kmem_cache_alloc] +
         c[Event::kmem_cache_free] + c[Event::kmem_cache_alloc_bulk] +
         c[Event::kmem_cache_free_bulk] + c[Event::kmalloc_large] +
         c[Event::kfree_large] + c[Event::kvmalloc] + c[Event::kvfree];
}

// sim::run() of the preset on one thread plus the default table, without
// call-site scopes (the table does not print them; --no-sites).
void BM_Sparse4096Preset(benchmark::State& state) {
  for (auto _ : state) {
    sim::RunRequest req;
    req.scenario = "sparse4096";
    req.jobs = 1;
    req.call_sites = false;
    sim::RunResult r;
    std::string err;
    if (!sim::run(req, &r, &err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    std::string out = sim::format_table(r);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Sparse4096Preset)->Unit(benchmark::kMillisecond);

// `simcache --scenario sparse4096 --jobs 1`, the whole process (exec,
// cost profile load, run, report), output to /dev/null; argument 1 adds
// --no-sites.
void BM_Sparse4096Process(benchmark::State& state) {
  const char* argv[] = {SIMCACHE_BINARY, "--scenario", "sparse4096", "--jobs", "1",
                        "--output", "/dev/null", state.range(0) ? "--no-sites" : nullptr,
                        nullptr};
  for (auto _ : state) {
    pid_t pid;
    if (posix_spawn(&pid, SIMCACHE_BINARY, nullptr, nullptr,
                    const_cast<char**>(argv), environ) != 0) {
      state.SkipWithError("cannot spawn " SIMCACHE_BINARY);
      return;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("simcache failed");
      return;
    }
  }
}
BENCHMARK(BM_Sparse4096Process)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// The arm-fail scenario (100,000 FUTEX_WAIT, every arm failing) for the
// baseline policy: items/s is simulated allocator operations per second.
void BM_ArmFailOps(benchmark::State& state) {
  uint64_t ops = 0;
  for (auto _ : state) {
    sim::RunRequest req;
    req.scenario = "arm-fail";
    req.jobs = 1;
    req.call_sites = false;
    sim::RunResult r;
    std::string err;
    if (!sim::run(req, &r, &err)) {
      state.SkipWithError(err.c_str());
      return;
    }
    ops += allocator_ops(r.workloads.at(0).policies.at(0).total);
  }
  state.SetItemsProcessed(static_cast<int64_t>(ops));
}
BENCHMARK(BM_ArmFailOps)->Unit(benchmark::kMillisecond);

}  // namespace
