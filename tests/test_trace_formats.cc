// Every trace layout ftrace and trace-cmd print, across kernel versions:
// one real line of each parsed field by field (lines captured on 6.18,
// the 2019 LKML capture, and the older formats of the fixtures), the
// captures of tests/data/traces/ replayed count for count across their
// layouts, and trace-cmd's binary trace.dat against its own report.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "model/gfp.h"
#include "sim/replay/background_trace.h"
#include "sim/replay/text.h"
#include "sim/replay/trace.h"
#include "test_replay_util.h"

using namespace simcache;
using namespace simcache::sim;
using namespace simcache::testing;

namespace {

std::string fixture(const std::string& name) { return source_path("tests/data/traces/" + name); }

TraceEvent parse(const std::string& line) {
  TraceEvent ev;
  size_t col = 0;
  std::string why;
  INFO(line);
  INFO(why);
  const bool ok = parse_trace_line(line, &ev, &col, &why);
  INFO(why);
  REQUIRE(ok);
  return ev;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace

TEST_CASE("trace layouts: every prefix ftrace and trace-cmd print", "[replay][traces]") {
  struct Case {
    const char* line;
    const char* task;
    int64_t pid;
    uint32_t cpu;
    int64_t ts_ns;
  };
  const char* kFields = " kmalloc: call_site=alloc_bprm+0x45/0x220 ptr=00000000f276800e "
                        "bytes_req=408 bytes_alloc=512 gfp_flags=GFP_KERNEL|__GFP_ZERO node=-1 "
                        "accounted=false";
  const Case cases[] = {
      // ftrace on 6.x: task-pid, [CPU], five flag characters
      {"             cat-22191   [001] ..... 36620.513300:", "cat", 22191, 1, 36620513300000},
      // 4.x-5.x: four flag characters; 2019 LKML capture: no task-pid column
      {"    systemd-udevd-302   [001] ....   512.000010:", "systemd-udevd", 302, 1, 512000010000},
      {"[002] ....   808.188917:", "", -1, 2, 808188917000},
      // before 3.x and trace-cmd report: no flags column; report -t: 9 digits
      {"          <idle>-0     [000]  4511.300001:", "<idle>", 0, 0, 4511300001000},
      {"             cat-22091 [000] 36613.129549269:", "cat", 22091, 0, 36613129549269},
      // trace-cmd report of a buffer instance: the instance's name first
      {"simcache_fx:              cat-22091 [000] 36613.129549269:", "cat", 22091, 0,
       36613129549269},
      // trace-cmd report -l: the CPU without brackets, the flags after it
      {"simcache_fx:      cat-22091   0..... 36613.129549:", "cat", 22091, 0, 36613129549000},
      {"   kworker/u48:3-118     23d..1. 12345.678910:", "kworker/u48:3", 118, 23,
       12345678910000},
      // ftrace's latency-format: microseconds, a delay mark, a lone ':'
      {"     cat-22191     1..... 36620513300us : ", "cat", 22191, 1, 36620513300000},
      {"     cat-22191     1d.h1. 36620513300us+: ", "cat", 22191, 1, 36620513300000},
      {"     cat-22191     1..... 36620513300us!: ", "cat", 22191, 1, 36620513300000},
      // the record-tgid option's column
      {"            true-27849   (  27849) [000] ..... 37134.782728:", "true", 27849, 0,
       37134782728000},
      {"     kworker/0:1-27      (-------) [000] d..1. 37134.782728:", "kworker/0:1", 27, 0,
       37134782728000},
      // task names with blanks and ':'
      {" gvfsd:dbus main-901     [002] ...1. 12345.678920:", "gvfsd:dbus main", 901, 2,
       12345678920000},
  };
  for (const Case& c : cases) {
    const std::string line = std::string(c.line) + kFields;  // the event's views point into it
    const TraceEvent ev = parse(line);
    CHECK(ev.kind == TraceKind::kmalloc);
    CHECK(ev.task == c.task);
    CHECK(ev.pid == c.pid);
    CHECK(ev.cpu == c.cpu);
    CHECK(ev.ts_ns == c.ts_ns);
    CHECK(ev.call_site == "alloc_bprm+0x45/0x220");
    CHECK(ev.ptr == 0xf276800eu);
    CHECK(ev.bytes_req == 408);
    CHECK(ev.bytes_alloc == 512);
    CHECK(ev.gfp == "GFP_KERNEL|__GFP_ZERO");
    CHECK(ev.node == -1);
    CHECK(ev.accounted == 0);
  }
}

TEST_CASE("trace layouts: kmem fields of old and new kernels, symbolic or raw", "[replay][traces]") {
  const std::string p = "  cat-1 [000] ..... 1.000001: ";
  std::string line;
  // parse() of a line kept alive: the event's views point into it.
  auto at = [&](std::string l) { return parse(line = std::move(l)); };
  // 4.x-5.x: gfp_flags last, node= only on the _node events, raw call sites
  TraceEvent ev = at(p + "kmalloc: call_site=ffffffff81213ee5 ptr=ffff88003b1b7280 "
                            "bytes_req=96 bytes_alloc=96 gfp_flags=GFP_KERNEL");
  CHECK(ev.call_site == "ffffffff81213ee5");
  CHECK(ev.ptr == 0xffff88003b1b7280u);
  CHECK(ev.node == -1);
  CHECK(ev.accounted == -1);
  ev = at(p + "kmalloc_node: call_site=0xffffffff8176c7a0 ptr=0xffff880039b2c000 "
                 "bytes_req=1536 bytes_alloc=2048 gfp_flags=GFP_KERNEL|__GFP_ZERO node=1");
  CHECK(ev.kind == TraceKind::kmalloc);
  CHECK(ev.call_site == "0xffffffff8176c7a0");
  CHECK(ev.node == 1);
  // 6.x: node= and accounted= on every alloc, name= on kmem_cache_alloc (6.18)
  ev = at(p + "kmem_cache_alloc: call_site=alloc_empty_file+0x3c/0x110 "
                 "ptr=0000000029cd59b7 name=filp bytes_req=184 bytes_alloc=192 "
                 "gfp_flags=GFP_KERNEL node=-1 accounted=true");
  CHECK(ev.kind == TraceKind::kmem_cache_alloc);
  CHECK(ev.name == "filp");
  CHECK(ev.accounted == 1);
  // the fields option (6.18, as printed): hex with decimal annotations, a
  // symbol with its address's annotation, a bool as its annotation alone
  ev = at("             cat-22191   [001] ..... 36620.513295: kmem_cache_alloc: "
             "call_site=alloc_empty_file+0x3c/0x110 (-2123515396) ptr=0xffff888106074240 "
             "(-131387243412928) name=filp bytes_req=0xb8 (184) bytes_alloc=0xc0 (192) "
             "gfp_flags=0xcc0 (3264) node=0xffffffff (-1) accounted=(1)");
  CHECK(ev.call_site == "alloc_empty_file+0x3c/0x110");
  CHECK(ev.ptr == 0xffff888106074240u);
  CHECK(ev.bytes_req == 184);
  CHECK(ev.bytes_alloc == 192);
  CHECK(ev.gfp == "0xcc0");
  CHECK(ev.node == -1);
  CHECK(ev.accounted == 1);
  ev = at("             cat-22191   [001] ..... 36620.513360: kfree: "
             "call_site=ida_alloc_range+0x39b/0x400 (-2111698821) ptr=0x0 (0)");
  CHECK(ev.kind == TraceKind::kfree);
  CHECK(ev.ptr == 0);
  // trace-cmd report: the kmem plugin's "(site)" first; -R: raw values, no accounted
  ev = at("simcache_fx:              cat-22091 [000] 36613.129549269: kmalloc:              "
             "(alloc_bprm+0x45) call_site=alloc_bprm+0x45 ptr=0xffff888121850e00 bytes_req=408 "
             "bytes_alloc=512 gfp_flags=GFP_KERNEL|__GFP_ZERO node=-1 accounted=false");
  CHECK(ev.call_site == "alloc_bprm+0x45");
  CHECK(ev.bytes_req == 408);
  ev = at("simcache_fx:              cat-22091 [000] 36613.129631: kmalloc:               "
             "call_site=lsm_blob_alloc+0x3b ptr=0xffff88810024f3c0 bytes_req=11 bytes_alloc=16 "
             "gfp_flags=0x400dc0 node=-1");
  CHECK(ev.gfp == "0x400dc0");
  CHECK(ev.accounted == -1);
  // a raw gfp value decodes by the kernel's bits 0-22: 0x400dc0 is
  // ACCOUNT|ZERO|RECLAIM|IO|FS; bits above 22 (lockdep's 0x4000000 here)
  // depend on the build and are dropped; leftover hex after names too
  gfp_t g = 0;
  std::string why;
  REQUIRE(parse_gfp("0x400dc0", true, &g, &why));
  CHECK(g == (GFP_KERNEL_ACCOUNT | __GFP_ZERO));
  REQUIRE(parse_gfp("0xcc0", true, &g, &why));
  CHECK(g == GFP_KERNEL);
  REQUIRE(parse_gfp("0x4000cc0", true, &g, &why));
  CHECK(g == GFP_KERNEL);
  REQUIRE(parse_gfp("0xa20", true, &g, &why));  // GFP_ATOMIC before 6.3: 0x200 was __GFP_ATOMIC
  CHECK(g == (__GFP_HIGH | __GFP_KSWAPD_RECLAIM));
  REQUIRE(parse_gfp("0x2820", true, &g, &why));  // GFP_NOWAIT-ish: HIGH|KSWAPD_RECLAIM|NOWARN
  CHECK(g == (__GFP_HIGH | __GFP_KSWAPD_RECLAIM | __GFP_NOWARN));
  REQUIRE(parse_gfp("GFP_KERNEL|0x100", false, &g, &why));
  CHECK(g == (GFP_KERNEL | __GFP_ZERO));
  CHECK(format_gfp(kernel_gfp_bits(0x400cc0)) == "GFP_KERNEL_ACCOUNT");
  ev = at("simcache_fx:              cat-22091 [000] 36613.129575: kfree:                "
             "(ida_alloc_range+0x39b) call_site=ida_alloc_range+0x39b ptr=(nil)");
  CHECK(ev.ptr == 0);
  // headers of each layout are no events
  for (const char* h : {"cpus=2", "# tracer: nop", "#    -----------------",
                        "CPU 5 is empty", "version = 7"})
    CHECK(at(h).kind == TraceKind::none);
}

TEST_CASE("trace layouts: a bad line is one error naming file, line and field",
          "[replay][traces]") {
  struct Bad {
    const char* line;
    const char* msg;  // after "FILE:1:"
  };
  const Bad bad[] = {
      {"     cat-22191     1..... 36620513300us : kmalloc: call_site=f ptr=zz bytes_req=8",
       "68: ptr='zz': not a valid value"},
      {"     cat-22191   [001] ..... 1.000001: kmem_cache_alloc: call_site=f ptr=0x1 "
       "bytes_req=8 accounted=(7)",
       "101: field 'accounted': 7 is outside [0, 1]"},
      {"simcache_fx:  cat-1 [000] 1.000001: kmalloc: call_site=f ptr=0x1",
       "45: no bytes_req= or bytes_alloc= field"},
      {"     cat-22191     1..... : kmalloc: call_site=f ptr=0x1 bytes_req=8",
       "6: no [CPU] column"},
      {"     cat-22191  [4096] ..... 1.000001: kmalloc: call_site=f ptr=0x1 bytes_req=8",
       "18: field 'cpu': 4096 is outside [0, 4095]"},
  };
  const std::string path = "trace_formats_bad.txt";
  for (const Bad& b : bad) {
    INFO(b.line);
    std::ofstream(path) << b.line << "\n";
    const CliOutcome r = run_cli({"replay", path, "--strict", "--profile", "none"});
    CHECK(r.status == 2);
    CHECK(r.err == "simcache: " + path + ":1:" + b.msg + "\n");
  }
  // The background trace's loader names the field too.
  std::ofstream(path) << bad[0].line << "\n";
  BackgroundTrace t;
  std::string err;
  CHECK_FALSE(load_background_trace(path, &t, &err));
  CHECK(err == path + ":1: field 'ptr': ptr='zz': not a valid value (column 68)");
  std::remove(path.c_str());
}

TEST_CASE("trace layouts: one 6.18 capture as ftrace, latency-format and record-tgid print it "
          "replays to the same counts",
          "[replay][traces]") {
  RunRequest req = request({"unpatched", "slab-nomerge"}, "v6.18");
  TraceSummary s;
  const RunResult plain = run_trace(fixture("ftrace-618-plain.txt"), req, &s);
  CHECK(s.events == 60);
  CHECK(s.skipped == 0);
  CHECK(metric(plain, "trace_events_replayed") == 20);
  CHECK(metric(plain, "trace_free_before_capture") == 31);  // 20 + 31 + 9: every event
  CHECK(metric(plain, "trace_kfree_null") == 9);
  const RunResult lat = run_trace(fixture("ftrace-618-latency.txt"), req, &s);
  CHECK(s.events == 60);
  require_same_counts(plain, lat);
  // The fields option prints gfp flags as raw numbers, which replay
  // decodes by the kernel's bit values: the same counts, gfp-dependent
  // routing (accounting, zeroing) included.
  const RunResult fields = run_trace(fixture("ftrace-618-fields.txt"), req, &s);
  CHECK(s.events == 60);
  require_same_counts(plain, fields);
  run_trace(fixture("ftrace-618-tgid.txt"), req, &s);
  CHECK(s.events == 30);
}

TEST_CASE("trace.dat: read through libtracecmd, the same counts as its trace-cmd report",
          "[replay][traces]") {
  RunRequest req = request({"unpatched", "slab-nomerge"}, "v6.18");
  TraceSummary sd, st;
  const RunResult dat = run_trace(fixture("kmem-cat.dat"), req, &sd);
  const RunResult txt = run_trace(fixture("kmem-cat.txt"), req, &st);
  CHECK(sd.dat);
  CHECK_FALSE(st.dat);
  CHECK(sd.lines == 549);  // a record a line
  CHECK(st.lines == 550);  // and the report's "cpus=2"
  CHECK(sd.events == 549);
  CHECK(st.events == 549);
  CHECK(sd.skipped == 0);
  require_same_counts(txt, dat);
  CHECK(metric(dat, "trace_events_replayed") == 417);
  CHECK(metric(dat, "trace_free_before_capture") == 60);
  CHECK(metric(dat, "trace_kfree_null") == 72);
  CHECK(total(dat, Event::kmalloc) == 10);
  CHECK(total(dat, Event::kmem_cache_alloc) == 231);
  CHECK(metric(dat, "site:alloc_empty_file:allocs") == 33);  // "alloc_empty_file+0x3c"
  // As a background trace: the same ops, gaps to the nanosecond.
  BackgroundTrace a, b;
  std::string err;
  INFO(err);
  REQUIRE(load_background_trace(fixture("kmem-cat.dat"), &a, &err));
  REQUIRE(load_background_trace(fixture("kmem-cat.txt"), &b, &err));
  CHECK(a.events == 549);
  CHECK(a.events == b.events);
  CHECK(a.objects == b.objects);
  CHECK(a.span_ns == b.span_ns);
  REQUIRE(a.cpus.size() == b.cpus.size());
  for (size_t c = 0; c < a.cpus.size(); ++c) {
    REQUIRE(a.cpus[c].ops.size() == b.cpus[c].ops.size());
    for (size_t i = 0; i < a.cpus[c].ops.size(); ++i) {
      CHECK(a.cpus[c].ops[i].gap_ns == b.cpus[c].ops[i].gap_ns);
      CHECK(a.cpus[c].ops[i].obj == b.cpus[c].ops[i].obj);
      CHECK(a.cpus[c].ops[i].size == b.cpus[c].ops[i].size);
    }
  }
}

TEST_CASE("trace.dat: damaged, cut short or over budget is one line and status 2",
          "[replay][traces][cli]") {
  const std::string good = slurp(fixture("kmem-cat.dat"));
  REQUIRE(good.size() == 135649);
  const std::string path = "trace_formats_bad.dat";
  auto replay = [&](const std::string& bytes, std::vector<std::string> extra = {}) {
    std::ofstream(path, std::ios::binary) << bytes;
    std::vector<std::string> args = {"replay", path, "--profile", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  };
  const std::string unreadable =
      "simcache: " + path +
      ": not a trace.dat libtracecmd can read (damaged, cut short or of an unknown version)\n";
  for (size_t cut : {size_t{10}, size_t{12}, size_t{5000}, size_t{120000}}) {
    INFO(cut);
    const CliOutcome r = replay(good.substr(0, cut));
    CHECK(r.status == 2);
    CHECK(r.err == unreadable);
  }
  // Two bytes of an event's print format that crash libtraceevent's
  // parser (found by fuzz_trace): the child reading the file dies, the
  // replay gives one line.
  std::string crash = good;
  crash[90202] = '3';  // 1-based offsets 90203 and 95557, as cmp -l gives them
  crash[95556] = '9';
  const CliOutcome c = replay(crash);
  CHECK(c.status == 2);
  CHECK(c.err == "simcache: " + path +
                     ": not a trace.dat libtracecmd can read (it stopped on signal 11 reading it: "
                     "damaged)\n");
  std::string flipped = good;
  for (size_t i = 200; i < flipped.size(); i += 9973) flipped[i] = static_cast<char>(~flipped[i]);
  CHECK(replay(flipped).err == unreadable);
  CliOutcome r = replay(good, {"--max-events", "100"});
  CHECK(r.status == 2);
  CHECK(r.err == "simcache: " + path +
                     ": the trace has more than 100 records, the replay budget (--max-events N "
                     "raises it)\n");
  // A bad record names it: "FILE:record N".
  BackgroundTrace t;
  std::string err;
  CHECK_FALSE(load_background_trace(path + "-missing", &t, &err));
  CHECK(err.find(path + "-missing: cannot read the background trace") == 0);
  std::remove(path.c_str());
}

TEST_CASE("numeric fields: the in-line decimal path reads what the full parser reads",
          "[replay][traces][text]") {
  // parse_field() and parse_field_u64() read short plain decimals in line
  // and hand everything else (signs, hex, 19+ digits, out of range,
  // junk) to the full parser: both ways give the same value or the same
  // error.
  const char* values[] = {"0",       "1",          "10",      "20",     "21",
                          "7",          "0007",    "4095",   "4096",
                          "-1",      "-0",         "0x10",    "0X1f",   "12a",
                          "",        "+5",         " 5",      "1e3",    "999999999999999999",
                          "1000000000000000000", "9223372036854775807", "9223372036854775808",
                          "18446744073709551615", "18446744073709551616", "99999999999999999999"};
  const std::pair<int64_t, int64_t> ranges[] = {
      {0, 4095}, {-5, 5}, {INT64_MIN, INT64_MAX}, {10, 20}};
  for (const char* v : values) {
    for (const auto& [lo, hi] : ranges) {
      INFO("'" << v << "' in [" << lo << ", " << hi << "]");
      int64_t a = -42, b = -42;
      std::string wa, wb;
      const bool ok_a = parse_field("f", v, lo, hi, &a, &wa);
      const bool ok_b = parse_field_text("f", v, lo, hi, &b, &wb);
      CHECK(ok_a == ok_b);
      CHECK(a == b);
      CHECK(wa == wb);
    }
    for (const auto& [lo, hi] : {std::pair<uint64_t, uint64_t>{0, UINT64_MAX},
                                 std::pair<uint64_t, uint64_t>{1, 4096}}) {
      INFO("'" << v << "' in [" << lo << ", " << hi << "] unsigned");
      uint64_t a = 42, b = 42;
      std::string wa, wb;
      const bool ok_a = parse_field_u64("f", v, lo, hi, &a, &wa);
      const bool ok_b = parse_field_u64_text("f", v, lo, hi, &b, &wb);
      CHECK(ok_a == ok_b);
      CHECK(a == b);
      CHECK(wa == wb);
    }
  }
  int64_t x = 0;
  std::string why;
  CHECK(parse_field("cpu", "4095", 0, 4095, &x, &why));
  CHECK(x == 4095);
  CHECK_FALSE(parse_field("cpu", "4096", 0, 4095, &x, &why));
  CHECK(why == "field 'cpu': 4096 is outside [0, 4095]");
}

TEST_CASE("tokens: the word-at-a-time scan finds the blank the plain loop finds",
          "[replay][traces][text]") {
  // token_end() compares eight bytes at a time: every offset of the blank
  // within a word and across a word's end, a tab beside a space, bytes
  // with the high bit set (UTF-8, 0xff), and on both sides of the blank
  // the byte one bit from it (0x21 for a space, 0x08 for a tab: XORed
  // with the blank it is 0x01, which a borrow from the blank's zero turns
  // into a false hit in the neighbouring byte), no blank at all, and a
  // start past the first blank.
  auto plain = [](std::string_view s, size_t i) {
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    return i;
  };
  std::vector<std::string> lines = {"", " ", "\t", "a", "abcdefgh", "abcdefghi", "ab\tcd ef",
                                    "\xff\xfe\x80\x81 x", "!!!!!!!!!!!!\n\n\n\n ",
                                    "call_site=do_sys_openat2+0x9c/0x160 ptr=ffff888000001000"};
  for (size_t len = 1; len <= 20; ++len)
    for (size_t at = 0; at < len; ++at)
      for (char blank : {' ', '\t'}) {
        std::string s(len, 'x');
        s[at] = blank;
        if (at + 1 < len) s[at + 1] = static_cast<char>(blank ^ 1);  // a borrow's false hit
        if (at > 0) s[at - 1] = static_cast<char>(blank ^ 1);
        if (at > 1) s[at - 2] = static_cast<char>(0x80 | blank);
        lines.push_back(s);
      }
  uint64_t state = 12345;  // a fixed pseudo-random mix of blanks and others
  for (int n = 0; n < 200; ++n) {
    std::string s;
    for (int k = 0; k < 40; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const unsigned r = static_cast<unsigned>(state >> 59);  // 0..31
      s += r == 0 ? ' ' : r == 1 ? '\t' : r == 2 ? '!' : r == 3 ? '\b' : static_cast<char>(0x1f + r * 8);
    }
    lines.push_back(s);
  }
  for (const std::string& s : lines)
    for (size_t i = 0; i <= s.size(); ++i) {
      INFO("'" << s << "' from " << i);
      CHECK(token_end(s, i) == plain(s, i));
    }
}
