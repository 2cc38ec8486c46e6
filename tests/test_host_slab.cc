// The sysfs reader (sim/calibrate/host_slab.h) and simcache geometry-check
// on a fake /sys/kernel/slab tree: values parsed as the kernel prints them,
// a mismatch reported with exit 1, an unreadable tree a skip (77).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "sim/calibrate/host_slab.h"
#include "sim/cli/cli.h"

using namespace simcache::sim;
namespace fs = std::filesystem;

namespace {

struct FakeSysfs {
  fs::path root = fs::temp_directory_path() /
                  ("simcache-slab-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  FakeSysfs() { fs::create_directories(root); }
  ~FakeSysfs() { fs::remove_all(root); }
  void cache(const std::string& name, const std::map<std::string, std::string>& files) {
    fs::create_directories(root / name);
    for (const auto& [f, v] : files) std::ofstream(root / name / f) << v << "\n";
  }
};

// kmalloc-64 and io_kiocb as this project's 2-CPU v6.18 host shows them.
void host_618(FakeSysfs& s, const std::string& kiocb_objs = "16") {
  s.cache("kmalloc-64", {{"order", "0"}, {"objs_per_slab", "64"}, {"min_partial", "5"},
                         {"cpu_partial", "120"}, {"sheaf_capacity", "0"}, {"objects", "2387 N0=2387"}});
  s.cache("io_kiocb", {{"order", "0"}, {"objs_per_slab", kiocb_objs}, {"min_partial", "5"},
                       {"cpu_partial", "52"}});
}

}  // namespace

TEST_CASE("host slab reader parses the kernel's files", "[host]") {
  FakeSysfs s;
  s.cache("kmalloc-32", {{"order", "0"}, {"cpu_partial", "120 C0=1"}});
  HostCache c;
  std::string err;
  REQUIRE(read_host_cache(s.root.string(), "kmalloc-32", &c, &err));
  CHECK(c.present);
  CHECK(c.fields.at("order") == 0);
  CHECK(c.fields.at("cpu_partial") == 120);
  CHECK(c.fields.count("sheaf_capacity") == 0);  // absent file: not compared
  REQUIRE(read_host_cache(s.root.string(), "kmalloc-rnd-01-32", &c, &err));
  CHECK_FALSE(c.present);
  s.cache("bad", {{"order", "x1"}});
  CHECK_FALSE(read_host_cache(s.root.string(), "bad", &c, &err));
  CHECK(err.find("bad/order: 'x1' is not a number") != std::string::npos);
}

TEST_CASE("cpu lists and the nearest kernel profile", "[host]") {
  FakeSysfs s;
  std::ofstream(s.root / "present") << "0-1,4\n";
  int cpus = 0;
  std::string err;
  REQUIRE(read_cpu_count((s.root / "present").string(), &cpus, &err));
  CHECK(cpus == 3);
  CHECK(nearest_kernel_profile("6.18.44-fc-v857") == "v6.18");
  CHECK(nearest_kernel_profile("6.15.2") == "v6.13");  // 2 from 6.13, 3 from 6.18
  CHECK(nearest_kernel_profile("6.1.0-27-amd64") == "v6.1.39");  // seed 003 era profile
  CHECK(nearest_kernel_profile("7.0.0") == "v7.1");
  CHECK(nearest_kernel_profile("7.2.0-rc1") == "v7.2");
}

TEST_CASE("geometry-check agrees with a matching tree and reports a mismatch", "[host]") {
  FakeSysfs s;
  host_618(s);
  const std::vector<std::string> args = {"geometry-check", "--sysfs", s.root.string(), "--cpus",
                                         "2", "--kernel", "v6.18"};
  CliOutcome ok = run_cli(args);
  INFO(ok.out << ok.err);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("2 caches compared") != std::string::npos);
  CHECK(ok.out.find("9 files, 0 mismatches") != std::string::npos);

  FakeSysfs bad;
  host_618(bad, "32");
  std::vector<std::string> a2 = args;
  a2[2] = bad.root.string();
  CliOutcome mis = run_cli(a2);
  CHECK(mis.status == 1);
  CHECK(mis.out.find("io_kiocb") != std::string::npos);
  CHECK(mis.out.find("objs_per_slab=16 (host 32) MISMATCH") != std::string::npos);

  // At 20 CPUs calculate_order() picks order 1 for io_kiocb: the check sees it.
  std::vector<std::string> a3 = args;
  a3[4] = "20";
  CHECK(run_cli(a3).status == 1);
}

TEST_CASE("geometry-check skips an unreadable tree and rejects bad flags", "[host]") {
  CliOutcome r = run_cli({"geometry-check", "--sysfs", "/nonexistent/slab", "--cpus", "2"});
  CHECK(r.status == 77);
  CHECK(r.err.find("SKIPPED: /nonexistent/slab: cannot list") != std::string::npos);
  CHECK(run_cli({"geometry-check", "--cpus", "0"}).status == 2);
  CHECK(run_cli({"geometry-check", "--kernel", "v5.4"}).status == 2);
}
