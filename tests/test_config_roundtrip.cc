// --dump-config round trips (issue 19): a run's flags, dumped with
// --dump-config and fed back with --config, give the same report. What is
// compared is the report with the run record's command line taken out (the
// one line that must differ: it records `--config FILE` instead of the
// flags); every other byte must be the same. Also: every flag of the
// report run reaches the dump, seeds above INT64_MAX survive it, and a
// broken --mapping or an unknown [set] key is an error naming its file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using Catch::Matchers::Contains;
using simcache::testing::lines;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempFile;
using Args = std::vector<std::string>;

namespace {

CliOutcome roundtrip_ok(const Args& args) {
  CliOutcome o = run_cli(args);
  INFO(o.err);
  REQUIRE(o.status == 0);
  return o;
}

Args with(Args a, const Args& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// The JSON report without its "command_line" line (there must be one).
std::string without_command_line(const std::string& json) {
  std::string out;
  size_t found = 0;
  for (size_t at = 0; at < json.size();) {
    size_t nl = json.find('\n', at);
    nl = nl == std::string::npos ? json.size() : nl + 1;
    const std::string line = json.substr(at, nl - at);
    if (line.find("\"command_line\": ") != std::string::npos) ++found;
    else out += line;
    at = nl;
  }
  CHECK(found == 1);
  return out;
}

// Runs `flags` directly, dumps them, runs the dump: the reports (stdout,
// or the --output file) must be the same bytes but the command line; so
// must the status and stderr.
void round_trip(const std::string& name, const Args& flags, const std::string& output = "") {
  INFO(name);
  const CliOutcome direct = run_cli(flags);
  INFO(direct.err);
  REQUIRE((direct.status == 0 || direct.status == 3));
  const std::string direct_text = output.empty() ? direct.out : read_text(output);
  const CliOutcome dump = roundtrip_ok(with(flags, {"--dump-config"}));
  const TempFile cfg("roundtrip_" + name + ".toml", dump.out);
  INFO(dump.out);
  const CliOutcome again = run_cli({"--config", cfg.path()});
  INFO(again.err);
  CHECK(again.status == direct.status);
  CHECK(again.err == direct.err);
  const std::string again_text = output.empty() ? again.out : read_text(output);
  REQUIRE(!direct_text.empty());
  CHECK(without_command_line(again_text) == without_command_line(direct_text));
  // And the dump of the dump is the dump.
  CHECK(roundtrip_ok({"--config", cfg.path(), "--dump-config"}).out == dump.out);
}

const Args kSmallFill = {"--scenario", "sparse-fill", "--set",    "slots=1024",
                         "--set",      "installs=64", "--set",    "rounds=1",
                         "--set",      "warmup=0",    "--format", "json"};

}  // namespace

TEST_CASE("config round trip: --fail, the largest seed, columns with knobs, --set, --kernel",
          "[config][roundtrip]") {
  round_trip("fail-nth", with(kSmallFill, {"--fail", "slab=nth:10", "--profile", "none"}));
  round_trip("seed-max", with(kSmallFill, {"--seed", "18446744073709551615", "--fail",
                                           "slab=0.05", "--fail", "page_alloc=nth:3"}));
  round_trip("seed-int64", with(kSmallFill, {"--seed", "9223372036854775808", "--fail",
                                             "memcg_charge=0.1", "--profile", "none"}));
  round_trip("columns",
             with(kSmallFill, {"--policy", "node-slab+prefill(max=256,mode=lazy),unpatched,"
                                           "node-slab+prefill-grow+bulk_refill=16",
                               "--set", "policy.req_alloc_batch=4", "--kernel", "v7.1",
                               "--all-counters", "--no-sites", "--explain"}));
  round_trip("waitv", {"--scenario", "waitv", "--kernel", "v6.13", "--policy",
                       "unpatched,waitv-cache(size=64)", "--format", "json", "--cache",
                       "kmalloc-512", "--latency-hist", "--jobs", "2", "--measurements",
                       "none", "--allow-failures"});
  round_trip("kernels", with(kSmallFill, {"--kernel", "v6.12,v6.13", "--policy",
                                          "unpatched,unpatched@v6.18", "--set",
                                          "policy.req_alloc_batch=4"}));
}

TEST_CASE("config round trip: a preset, a background trace, --output", "[config][roundtrip]") {
  round_trip("preset", {"--scenario", "cqwait", "--kernel", "v6.4.4", "--format", "json",
                        "--seed", "7", "--profile", "none"});
  // rt-arm-loop has default columns of its own (not "unpatched" alone).
  round_trip("background",
             {"--scenario", "rt-arm-loop", "--background-trace",
              repo_file("tests/data/traces/lkml-2019-kmem.txt"), "--set", "messages=200",
              "--format", "json", "--profile", "none"});
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("simcache_rt_" + std::to_string(::getpid()) + ".json"))
                              .string();
  round_trip("output", with(kSmallFill, {"--output", out, "--mapping",
                                         repo_file("data/profiles/mapping.toml")}),
             out);
  std::filesystem::remove(out);
}

// Every flag of the report run but list, config and dump-config is in the
// dump, and loading the dump gives the value the command line gave.
TEST_CASE("config round trip: every report flag reaches the dump", "[config][roundtrip]") {
  const std::map<std::string, std::string> values = {
      {"scenario", "waitv"},     {"policy", "unpatched,waitv-cache"},
      {"kernel", "v6.13"},       {"machine", "vm-2vcpu"},
      {"max-work", "5000000"}, {"seeds", "5"},
      {"seed", "18446744073709551615"},
      {"format", "csv"},         {"jobs", "3"},
      {"fail", "slab=nth:10"},   {"set", "rounds=2"},
      {"background-trace", "t.txt"}};
  size_t checked = 0;
  for (const Flag& flag : report_flags()) {
    const std::string name(flag.name);
    if (name == "list" || name == "config" || name == "dump-config") continue;
    INFO("--" << name);
    Args args = {"--scenario", "waitv", "--", "--"};
    args.resize(2);
    args.push_back("--" + name);
    if (flag.takes != Takes::nothing)
      args.push_back(values.count(name) ? values.at(name) : "value-of-" + name);
    ParsedFlags direct;
    const Command* cmd = nullptr;
    std::string text;
    REQUIRE(parse_command(args, true, &cmd, &direct, &text) == Parsed::run);
    const CliOutcome dump = roundtrip_ok(with(args, {"--dump-config"}));
    const TempFile cfg("everyflag.toml", dump.out);
    ParsedFlags loaded;
    std::string error;
    REQUIRE(load_config(cfg.path(), &loaded, &error));
    if (name == "set") {
      CHECK(std::count(loaded.sets.begin(), loaded.sets.end(),
                       std::pair<std::string, std::string>("rounds", "2")) == 1);
    } else if (name == "fail") {
      CHECK(loaded.fails == direct.fails);
    } else {
      REQUIRE(loaded.v.count(name));
      CHECK(loaded.v.at(name) == direct.v.at(name));
    }
    ++checked;
  }
  CHECK(checked >= 25);
}

TEST_CASE("config: seeds read as integers or as strings of digits, nothing else",
          "[config][roundtrip]") {
  const std::vector<std::pair<std::string, std::string>> good = {
      {"0", "0"},
      {"9223372036854775807", "9223372036854775807"},
      {"\"9223372036854775808\"", "9223372036854775808"},
      {"\"18446744073709551615\"", "18446744073709551615"},
      {"\"42\"", "42"}};
  for (const auto& [toml, want] : good) {
    const TempFile cfg("seed_ok.toml", "scenario = \"waitv\"\nseed = " + toml + "\n");
    ParsedFlags f;
    std::string error;
    INFO(toml << ": " << error);
    REQUIRE(load_config(cfg.path(), &f, &error));
    CHECK(f.v.at("seed") == want);
  }
  for (const std::string bad : {"-1", "\"18446744073709551616\"", "\"-1\"", "\"+1\"", "\" 1\"",
                                "\"0x10\"", "\"\"", "1.5", "true"}) {
    const TempFile cfg("seed_bad.toml", "scenario = \"waitv\"\n\nseed = " + bad + "\n");
    const CliOutcome o = run_cli({"--config", cfg.path()});
    INFO(bad << ": " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains(cfg.path() + ":3: seed: expected a non-negative integer"));
  }
}

TEST_CASE("config: an unknown or out-of-range [set] key names the file, the line and the key",
          "[config]") {
  const TempFile cfg("badset.toml", "scenario = \"waitv\"\n[set]\nrounds = 1\nbogus = 3\n");
  for (const Args& extra : {Args{}, Args{"--dump-config"}, Args{"--format", "json"}}) {
    const CliOutcome o = run_cli(with({"--config", cfg.path()}, extra));
    INFO(o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains(cfg.path() + ":4: set.bogus: unknown parameter 'bogus'"));
  }
  // The scenario may come from the command line, the keys from the file.
  const TempFile only_set("onlyset.toml", "[set]\n\nslots = 99\n");
  const CliOutcome o = run_cli({"--config", only_set.path(), "--scenario", "waitv"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains(only_set.path() + ":3: set.slots: unknown parameter 'slots'"));
  // A preset: each of its scenarios must take the key.
  const TempFile preset("presetset.toml", "scenario = \"cqwait\"\n[set]\nslots = 1\n");
  CHECK_THAT(run_cli({"--config", preset.path()}).err,
             Contains(preset.path() + ":3: set.slots: unknown parameter 'slots'"));
  // A value out of range, too.
  const TempFile range("rangeset.toml", "scenario = \"waitv\"\n[set]\nrounds = -5\n");
  const CliOutcome r = run_cli({"--config", range.path()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains(range.path() + ":3: set.rounds: parameter 'rounds'"));
  // The same key from the command line replaces the file's: its own error.
  const CliOutcome c = run_cli({"--config", cfg.path(), "--set", "bogus=1", "--profile", "none"});
  CHECK(c.status == 2);
  CHECK_THAT(c.err, !Contains(cfg.path()));
  CHECK_THAT(c.err, Contains("unknown parameter 'bogus'"));
}

TEST_CASE("a broken --mapping is refused even where nothing would use it", "[config][mapping]") {
  const TempFile bad("badmapping.toml", "not toml [\n");
  const std::string missing = bad.path() + ".missing";
  const Args base = {"--scenario", "waitv", "--set", "rounds=1"};
  for (const Args& unused : {Args{}, Args{"--measurements", "none"}, Args{"--profile", "none"},
                             Args{"--profile", "none", "--measurements", "none"}}) {
    for (const std::string& m : {bad.path(), missing}) {
      const CliOutcome o = run_cli(with(with(base, unused), {"--mapping", m}));
      INFO(o.err);
      CHECK(o.status == 2);
      CHECK(o.out.empty());
      CHECK(lines(o.err) == 1);
      CHECK_THAT(o.err, Contains("simcache: " + m + (m == missing ? ": " : ":1: syntax")));
    }
  }
  // A good one is used where it is needed, and accepted where it is not.
  const std::string good = repo_file("data/profiles/mapping.toml");
  CHECK(run_cli(with(base, {"--mapping", good, "--profile", "none"})).status == 0);
  CHECK(run_cli(with(base, {"--mapping", good})).status == 0);
}

TEST_CASE("config: a kernel list or a column's kernel that does not resolve names the line",
          "[config]") {
  // --dump-config resolves the columns the run has, each on its own kernel.
  const CliOutcome both = run_cli({"--scenario", "sparse-fill", "--kernel", "v6.12,v6.13",
                                   "--policy", "unpatched,unpatched@v6.18", "--dump-config"});
  CHECK(both.status == 0);
  CHECK_THAT(both.out, Contains("columns = [ 'unpatched@v6.12', 'unpatched@v6.18', "
                                "'unpatched@v6.13' ]"));
  const CliOutcome bad = run_cli({"--scenario", "sparse-fill", "--kernel", "v6.18,v6.13",
                                  "--policy", "prefill", "--dump-config"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("'v6.13' has none"));
  const TempFile list("badkernels.toml", "scenario = \"sparse-fill\"\nkernel = \"v6.12,v9\"\n");
  const CliOutcome a = run_cli({"--config", list.path()});
  CHECK(a.status == 2);
  CHECK(lines(a.err) == 1);
  CHECK_THAT(a.err, Contains(list.path() + ":2: kernel: unknown kernel profile 'v9'"));
  const TempFile twice("twicekernels.toml", "scenario = \"sparse-fill\"\nkernel = \"v6.12,v6.12\"\n");
  CHECK_THAT(run_cli({"--config", twice.path()}).err,
             Contains(twice.path() + ":2: kernel: kernel 'v6.12' is named twice"));
  const TempFile col("badcolumn.toml",
                     "scenario = \"sparse-fill\"\n\npolicy = [\"unpatched@v5.4\"]\n");
  const CliOutcome c = run_cli({"--config", col.path()});
  CHECK(c.status == 2);
  CHECK_THAT(c.err, Contains(col.path() + ":3: policy: column 'unpatched@v5.4': unknown kernel"));
}
