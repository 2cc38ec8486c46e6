// Ranges at the door (docs/ops.md, "Ranges and budgets"): every number of
// the op format and of the trace parser is read through its range, the
// model refuses what the kernel refuses, work has budgets, and run-ops
// and replay exit 3 on failed operations. Each case here failed (or
// crashed, or ran unbounded) before the fix it names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "model/mm/geometry.h"
#include "model/mm/mm.h"
#include "sim/cli/cli.h"
#include "sim/replay/ops.h"
#include "sim/replay/trace.h"
#include "test_cost_util.h"
#include "test_replay_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::request;
using simcache::testing::run_ops;
using simcache::testing::TempFile;

namespace {

std::string parse_err(const std::string& text, const OpLimits& limits = {}) {
  OpProgram p;
  std::string err;
  if (parse_op_program(text, "t.ops", &p, &err, limits)) return "";
  return err;
}

MmConfig two_cpus() {
  MmConfig c;
  c.nr_cpus = 2;
  return c;
}

// One trace line's parse error ("COL: why"), or "" if it parses.
std::string trace_err(const std::string& line) {
  TraceEvent ev;
  size_t col = 0;
  std::string why;
  if (parse_trace_line(line, &ev, &col, &why)) return "";
  return std::to_string(col) + ": " + why;
}

const std::string kPrefix = "  a.out-2001    [003] ..... 77.100001: ";

}  // namespace

TEST_CASE("kmem_cache_create of a size no slab can lay out returns NULL", "[ranges]") {
  // Was a cache of slot 0 (4294967295 rounded up wrapped), whose first
  // allocation popped an empty freelist: SIGSEGV in the 6.18 slow path.
  for (SlubGen gen : {SlubGen::v6_18, SlubGen::v7}) {
    MmConfig c = two_cpus();
    c.gen = gen;
    Mm mm(c);
    CHECK(mm.kmem_cache_create("huge", 4294967295u, 0, 0) == kNoCache);
    CHECK(mm.kmem_cache_create("big", static_cast<uint32_t>(KMALLOC_MAX_SIZE) + 1, 0, 0) ==
          kNoCache);
    CHECK(mm.kmem_cache_create("zero", 0, 0, 0) == kNoCache);
    CHECK(mm.kmem_cache_create("align", 4096, 0x80000000u, 0) == kNoCache);
    // The largest layout there is: one object of 4 MiB on an order-10 slab.
    const CacheId ok = mm.kmem_cache_create("max", static_cast<uint32_t>(KMALLOC_MAX_SIZE), 0, 0);
    REQUIRE(ok != kNoCache);
    CHECK(mm.info(ok).objs_per_slab == 1);
    const Task t{0, kRootMemcg, 0};
    const Ptr p = mm.kmem_cache_alloc(ok, GFP_KERNEL, t);
    CHECK(p != kNull);
    mm.kmem_cache_free(ok, p, t);
  }
  CHECK(slab_layout_ok(1, 0, 0));
  CHECK(slab_layout_ok(static_cast<uint32_t>(KMALLOC_MAX_SIZE) - 8, 4096, 0));
  CHECK_FALSE(slab_layout_ok(static_cast<uint32_t>(KMALLOC_MAX_SIZE) - 8, 3 * 4096, 0));
}

TEST_CASE("an op file's kmem_cache_create size is checked at the door", "[ranges]") {
  CHECK(parse_err("0 t kmem_cache_create cache=x size=4294967295\n") ==
        "t.ops:1:36: field 'size': 4294967295 is outside [1, 4194304]");
  CHECK(parse_err("0 t kmem_cache_create cache=x size=0\n") ==
        "t.ops:1:36: field 'size': 0 is outside [1, 4194304]");
  CHECK(parse_err("0 t kmem_cache_create cache=x size=64 align=8388608\n") ==
        "t.ops:1:45: field 'align': 8388608 is outside [0, 4194304]");
  // In range, but size + align leave no layout: an error at the op's line.
  TempFile f("ranges_layout.ops",
             "0 t kmem_cache_create cache=x size=4194304 align=3000000\n"
             "0 t kmem_cache_alloc obj=1 cache=x\n");
  CustomWorkload w;
  std::string err;
  REQUIRE(ops_workload(f.path(), &w, &err));
  RunResult r;
  CHECK_FALSE(run_custom(request({"unpatched"}, "v6.18"), w, &r, &err));
  CHECK(err.rfind(f.path() + ":1:1: kmem_cache_create: cache 'x' of size 4194304 (align 3000000) "
                  "cannot be laid out",
                  0) == 0);
}

TEST_CASE("kmalloc above KMALLOC_MAX_SIZE fails as the kernel does, never truncated", "[ranges]") {
  Mm mm(two_cpus());
  const Task t{0, kRootMemcg, 0};
  const uint64_t failed = mm.events()[Event::alloc_failed];
  const uint64_t small = mm.events()[Event::kmalloc];
  CHECK(mm.kmalloc(4294967304ull, GFP_KERNEL, t) == kNull);  // was kmalloc(8)
  CHECK(mm.kmalloc(KMALLOC_MAX_SIZE + 1, GFP_KERNEL, t) == kNull);
  CHECK(mm.events()[Event::alloc_failed] == failed + 2);
  CHECK(mm.events()[Event::kmalloc] == small);  // no 8-byte kmalloc
  const Ptr p = mm.kmalloc(KMALLOC_MAX_SIZE, GFP_KERNEL, t);  // order 10: the largest
  CHECK(p != kNull);
  mm.kfree(p, t);
  CHECK(mm.kvmalloc(uint64_t{1} << 32, GFP_KERNEL, t) == kNull);  // above INT_MAX

  // Through an op file: the NULL is a failed operation (-ENOMEM), its
  // kfree is kfree(NULL), and no 8-byte object was allocated.
  TempFile f("ranges_kmalloc.ops",
             "0 t kmalloc obj=1 size=4294967304\n0 t kfree obj=1\n"
             "0 t kmalloc obj=1 size=64\n0 t kfree obj=1\n");
  const RunResult r = run_ops(f.path(), request({"unpatched"}, "v6.18"));
  const PolicyResult& pr = r.workloads[0].policies[0];
  CHECK(pr.failures.at("ENOMEM") == 1);
  CHECK(pr.total[Event::kmalloc] == 1);  // only the 64-byte one
  CHECK(pr.total[Event::kmalloc_large] == 1);
  CHECK(pr.total[Event::kfree] == 1);
  CHECK(pr.kasan.empty());
}

TEST_CASE("nop nr past 32 bits is refused, and an enter submits at most an SQ", "[ranges]") {
  CHECK(parse_err("0 t nop ring=0 nr=100000000000\n") ==
        "t.ops:1:19: field 'nr': 100000000000 is outside [0, 4294967295]");
  CHECK(parse_err("0 t nop ring=0 nr=99999999999999999999999\n") ==
        "t.ops:1:19: field 'nr': 99999999999999999999999 is outside [0, 4294967295]");
  CHECK(parse_err("0 t nop ring=0 nr=-1\n") == "t.ops:1:19: field 'nr': -1 is outside [0, 4294967295]");
  CHECK(parse_err("0 t ring_create ring=0 sq=65536\n") ==
        "t.ops:1:27: field 'sq': 65536 is outside [1, 32768]");
  CHECK(parse_err("5000 t timed_begin\n") == "t.ops:1:1: field 'cpu': 5000 is outside [0, 4095]");
  // io_submit_sqes() takes min(to_submit, SQEs in the ring): an SQ of 5
  // entries is 8 (rounded up to a power of two), so 8 NOPs, not 100 or 2^32.
  TempFile f("ranges_nop.ops",
             "0 t ring_create ring=0 sq=5\n0 t nop ring=0 nr=100\n0 t nop ring=0 nr=4294967295\n");
  const RunResult r = run_ops(f.path(), request({"unpatched"}, "v6.18"));
  CHECK(r.workloads[0].policies[0].total[Event::sqe_submit] == 16);
  // Ops built by replay are checked too, before they run.
  Op op;
  op.kind = OpKind::nop;
  op.ring = 0;
  op.n = int64_t{1} << 40;
  std::string why;
  CHECK_FALSE(op_in_range(op, &why));
  CHECK(why == "field 'nr': 1099511627776 is outside [0, 4294967295]");
  op.n = 7;
  CHECK(op_in_range(op, &why));
}

TEST_CASE("nested repeats asking 2^64 operations are refused before anything runs", "[ranges]") {
  const std::string two64 =
      "repeat 4294967296\nrepeat 4294967296\n0 t timed_begin\nend\nend\n";
  CHECK(parse_err(two64) ==
        "t.ops:1:1: the program asks for 18446744073709551616 operations (repeats, calls and "
        "nop nr expanded), above the budget of 100000000 (--max-ops N raises it)");
  // Sixteen levels saturate the count instead of wrapping it.
  std::string deep;
  for (int i = 0; i < 16; ++i) deep += "repeat 4294967296\n";
  deep += "0 t timed_begin\n";
  for (int i = 0; i < 16; ++i) deep += "end\n";
  CHECK(parse_err(deep).find("asks for more than 2^100 operations") != std::string::npos);
  CHECK(parse_err("repeat 4294967297\nend\n") ==
        "t.ops:1:8: field 'repeat': 4294967297 is outside [0, 4294967296]");
  // An iteration or a call that does nothing still costs one: a loop of
  // 2^32 empty iterations was within the budget and spun (a fuzz hang).
  CHECK(parse_err("repeat 4294967296\nrepeat 0\n0 t timed_begin\nend\nend\n") ==
        "t.ops:1:1: the program asks for 4294967296 operations (repeats, calls and nop nr "
        "expanded), above the budget of 100000000 (--max-ops N raises it)");
  CHECK(parse_err("define e\nend\nrepeat 200000000\ncall e\nend\n") ==
        "t.ops:3:1: the program asks for 200000000 operations (repeats, calls and nop nr "
        "expanded), above the budget of 100000000 (--max-ops N raises it)");
  CHECK(parse_err("repeat 7\nend\n", OpLimits{7}) == "");
  // Calls expand with their arguments; the line named is the top-level
  // one that passes the budget.
  const std::string calls =
      "define m\nrepeat $n\n0 t timed_begin\nend\nend\n"
      "0 t timed_end\ncall m n=5\ncall m n=5\n";
  CHECK(parse_err(calls, OpLimits{11}) == "");
  CHECK(parse_err(calls, OpLimits{10}) ==
        "t.ops:8:1: the program asks for 11 operations (repeats, calls and nop nr expanded), "
        "above the budget of 10 (--max-ops N raises it)");
  // A nop counts its SQEs (at most the 32,768 of a full SQ).
  CHECK(parse_err("repeat 3\n0 t nop ring=0 nr=4294967295\nend\n", OpLimits{98304}) == "");
  CHECK(parse_err("repeat 3\n0 t nop ring=0 nr=4294967295\nend\n", OpLimits{98303}) != "");
  // Recursion is refused at parse time at the executor's depth.
  CHECK(parse_err("define r\ncall r\nend\ncall r\n") ==
        "t.ops:2:1: macro calls nested deeper than 16");
  // Arguments that double at every level of a recursive macro: the
  // expansion is bounded before it is parsed.
  const std::string growth =
      "define m\n0 t timed_begin\ncall m a=$a$a$a$a$a$a$a$a b=$b\n"
      "call m a=$a$a$a$a$a$a$a$b b=$b$b\nend\ncall m a=0123456789abcdef b=1\n";
  CHECK(parse_err(growth).find("macro expansion passes 67108864 bytes") != std::string::npos);
  // A repeat that never runs asks for nothing.
  CHECK(parse_err("repeat 0\nrepeat 4294967296\n0 t timed_begin\nend\nend\n") == "");
  // The thread's limits (the CLI's --max-ops) apply where none are passed.
  {
    const ScopedOpLimits raised(OpLimits{uint64_t{1} << 62});
    OpProgram p, q;
    std::string err;
    CHECK(parse_op_program(two64, "t.ops", &p, &err) == false);  // 2^64 is still above 2^62
    CHECK(parse_op_program("repeat 4294967296\n0 t timed_begin\nend\n", "t.ops", &q, &err));
  }
  CHECK(current_op_limits().max_ops == kDefaultMaxOps);
}

TEST_CASE("trace fields are read through their ranges", "[ranges]") {
  CHECK(trace_err("  a.out-2001    [5000] ..... 77.100001: kfree: call_site=x ptr=0x10") ==
        "18: field 'cpu': 5000 is outside [0, 4095]");
  CHECK(trace_err("  a.out-99999999 [003] ..... 77.100001: kfree: call_site=x ptr=0x10") ==
        "9: field 'pid': 99999999 is outside [0, 4194304]");
  CHECK(trace_err(kPrefix + "mm_page_alloc: page=0x1 pfn=5 order=11 migratetype=0 gfp_flags=0") ==
        "76: field 'order': 11 is outside [0, 10]");
  CHECK(trace_err(kPrefix + "kmem_cache_alloc: call_site=x ptr=0x10 bytes_req=4294967295 "
                            "bytes_alloc=8 gfp_flags=GFP_KERNEL") ==
        "89: field 'bytes_req': 4294967295 is outside [0, 4194304]");
  CHECK(trace_err(kPrefix + "kmalloc: call_site=x ptr=0x10 bytes_req=99999999999999999999 "
                            "bytes_alloc=8 gfp_flags=GFP_KERNEL") ==
        "80: field 'bytes_req': 99999999999999999999 is outside [0, 9223372036854775807]");
  CHECK(trace_err(kPrefix + "kmalloc: call_site=x ptr=0x10 bytes_req=8 bytes_alloc=8 "
                            "gfp_flags=GFP_KERNEL node=5000") ==
        "122: field 'node': 5000 is outside [-1, 1023]");
  CHECK(trace_err(kPrefix + "io_uring_create: ring 0000000012345678, fd 3 sq size 65536, "
                            "cq size 131072, flags 0x0") ==
        "93: field 'sq size': 65536 is outside [1, 32768]");
  CHECK(trace_err(kPrefix + "io_uring_submit_sqe: ring 0000000012345678, req 0000000012345679, "
                            "user_data 0x0, opcode 300, flags 0x0") ==
        "128: field 'opcode': 300 is outside [0, 255]");
  CHECK(trace_err(kPrefix + "sys_io_uring_enter(fd: 80000000, to_submit: 1)") ==
        "63: field 'fd': 80000000 is outside [0, 2147483647]");
  // In range: the `fields` option's raw 32-bit -1, a 20-digit pfn.
  CHECK(trace_err(kPrefix + "kmalloc: call_site=x ptr=0x10 bytes_req=8 bytes_alloc=8 "
                            "gfp_flags=GFP_KERNEL node=0xffffffff (-1)") == "");
  CHECK(trace_err(kPrefix + "mm_page_free: page=0x1 pfn=18446744073709551615 order=0") == "");
}

TEST_CASE("run-ops and replay exit 3 on failed operations, 0 with --allow-failures", "[ranges]") {
  TempFile ops("ranges_fail.ops", "0 t kmalloc obj=1 size=8388608\n0 t kfree obj=1\n");
  CliOutcome r = run_cli({"run-ops", ops.path(), "--profile", "none"});
  CHECK(r.status == 3);
  CHECK(r.err.find("1 operations failed (run-ops " + ops.path() + " A: 1 x -ENOMEM)") !=
        std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.out.find("FAILED A: 1 x -ENOMEM") != std::string::npos);
  r = run_cli({"run-ops", ops.path(), "--profile", "none", "--allow-failures"});
  CHECK(r.status == 0);
  CHECK(r.err.empty());

  // A traced kmalloc of 8 MiB: the model's page allocator has no order 11.
  TempFile trace("ranges_fail.txt",
                 kPrefix + "kmalloc: call_site=f+0x1/0x2 ptr=ffff888100000a00 bytes_req=8388608 "
                           "bytes_alloc=8388608 gfp_flags=GFP_KERNEL\n");
  r = run_cli({"replay", trace.path(), "--profile", "none"});
  CHECK(r.status == 3);
  CHECK(r.err.find("1 operations failed") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  r = run_cli({"replay", trace.path(), "--profile", "none", "--allow-failures"});
  CHECK(r.status == 0);
}

TEST_CASE("work budgets: --max-ops and --max-events name the number and the flag", "[ranges]") {
  TempFile ops("ranges_budget.ops", "repeat 3\n0 t kmalloc obj=1 size=8\n0 t kfree obj=1\nend\n");
  CliOutcome r = run_cli({"run-ops", ops.path(), "--profile", "none", "--max-ops", "5"});
  CHECK(r.status == 2);
  CHECK(r.err == "simcache: " + ops.path() +
                     ":1:1: the program asks for 6 operations (repeats, calls and nop nr "
                     "expanded), above the budget of 5 (--max-ops N raises it)\n");
  r = run_cli({"run-ops", ops.path(), "--profile", "none", "--max-ops", "6"});
  CHECK(r.status == 0);
  r = run_cli({"run-ops", ops.path(), "--profile", "none", "--max-ops", "5", "--emit-ops",
               "ranges_never_written.ops"});
  CHECK(r.status == 2);
  for (const char* bad : {"0", "-1", "x", "99999999999999999999"}) {
    r = run_cli({"run-ops", ops.path(), "--max-ops", bad});
    CHECK(r.status == 2);
    CHECK(r.err.find("--max-ops '") != std::string::npos);
  }

  TempFile trace("ranges_budget.txt", "# a\n# b\n# c\n");
  r = run_cli({"replay", trace.path(), "--profile", "none", "--max-events", "2"});
  CHECK(r.status == 2);
  CHECK(r.err == "simcache: " + trace.path() +
                     ":3: the trace has more than 2 lines, the replay budget (--max-events N "
                     "raises it)\n");
  r = run_cli({"replay", trace.path(), "--profile", "none", "--max-events", "3"});
  CHECK(r.status == 0);
}

TEST_CASE("task names past 65535 share one task instead of wrapping the index", "[ranges]") {
  OpNames n;
  uint16_t last = 0;
  for (int i = 0; i < 70000; ++i) last = n.task("t" + std::to_string(i), true);
  CHECK(last == 65535);
  CHECK(n.tasks.size() == OpNames::kMaxTasks);
  CHECK(n.tasks.back().name == "(more-tasks)");
  CHECK(n.task("t0", true) == 0);  // was 70000 - 65536 = 4464 names later: t65536 got 0
  CHECK(n.task("t65534", true) == 65534);
}
