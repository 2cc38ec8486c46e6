// Kernel profiles, the policy registry and the '+' parser.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"

using namespace simcache;
using namespace simcache::iou;
using Catch::Matchers::Contains;

namespace {
struct ParsedSet {
  bool ok;
  std::string error;
  PolicySet p;
  MmConfig mm;
};
ParsedSet parse(std::string_view spec, std::string_view profile = "v6.18") {
  ParsedSet r;
  const KernelProfile* prof = profile_by_name(profile, nullptr);
  REQUIRE(prof != nullptr);
  r.ok = parse_policies(spec, prof, &r.p, &r.mm, &r.error);
  return r;
}
}  // namespace

TEST_CASE("profiles: names, lookup errors, facts and implied mm config",
          "[io_uring][profile]") {
  CHECK(profile_names() == "v6.1.39, v6.1.45, v6.4.4, v6.4.8, v6.5-rc2, v6.5-rc3, v6.12, v6.13, v6.18, v7.1, v7.2");
  std::string err;
  CHECK(profile_by_name("v6.19", &err) == nullptr);
  CHECK_THAT(err, Contains("'v6.19'") && Contains("v6.12, v6.13, v6.18, v7.1, v7.2"));
  CHECK(profile_by_name(kDefaultProfile, nullptr)->name == "v6.18");

  const KernelProfile& v612 = *profile_by_name("v6.12", nullptr);
  const KernelProfile& v613 = *profile_by_name("v6.13", nullptr);
  const KernelProfile& v618 = *profile_by_name("v6.18", nullptr);
  const KernelProfile& v71 = *profile_by_name("v7.1", nullptr);
  CHECK_FALSE(v612.install_allocates_node);
  CHECK(v613.install_allocates_node);
  CHECK_FALSE(v613.has_node_cache);
  CHECK(v613.rsrc_node_size == 32);
  CHECK(v618.has_node_cache);
  CHECK(v618.rsrc_node_size == 24);
  CHECK(v618.node_cache_max == 128);
  CHECK(v618.futex_data_size == 144);
  CHECK(v618.futex_cache_max == 32);
  CHECK(v618.futex_gfp == GFP_NOWAIT);
  // WAITV for 8 entries: v6.18 bare array 8*160, v7.x 8 + 8*160.
  CHECK(waitv_alloc_size(v618, 8) == 1280);
  CHECK(v618.waitv_gfp == GFP_KERNEL);
  CHECK(waitv_alloc_size(v71, 8) == 1288);
  CHECK(v71.waitv_gfp == GFP_KERNEL_ACCOUNT);

  MmConfig mm;
  apply_profile(v71, mm);
  CHECK(mm.gen == SlubGen::v7);
  CHECK(mm.memcg.shape == MemcgShape::v7_1);
  apply_profile(v618, mm);
  CHECK(mm.gen == SlubGen::v6_18);
  CHECK(mm.memcg.shape == MemcgShape::v6_18);
}

TEST_CASE("policies: the table is registered whole, under today's names",
          "[io_uring][policy]") {
  const PolicyRegistry& reg = PolicyRegistry::get();
  CHECK(reg.errors().empty());
  // The names of the table of record, in its order: every row registered.
  const std::vector<std::string_view> rows = {
#define POLICY(name, ...) name,
#include "model/kernel/policies.def"
  };
  REQUIRE(reg.all().size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) CHECK(reg.all()[i].name == rows[i]);
  CHECK(reg.baseline().name == "unpatched");
  CHECK(&reg.baseline() == &reg.all().front());
  // policy_names(): the same names, sorted, comma-separated.
  std::vector<std::string_view> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  std::string names;
  for (std::string_view n : sorted) names += (names.empty() ? "" : ", ") + std::string(n);
  CHECK(policy_names() == names);
  // Today's names stay accepted (scripts and papers use them).
  for (const char* n : {"unpatched", "node-slab", "node-slab-account", "bulk-refill", "prefill",
                        "slab-prime", "waitv-account", "memcg-batch-charge", "slab-nomerge"})
    CHECK(reg.find(n) != nullptr);
  for (const PolicyInfo& p : reg.all()) {
    INFO(p.name);
    CHECK(reg.find(p.name) == &p);
    CHECK_FALSE(p.summary.empty());
  }
  CHECK(reg.find("node_slab") == nullptr);
}

TEST_CASE("policies: unpatched is the null baseline", "[io_uring][policy]") {
  const ParsedSet r = parse("unpatched");
  REQUIRE(r.ok);
  const PolicySet d;
  CHECK(r.p.futex_return_to_cache == d.futex_return_to_cache);
  CHECK(r.p.node_alloc == NodeAlloc::kmalloc);
  CHECK(r.p.bulk_refill == 0);
  CHECK(r.p.prefill == Prefill::off);
  CHECK_FALSE(r.p.slab_prime);
  CHECK(r.p.waitv_account == WaitvAccount::profile);
  CHECK_FALSE(r.mm.memcg_batch_charge);
  CHECK_FALSE(r.mm.slab_nomerge);
}

TEST_CASE("policies: combinations set exactly their fields", "[io_uring][policy]") {
  ParsedSet r = parse("node-slab+bulk-refill+prefill");
  REQUIRE(r.ok);
  CHECK(r.p.node_alloc == NodeAlloc::slab);
  CHECK(r.p.bulk_refill == 32);
  CHECK(r.p.prefill == Prefill::always);
  CHECK_FALSE(r.p.futex_return_to_cache);

  r = parse(" prefill-optin + node-slab-account ");  // order and spaces don't matter
  REQUIRE(r.ok);
  CHECK(r.p.prefill == Prefill::optin);
  CHECK(r.p.node_alloc == NodeAlloc::slab_account);

  r = parse("futex-return-to-cache+waitv-noaccount+memcg-batch-charge+slab-nomerge", "v7.1");
  REQUIRE(r.ok);
  CHECK(r.p.futex_return_to_cache);
  CHECK(r.p.waitv_account == WaitvAccount::noaccount);
  CHECK(r.mm.memcg_batch_charge);
  CHECK(r.mm.slab_nomerge);
  CHECK(r.p.memcg_batch_charge);
  CHECK(r.p.slab_nomerge);

  r = parse("slab-prime");
  REQUIRE(r.ok);
  CHECK(r.p.slab_prime);
  CHECK_THAT(describe(r.p), Contains("slab_prime = true") && Contains("node_alloc = kmalloc"));
}

TEST_CASE("policies: parse errors name the bad token and list valid names",
          "[io_uring][policy]") {
  ParsedSet r = parse("node-slab+bogus");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("unknown policy 'bogus'") && Contains("valid policies: ") &&
                          Contains("node-slab-account") && Contains("futex-return-to-cache"));
  r = parse("");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("empty policy name"));
  r = parse("node-slab++prefill");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("empty policy name"));
  r = parse("prefill+node-slab+prefill");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("'prefill' given twice"));
  r = parse("node-slab+node-slab-account");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("node_alloc"));
  r = parse("waitv-account+waitv-noaccount");
  CHECK_FALSE(r.ok);
  r = parse("prefill+prefill-optin+node-slab");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("prefill"));
}

TEST_CASE("policies: combination and profile checks", "[io_uring][policy]") {
  ParsedSet r = parse("bulk-refill");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("bulk-refill needs node-slab or node-slab-account"));
  r = parse("prefill");  // over kmalloc'd nodes: one kmalloc per node
  CHECK(r.ok);
  r = parse("waitv_cache_zero=true");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("waitv_cache_zero needs a WAITV cache"));
  r = parse("prefill-optin+bulk-refill");
  CHECK_FALSE(r.ok);
  r = parse("node-slab+bulk-refill", "v6.13");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("'v6.13' has none"));
  r = parse("slab-prime", "v6.12");
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Contains("'v6.12' allocates none"));
  CHECK(parse("slab-prime", "v6.13").ok);
  CHECK(parse("node-slab-account+bulk-refill+prefill", "v7.2").ok);
  // validate_policies() without a profile only checks the combination.
  PolicySet p;
  p.bulk_refill = 32;
  std::string err;
  CHECK_FALSE(validate_policies(p, nullptr, &err));
  p.node_alloc = NodeAlloc::slab;
  CHECK(validate_policies(p, nullptr, &err));
}
