// The kernel profiles' table of record (model/kernel/kernel_profile.def):
// the docs' fact table is generated from it, the run record carries every
// field of it, and its rows keep the facts the model's tests rely on.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "model/kernel/profile.h"
#include "sim/cli/cli.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::iou;
using simcache::testing::read_text;
using simcache::testing::repo_file;

namespace {

// A table cell: '|' escaped (gfp names are joined with it).
std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// The fact table as docs/model-io_uring.md shows it: one row per field,
// one column per profile, then the field's source.
std::string fact_table() {
  std::string head = "| Field |", rule = "|---|";
  for (const KernelProfile& p : kernel_profiles()) {
    head += fmt::format(" {} |", p.name);
    rule += "---|";
  }
  std::string out = head + " Source |\n" + rule + "---|\n";
  const auto fields = kernel_profile_fields();
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string row = fmt::format("| `{}`: {} |", fields[i].name, cell(fields[i].label));
    for (const KernelProfile& p : kernel_profiles())
      row += fmt::format(" {} |", cell(kernel_field_text(p, i)));
    out += row + fmt::format(" {} |\n", cell(fields[i].source));
  }
  return out;
}

std::string between(const std::string& text, const std::string& begin, const std::string& end) {
  const size_t a = text.find(begin), b = text.find(end);
  if (a == std::string::npos || b == std::string::npos || b < a) return "(markers missing)";
  return text.substr(a + begin.size() + 1, b - a - begin.size() - 1);
}

}  // namespace

TEST_CASE("kernel profiles: the docs' fact table is the table of record", "[profile][docs]") {
  const std::string doc = read_text(repo_file("docs/model-io_uring.md"));
  const std::string want = fact_table();
  const std::string got = between(doc, "<!-- kernel-profiles:begin (generated from model/kernel/kernel_profile.def; "
                     "tests/test_kernel_profiles.cc) -->",
                "<!-- kernel-profiles:end -->");
  if (got != want) {
    const std::string path = (std::filesystem::temp_directory_path() / "kernel-profiles.md").string();
    std::ofstream(path) << want;
    FAIL_CHECK("docs/model-io_uring.md's kernel-profiles table is stale; the generated one is in "
               << path);
  }
}

TEST_CASE("kernel profiles: the run record carries every field of the table", "[profile][record]") {
  for (const char* kernel : {"v6.12", "v7.1"}) {
    const sim::CliOutcome r = sim::run_cli({"--scenario", "waitv", "--kernel", kernel,
                                            "--profile", "none", "--format", "json"});
    REQUIRE(r.status == 0);
    const auto rec = nlohmann::json::parse(r.out).at("record").at("kernel_profile");
    const KernelProfile& p = *profile_by_name(kernel, nullptr);
    CHECK(rec.at("name") == kernel);
    const auto fields = kernel_profile_fields();
    CHECK(rec.size() == fields.size() + 1);
    for (size_t i = 0; i < fields.size(); ++i) {
      INFO(fields[i].name);
      // Typed: true/false and numbers as JSON bools and numbers.
      const auto& v = rec.at(std::string(fields[i].name));
      CHECK((v.is_string() ? v.get<std::string>() : v.dump()) == kernel_field_text(p, i));
      const bool typed = fields[i].type == KernelFieldType::boolean ||
                         fields[i].type == KernelFieldType::u32;
      CHECK(v.is_string() == !typed);
    }
  }
}

TEST_CASE("kernel profiles: rows inherit their base and change only what they set",
          "[profile]") {
  const KernelProfile& v612 = *profile_by_name("v6.12", nullptr);
  const KernelProfile& v618 = *profile_by_name("v6.18", nullptr);
  const KernelProfile& v71 = *profile_by_name("v7.1", nullptr);
  const KernelProfile& v72 = *profile_by_name("v7.2", nullptr);
  const auto fields = kernel_profile_fields();
  size_t differ_612 = 0, differ_71 = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    // The era kernels are v6.12's facts (they set only what v6.12 has),
    // but for the iowait gate, which the first of each series lacks.
    for (const char* era : {"v6.1.39", "v6.1.45", "v6.4.4", "v6.4.8", "v6.5-rc2", "v6.5-rc3"})
      if (fields[i].name != "cqwait_iowait_gate")
        CHECK(kernel_field_text(*profile_by_name(era, nullptr), i) == kernel_field_text(v612, i));
    CHECK(kernel_field_text(v72, i) == kernel_field_text(v71, i));
    differ_612 += kernel_field_text(v612, i) != kernel_field_text(v618, i);
    differ_71 += kernel_field_text(v71, i) != kernel_field_text(v618, i);
  }
  CHECK(differ_612 == 13);  // the SETs of the v6.12 row that change a default
  CHECK(differ_71 == 4);   // waitv_header, waitv_gfp, slub_gen, memcg_shape
  CHECK(v71.slub_gen == SlubGen::v7);
  CHECK(v71.memcg_shape == MemcgShape::v7_1);
  CHECK(v71.waitv_gfp == GFP_KERNEL_ACCOUNT);
  CHECK(v618.file_table_gfp == (GFP_KERNEL_ACCOUNT | __GFP_ZERO));
  CHECK(kernel_field_text(v618, 6) == "GFP_KERNEL_ACCOUNT|__GFP_ZERO");
  CHECK(std::string(fields[6].name) == "file_table_gfp");
}
