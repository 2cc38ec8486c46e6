// Trace replay throughput (docs/performance.md, "Trace replay"): lines per
// second on one core for the parser alone, the first pass (read + parse)
// a full replay column (read + parse + simulate) after it, and the one
// pass replay runs for a regular file (BM_TraceReplayOnePass), on a generated
// kmem-only trace in the 6.x format with 256 live objects.
// Goal: >= 4 million trace lines per second for a replay column. And
// run-ops on a flat op file (BM_RunOpsFlat), the same goal.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>
#include <string>
#include <vector>

#include "sim/replay/replay.h"

namespace {
using namespace simcache;
using namespace simcache::sim;

constexpr uint64_t kLines = 1000000, kLive = 256;

std::string line(uint64_t i) {
  const bool alloc = i < kLive || (i - kLive) % 2 == 1;
  const uint64_t k = i < kLive ? i : (i - kLive) / 2, slot = k % kLive;
  const uint64_t gen = i < kLive ? 0 : k / kLive + (alloc ? 1 : 0);
  const auto ptr = static_cast<unsigned long long>(0xffff888000000000ull + (slot * 4096 + gen % 7) * 64);
  char buf[256];
  if (alloc)
    std::snprintf(buf, sizeof buf,
                  "            bash-1337    [%03u] ..... 4242.%06u: kmalloc: "
                  "call_site=do_sys_openat2+0x9c/0x160 ptr=%016llx bytes_req=%u bytes_alloc=64 "
                  "gfp_flags=GFP_KERNEL node=-1 accounted=false",
                  static_cast<unsigned>(i % 4), static_cast<unsigned>(i % 1000000), ptr,
                  static_cast<unsigned>(8 + slot % 512));
  else
    std::snprintf(buf, sizeof buf,
                  "            bash-1337    [%03u] ..... 4242.%06u: kfree: "
                  "call_site=putname+0x47/0x50 ptr=%016llx",
                  static_cast<unsigned>(i % 4), static_cast<unsigned>(i % 1000000), ptr);
  return buf;
}

const std::string& trace_file() {
  // In a temporary directory, removed at exit (not the caller's cwd).
  static const std::string path = [] {
    static char dir[64] = "/tmp/simcache-bench.XXXXXX";  // outlives every static
    if (!::mkdtemp(dir)) std::abort();
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    const std::string p = std::string(dir) + "/replay_trace.txt";
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) std::abort();
    for (uint64_t i = 0; i < kLines; ++i) std::fprintf(f, "%s\n", line(i).c_str());
    std::fclose(f);
    return p;
  }();
  return path;
}

void BM_TraceParseLine(benchmark::State& state) {
  std::vector<std::string> lines;
  for (uint64_t i = 0; i < 4096; ++i) lines.push_back(line(i));
  TraceEvent ev;
  size_t col;
  std::string why;
  uint64_t n = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse_trace_line(lines[n++ & 4095], &ev, &col, &why));
    benchmark::DoNotOptimize(ev.ptr);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TraceParseLine);

void BM_TraceScan(benchmark::State& state) {
  const std::string& path = trace_file();
  for (auto _ : state) {
    TraceSummary s;
    std::string err;
    benchmark::DoNotOptimize(scan_trace(path, {}, &s, &err));
  }
  state.SetItemsProcessed(state.iterations() * kLines);
}
BENCHMARK(BM_TraceScan)->Unit(benchmark::kMillisecond);

// One policy column: what each extra --policy column costs.
void BM_TraceReplayColumn(benchmark::State& state) {
  const std::string& path = trace_file();
  TraceSummary s;
  std::string err;
  scan_trace(path, {}, &s, &err);
  RunRequest req;
  req.policies = {"unpatched"};
  const CustomWorkload w = trace_workload(s);
  for (auto _ : state) {
    RunResult r;
    benchmark::DoNotOptimize(run_custom(req, w, &r, &err));
  }
  state.SetItemsProcessed(state.iterations() * kLines);
}
BENCHMARK(BM_TraceReplayColumn)->Unit(benchmark::kMillisecond);

// `simcache replay FILE` with one policy: one pass that checks, counts and
// replays each line (docs/ops.md, "One pass"). Goal: >= 4 M lines/s;
// `goal` is the rate over 4 M (1.0 = met).
void BM_TraceReplayOnePass(benchmark::State& state) {
  const std::string& path = trace_file();
  RunRequest req;
  req.policies = {"unpatched"};
  std::string err;
  for (auto _ : state) {
    auto sp = std::make_shared<SinglePass>();
    if (!open_trace(path, {}, &sp->opened, &err)) std::abort();
    RunResult r;
    benchmark::DoNotOptimize(run_custom(req, trace_workload_single(sp), &r, &err));
    if (!sp->done) std::abort();
  }
  state.SetItemsProcessed(state.iterations() * kLines);
  state.counters["goal"] = benchmark::Counter(static_cast<double>(state.iterations() * kLines) / 4e6,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TraceReplayOnePass)->Unit(benchmark::kMillisecond);

// run-ops on a flat op file of 10^6 lines (kmalloc/kfree pairs, 256 live
// handles): the check pass (load_op_file) and one column streaming it
// again, as `simcache run-ops FILE` runs. Goal: >= 4 M lines/s; `goal` is
// the rate over 4 M (1.0 = met).
const std::string& op_file() {
  static const std::string path = [] {
    const std::string p = std::filesystem::path(trace_file()).parent_path() / "pairs.ops";
    std::FILE* f = std::fopen(p.c_str(), "wb");
    if (!f) std::abort();
    std::fprintf(f, "unit object ns\ntask app memcg=user\n");
    for (uint64_t i = 0; i < kLines; i += 2) {
      const uint64_t h = (i / 2) % kLive + 1;
      std::fprintf(f, "%u app kmalloc obj=%llu size=%u gfp=GFP_KERNEL\n%u app kfree obj=%llu\n",
                   static_cast<unsigned>(i % 2), static_cast<unsigned long long>(h),
                   static_cast<unsigned>(32 << (i % 4)), static_cast<unsigned>((i + 1) % 2),
                   static_cast<unsigned long long>(h));
    }
    std::fclose(f);
    return p;
  }();
  return path;
}

void BM_RunOpsFlat(benchmark::State& state) {
  const std::string& path = op_file();
  RunRequest req;
  req.policies = {"unpatched"};
  std::string err;
  for (auto _ : state) {
    CustomWorkload w;
    if (!ops_workload(path, &w, &err)) state.SkipWithError(err.c_str());
    RunResult r;
    benchmark::DoNotOptimize(run_custom(req, w, &r, &err));
  }
  state.SetItemsProcessed(state.iterations() * (kLines + 2));
  state.counters["goal"] = benchmark::Counter(
      static_cast<double>(state.iterations() * (kLines + 2)) / 4e6, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RunOpsFlat)->Unit(benchmark::kMillisecond);

}  // namespace
