// The one door in and the one door out (sim/io/): every input kind refuses
// devices and directories with one line naming the file, reads a pipe
// once, takes a UTF-8 BOM and caps its lines; every output refuses planted
// links, keeps devices, leaves no temporary behind and, within one
// command, reaches its target only when the whole command succeeded.
#include <catch2/catch.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sim/cli/cli.h"
#include "sim/io/input.h"
#include "sim/io/output.h"
#include "test_cost_util.h"

using namespace simcache::sim;
using simcache::testing::lines;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempDir;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

void expect_error(const CliOutcome& r, const std::string& fragment) {
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(fragment) != std::string::npos);
}

const std::string kTrace = repo_file("tests/data/traces/lkml-2019-kmem.txt");
const std::string kOps = repo_file("data/ops/waitv.ops");

// Every input a user names, as the command line that reads it.
std::vector<std::vector<std::string>> input_commands(const std::string& f) {
  const std::string tsv = repo_file("data/measurements/calibration.tsv");
  return {
      {"--config", f},
      {"run-ops", f, "--profile", "none"},
      {"replay", f, "--profile", "none"},
      {"--scenario", "rt-arm-loop", "--profile", "none", "--background-trace", f},
      {"sweep", f},
      {"merge", f},
      {"--scenario", "waitv", "--profile", f},
      {"validate", "--measurements", f},
      {"validate", "--measurements", tsv, "--mapping", f},
  };
}

}  // namespace

TEST_CASE("inputs: a device or a directory is one line naming the file, every kind", "[io]") {
  const TempDir d("kinds");
  for (const std::string& bad : {std::string("/dev/zero"), d.p.string()}) {
    const std::string why = bad == "/dev/zero" ? "is a device, not a file or a pipe"
                                               : "is a directory";
    for (const auto& args : input_commands(bad)) {
      INFO(args[0] << " " << args[1]);
      expect_error(run_cli(args), bad + ": cannot read ");
      expect_error(run_cli(args), why);
    }
  }
  // A missing file names the file and the reason.
  expect_error(run_cli({"replay", d / "nope.txt"}), "nope.txt: cannot read the trace: No such file");
}

TEST_CASE("inputs: a trace through a pipe is read once and replays as the file does", "[io]") {
  const TempDir d("fifo");
  const std::string fifo = d / "trace.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string text = read_text(kTrace);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << text; });
  const CliOutcome piped = run_cli({"replay", fifo, "--profile", "none", "--format", "json"});
  writer.join();
  const CliOutcome file = run_cli({"replay", kTrace, "--profile", "none", "--format", "json"});
  REQUIRE(piped.status == 0);
  REQUIRE(file.status == 0);
  auto events = [](const std::string& json) {
    const size_t at = json.find("\"trace_events_replayed\"");
    return at == std::string::npos ? std::string("none") : json.substr(at, 30);
  };
  // Before the one reader, the second pass read an emptied pipe: 0 events.
  CHECK(events(piped.out) == events(file.out));
  CHECK(events(file.out) != "none");
  CHECK(piped.out.find("\"trace_events_replayed\": 0,") == std::string::npos);
}

TEST_CASE("inputs: a UTF-8 byte-order mark is accepted in every format", "[io]") {
  const TempDir d("bom");
  const std::string bom = "\xEF\xBB\xBF";
  put(d / "c.toml", bom + "scenario = \"waitv\"\nprofile = \"none\"\n");
  CHECK(run_cli({"--config", d / "c.toml"}).status == 0);
  // The header and the first two rows: enough to parse, quick to validate.
  const std::string tsv = read_text(repo_file("data/measurements/calibration.tsv"));
  size_t three = 0;
  for (int n = 0; n < 3; ++n) three = tsv.find('\n', three) + 1;
  put(d / "m.tsv", bom + tsv.substr(0, three));
  const CliOutcome v = run_cli({"validate", "--measurements", d / "m.tsv", "--jobs", "2"});
  INFO(v.err);
  CHECK(v.status != 2);
  put(d / "o.ops", bom + read_text(kOps));
  CHECK(run_cli({"run-ops", d / "o.ops", "--profile", "none"}).status == 0);
  put(d / "t.txt", bom + read_text(kTrace));
  const CliOutcome t = run_cli({"replay", d / "t.txt", "--profile", "none", "--strict"});
  INFO(t.err);
  CHECK(t.status == 0);
}

TEST_CASE("inputs: a line past the limit names the limit and how to raise it", "[io]") {
  const TempDir d("long");
  put(d / "long.toml", "# " + std::string(input_limits().max_line + 10, 'x') + "\n");
  expect_error(run_cli({"--config", d / "long.toml"}),
               "long.toml:1: line longer than the limit of 1048576 bytes; "
               "SIMCACHE_LINE_LIMIT=BYTES raises it");
  put(d / "long.txt", "\n\n" + std::string(input_limits().max_line + 10, 'x') + "\n");
  expect_error(run_cli({"replay", d / "long.txt"}), "long.txt:3: line longer than the limit");
  // A line of exactly the limit is not past it, read whole or streamed.
  const std::string edge = "#" + std::string(input_limits().max_line - 1, 'x') + "\n";
  put(d / "edge.toml", edge + "scenario = \"nosuch\"\n");
  const CliOutcome e = run_cli({"--config", d / "edge.toml"});
  CHECK(e.err.find("line longer") == std::string::npos);
  CHECK(e.err.find("edge.toml:2: scenario") != std::string::npos);
  put(d / "edge.txt", edge);
  CHECK(run_cli({"replay", d / "edge.txt", "--profile", "none"}).err.find("line longer") ==
        std::string::npos);
  std::string why;
  std::string text;
  CHECK_FALSE(read_input(d / "long.txt", "the trace", &text, &why, 1000));
  CHECK(why.find("larger than its limit of 1000 bytes") != std::string::npos);
}

TEST_CASE("outputs: a planted link is refused for every output flag, its target kept", "[io]") {
  const TempDir d("links");
  put(d / "victim", "precious");
  fs::create_symlink(d / "victim", d / "link");
  const std::string link = d / "link";
  const std::vector<std::vector<std::string>> cmds = {
      {"--scenario", "waitv", "--profile", "none", "--output", link},
      {"--scenario", "sparse-fill", "--set", "slots=64", "--set", "installs=64", "--profile",
       "none", "--slabinfo", link},
      {"run-ops", kOps, "--profile", "none", "--emit-ops", link},
      {"run-ops", kOps, "--profile", "none", "--emit-trace", link},
      {"replay", kTrace, "--profile", "none", "--emit-ops", link},
      {"merge", kTrace, "--output", link},
  };
  for (const auto& c : cmds) {
    INFO(c[0] << " " << c[c.size() - 2]);
    expect_error(run_cli(c), "is a symbolic link; refusing");
    CHECK(read_text(d / "victim") == "precious");
    CHECK(fs::is_symlink(d / "link"));
    CHECK(d.names() == std::vector<std::string>{"link", "victim"});  // no temporary left
  }
}

TEST_CASE("outputs: a device stays a device, a directory is refused", "[io]") {
  const CliOutcome r =
      run_cli({"run-ops", kOps, "--profile", "none", "--emit-ops", "/dev/null"});
  CHECK(r.status == 0);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  const TempDir d("dirout");
  expect_error(run_cli({"run-ops", kOps, "--profile", "none", "--emit-trace", d.p.string()}),
               "is a directory");
}

TEST_CASE("outputs: --sysfs never touches a directory it did not make", "[io]") {
  const TempDir d("sysfs");
  fs::create_directories(d / "tree.tmp~");
  put(d / "tree.tmp~/mine", "user data");
  const std::vector<std::string> run = {"--scenario", "sparse-fill", "--set", "slots=64",
                                        "--set", "installs=64", "--set", "rounds=1",
                                        "--profile", "none", "--sysfs", d / "tree"};
  REQUIRE(run_cli(run).status == 0);
  CHECK(read_text(d / "tree.tmp~/mine") == "user data");
  CHECK(fs::exists(d / "tree/kmalloc-32/objs_per_slab"));
  expect_error(run_cli(run), "exists; give a new directory");  // never replaced
  CHECK(d.names() == std::vector<std::string>{"tree", "tree.tmp~"});
}

TEST_CASE("outputs: a command that fails on a later output writes none of them", "[io]") {
  const TempDir d("batch");
  // --output is produced first, then --slabinfo-at fails on its snapshot name.
  const CliOutcome r = run_cli({"--scenario", "sparse-fill", "--set", "slots=64", "--set",
                                "installs=64", "--set", "rounds=1", "--profile", "none",
                                "--output", d / "r.txt", "--slabinfo", d / "s.txt",
                                "--slabinfo-at", "nosuch"});
  expect_error(r, "--slabinfo-at 'nosuch'");
  CHECK(d.names().empty());
  // A bad output path is refused before anything is computed or written.
  const CliOutcome early = run_cli({"--scenario", "waitv", "--profile", "none", "--output",
                                    d / "r.txt", "--sysfs", d / "no/such/dir"});
  expect_error(early, "--sysfs");
  CHECK(d.names().empty());
}

TEST_CASE("outputs: a batch puts its files in place only on commit", "[io]") {
  const TempDir d("commit");
  std::string err;
  {
    OutputBatch b;
    REQUIRE(write_file_atomic(d / "a.txt", "A", &err));
    OutputStream s;
    REQUIRE(s.open(d / "b.txt", &err));
    std::fputs("B", s.file());
    REQUIRE(s.finish(&err));
    CHECK(d.names().size() == 2);  // two temporaries, no target yet
    CHECK_FALSE(fs::exists(d / "a.txt"));
  }  // dropped: both removed
  CHECK(d.names().empty());
  {
    OutputBatch b;
    REQUIRE(write_file_atomic(d / "a.txt", "A", &err));
    REQUIRE(b.commit(&err));
  }
  CHECK(read_text(d / "a.txt") == "A");
  CHECK(d.names() == std::vector<std::string>{"a.txt"});
  {
    OutputBatch outer;
    {
      OutputBatch inner;  // part of the outer one
      REQUIRE(write_file_atomic(d / "b.txt", "B", &err));
      REQUIRE(inner.commit(&err));
    }
    CHECK_FALSE(fs::exists(d / "b.txt"));  // still staged in the outer batch
  }  // the outer one dropped: nothing placed, nothing left
  CHECK(d.names() == std::vector<std::string>{"a.txt"});
}

TEST_CASE("outputs: concurrent writers each rename a whole file", "[io]") {
  const TempDir d("race");
  const std::string a(1 << 20, 'a'), b(1 << 20, 'b');
  std::string ea, eb;
  bool oka = false, okb = false;
  std::thread t1([&] { oka = write_file_atomic(d / "out", a, &ea); });
  std::thread t2([&] { okb = write_file_atomic(d / "out", b, &eb); });
  t1.join();
  t2.join();
  CHECK(oka);
  CHECK(okb);
  const std::string got = read_text(d / "out");
  CHECK((got == a || got == b));
  CHECK(d.names() == std::vector<std::string>{"out"});
}

TEST_CASE("inputs: read whole, every byte kept, the line cap exact at any chunk boundary",
          "[io]") {
  const TempDir d("whole");
  const size_t max = input_limits().max_line;
  std::string text, why;
  bool bom = true;
  // Lines of every length up to 300 bytes, across several 64 KiB reads.
  std::string many;
  for (size_t i = 0; many.size() < 300000; ++i) many += std::string(i % 300, 'a' + i % 26) + "\n";
  put(d / "many.txt", many);
  REQUIRE(read_input(d / "many.txt", "the trace", &text, &why, 0, &bom));
  CHECK(text == many);
  CHECK_FALSE(bom);
  put(d / "bom.txt", "\xEF\xBB\xBF" + many);
  REQUIRE(read_input(d / "bom.txt", "the trace", &text, &why, 0, &bom));
  CHECK(text == many);
  CHECK(bom);
  // The last line, without its newline: at the cap it is read, one byte
  // more is an error naming its line.
  put(d / "edge.txt", "a\n" + std::string(max, 'x'));
  CHECK(read_input(d / "edge.txt", "the trace", &text, &why));
  CHECK(text.size() == max + 2);
  put(d / "over.txt", "a\nb\n" + std::string(max + 1, 'x'));
  CHECK_FALSE(read_input(d / "over.txt", "the trace", &text, &why));
  CHECK(why.find("over.txt:3: line longer than the limit") != std::string::npos);
  CHECK(text.empty());
  // A long line that ends exactly where a 64 KiB read ends, then more.
  const std::string at_chunk = std::string(65535, 'y') + "\n" + "tail\n";
  put(d / "chunk.txt", at_chunk);
  REQUIRE(read_input(d / "chunk.txt", "the trace", &text, &why));
  CHECK(text == at_chunk);
}
