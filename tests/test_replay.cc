// Trace replay: the shared LKML capture, a fixture per format, strict and
// skipping modes, pairing across the capture start, policies acting on
// io_uring-level and kmem-only traces, bounded memory, and the round trip
// scenario -> ops -> trace -> replay.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

#include "sim/cli/cli.h"
#include "sim/report/record.h"
#include "test_cost_util.h"
#include "test_replay_util.h"

using namespace simcache;
using namespace simcache::sim;
using namespace simcache::testing;

namespace {

std::string fixture(const std::string& name) { return source_path("tests/data/traces/" + name); }

// `text` as a file named `name` (prefixed with the process id) in the
// temp directory, never the working directory, which may be the checkout.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("simcache_test_" + std::to_string(::getpid()) + "_" + name))
                               .string();
  std::ofstream f(path, std::ios::binary);
  f << text;
  return path;
}

// A kmem-only trace of `lines` lines in the 6.x format: `live` kmallocs,
// then each slot in turn freed and allocated again at a new address.
std::string generate(const std::string& path, uint64_t lines, uint64_t live) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  auto ptr = [](uint64_t slot, uint64_t gen) {
    return static_cast<unsigned long long>(0xffff888000000000ull + (slot * 4096 + gen % 7) * 64);
  };
  for (uint64_t i = 0; i < lines; ++i) {
    const bool alloc = i < live || (i - live) % 2 == 1;
    const uint64_t k = i < live ? i : (i - live) / 2;
    const uint64_t slot = k % live, gen = i < live ? 0 : k / live + (alloc ? 1 : 0);
    if (alloc)
      std::fprintf(f, "  bash-7  [%03u] ..... 1.%06u: kmalloc: call_site=do_sys_open+0x2c/0x80 "
                      "ptr=%016llx bytes_req=%u bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 "
                      "accounted=false\n",
                   static_cast<unsigned>(i % 4), static_cast<unsigned>(i % 1000000),
                   ptr(slot, gen), static_cast<unsigned>(8 + slot % 512));
    else
      std::fprintf(f, "  bash-7  [%03u] ..... 1.%06u: kfree: call_site=putname+0x47/0x50 "
                      "ptr=%016llx\n",
                   static_cast<unsigned>((i + 1) % 4), static_cast<unsigned>(i % 1000000),
                   ptr(slot, gen));
  }
  std::fclose(f);
  return path;
}

// A replay as one pass (SinglePass): each column checks and replays
// every line as it reads it.
struct OnePass {
  bool ok = false, invalid = false, done = false, retry_io_uring = false;
  TraceSummary s;
  RunResult r;
  std::string err;
};
OnePass one_pass(const std::string& path, const RunRequest& req, bool assume_io_uring = false) {
  auto sp = std::make_shared<SinglePass>();
  OnePass out;
  REQUIRE(open_trace(path, {}, &sp->opened, &out.err));
  sp->assume_io_uring = assume_io_uring;
  out.ok = run_custom(req, trace_workload_single(sp), &out.r, &out.err);
  out.invalid = sp->invalid;
  out.retry_io_uring = sp->retry_io_uring;
  out.done = sp->done;
  out.s = sp->result;
  return out;
}

// A CLI output without its record's command line (which names the flags).
std::string without_command(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  bool wrapped = false;  // the table's "  command:" line and its continuations
  while (std::getline(in, line)) {
    wrapped = line.rfind("  command:", 0) == 0 || (wrapped && line.rfind("           ", 0) == 0);
    if (!wrapped && line.find("command_line") == std::string::npos) out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("the LKML 2019 capture replays: 3 frees before the capture, 6 events paired",
          "[replay]") {
  TraceSummary s;
  const RunResult r = run_trace(fixture("lkml-2019-kmem.txt"), request({"unpatched"}, "v6.18"), &s);
  CHECK(s.lines == 10);
  CHECK(s.events == 9);
  CHECK(s.skipped == 0);
  CHECK_FALSE(s.io_uring);
  CHECK(metric(r, "trace_events_replayed") == 6);
  CHECK(metric(r, "trace_free_before_capture") == 3);
  CHECK(total(r, Event::kmalloc) == 1);
  CHECK(total(r, Event::kfree) == 1);
  CHECK(total(r, Event::kmem_cache_alloc) == 2);
  CHECK(total(r, Event::kmem_cache_free) == 2);
  CHECK(metric(r, "site:prepare_creds:allocs") == 1);
  CHECK(metric(r, "site:prepare_creds:bytes_req") == 168);
  CHECK(metric(r, "site:getname_flags:frees") == 1);
  CHECK(metric(r, "site:security_prepare_creds:bytes_req") == 8);
  CHECK(r.workloads[0].policies[0].kasan.empty());
  bool names_cache = false;
  for (const CacheStats& c : r.workloads[0].policies[0].caches) names_cache |= c.name == "names_cache";
  CHECK(names_cache);  // getname_flags -> the kernel's names_cache, not a size cache
}

TEST_CASE("every fixture format replays under --strict with no line skipped", "[replay]") {
  struct Case {
    const char* file;
    uint64_t events;
    bool io_uring;
  };
  const Case cases[] = {
      {"lkml-2019-kmem.txt", 9, false},   {"ftrace-6x-kmem.txt", 14, false},
      {"ftrace-4x-rawhex.txt", 10, false}, {"ftrace-fields.txt", 4, false},
      {"trace-cmd-report.txt", 14, true},  {"ftrace-io_uring-6x.txt", 20, true},
      {"ftrace-io_uring-5x.txt", 6, true},
  };
  for (const Case& c : cases) {
    INFO(c.file);
    TraceSummary s;
    RunRequest req = request({"unpatched", "slab-nomerge"}, "v6.18");
    req.sets = {{"cpus", "24"}};  // ftrace-6x-kmem.txt runs on CPU 23
    const RunResult r = run_trace(fixture(c.file), req, &s);
    CHECK(s.skipped == 0);
    CHECK(s.events == c.events);
    CHECK(s.io_uring == c.io_uring);
    for (const auto& p : r.workloads[0].policies) {
      CHECK(p.metrics.at("trace_ops_failed") == 0);
      for (const auto& k : p.kasan) INFO(k.kind << " " << k.cache << " " << k.detail);
      CHECK(p.kasan.empty());
    }
  }
}

TEST_CASE("6.x kmem fixture: name=, accounted=, kfree(NULL), pages, CPU 23", "[replay]") {
  RunRequest req = request({"unpatched"}, "v6.18");
  req.sets = {{"cpus", "24"}};
  const RunResult r = run_trace(fixture("ftrace-6x-kmem.txt"), req);
  CHECK(total(r, Event::kmalloc) == 2);
  CHECK(total(r, Event::kfree) == 2);
  CHECK(total(r, Event::kmem_cache_alloc) == 3);
  CHECK(total(r, Event::kmem_cache_free) == 2);  // seq_file and one filp; dentry predates it
  CHECK(metric(r, "trace_kfree_null") == 1);
  CHECK(metric(r, "trace_free_before_capture") == 1);
  CHECK(metric(r, "peak_live_pages") == 2);
  // GFP_KERNEL_ACCOUNT charges the web task's memcg; the kworker's filp
  // allocations are accounted but a kernel thread is in the root memcg.
  CHECK(total(r, Event::memcg_post_alloc_hook) == 2);
}

TEST_CASE("without --set cpus a trace naming CPU 23 is refused at that op", "[replay]") {
  TraceSummary s;
  std::string err;
  REQUIRE(scan_trace(fixture("ftrace-6x-kmem.txt"), {}, &s, &err));
  CHECK(s.max_cpu == 23);
  // run-time failures are counted, not fatal: the CLI raises cpus itself
  RunResult r;
  REQUIRE(run_custom(request({"unpatched"}, "v6.18"), trace_workload(s), &r, &err));
  CHECK(metric(r, "trace_ops_failed") == 4);  // the four lines on CPU 23
  const CliOutcome cli = run_cli({"replay", fixture("ftrace-6x-kmem.txt"), "--strict",
                                  "--profile", "none", "--format", "json"});
  CHECK(cli.status == 0);
  CHECK(cli.out.find("\"cpus\": 24") != std::string::npos);
  CHECK(cli.out.find("\"trace_ops_failed\": 0") != std::string::npos);
}

TEST_CASE("io_uring-level events drive the io_uring model", "[replay]") {
  const RunResult r = run_trace(fixture("ftrace-io_uring-6x.txt"),
                                request({"unpatched", "node-slab+bulk-refill"}, "v6.18"));
  for (size_t c = 0; c < 2; ++c) {
    CHECK(total(r, Event::ring_create, c) == 2);
    CHECK(total(r, Event::ring_teardown, c) == 2);
    CHECK(total(r, Event::msg_ring_send_fd, c) == 2);
    CHECK(total(r, Event::fixed_file_install, c) == 2);
    CHECK(total(r, Event::poll_add, c) == 1);
    CHECK(total(r, Event::futex_waitv, c) == 1);
    CHECK(total(r, Event::futexv_entries, c) == 8);
    CHECK(total(r, Event::io_sqe_files_register, c) == 2);
    CHECK(metric(r, "trace_io_uring_kmem_modelled", c) == 2);
  }
  // node-slab + bulk-refill: one bulk refill per ring's first node (the
  // source's one real file, the target's first install).
  CHECK(total(r, Event::io_cache_bulk_refill, 0) == 0);
  CHECK(total(r, Event::io_cache_bulk_refill, 1) == 2);

  const RunResult t = run_trace(fixture("trace-cmd-report.txt"),
                                request({"unpatched", "futex-return-to-cache"}, "v6.18"));
  // Two FUTEX_WAITs: one armed (futex_wait), one failed (the -EAGAIN
  // completion: futex_wait_arm_fail alone).
  CHECK(total(t, Event::futex_wait) == 1);
  CHECK(total(t, Event::futex_wait_arm_fail) == 1);
  CHECK(total(t, Event::io_uring_enter) == 2);
  CHECK(total(t, Event::futex_arm_fail_kfree, 0) == 1);
  CHECK(total(t, Event::futex_arm_fail_kfree, 1) == 0);  // returned to futex_cache instead
  // A FUTEX_WAIT that fails otherwise (-EFAULT: a bad address, found by
  // futex_wait_setup() as -EAGAIN is) was not armed either: replayed as a
  // failed arm, not as a waiter the model would keep.
  {
    std::ifstream in(fixture("trace-cmd-report.txt"));
    std::stringstream text;
    text << in.rdbuf();
    // The fixture with each (from, to) replaced once, replayed.
    auto edited = [&](const char* name,
                      std::initializer_list<std::pair<std::string, std::string>> edits) {
      std::string t = text.str();
      for (const auto& [from, to] : edits) {
        const size_t at = t.find(from);
        REQUIRE(at != std::string::npos);
        t.replace(at, from.size(), to);
      }
      const std::string path = write_temp(name, t);
      RunResult r = run_trace(path, request({"unpatched"}, "v6.18"));
      std::remove(path.c_str());
      return r;
    };
    const RunResult f = edited("replay_futex_efault.txt", {{"result -11,", "result -14,"}});
    CHECK(total(f, Event::futex_wait) == 1);
    CHECK(total(f, Event::futex_wait_arm_fail) == 1);
    CHECK(f.workloads[0].policies[0].kasan.empty());
    // A FUTEX_WAITV completes with the index of the word that woke it:
    // woken at once (result 2), it was armed.
    const RunResult w = edited("replay_futexv_index.txt",
                               {{"user_data 0x2, opcode FUTEX_WAIT,", "user_data 0x2, opcode FUTEX_WAITV,"},
                                {"result -11,", "result 2,"}});
    CHECK(total(w, Event::futex_waitv) == 1);
    CHECK(total(w, Event::futex_cancel) == 1);  // armed: still queued at ring exit (failed: 0)
    CHECK(total(w, Event::futex_wait) == 1);
    CHECK(w.workloads[0].policies[0].kasan.empty());
  }

  const RunResult o = run_trace(fixture("ftrace-io_uring-5x.txt"), request({"unpatched"}, "v6.18"));
  CHECK(total(o, Event::sqe_submit) == 2);  // NOP and POLL_ADD; opcode 22 is not modelled
  CHECK(metric(o, "trace_unmodelled") == 1);
}

TEST_CASE("kmem-only traces: slab merging changes which caches serve them", "[replay]") {
  const std::string path = write_temp("replay_merge.txt",
      "  app-9  [001] ..... 1.000001: kmem_cache_alloc: call_site=my_alloc+0x1/0x2 ptr=0000000000001000 name=my_cache bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false\n"
      "  app-9  [001] ..... 1.000002: kmem_cache_alloc: call_site=other+0x1/0x2 ptr=0000000000002000 name=other_cache bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL node=-1 accounted=false\n"
      "  app-9  [001] ..... 1.000003: kmem_cache_free: call_site=my_free+0x1/0x2 ptr=0000000000001000 name=my_cache\n");
  const RunResult r = run_trace(path, request({"unpatched", "slab-nomerge"}, "v6.18"));
  auto find = [&](size_t c, const std::string& name) -> const CacheStats* {
    for (const CacheStats& s : r.workloads[0].policies[c].caches)
      if (s.name == name) return &s;
    return nullptr;
  };
  auto slabs = [](const CacheStats* s) { return s->stat[static_cast<size_t>(SlubStat::ALLOC_SLAB)]; };
  // Merged: other_cache is an alias of my_cache; one slab serves both.
  REQUIRE(find(0, "my_cache"));
  CHECK(find(0, "other_cache") == nullptr);
  CHECK(slabs(find(0, "my_cache")) == 1);
  // slab_nomerge: two caches, a slab each.
  REQUIRE(find(1, "my_cache"));
  REQUIRE(find(1, "other_cache"));
  CHECK(slabs(find(1, "other_cache")) == 1);
  CHECK(total(r, Event::allocate_slab, 0) + 1 == total(r, Event::allocate_slab, 1));
  std::remove(path.c_str());
}

TEST_CASE("malformed lines: --strict stops at the first, the default skips and counts",
          "[replay]") {
  const std::string path = write_temp("replay_bad.txt",
      "  bash-7  [001] ..... 1.000001: kmalloc: call_site=f+0x1/0x2 ptr=0000000000001000 bytes_req=8 bytes_alloc=8 gfp_flags=GFP_KERNEL\n"
      "  bash-7  [001] ..... 1.000002: kmalloc: call_site=f+0x1/0x2 ptr=zz bytes_req=8\n"
      "garbage without a cpu column\n"
      "  bash-7  [001] ..... 1.000003: kfree: call_site=f+0x1/0x2 ptr=0000000000001000\n");
  TraceSummary s;
  std::string err;
  ReplayOptions strict;
  strict.strict = true;
  CHECK_FALSE(scan_trace(path, strict, &s, &err));
  CHECK(err == path + ":2:66: ptr='zz': not a valid value");
  REQUIRE(scan_trace(path, {}, &s, &err));
  CHECK(s.skipped == 2);
  CHECK(s.events == 2);
  CHECK(s.first_skipped == err);
  const CliOutcome bad = run_cli({"replay", path, "--strict", "--profile", "none"});
  CHECK(bad.status == 2);
  CHECK(bad.err == "simcache: " + path + ":2:66: ptr='zz': not a valid value\n");
  const CliOutcome ok = run_cli({"replay", path, "--profile", "none"});
  CHECK(ok.status == 0);
  CHECK(ok.out.find("2 skipped") != std::string::npos);
  CHECK(ok.err.find("2 malformed line(s) skipped") != std::string::npos);
  std::remove(path.c_str());
  // A control character the reason quotes is escaped: one line still.
  const std::string ctl = write_temp("replay_ctl.txt",
      "  bash-7  [001] ..... 1.000002: kmalloc: call_site=f+0x1/0x2 ptr=z\rz bytes_req=8\n");
  CHECK_FALSE(scan_trace(ctl, strict, &s, &err));
  CHECK(err == ctl + ":1:66: ptr='z\\rz': not a valid value");
  std::remove(ctl.c_str());
}

TEST_CASE("replay memory is bounded by live objects, not trace length", "[replay][stream]") {
  const std::string a = generate("replay_1e5.txt", 100000, 300);
  const std::string b = generate("replay_1e6.txt", 1000000, 300);
  const RunResult ra = run_trace(a, request({"unpatched"}, "v6.18"));
  const RunResult rb = run_trace(b, request({"unpatched"}, "v6.18"));
  CHECK(metric(ra, "peak_live_objects") == 300);
  CHECK(metric(rb, "peak_live_objects") == 300);
  CHECK(metric(ra, "peak_replay_maps") == metric(rb, "peak_replay_maps"));
  CHECK(metric(rb, "peak_replay_maps") <= 310);
  CHECK(metric(rb, "trace_events_replayed") == 1000000);
  CHECK(total(rb, Event::kmalloc) == 300 + (1000000 - 300) / 2);
  CHECK(metric(rb, "trace_free_before_capture") == 0);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST_CASE("a scenario's op stream as a trace replays to the scenario's counts", "[slow][replay]") {
  for (const char* s : {"sparse-fill", "arm-fail", "waitv"}) {
    INFO(s);
    const std::string trace = std::string("roundtrip_") + s + ".trace";
    const RunRequest one = request({"unpatched"}, "v6.18");
    std::string err;
    REQUIRE(emit_ops_run(source_path(std::string("data/ops/") + s + ".ops"), trace, true, one, &err));
    const RunRequest req = request({"unpatched", "node-slab+bulk-refill+prefill",
                                    "futex-return-to-cache"}, "v6.18");
    require_same_counts(run_scenario(s, req), run_trace(trace, req));
    std::remove(trace.c_str());
  }
}

TEST_CASE("replay --emit-ops: a trace compiled to ops runs to the same counts", "[replay]") {
  for (const char* f : {"lkml-2019-kmem.txt", "ftrace-io_uring-6x.txt", "ftrace-6x-kmem.txt"}) {
    INFO(f);
    RunRequest req = request({"unpatched"}, "v6.18");
    req.sets = {{"cpus", "24"}};
    const std::string out = "emitted_trace.ops";
    std::string err;
    TraceSummary s;
    REQUIRE(scan_trace(fixture(f), {}, &s, &err));
    REQUIRE(emit_trace_ops(s, out, req, &err));
    const RunResult ops = run_ops(out, req), tr = run_trace(fixture(f), req);
    const auto& a = tr.workloads[0].policies[0];
    const auto& b = ops.workloads[0].policies[0];
    for (size_t e = 0; e < kNumEvents; ++e) {
      INFO(kEventInfo[e].name);
      CHECK(a.total.v[e] == b.total.v[e]);
    }
    // And times what the replay timed: a trace without markers is one
    // measured round timing every event, in the ops as in the replay
    // (they once had no timed region: run-ops printed 0 ns).
    CHECK(ops.workloads[0].op_unit == tr.workloads[0].op_unit);
    CHECK(b.timed_ops == a.timed_ops);
    CHECK(b.timed_ops > 0);
    for (size_t e = 0; e < kNumEvents; ++e) {
      INFO(kEventInfo[e].name);
      CHECK(a.timed.v[e] == b.timed.v[e]);
    }
    std::remove(out.c_str());
  }
}

TEST_CASE("simcache replay on the LKML capture: a report with counts by call site", "[replay][cli]") {
  const CliOutcome r = run_cli({"replay", fixture("lkml-2019-kmem.txt"), "--policy",
                                "unpatched,slab-nomerge", "--profile", "none"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("A unpatched, B slab-nomerge") != std::string::npos);
  CHECK(r.out.find("trace: 10 lines, 9 events, 0 skipped") != std::string::npos);
  CHECK(r.out.find("by call site") != std::string::npos);
  CHECK(r.out.find("  prepare_creds                                     1          1          168\n") !=
        std::string::npos);
  const CliOutcome ops = run_cli({"run-ops", source_path("data/ops/arm-fail.ops"), "--profile",
                                  "none", "--format", "csv"});
  CHECK(ops.status == 0);
  CHECK(ops.out.find("futex_wait_arm_fail") != std::string::npos);
}

TEST_CASE("an allocation at a live pointer means its free was lost: counted, paired anew",
          "[replay]") {
  const std::string path = write_temp("replay_lost_free.txt",
      "  a-1  [000] ..... 1.000001: kmalloc: call_site=f+0x1/0x2 ptr=0000000000001000 bytes_req=32 bytes_alloc=32 gfp_flags=GFP_KERNEL\n"
      "  a-1  [000] ..... 1.000002: kmalloc: call_site=f+0x1/0x2 ptr=0000000000001000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL\n"
      "  a-1  [000] ..... 1.000003: kfree: call_site=g+0x1/0x2 ptr=0000000000001000\n"
      "  a-1  [000] ..... 1.000004: kfree: call_site=g+0x1/0x2 ptr=0000000000001000\n");
  const RunResult r = run_trace(path, request({"unpatched"}, "v6.18"));
  CHECK(metric(r, "trace_implicit_free") == 1);
  CHECK(metric(r, "trace_free_before_capture") == 1);  // the second free: nothing live there
  CHECK(total(r, Event::kmalloc) == 2);
  CHECK(total(r, Event::kfree) == 2);
  CHECK(metric(r, "site:f:allocs") == 2);
  CHECK(metric(r, "site:f:frees") == 1);  // traced frees; the lost one is trace_implicit_free
  CHECK(r.workloads[0].policies[0].kasan.empty());
  std::remove(path.c_str());
}

// data/traces/: real captures of kit programs (`simcache-measure --trace`,
// data/traces/README.md) replay under --strict with every line parsed.
TEST_CASE("the kit's live-kernel captures replay with exact counts", "[replay][traces]") {
  struct Want {
    const char* file;
    size_t lines, events;
    uint64_t replayed, modelled, kmalloc, kmem_cache_alloc, kmem_cache_free, wait, wake, waitv,
        arm_fail;
  };
  // e0-390: the kernel posts the 24 -EAGAIN completions after the batch's
  // 32 submits; the replay holds the waits until then (64 issued: 40
  // armed, counted futex_wait, and 24 failed, futex_wait_arm_fail; each armed
  // woken by one of the 40 FUTEX_WAKEs). The model's ring set-up makes the
  // kernel's 16 io_uring-site kmallocs of the trace: 12 for the ring (ctx,
  // cancel table, percpu_ref data, 7 cache arrays, 2 region page arrays)
  // and 4 for the task (io_uring_task, io_wq_hash, io_wq, io_tctx_node).
  const Want wants[] = {
      {"data/traces/e0-390.trace", 385, 371, 149, 59, 62, 22, 18, 40, 40, 0, 24},
      {"data/traces/waitv-8x8.trace", 347, 331, 141, 47, 50, 22, 18, 0, 64, 32, 0},
  };
  for (const Want& w : wants) {
    INFO(w.file);
    TraceSummary s;
    const RunResult r = run_trace(source_path(w.file), request({"unpatched"}, "v6.18"), &s);
    CHECK(s.lines == w.lines);
    CHECK(s.events == w.events);
    CHECK(s.skipped == 0);
    CHECK(s.io_uring);
    CHECK(metric(r, "trace_events_replayed") == static_cast<int64_t>(w.replayed));
    CHECK(metric(r, "trace_io_uring_kmem_modelled") == static_cast<int64_t>(w.modelled));
    CHECK(metric(r, "trace_unmodelled") == 0);
    CHECK(total(r, Event::kmalloc) == w.kmalloc);
    CHECK(total(r, Event::kmem_cache_alloc) == w.kmem_cache_alloc);
    CHECK(total(r, Event::kmem_cache_free) == w.kmem_cache_free);
    CHECK(total(r, Event::futex_wait) == w.wait);
    CHECK(total(r, Event::futex_wake) == w.wake);
    CHECK(total(r, Event::futex_waitv) == w.waitv);
    CHECK(total(r, Event::futex_wait_arm_fail) == w.arm_fail);
    CHECK(r.workloads[0].policies[0].kasan.empty());
  }
}

TEST_CASE("replay reads each line once where the trace allows: the first pass's summary and counts",
          "[replay]") {
  std::vector<std::string> files;
  for (const char* dir : {"tests/data/traces", "data/traces"})
    for (const auto& e : std::filesystem::directory_iterator(source_path(dir))) {
      const std::string ext = e.path().extension().string();
      if (ext == ".txt" || ext == ".dat" || ext == ".trace") files.push_back(e.path().string());
    }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 18);
  int one = 0, two = 0, retried = 0;
  for (const std::string& path : files) {
    INFO(path);
    TraceSummary s;
    std::string err;
    REQUIRE(scan_trace(path, {}, &s, &err));
    RunRequest req = request({"unpatched", "slab-nomerge"}, "v6.18");
    // A capture whose ring set-up allocates (io_* call sites) before its
    // io_uring_create line is retried assuming io_uring events.
    bool io_site_first = false;
    {
      std::ifstream in(path, std::ios::binary);
      std::string line;
      TraceEvent ev;
      size_t col = 0;
      std::string why;
      while (std::getline(in, line) && !io_site_first) {
        if (!parse_trace_line(line, &ev, &col, &why)) continue;
        if (ev.kind >= TraceKind::uring_create && ev.kind <= TraceKind::uring_complete) break;
        io_site_first = (ev.kind == TraceKind::kmalloc || ev.kind == TraceKind::kmem_cache_alloc) &&
                        (ev.call_site.rfind("io_", 0) == 0 || ev.call_site.rfind("__io_", 0) == 0);
      }
    }
    OnePass p = one_pass(path, req);
    CHECK(p.retry_io_uring == (io_site_first && s.io_uring && !s.markers && s.max_cpu < kReplayMinCpus));
    if (p.retry_io_uring) p = one_pass(path, req, true), ++retried;
    // The guess fails exactly where the first pass finds round markers or
    // a CPU the default machine lacks.
    const bool needs_two = s.markers || s.max_cpu >= kReplayMinCpus;
    CHECK(p.invalid == needs_two);
    CHECK(p.ok == !needs_two);
    if (needs_two) {
      CHECK(p.err == path + ": the trace needs two passes");
      ++two;
      continue;
    }
    ++one;
    REQUIRE(p.done);
    CHECK(p.s.lines == s.lines);
    CHECK(p.s.events == s.events);
    CHECK(p.s.skipped == s.skipped);
    CHECK(p.s.first_skipped == s.first_skipped);
    CHECK(p.s.max_cpu == s.max_cpu);
    CHECK(p.s.io_uring == s.io_uring);
    CHECK_FALSE(p.s.markers);
    RunResult classic;
    REQUIRE(run_custom(req, trace_workload(s), &classic, &err));
    require_same_counts(classic, p.r);
  }
  // Every kind is exercised: most fixtures in one pass, the kit's
  // live-kernel captures after a retry, the 6.x one (CPU 23) in two.
  CHECK(one >= 12);
  CHECK(retried >= 2);
  CHECK(two >= 1);
}

TEST_CASE("an io_uring event after an io_* kmem event is replayed again assuming io_uring events, with the same output",
          "[replay][cli]") {
  const std::string kmem =
      "  t-7  [001] ..... 1.000001: kmalloc: call_site=io_ring_ctx_alloc+0x1/0x2 "
      "ptr=ffff888000001000 bytes_req=64 bytes_alloc=64 gfp_flags=GFP_KERNEL\n";
  const std::string create =
      "  t-7  [001] ..... 1.000002: io_uring_create: ring 00000000deadbeef, fd 3, sq size 8, "
      "cq size 16, flags 0x0\n";
  const std::string late = write_temp("replay_iosite_late.txt", kmem + create);
  const std::string early = write_temp("replay_iosite_early.txt", create + kmem);
  const OnePass a = one_pass(late, request({"unpatched"}, "v6.18"));
  CHECK(a.invalid);
  CHECK(a.retry_io_uring);
  const OnePass again = one_pass(late, request({"unpatched"}, "v6.18"), true);
  CHECK_FALSE(again.invalid);
  CHECK(again.ok);
  CHECK(metric(again.r, "trace_io_uring_kmem_modelled") == 1);
  const OnePass b = one_pass(early, request({"unpatched"}, "v6.18"));
  CHECK_FALSE(b.invalid);
  CHECK(b.ok);
  CHECK(b.s.io_uring);
  CHECK(metric(b.r, "trace_io_uring_kmem_modelled") == 1);
  for (const std::string& path : {late, early}) {
    INFO(path);
    const CliOutcome x = run_cli({"replay", path, "--profile", "none", "--format", "csv"});
    const CliOutcome y =
        run_cli({"replay", path, "--profile", "none", "--format", "csv", "--two-pass"});
    CHECK(x.status == 0);
    CHECK(x.status == y.status);
    CHECK(without_command(x.out) == without_command(y.out));
    CHECK(x.err == y.err);
    CHECK(x.out.find("trace_io_uring_kmem_modelled,1") != std::string::npos);
  }
  std::remove(late.c_str());
  std::remove(early.c_str());
}

TEST_CASE("replay in one pass and in two: the same report, errors and input hash",
          "[replay][cli]") {
  const std::string bad = write_temp("replay_two_bad.txt",
      "  bash-7  [001] ..... 1.000001: kmalloc: call_site=f+0x1/0x2 ptr=0000000000001000 bytes_req=8 bytes_alloc=8 gfp_flags=GFP_KERNEL\n"
      "  bash-7  [001] ..... 1.000002: kmalloc: call_site=f+0x1/0x2 ptr=zz bytes_req=8\n"
      "  bash-7  [001] ..... 1.000003: kfree: call_site=f+0x1/0x2 ptr=0000000000001000\n");
  struct Case {
    std::string file;
    std::vector<std::string> flags;
    int status;
  };
  const std::vector<Case> cases = {
      {fixture("lkml-2019-kmem.txt"), {"--format", "csv"}, 0},
      {fixture("ftrace-io_uring-6x.txt"), {"--format", "json", "--policy", "unpatched,node-slab"}, 0},
      {fixture("ftrace-6x-kmem.txt"), {"--format", "csv"}, 0},  // CPU 23: two passes either way
      {fixture("kmem-cat.dat"), {"--format", "csv"}, 0},         // a trace.dat's text
      {source_path("data/traces/e0-390.trace"), {"--format", "csv"}, 0},  // round markers
      {fixture("lkml-2019-kmem.txt"), {"--counts"}, 0},
      {bad, {"--format", "csv"}, 0},    // a skipped line, and its warning
      {bad, {"--strict"}, 2},           // the first pass's error
      {bad, {"--max-events", "2"}, 2},  // the budget
      {bad, {"--format", "yaml"}, 2},   // a flag's error comes first, as before
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"replay", c.file, "--profile", "none"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    INFO(args[1] << " " << args.back());
    const CliOutcome x = run_cli(args);
    args.push_back("--two-pass");
    const CliOutcome y = run_cli(args);
    CHECK(x.status == c.status);
    CHECK(y.status == c.status);
    CHECK(without_command(x.out) == without_command(y.out));
    CHECK(x.err == y.err);
    // The record's hash, where the output shows it, is that of the file's bytes.
    if (c.status == 0 && (c.flags[0] == "--format" || c.flags[0] == "--counts")) {
      std::string err;
      CHECK(x.out.find(sha256_file(c.file, "the trace", &err)) != std::string::npos);
    }
  }
  CHECK(run_cli({"replay", bad, "--max-events", "2"}).err ==
        "simcache: " + bad + ":3: the trace has more than 2 lines, the replay budget "
                             "(--max-events N raises it)\n");
  std::remove(bad.c_str());
}

TEST_CASE("an ignored line on a high CPU keeps the one pass: the first pass counts events only",
          "[replay]") {
  const std::string path = write_temp("replay_cpu23_other.txt",
      "  bash-7  [001] ..... 1.000001: kmalloc: call_site=f+0x1/0x2 ptr=0000000000001000 bytes_req=8 bytes_alloc=8 gfp_flags=GFP_KERNEL\n"
      "  kworker-9  [023] ..... 1.000002: sched_switch: prev_comm=a prev_pid=1 next_comm=b next_pid=2\n"
      "  bash-7  [001] ..... 1.000003: kfree: call_site=f+0x1/0x2 ptr=0000000000001000\n");
  TraceSummary s;
  std::string err;
  REQUIRE(scan_trace(path, {}, &s, &err));
  CHECK(s.max_cpu == 1);
  const OnePass p = one_pass(path, request({"unpatched"}, "v6.18"));
  CHECK_FALSE(p.invalid);
  CHECK(p.ok);
  CHECK(p.s.max_cpu == 1);
  CHECK(p.s.events == 2);
  std::remove(path.c_str());
}

TEST_CASE("replay: fixed-file READs run the model's verification read, worker once", "[replay]") {
  // Two READs in the line formats of a live 6.18 capture: the model
  // prepares each (io_async_rw from rw_cache: a kmalloc of 200), punts it
  // and creates the task's one io-wq worker; the trace's own
  // io_cache_alloc_new and create_io_worker kmallocs are io_uring's (the
  // model makes them), not replayed a second time.
  RunRequest req = request({"unpatched"}, "v6.18");
  const RunResult r = run_trace(fixture("ftrace-618-read.txt"), req);
  const PolicyResult& p = r.workloads[0].policies[0];
  CHECK(p.total[Event::read_fixed] == 2);
  CHECK(p.total[Event::iowq_punt] == 2);
  CHECK(p.total[Event::io_worker_create] == 1);
  // kmallocs: the node, two io_async_rw, the worker, and the model's own
  // ring set-up; none from the trace's io_uring or io-wq sites.
  // the source's registration node, the install's node, the two reads
  CHECK(p.total[Event::io_cache_alloc_new] == 4);
  // The same trace without its create_io_worker line replays to the same
  // allocations: that line was the model's, not a second worker.
  const std::string text = simcache::testing::read_text(fixture("ftrace-618-read.txt"));
  std::string cut;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find("call_site=create_io_worker") == std::string::npos) cut += line + "\n";
  REQUIRE(cut.size() < text.size());
  const std::string path = "replay_no_worker_line.txt";
  std::ofstream(path, std::ios::binary) << cut;
  const RunResult without = run_trace(path, req);
  std::remove(path.c_str());
  for (size_t e = 0; e < kNumEvents; ++e) {
    INFO(kEventInfo[e].name);
    CHECK(without.workloads[0].policies[0].total.v[e] == p.total.v[e]);
  }
  CHECK(p.kasan.empty());
}

namespace {

// A kernel capture: a 4-entry ring (CQ 8), 12 polls parked on it, its
// close; with `ocqe`, one overflow entry the kernel made (io_alloc_ocqe)
// and, with `freed`, its free by the overflow flush.
std::string parked_polls_capture(bool ocqe, bool freed) {
  std::string t =
      "  p-7  [001] ..... 1.000001: io_uring_create: ring 00000000deadbeef, fd 3, sq size 4, "
      "cq size 8, flags 0x0\n";
  for (int i = 0; i < 12; ++i)
    t += fmt::format(
        "  p-7  [001] ..... 1.0001{:02d}: io_uring_submit_req: ring 00000000deadbeef, req "
        "00000000aaaa00{:02d}, user_data 0x0, opcode POLL_ADD, flags 0x0, sq_thread 0\n",
        i, i);
  t += "  p-7  [001] ..... 1.000150: sys_close(fd: 3)\n";
  if (ocqe)
    t += "  p-7  [001] ..... 1.000200: kmalloc: call_site=io_alloc_ocqe+0x41/0x100 "
         "ptr=ffff888000002000 bytes_req=32 bytes_alloc=32 "
         "gfp_flags=GFP_NOWAIT|__GFP_ZERO|__GFP_ACCOUNT node=-1 accounted=true\n";
  if (ocqe && freed)
    t += "  kworker/u8:2-9  [000] ..... 1.000300: kfree: "
         "call_site=__io_cqring_overflow_flush+0x116/0x2a0 ptr=ffff888000002000\n";
  return t;
}

}  // namespace

TEST_CASE("replay takes the application's untraced reaping as in time: no CQ ring overflows in the model, the trace's own overflow entries replay",
          "[replay]") {
  // A 4-entry ring (CQ 8) with 12 polls parked, then closed: in a
  // simulation its exit would overflow 4 CQEs, but a kernel capture does
  // not show whether the program reaped, so the model overflows none. The
  // kernel's overflow entries, when it made them, are the trace's
  // io_alloc_ocqe lines: they replay as the allocations (and frees) they
  // were.
  const std::string plain = write_temp("replay_overflow_plain.txt", parked_polls_capture(false, false));
  const std::string with = write_temp("replay_overflow_with.txt", parked_polls_capture(true, true));
  const OnePass a = one_pass(plain, request({"unpatched"}, "v6.18"));
  const OnePass b = one_pass(with, request({"unpatched"}, "v6.18"));
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  CHECK(total(a.r, Event::req_cancel) == 12);
  CHECK(total(a.r, Event::cqe_overflow) == 0);
  CHECK(total(b.r, Event::cqe_overflow) == 0);
  CHECK(total(b.r, Event::kmalloc) == total(a.r, Event::kmalloc) + 1);
  CHECK(total(b.r, Event::kfree) == total(a.r, Event::kfree) + 1);
  std::remove(plain.c_str());
  std::remove(with.c_str());
}

TEST_CASE("an op file whose ring overflows its CQ: as a trace and back, the same counts",
          "[replay]") {
  // 12 polls parked on a 4-entry ring (CQ 8), then its exit: 4 CQEs
  // overflow. Its trace carries simcache's markers, so the replay models
  // the overflow as run-ops does (a plain kernel capture would take the
  // reaping as in time); the trace compiled back to ops keeps each ring's
  // `reaped` key, so run-ops does not overflow twice.
  const std::string ops = write_temp("overflow_rt.ops",
                                     "task bench memcg=user\n"
                                     "2 bench ring_create ring=0 sq=4\n"
                                     "2 bench enter_begin ring=0\n"
                                     "repeat 12\n2 bench poll_add ring=0\nend\n"
                                     "2 bench enter_end ring=0\n"
                                     "7 kworker/u8:0 ring_exit ring=0\n");
  const RunRequest req = request({"unpatched"}, "v6.18");
  const RunResult direct = run_ops(ops, req);
  REQUIRE(total(direct, Event::cqe_overflow) == 4);
  std::string err;
  const std::string trace = "overflow_rt.trace";
  REQUIRE(emit_ops_run(ops, trace, true, req, &err));
  const RunResult replayed = run_trace(trace, req);
  // Whole-run counters (the op file has no timed region; a trace without
  // markers times everything).
  const auto same_totals = [](const RunResult& x, const RunResult& y) {
    for (size_t e = 0; e < kNumEvents; ++e) {
      INFO(kEventInfo[e].name);
      CHECK(x.workloads[0].policies[0].total.v[e] == y.workloads[0].policies[0].total.v[e]);
    }
  };
  same_totals(direct, replayed);
  // Back to ops from a plain kernel capture with an overflow entry: the
  // emitted ring_create says `reaped=1`, and run-ops replays the entry.
  const std::string capture = write_temp("overflow_capture.txt", parked_polls_capture(true, false));
  TraceSummary s;
  REQUIRE(scan_trace(capture, {}, &s, &err));
  const std::string back = "overflow_back.ops";
  REQUIRE(emit_trace_ops(s, back, req, &err));
  CHECK(read_text(back).find("ring_create ring=3 sq=4 cq=8 defer_taskrun=0 reaped=1") !=
        std::string::npos);
  const RunResult a = run_trace(capture, req), b = run_ops(back, req);
  CHECK(total(a, Event::cqe_overflow) == 0);
  CHECK(total(a, Event::kmalloc) == total(b, Event::kmalloc));
  same_totals(a, b);
  for (const std::string& f : {ops, trace, capture, back}) std::remove(f.c_str());
}
