// Machines (model/kernel/machine.def): a row gives the machine
// parameters' defaults and the idle table; --machine selects it, --set
// still overrides, the record names it, --list and the docs show the table.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include <fmt/format.h>

#include "model/kernel/machine.h"
#include "model/mm/mm_config.h"
#include "sim/cli/cli.h"
#include "test_cost_util.h"

using namespace simcache;
using simcache::testing::lines;
using simcache::testing::read_text;
using simcache::testing::repo_file;

namespace {

nlohmann::json run_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--profile", "none", "--format", "json"});
  const sim::CliOutcome r = sim::run_cli(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

std::string docs_tables() {
  std::string out = "| parameter | unit | range | meaning |\n|---|---|---|---|\n";
  for (const iou::MachineField& f : iou::machine_fields())
    out += fmt::format("| `{}` | {} | {}..{} | {} |\n", f.name, f.unit, f.min, f.max, f.help);
  out += "\n| machine |";
  std::string rule = "|---|";
  for (const iou::MachineField& f : iou::machine_fields()) {
    out += fmt::format(" `{}` |", f.name);
    rule += "---|";
  }
  out += " idle table | what it is | source |\n" + rule + "---|---|---|\n";
  for (const iou::MachineInfo& m : iou::machines()) {
    out += fmt::format("| `{}`{} |", m.name, m.name == iou::kDefaultMachine ? " (default)" : "");
    for (int64_t v : m.values) out += fmt::format(" {} |", v);
    out += fmt::format(" {} | {} | {} |\n", m.idle_table.empty() ? "none" : m.idle_table,
                       m.summary, m.source);
  }
  return out;
}

}  // namespace

TEST_CASE("machines: the docs' tables are the table of record", "[machine][docs]") {
  const std::string doc = read_text(repo_file("docs/scenarios.md"));
  const std::string begin =
      "<!-- machines:begin (generated from model/kernel/machine.def; tests/test_machines.cc) -->\n";
  const size_t a = doc.find(begin), b = doc.find("<!-- machines:end -->");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  const std::string want = docs_tables();
  if (doc.substr(a + begin.size(), b - a - begin.size()) != want) {
    const std::string path = (std::filesystem::temp_directory_path() / "machines.md").string();
    std::ofstream(path) << want;
    FAIL_CHECK("docs/scenarios.md's machine tables are stale; the generated ones are in " << path);
  }
}

TEST_CASE("machines: an Mm built without a machine has the default machine's page lists",
          "[machine][pages]") {
  // MmConfig's defaults (benches, tests and the model's own tools build an
  // Mm without a machine) are the default machine's row.
  const iou::MachineInfo* m = iou::machine_by_name(iou::kDefaultMachine, nullptr);
  REQUIRE(m != nullptr);
  const auto fields = iou::machine_fields();
  const simcache::MmConfig mc;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string name(fields[i].name);
    if (name == "pcp_high_min") CHECK(m->values[i] == mc.pcp_high_min);
    if (name == "pcp_high_max") CHECK(m->values[i] == mc.pcp_high_max);
    if (name == "cpus") CHECK(m->values[i] == mc.nr_cpus);
    if (name == "nodes") CHECK(m->values[i] == mc.nr_nodes);
  }
}

TEST_CASE("machines: the kit's VM's page lists give back nothing in a serial 2,048-slot lifecycle",
          "[machine][pages]") {
  // docs/model-mm.md, "Per-CPU page lists": with vm-2vcpu's marks the
  // kworker that tears the rings down holds every page it frees, as the
  // kernel's trace of the kit's run shows; held at the floor, untuned, it
  // gives pages back.
  const auto drains = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--scenario", "lifecycle", "--machine", "vm-2vcpu",
                                     "--set", "mode=0", "--set", "slots=2048", "--set",
                                     "installs=64", "--set", "groups=2", "--measurements", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    const nlohmann::json j = run_json(args);
    const auto& t = j.at("workloads").at(0).at("policies").at(0).at("total");
    CHECK(t.at("page_alloc_order2") == 206);  // 3 a ring, as the kernel's trace
    return t.value("page_pcp_drain", 0);
  };
  CHECK(drains({}) == 0);
  CHECK(drains({"--set", "pcp_high_min=252", "--set", "pcp_high_max=252"}) > 0);
  CHECK(read_text(repo_file("docs/model-mm.md"))
            .find("the serial 2,048-slot lifecycle below drains 0\ntimes on `vm-2vcpu` "
                  "(tests/test_machines.cc)") != std::string::npos);
}

TEST_CASE("machines: the page lists' marks the docs and the mapping quote are the table's",
          "[machine][pages]") {
  // docs/model-mm.md quotes each machine's pcp_high_min and pcp_high_max;
  // the mapping's host rules default rows that recorded none to vm-2vcpu's.
  const auto fields = iou::machine_fields();
  const auto value = [&](const char* machine, const char* field) {
    const iou::MachineInfo* m = iou::machine_by_name(machine, nullptr);
    REQUIRE(m != nullptr);
    for (size_t i = 0; i < fields.size(); ++i)
      if (fields[i].name == std::string_view(field)) return m->values[i];
    FAIL("no field " << field);
    return int64_t{0};
  };
  const auto grouped = [](int64_t v) {  // 46187 -> "46,187"
    std::string d = std::to_string(v);
    for (int at = static_cast<int>(d.size()) - 3; at > 0; at -= 3) d.insert(static_cast<size_t>(at), ",");
    return d;
  };
  const std::string doc = read_text(repo_file("docs/model-mm.md"));
  for (const char* m : {"i7-12700KF", "cascadelake-w", "xeon-8358-2s"}) {
    INFO(m);
    CHECK(doc.find("(" + grouped(value(m, "pcp_high_min")) + " and " +
                   grouped(value(m, "pcp_high_max"))) != std::string::npos);
  }
  CHECK(doc.find("(high_min " + grouped(value("vm-2vcpu", "pcp_high_min")) + ", high_max\n" +
                 grouped(value("vm-2vcpu", "pcp_high_max")) + ")") != std::string::npos);
  // The assumptions the doc states beside them are the table's sources'.
  for (const auto& [machine, phrase, said] :
       {std::tuple{"i7-12700KF", "high_min about 627", "without THP high_min would be about 627"},
        std::tuple{"i7-12700KF", "32 GiB with THP enabled", "32 GiB with THP enabled"},
        std::tuple{"cascadelake-w", "assumed 64 GiB", "assumed 64 GiB"},
        std::tuple{"xeon-8358-2s", "assumed 256 GiB, 128 GiB a node", "256 GiB, 128 a node"}}) {
    INFO(machine << ": " << phrase);
    CHECK(std::string(iou::machine_by_name(machine, nullptr)->source).find(phrase) !=
          std::string::npos);
    CHECK(doc.find(said) != std::string::npos);
  }
  const std::string mapping = read_text(repo_file("data/profiles/mapping.toml"));
  const std::string want = fmt::format("defaults = {{ pcp_high_min = {}, pcp_high_max = {} }}",
                                       value("vm-2vcpu", "pcp_high_min"),
                                       value("vm-2vcpu", "pcp_high_max"));
  size_t rules = 0;
  for (size_t at = mapping.find("defaults = "); at != std::string::npos;
       at = mapping.find("defaults = ", at + 1)) {
    CHECK(mapping.compare(at, want.size(), want) == 0);
    ++rules;
  }
  CHECK(rules == 9);  // every host rule
}

TEST_CASE("machines: a row gives the parameters' defaults, --set overrides", "[machine]") {
  const auto fields = iou::machine_fields();
  for (const iou::MachineInfo& m : iou::machines()) {
    INFO(m.name);
    const nlohmann::json j = run_json({"--scenario", "waitv", "--machine", std::string(m.name),
                                       "--set", "rounds=1", "--set", "warmup=0"});
    const auto& params = j.at("workloads").at(0).at("params");
    for (size_t i = 0; i < fields.size(); ++i)
      CHECK(params.at(std::string(fields[i].name)) == m.values[i]);
    CHECK(j.at("record").at("machine").at("name") == m.name);
  }
  // Without --machine: the default row, and the record says so.
  const nlohmann::json d = run_json({"--scenario", "waitv", "--set", "rounds=1"});
  CHECK(d.at("record").at("machine").at("name") == iou::kDefaultMachine);
  CHECK(d.at("workloads").at(0).at("params").at("cpus") ==
        iou::machine_by_name(iou::kDefaultMachine, nullptr)->value("cpus"));
  // --set wins over the machine's value.
  const nlohmann::json o = run_json(
      {"--scenario", "waitv", "--machine", "vm-2vcpu", "--set", "cpus=4", "--set", "rounds=1"});
  CHECK(o.at("workloads").at(0).at("params").at("cpus") == 4);
  CHECK(o.at("workloads").at(0).at("params").at("cpu") ==
        iou::machine_by_name("vm-2vcpu", nullptr)->value("cpu"));
}

TEST_CASE("machines: the idle table follows the machine", "[machine][idle]") {
  // A cqring wait that sleeps: on a machine with an idle table the CPU
  // enters a state; on one without, no idle event is priced.
  auto idle_enters = [](const std::string& machine) {
    const nlohmann::json j =
        run_json({"--scenario", "wait-wake", "--machine", machine, "--set", "wake_delay_us=1000",
                  "--set", "rounds=1", "--set", "warmup=0", "--set", "cycles=4"});
    const auto& t = j.at("workloads").at(0).at("policies").at(0).at("timed");
    CHECK(t.at("cqwait_sleep") == 4);  // the sleeps happen on both
    return t.at("idle_enter").get<int64_t>();
  };
  CHECK(idle_enters("i7-12700KF") == 4);
  CHECK(idle_enters("vm-2vcpu") == 0);
}

TEST_CASE("machines: unknown names are one line listing the valid ones", "[machine]") {
  const sim::CliOutcome r = sim::run_cli({"--scenario", "waitv", "--machine", "pdp11"});
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find("unknown machine 'pdp11'; valid machines: " + iou::machine_names()) !=
        std::string::npos);
  const auto cfg = std::filesystem::temp_directory_path() /
                   ("simcache_machine_" + std::to_string(getpid()) + ".toml");
  std::ofstream(cfg) << "scenario = \"waitv\"\n\nmachine = \"pdp11\"\n";
  const sim::CliOutcome c = sim::run_cli({"--config", cfg.string()});
  CHECK(c.status == 2);
  CHECK(c.err.find(cfg.string() + ":3: machine: unknown machine 'pdp11'") != std::string::npos);
  std::filesystem::remove(cfg);
  // --list names every row.
  const std::string list = sim::run_cli({"--list"}).out;
  for (const iou::MachineInfo& m : iou::machines())
    CHECK(list.find(fmt::format("  {:<20} {}", m.name, m.summary)) != std::string::npos);
}
