// The op format: the shipped op files reproduce the built-in drivers
// count for count; parse errors name file, line and column; macros,
// repeats and the executor's checks.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "sim/io/input.h"
#include "sim/replay/ops.h"
#include "sim/replay/replay.h"
#include "test_replay_util.h"

using namespace simcache;
using namespace simcache::sim;
using namespace simcache::testing;

namespace {

const std::vector<std::string> kPolicies = {
    "unpatched", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill",
    "node-slab-account+slab-nomerge", "futex-return-to-cache", "waitv-account"};

bool parse_error(const std::string& text, std::string* err) {
  OpProgram p;
  return !parse_op_program(text, "t.ops", &p, err);
}

}  // namespace

TEST_CASE("data/ops files match the built-in scenarios count for count", "[ops]") {
  for (const std::string kernel : {"v6.18", "v7.1"}) {
    for (const char* s : {"sparse-fill", "arm-fail", "waitv"}) {
      INFO(s << " on " << kernel);
      std::vector<std::string> pols;
      for (const std::string& p : kPolicies)  // the ones this kernel runs
        if (kernel == "v6.18" || p != "waitv-account") pols.push_back(p);
      const RunRequest req = request(pols, kernel);
      const RunResult scen = run_scenario(s, req);
      const RunResult ops = run_ops(source_path(std::string("data/ops/") + s + ".ops"), req);
      require_same_counts(scen, ops);
      for (const auto& p : ops.workloads[0].policies) CHECK(p.kasan.empty());
      CHECK(ops.workloads[0].op_unit == scen.workloads[0].op_unit);
    }
  }
}

TEST_CASE("the op files do real work: sparse-fill installs 15 x 4096 timed", "[ops]") {
  const RunResult r = run_ops(source_path("data/ops/sparse-fill.ops"), request({"unpatched"}, "v6.18"));
  const PolicyResult& p = r.workloads[0].policies[0];
  CHECK(p.timed_ops == 15u * 4096u);
  CHECK(p.timed[Event::msg_ring_send_fd] == 15u * 4096u);
  CHECK(p.total[Event::ring_create] == 1u + 1u + 3u + 15u);
  CHECK(p.total[Event::ring_teardown] == p.total[Event::ring_create]);
}

TEST_CASE("op parse errors name the file, line and column", "[ops]") {
  std::string err;
  CHECK(parse_error("2 bench ring_create ring=0\n2 bench bogus ring=0\n", &err));
  CHECK(err == "t.ops:2:9: unknown operation 'bogus'");
  CHECK(parse_error("2 bench ring_create ring=x\n", &err));
  CHECK(err == "t.ops:1:26: ring='x': expected an integer");
  CHECK(parse_error("2 bench ring_create sq=4\n", &err));
  CHECK(err == "t.ops:1:20: ring_create needs ring=");
  CHECK(parse_error("2 bench futex_wait ring=0 colour=blue\n", &err));
  CHECK(err == "t.ops:1:27: futex_wait takes no key 'colour' (valid: ring, match)");
  CHECK(parse_error("repeat 3\n2 bench timed_begin\n", &err));
  CHECK(err == "t.ops:1:1: repeat without 'end'");
  CHECK(parse_error("end\n", &err));
  CHECK(err == "t.ops:1:1: 'end' without repeat or define");
  CHECK(parse_error("bench 2 timed_begin\n", &err));
  CHECK(err.rfind("t.ops:1:1: 'bench': expected a CPU number", 0) == 0);
  CHECK(parse_error("2 bench kmalloc obj=1 size=8 gfp=GFP_BOGUS\n", &err));
  CHECK(err == "t.ops:1:34: gfp='GFP_BOGUS': unknown gfp flag 'GFP_BOGUS'");
  CHECK(parse_error("call nothing\n", &err));
  CHECK(err == "t.ops:1:6: unknown macro 'nothing'");
}

TEST_CASE("op runtime errors: unknown handles and double allocations stop the run", "[ops]") {
  const std::string path = "ops_runtime_error.ops";
  {
    std::ofstream f(path);
    f << "2 bench kmalloc obj=1 size=64\n2 bench kmalloc obj=1 size=64\n";
  }
  CustomWorkload w;
  std::string err;
  REQUIRE(ops_workload(path, &w, &err));
  RunResult r;
  CHECK_FALSE(run_custom(request({"unpatched"}, "v6.18"), w, &r, &err));
  CHECK(err == path + ":2:1: kmalloc: object 1 is still allocated");
  std::remove(path.c_str());
}

TEST_CASE("a hand-written op file: kmalloc, caches, macros and leaks", "[ops]") {
  const std::string path = "ops_hand.ops";
  {
    std::ofstream f(path);
    f << "unit object ns\n"
         "task app memcg=user\n"
         "define pair\n"
         "1 app kmalloc obj=$id size=$size gfp=GFP_KERNEL_ACCOUNT site=my_site\n"
         "1 app kfree obj=$id\n"
         "end\n"
         "1 app kmem_cache_create cache=my_cache size=200 flags=HWCACHE_ALIGN|ACCOUNT\n"
         "1 app round_begin measured=1\n"
         "1 app timed_begin\n"
         "repeat 10\n"
         "call pair id=7 size=100\n"
         "1 app kmem_cache_alloc obj=8 cache=my_cache\n"
         "4 app kmem_cache_free obj=8\n"
         "end\n"
         "1 app timed_end\n"
         "1 app round_end ops=20\n"
         "1 app kmalloc obj=9 size=32   # never freed: a leak\n";
  }
  const RunResult r = run_ops(path, request({"unpatched", "slab-nomerge"}, "v6.18"));
  for (size_t c = 0; c < 2; ++c) {
    const PolicyResult& p = r.workloads[0].policies[c];
    CHECK(p.timed[Event::kmalloc] == 10);
    CHECK(p.timed[Event::kfree] == 10);
    CHECK(p.timed[Event::kmem_cache_alloc] == 10);
    CHECK(p.timed[Event::kmem_cache_free] == 10);
    CHECK(p.timed[Event::memcg_post_alloc_hook] == 20);  // both accounted
    CHECK(p.total[Event::kmalloc] == 11);
    REQUIRE(p.kasan.size() == 1);
    CHECK(p.kasan[0].kind == "leak");
  }
  CHECK(r.workloads[0].op_unit == "object");
  std::remove(path.c_str());
}

TEST_CASE("a call node runs its expansion every time: 15 levels, 2 calls each, doubling arguments", "[ops]") {
  // m1 calls m2 twice, ..., m14 calls m15 twice: 2^14 calls of m15, each
  // one kmalloc and one kfree. The arguments double at every level (the
  // executor resolves a call node once, not once per run of it).
  const std::string path = "ops_fanout.ops";
  {
    std::ofstream f(path);
    f << "unit object ns\n";
    for (int i = 1; i < 15; ++i)
      f << "define m" << i << "\ncall m" << i + 1 << " a=$a$a id=$id\ncall m" << i + 1
        << " a=$a$a id=$id\nend\n";
    f << "define m15\n0 t kmalloc obj=$id size=64\n0 t kfree obj=$id\nend\n"
         "call m1 a=0123456789abcdef id=3\n";
  }
  const RunResult r = run_ops(path, request({"unpatched"}, "v6.18"));
  const PolicyResult& p = r.workloads[0].policies[0];
  CHECK(p.total[Event::kmalloc] == 16384);
  CHECK(p.total[Event::kfree] == 16384);
  CHECK(p.kasan.empty());
  std::remove(path.c_str());
}

TEST_CASE("an op file is streamed: no top-level nodes held, the same counts and errors as its text", "[ops]") {
  const RunRequest req = request({"unpatched", "node-slab+bulk-refill+prefill"}, "v6.18");
  for (const std::string name : {"sparse-fill", "arm-fail", "waitv"}) {
    INFO(name);
    const std::string path = source_path("data/ops/" + name + ".ops");
    OpProgram loaded;
    std::string err;
    REQUIRE(load_op_file(path, &loaded, &err));
    CHECK(loaded.nodes.empty());  // read again, a piece at a time, by each run
    CHECK(loaded.source != nullptr);
    std::string text;
    REQUIRE(read_input(path, "the op file", &text, &err));
    auto in_memory = std::make_shared<OpProgram>();
    REQUIRE(parse_op_program(text, path, in_memory.get(), &err));
    CHECK_FALSE(in_memory->nodes.empty());
    CHECK(loaded.macros.size() == in_memory->macros.size());
    CHECK(loaded.names.tasks.size() == in_memory->names.tasks.size());
    RunResult r;
    REQUIRE(run_custom(req, ops_program_workload(in_memory), &r, &err));
    require_same_counts(r, run_ops(path, req));
  }
  // Errors: the same message from the file as from its text, including
  // the ones found only once the whole file is read (an unclosed block
  // after a later parse error; the budget, named at its line).
  for (const std::string text :
       {"1 app kmalloc obj=1 size=8\nrepeat 3\n1 app kfree obj=1\n", "end\n",
        "define m\n1 app kfree obj=$x\nend\ncall m y=1\n1 app bogus\n",
        "repeat 4294967296\nrepeat 4294967296\n1 app kfree obj=1\nend\nend\n",
        "task app memcg=user\n\n# c\n1 app kmalloc obj=1 size=8 gfp=NOPE\n",
        "define a\ncall nope\nend\ncall a\n"}) {
    INFO(text);
    const std::string path = "ops_stream.ops";
    {
      std::ofstream f(path);
      f << text;
    }
    OpProgram a, b;
    std::string ea, eb;
    CHECK_FALSE(parse_op_program(text, path, &a, &ea));
    CHECK_FALSE(load_op_file(path, &b, &eb));
    CHECK(ea == eb);
    CHECK(ea.rfind(path + ":", 0) == 0);
    std::remove(path.c_str());
  }
  // A macro body may call a macro defined further down (it runs after the
  // whole file is read): counted once every macro is known.
  const std::string fwd = "ops_forward.ops";
  {
    std::ofstream f(fwd);
    f << "define a\ncall b id=$id\nend\ncall a id=3\ndefine b\n"
         "1 app kmalloc obj=$id size=8\n1 app kfree obj=$id\nend\ncall a id=4\n";
  }
  OpProgram text_prog;
  std::string text, ferr;
  REQUIRE(read_input(fwd, "the op file", &text, &ferr));
  CHECK(parse_op_program(text, fwd, &text_prog, &ferr));
  INFO(ferr);
  const RunResult r = run_ops(fwd, req);
  CHECK(r.workloads[0].policies[0].total[Event::kmalloc] == 2);
  {
    const ScopedOpLimits tight(OpLimits{3});  // 4 operations: the budget names the last call
    OpProgram over;
    CHECK_FALSE(load_op_file(fwd, &over, &ferr));
    CHECK(ferr == fwd + ":9:1: the program asks for 4 operations (repeats, calls and nop nr "
                        "expanded), above the budget of 3 (--max-ops N raises it)");
  }
  std::remove(fwd.c_str());
}

TEST_CASE("run-ops reads an op file from a pipe: checked once, every column from the spool", "[ops]") {
  const std::string path = source_path("data/ops/arm-fail.ops");
  std::string text, err;
  REQUIRE(read_input(path, "the op file", &text, &err));
  const std::string fifo = "ops_fifo_" + std::to_string(::getpid());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    for (size_t at = 0; fd >= 0 && at < text.size();) {
      const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    if (fd >= 0) ::close(fd);
  });
  const RunRequest req = request({"unpatched", "futex-return-to-cache"}, "v6.18");
  const RunResult piped = run_ops(fifo, req);
  writer.join();
  std::remove(fifo.c_str());
  require_same_counts(run_ops(path, req), piped);
}

TEST_CASE("run-ops --emit-ops writes a flat op file that runs to the same counts", "[ops]") {
  const std::string out = "emitted_arm_fail.ops";
  std::string err;
  const RunRequest req = request({"unpatched"}, "v6.18");
  REQUIRE(emit_ops_run(source_path("data/ops/arm-fail.ops"), out, false, req, &err));
  require_same_counts(run_ops(source_path("data/ops/arm-fail.ops"), req), run_ops(out, req));
  std::remove(out.c_str());
}

TEST_CASE("op-file errors escape the file's control bytes, macro calls included", "[ops]") {
  // A macro body whose op takes a key made of carriage returns: the error
  // quotes the key, and used to carry the raw bytes (fuzz_ops).
  const std::string text =
      "unit object ns\ntask app memcg=user\ndefine pair\n1 app send_fd \r\robj=$id\nend\n"
      "call pair id=1\n";
  OpProgram p;
  std::string err;
  REQUIRE_FALSE(parse_op_program(text, "t.ops", &p, &err));
  INFO(err);
  CHECK(err.find("'\\r\\robj'") != std::string::npos);
  for (char c : err) CHECK(static_cast<unsigned char>(c) >= 0x20);
  // The same through a line of its own.
  OpProgram q;
  REQUIRE_FALSE(parse_op_program("unit object ns\ntask app memcg=user\n1 app send_fd \x01k=1\n",
                                 "t.ops", &q, &err));
  CHECK(err.find("\\x01k") != std::string::npos);
}

TEST_CASE("every op name is found by its text, and only by it", "[ops]") {
  // op_kind_by_name() looks among the names of one length and first
  // letter (futex_wait, futex_wake and free_pages share one slot).
  using simcache::sim::op_kind_by_name;
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < simcache::sim::kNumOpKinds; ++i)
    names.emplace(simcache::sim::op_name(static_cast<simcache::sim::OpKind>(i)));
  REQUIRE(names.size() == simcache::sim::kNumOpKinds);
  // A text is found exactly when it is a name, and as that name.
  auto check = [&](const std::string& text) {
    INFO("'" << text << "'");
    simcache::sim::OpKind got{};
    const bool found = op_kind_by_name(text, &got);
    CHECK(found == (names.count(text) == 1));
    if (found) CHECK(simcache::sim::op_name(got) == text);
  };
  for (size_t i = 0; i < simcache::sim::kNumOpKinds; ++i) {
    const auto k = static_cast<simcache::sim::OpKind>(i);
    const std::string name(simcache::sim::op_name(k));
    simcache::sim::OpKind got{};
    REQUIRE(op_kind_by_name(name, &got));
    CHECK(got == k);
    std::string near = name, upper = name;
    near.back() = near.back() == 'z' ? 'y' : 'z';
    upper[0] = static_cast<char>(upper[0] - 'a' + 'A');
    for (const std::string& t : {near, upper, name + "_", name.substr(0, name.size() - 1),
                                 name.substr(1)})
      check(t);
  }
  for (const char* miss : {"", "futex_wakd", "free_pagez", "futex_wai", "\xc3\xa9", "0",
                           "kmallocccccccccccccccccccccccccccccccccc", "zzzz"})
    check(miss);
}
