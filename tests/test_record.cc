// The run record (docs/output.md "Run record"): the cost profile's and
// every input's SHA-256 is what `sha256sum` prints for the file; run-ops
// and replay carry the command line, the profile and their input; the
// JSON configuration keeps its types and resolves `kernel` / `profile`.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "sim/cli/cli.h"
#include "sim/report/record.h"
#include "sim/run/build_info.h"
#include "test_cost_util.h"

using namespace simcache::sim;
using simcache::testing::read_text;
using simcache::testing::repo_file;
using simcache::testing::TempDir;
using nlohmann::json;

namespace {

// The digest `sha256sum FILE` prints (coreutils), independent of simcache.
std::string sha256sum(const std::string& path) {
  FILE* p = ::popen(("sha256sum '" + path + "'").c_str(), "r");
  REQUIRE(p);
  char buf[65] = {};
  const size_t n = std::fread(buf, 1, 64, p);
  ::pclose(p);
  REQUIRE(n == 64);
  return std::string(buf, 64);
}

json run_json(std::vector<std::string> args) {
  args.push_back("--format");
  args.push_back("json");
  const CliOutcome o = run_cli(args);
  INFO(o.err);
  REQUIRE(o.status == 0);
  return json::parse(o.out);
}

}  // namespace

TEST_CASE("record: SHA-256 of the standard test vectors", "[record]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("record: the cost profile's hash is what sha256sum prints", "[record]") {
  for (const char* rel : {"tests/data/test-profile.toml", "data/profiles/i7-12700KF.toml"}) {
    const std::string path = repo_file(rel);
    const json j = run_json({"--scenario", "sparse-fill", "--set", "rounds=1", "--set", "warmup=0",
                             "--profile", path, "--measurements", "none"});
    CHECK(j["record"]["cost_profile_sha256"] == sha256sum(path));
  }
  // The shipped measurements and the mapping that placed them, each hashed.
  const json j = run_json({"--scenario", "sparse-fill", "--set", "rounds=1", "--set", "warmup=0"});
  const json& in = j["record"]["inputs"];
  REQUIRE(in.size() == 2);
  CHECK(in[0]["role"] == "measurements");
  CHECK(in[0]["sha256"] == sha256sum(repo_file("data/measurements/calibration.tsv")));
  CHECK(in[1]["role"] == "mapping");
  CHECK(in[1]["sha256"] == sha256sum(repo_file("data/profiles/mapping.toml")));
}

TEST_CASE("record: run-ops and replay carry the command line, the profile and the input",
          "[record]") {
  const std::string profile = repo_file("tests/data/test-profile.toml");
  const std::string ops = repo_file("data/ops/sparse-fill.ops");
  const std::string trace = repo_file("tests/data/traces/lkml-2019-kmem.txt");
  for (const auto& [cmd, file] : {std::pair<std::string, std::string>{"run-ops", ops},
                                  std::pair<std::string, std::string>{"replay", trace}}) {
    INFO(cmd);
    const json j = run_json({cmd, file, "--profile", profile});
    const json& rec = j["record"];
    CHECK(rec["command_line"] ==
          "simcache " + cmd + " " + file + " --profile " + profile + " --format json");
    CHECK(rec["cost_profile"] == "test");
    CHECK(rec["cost_profile_sha256"] == sha256sum(profile));
    CHECK(rec["kernel_profile"]["name"] == "v6.18");
    REQUIRE(rec["inputs"].size() == 1);
    CHECK(rec["inputs"][0]["path"] == file);
    CHECK(rec["inputs"][0]["sha256"] == sha256sum(file));
  }
  // A trace through a pipe: hashed from what was read.
  const TempDir d("record_fifo");
  const std::string fifo = d / "trace.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string text = read_text(trace);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << text; });
  const CliOutcome o = run_cli({"replay", fifo, "--profile", "none", "--format", "json"});
  writer.join();
  REQUIRE(o.status == 0);
  CHECK(json::parse(o.out)["record"]["inputs"][0]["sha256"] == sha256sum(trace));
}

TEST_CASE("record: JSON configuration values keep their types, defaults resolved",
          "[record]") {
  const json j = run_json({"--scenario", "sparse-fill", "--set", "rounds=1", "--set", "warmup=0",
                           "--policy", "unpatched,node-slab+prefill(max=256)", "--profile", "none"});
  const json& kp = j["record"]["kernel_profile"];
  CHECK(kp["node_cache_max"] == 128);
  CHECK(kp["has_node_cache"] == true);
  CHECK(kp["file_table_gfp"] == "GFP_KERNEL_ACCOUNT|__GFP_ZERO");
  const json& c0 = j["workloads"][0]["policies"][0]["config"];
  CHECK(c0["policy.futex_return_to_cache"] == false);
  CHECK(c0["policy.bulk_refill"] == 0);
  CHECK(c0["policy.node_alloc"] == "kmalloc");
  CHECK(c0["mm.nr_cpus"] == 20);
  // `kernel` / `profile`: what the run used.
  CHECK(c0["policy.io_alloc_cache_max"] == 128);
  CHECK(c0["policy.futex_cache_max"] == 32);
  CHECK(c0["policy.waitv_account"] == "noaccount");
  CHECK(c0["policy.cqwait_sleep"] == "io_schedule");
  CHECK(c0["policy.obj_stock_slots"] == 1);
  REQUIRE(c0["policy.slab_min_partial"].is_object());
  CHECK(c0["policy.slab_min_partial"]["kmalloc-32"] == 5);
  const json& c1 = j["workloads"][0]["policies"][1]["config"];
  CHECK(c1["policy.prefill_max"] == 256);
  // On 7.1: the accounted WAITV gfp and NR_OBJ_STOCK slots.
  const json k = run_json({"--scenario", "sparse-fill", "--set", "rounds=1", "--set", "warmup=0",
                           "--kernel", "v7.1", "--profile", "none"});
  const json& c = k["workloads"][0]["policies"][0]["config"];
  CHECK(c["policy.waitv_account"] == "account");
  CHECK(c["policy.obj_stock_slots"] == 5);
}

TEST_CASE("run-ops: --emit-ops beside --emit-trace is refused, not half done", "[record][ops]") {
  const TempDir d("emit_both");
  const CliOutcome o = run_cli({"run-ops", repo_file("data/ops/sparse-fill.ops"), "--profile",
                                "none", "--emit-ops", d / "a.ops", "--emit-trace", d / "b.trace"});
  CHECK(o.status == 2);
  CHECK(o.err.find("--emit-ops and --emit-trace") != std::string::npos);
  CHECK(d.entries() == 0);
}

TEST_CASE("record: every compiled-in table, with what sha256sum prints for its source",
          "[record]") {
  // The binary's tables of record (model/*.def, sim/*.def): each listed,
  // in order, with the digest of the file it was built from.
  std::vector<std::string> want;
  for (const auto& e : std::filesystem::recursive_directory_iterator(repo_file("model")))
    if (e.path().extension() == ".def") want.push_back(e.path().string());
  for (const auto& e : std::filesystem::recursive_directory_iterator(repo_file("sim")))
    if (e.path().extension() == ".def") want.push_back(e.path().string());
  std::sort(want.begin(), want.end());
  REQUIRE(want.size() >= 10);
  for (const std::string& cmd : {std::string("--scenario"), std::string("run-ops")}) {
    INFO(cmd);
    const json j = cmd == "run-ops"
                       ? run_json({cmd, repo_file("data/ops/sparse-fill.ops"), "--profile", "none"})
                       : run_json({cmd, "waitv", "--profile", "none"});
    const json& tables = j["record"]["compiled_in"];
    REQUIRE(tables.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      CHECK(repo_file(tables[i]["file"].get<std::string>()) == want[i]);
      CHECK(tables[i]["sha256"] == sha256sum(want[i]));
    }
  }
  // The CSV carries them too, one record line each.
  const CliOutcome csv = run_cli({"--scenario", "waitv", "--profile", "none", "--format", "csv"});
  REQUIRE(csv.status == 0);
  CHECK(csv.out.find(",record,compiled_in.model/kernel/policies.def," +
                     sha256sum(repo_file("model/kernel/policies.def"))) != std::string::npos);
}

TEST_CASE("record: a --sysfs tree carries the run record as a dot file", "[record]") {
  // tools/mm/slabinfo skips names that start with a dot, so the record
  // sits in the tree without being read as a cache.
  const TempDir d("record_sysfs");
  const std::string tree = (d.p / "tree").string();
  const std::string profile = repo_file("tests/data/test-profile.toml");
  const CliOutcome o = run_cli({"--scenario", "sparse-fill", "--set", "slots=64", "--set",
                                "installs=64", "--set", "rounds=1", "--policy", "node-slab+prefill",
                                "--profile", profile, "--measurements", "none", "--sysfs", tree});
  INFO(o.err);
  REQUIRE(o.status == 0);
  const json j = json::parse(read_text(d.p / "tree/.simcache-record.json"));
  CHECK(j["scenario"] == "sparse-fill");
  CHECK(j["policy"] == "node-slab+prefill");
  CHECK(j["config"]["policy.prefill"] == "always");  // typed: names, numbers, bools
  CHECK(j["config"]["policy.prefill_max"] == 4096);
  CHECK(j["config"]["policy.slab_nomerge"] == false);
  CHECK(j["record"]["command_line"].get<std::string>().find("--sysfs " + tree) !=
        std::string::npos);
  CHECK(j["record"]["cost_profile_sha256"] == sha256sum(profile));
  CHECK(j["record"]["compiled_in"].size() >= 10);
  // Every other entry is a cache directory or an alias link.
  for (const auto& e : std::filesystem::directory_iterator(d.p / "tree"))
    if (e.path().filename().string()[0] != '.') CHECK(e.is_directory());
}

TEST_CASE("record: every sweep line says what reproduces it, and merge requires it",
          "[record][sweep]") {
  const TempDir d("record_sweep");
  const std::string grid = repo_file("data/grids/sparse-fill.toml");
  const std::string out = (d.p / "s.jsonl").string();
  const CliOutcome o = run_cli({"sweep", grid, "--shard", "1/40", "--jobs", "2", "--quiet",
                                "--output", out});
  INFO(o.err);
  REQUIRE(o.status == 0);
  const std::string text = read_text(out);
  size_t lines = 0;
  for (size_t from = 0; from < text.size(); ++lines) {
    const size_t nl = text.find('\n', from);
    const json j = json::parse(text.substr(from, nl - from));
    from = nl + 1;
    const json& r = j["record"];
    CHECK(r["reproduce"] == "simcache sweep " + grid);  // not --shard, --jobs, --output
    CHECK(r["git_commit"] == simcache::build_git_commit());
    CHECK(r["grid_sha256"] == sha256sum(grid));
    CHECK(r["cost_profile_sha256"] == sha256sum(repo_file("data/profiles/i7-12700KF.toml")));
  }
  CHECK(lines >= 5);
  // --profile changes every line's time, so it is part of what reproduces
  // a line (the one flag that is).
  const std::string profile = repo_file("tests/data/test-profile.toml");
  const CliOutcome withp = run_cli({"sweep", grid, "--shard", "1/40", "--profile", profile,
                                    "--jobs", "2", "--quiet"});
  REQUIRE(withp.status == 0);
  const json pl = json::parse(withp.out.substr(0, withp.out.find('\n')));
  CHECK(pl["record"]["reproduce"] == "simcache sweep " + grid + " --profile " + profile);
  CHECK(pl["record"]["cost_profile_sha256"] == sha256sum(profile));
  // merge's CSV keeps each line's record in its last four columns.
  const CliOutcome csv = run_cli({"merge", out, "--format", "csv"});
  REQUIRE(csv.status == 0);
  CHECK(csv.out.substr(0, csv.out.find('\n')).ends_with(
      ",reproduce,git_commit,grid_sha256,cost_profile_sha256"));
  const std::string row = csv.out.substr(csv.out.find('\n') + 1);
  CHECK(row.substr(0, row.find('\n')).ends_with(
      "," + simcache::sim::shell_command({"sweep", grid}) + "," + simcache::build_git_commit() +
      "," + sha256sum(grid) + "," + sha256sum(repo_file("data/profiles/i7-12700KF.toml"))));
  // A line without its record does not merge: one line naming file and line.
  const std::string bare = (d.p / "bare.jsonl").string();
  json first = json::parse(text.substr(0, text.find('\n')));
  first.erase("record");
  std::ofstream(bare) << first.dump() << "\n";
  const CliOutcome m = run_cli({"merge", bare});
  CHECK(m.status == 2);
  CHECK(m.err == "simcache: " + bare + ":1: field 'record': missing\n");
}

TEST_CASE("sweep: a line's time interval and typed config are the report's, for the same point", "[sweep]") {
  // The 90 % model interval a sweep line carries is the one `simcache`
  // prints for the same configuration (both log-normal, from the
  // profile's posterior).
  const std::string grid = repo_file("data/grids/sparse-fill.toml");
  const CliOutcome o = run_cli({"sweep", grid, "--shard", "0/50", "--quiet"});
  REQUIRE(o.status == 0);
  const json line = json::parse(o.out.substr(0, o.out.find('\n')));
  REQUIRE(line["status"] == "ok");
  const json& p = line["params"];
  std::string column = line["policy"];  // with the point's knobs, as the sweep spells it
  for (const auto& [k, v] : line["knobs"].items()) column += "+" + k + "=" + v.get<std::string>();
  std::vector<std::string> args = {"--scenario", line["scenario"], "--kernel", line["kernel"],
                                   "--policy", column};
  for (const char* k : {"slots", "installs", "rounds"})
    args.insert(args.end(), {"--set", std::string(k) + "=" + p[k].dump()});
  const json r = run_json(args);
  const json& t = r["workloads"][0]["policies"][0]["time"];
  // The report's JSON prints 3 decimals (116.489 for 116.4888): 1e-5.
  CHECK(t["per_op_ns"].get<double>() == Approx(line["ns_per_op"].get<double>()).epsilon(1e-5));
  CHECK(t["interval90_per_op"][0].get<double>() ==
        Approx(line["ns_per_op_lo"].get<double>()).epsilon(1e-5));
  CHECK(t["interval90_per_op"][1].get<double>() ==
        Approx(line["ns_per_op_hi"].get<double>()).epsilon(1e-5));
  CHECK(line["ns_per_op_lo"] < line["ns_per_op"]);
  CHECK(line["ns_per_op_hi"] > line["ns_per_op"]);
  CHECK(line["ns_per_op_on_priors"] == t["rests_on_priors"]);
  // And its column's every field, typed, as the report resolves it.
  CHECK(line["config"] == r["workloads"][0]["policies"][0]["config"]);
  CHECK(line["config"]["policy.prefill_max"].is_number_integer());
}
