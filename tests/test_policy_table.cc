// The policy and field tables (model/kernel/policies.def,
// policy_fields.def): every entry against every profile, describe() and
// the run record from the field table, table checks at compile time and
// at init, the docs' policy section and --list.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"
#include "sim/cli/cli.h"
#include "test_policy_util.h"

using namespace simcache;
using namespace simcache::iou;
using Catch::Matchers::Contains;

namespace {

// The stated reasons validate_policies() rejects a resolved set for, in
// its order ("" = accepted). A new rule there gets a line here.
std::string stated_rejection(const PolicySet& p, const KernelProfile& k) {
  const bool slab = p.node_alloc != NodeAlloc::kmalloc;
  if (p.bulk_refill != 0 && !slab) return "bulk-refill needs node-slab or node-slab-account";
  if (p.waitv_cache_zero && p.waitv_cache_max == 0) return "waitv_cache_zero needs a WAITV cache";
  if (slab && !k.has_node_cache) return "'" + std::string(k.name) + "' has none";
  if (p.slab_prime && !k.install_allocates_node)
    return "'" + std::string(k.name) + "' allocates none";
  if ((p.prefill != Prefill::off || p.prefill_grow) && !k.has_node_cache)
    return "prefill modes need a kernel profile with a per-ring node cache";
  if (p.enter_no_iowait && !k.enter_no_iowait)
    return "no-iowait needs a kernel profile whose io_uring_enter() takes IORING_ENTER_NO_IOWAIT "
           "(07754bfd9aee, v6.15+); '" + std::string(k.name) + "' rejects it with -EINVAL";
  if (p.kmalloc_prefill && (k.has_node_cache || !k.install_allocates_node))
    return "kmalloc-prefill needs a kernel profile that allocates a node per install and "
           "has no node cache (v6.13); '" + std::string(k.name) + "' does not";
  return "";
}

struct Tally {
  size_t ran = 0, accepted = 0, rejected = 0, conflicts = 0, twice = 0;
};

// `p` alone (q == nullptr) or "p+q" on profile `k`, against what the
// table says it sets.
void check_spec(const PolicyInfo& p, const PolicyInfo* q, const KernelProfile& k, Tally& t) {
  const std::string spec = std::string(p.name) + (q ? "+" + std::string(q->name) : "");
  INFO(k.name << " " << spec);
  PolicySet got;
  MmConfig mm;
  std::string err;
  const bool ok = parse_policies(spec, &k, &got, &mm, &err);
  ++t.ran;
  if (q == &p) {
    CHECK_FALSE(ok);
    CHECK(err == "policy '" + std::string(p.name) + "' given twice in '" + spec + "'");
    ++t.twice;
    return;
  }
  // Two entries conflict when they share a group or SET one field
  // (waitv-cache and waitv-account both set waitv_account).
  PolicyFieldId shared = PolicyFieldId::none;
  if (q)
    for (const FieldAssign& a : q->sets())
      if (shared == PolicyFieldId::none && p.sets_field(a.field)) shared = a.field;
  if (q && p.group != PolicyFieldId::none && p.group == q->group) shared = p.group;
  if (q && shared != PolicyFieldId::none) {
    CHECK_FALSE(ok);
    CHECK(err == "policies '" + std::string(p.name) + "' and '" + std::string(q->name) +
                     "' both set " + std::string(policy_field(shared).name) + "; choose one");
    ++t.conflicts;
    return;
  }
  // The fields as the table's SET()s leave them, starting from defaults.
  const PolicySet d;
  std::vector<uint32_t> want;
  for (const PolicyFieldInfo& f : policy_fields()) want.push_back(field_raw(d, f.id));
  for (const PolicyInfo* e : {&p, q})
    if (e)
      for (const FieldAssign& a : e->sets()) want[static_cast<size_t>(a.field)] = a.raw;
  PolicySet expect;
  for (const PolicyFieldInfo& f : policy_fields())
    set_field_raw(expect, f.id, want[static_cast<size_t>(f.id)]);
  const std::string reason = stated_rejection(expect, k);
  if (!reason.empty()) {
    CHECK_FALSE(ok);
    CHECK_THAT(err, Contains(reason));
    ++t.rejected;
    return;
  }
  INFO(err);
  REQUIRE(ok);
  ++t.accepted;
  for (const PolicyFieldInfo& f : policy_fields()) {
    INFO(f.name);
    CHECK(field_raw(got, f.id) == want[static_cast<size_t>(f.id)]);
  }
  CHECK(mm.memcg_batch_charge == got.memcg_batch_charge);  // the mm-layer fields
  CHECK(mm.slab_nomerge == got.slab_nomerge);
  CHECK(validate_policies(got, &k, nullptr));
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Test-only tables, through the same expansion as policies.def.
void set_prefill_max_7(PolicySet& p, MmConfig& mm) {
  p.prefill_max = 7;
  mm.slab_nomerge = true;
}

constexpr PolicyInfo kWithCode[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("coded", prefill_max, "sets a field, then runs code",
                        SIMCACHE_POLICY_SET(prefill_max, 5)
                            SIMCACHE_POLICY_CODE(set_prefill_max_7)),
};
static_assert(check_policy_table(kWithCode).what.empty());

constexpr PolicyInfo kDuplicate[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("a", slab_prime, "first", SIMCACHE_POLICY_SET(slab_prime, true)),
    SIMCACHE_POLICY_ROW("a", prefill_max, "second", SIMCACHE_POLICY_SET(prefill_max, 5)),
};
static_assert(check_policy_table(kDuplicate).what == "declared twice");
static_assert(check_policy_table(kDuplicate).index == 2);

constexpr PolicyInfo kNoBaseline[] = {
    SIMCACHE_POLICY_ROW("a", slab_prime, "first", SIMCACHE_POLICY_SET(slab_prime, true)),
};
constexpr PolicyInfo kBadGroup[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("a", prefill, "group is not what it sets",
                        SIMCACHE_POLICY_SET(slab_prime, true)),
};
constexpr PolicyInfo kBadName[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("a+b", slab_prime, "combines badly",
                        SIMCACHE_POLICY_SET(slab_prime, true)),
};
constexpr PolicyInfo kSetTwice[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("a", slab_prime, "twice",
                        SIMCACHE_POLICY_SET(slab_prime, true)
                            SIMCACHE_POLICY_SET(slab_prime, false)),
};
constexpr PolicyInfo kSecondBaseline[] = {
    SIMCACHE_POLICY_ROW("base", none, "baseline", ),
    SIMCACHE_POLICY_ROW("base2", none, "another", ),
};

}  // namespace

TEST_CASE("policy table: every entry, alone and with every entry, on every profile",
          "[policy][table]") {
  const auto table = PolicyRegistry::get().all();
  const auto profiles = kernel_profiles();
  Tally t;
  for (const KernelProfile& k : profiles)
    for (const PolicyInfo& p : table) {
      check_spec(p, nullptr, k, t);
      for (const PolicyInfo& q : table) check_spec(p, &q, k, t);
    }
  CHECK(t.ran == profiles.size() * table.size() * (table.size() + 1));
  // Today: 5 profiles x 12 policies x 13 = 780 specs, of which 60 name a
  // policy twice and 30 pair two policies of one group; of the other 690,
  // 348 run and 342 are rejected for a stated reason.
  CHECK(t.ran >= 780);
  CHECK(t.twice >= 60);
  CHECK(t.conflicts >= 30);
  CHECK(t.accepted >= 348);
  CHECK(t.rejected >= 342);
  CHECK(t.twice + t.conflicts + t.accepted + t.rejected == t.ran);
}

TEST_CASE("policy table: the generated sweeps cover every entry that can run",
          "[policy][table]") {
  const auto table = PolicyRegistry::get().all();
  // Entries that no partner rescues: the node-slab family without a node
  // cache (v6.12, v6.13), slab-prime without per-install nodes (v6.12),
  // kmalloc-prefill anywhere but v6.13 (it needs per-install nodes and no
  // node cache).
  // no-iowait only where io_uring_enter() takes IORING_ENTER_NO_IOWAIT (v6.15+).
  const std::vector<std::pair<std::string_view, size_t>> want = {
      {"v6.1.39", table.size() - 10}, {"v6.1.45", table.size() - 10},
      {"v6.4.4", table.size() - 10},  {"v6.4.8", table.size() - 10},
      {"v6.5-rc2", table.size() - 10}, {"v6.5-rc3", table.size() - 10},  // v6.12's io_uring
      {"v6.12", table.size() - 10}, {"v6.13", table.size() - 8},
      {"v6.18", table.size() - 1}, {"v7.1", table.size() - 1},
      {"v7.2", table.size() - 1}};
  for (const auto& [name, n] : want) {
    const KernelProfile& k = *profile_by_name(name, nullptr);
    INFO(name);
    const std::vector<std::string> specs = testing::runnable_policies(k);
    CHECK(specs.size() == n);
    for (const std::string& s : specs) CHECK(testing::policy_ok(s, k));
    // Both walks end maximal (no policy of a group they left free can be
    // added) and reach as many groups as each other; no count is pinned.
    size_t reached[2] = {0, 0};
    for (bool backward : {false, true}) {
      const std::string m = testing::maximal_policy(k, backward);
      INFO(m);
      CHECK(testing::policy_ok(m, k));
      std::vector<PolicyFieldId> taken;
      std::istringstream parts(m);
      for (std::string part; std::getline(parts, part, '+');)
        if (const PolicyInfo* p = PolicyRegistry::get().find(part)) taken.push_back(p->group);
      for (const PolicyInfo& p : table.subspan(1)) {
        if (std::find(taken.begin(), taken.end(), p.group) != taken.end()) continue;
        INFO(p.name);
        CHECK_FALSE(testing::policy_ok(m + "+" + std::string(p.name), k));
      }
      reached[backward] = taken.size();
    }
    CHECK(reached[0] == reached[1]);
  }
  const KernelProfile& v618 = *profile_by_name("v6.18", nullptr);
  CHECK(testing::runnable_policies(v618)[4] == "bulk-refill+node-slab");
}

TEST_CASE("policy table: an entry with code runs it after its SET()s", "[policy][table]") {
  const PolicyRegistry reg(kWithCode);
  REQUIRE(reg.errors().empty());
  CHECK(reg.baseline().name == "base");
  CHECK(reg.find("coded")->code_name == "set_prefill_max_7");
  PolicySet p;
  MmConfig mm;
  std::string err;
  REQUIRE(reg.parse("base+coded", nullptr, &p, &mm, &err));
  CHECK(p.prefill_max == 7);
  CHECK(mm.slab_nomerge);
  CHECK_FALSE(p.slab_nomerge);
  CHECK_FALSE(reg.parse("node-slab", nullptr, &p, &mm, &err));
  CHECK(err == "unknown policy 'node-slab' in 'node-slab'; valid policies: base, coded");
}

TEST_CASE("policy table: a duplicate name or a malformed entry is rejected",
          "[policy][table]") {
  // At compile time (the static_asserts above and in policy.cc) and at
  // init: the registry keeps the problem and every parse fails with it.
  const PolicyRegistry dup(kDuplicate);
  REQUIRE(dup.errors().size() == 1);
  CHECK(dup.errors()[0] == "policy table entry 3 ('a'): declared twice");
  PolicySet p;
  MmConfig mm;
  std::string err;
  CHECK_FALSE(dup.parse("base", nullptr, &p, &mm, &err));
  CHECK(err == dup.errors()[0]);

  CHECK(check_policy_table(kNoBaseline).what ==
        "the first entry must be the baseline: group none, no effects");
  CHECK(check_policy_table(kBadGroup).what == "its group is not among the fields it SETs");
  CHECK(check_policy_table(kBadName).what == "a name may not contain '+', ',' or blanks");
  CHECK(check_policy_table(kSetTwice).what == "sets one field twice");
  CHECK(check_policy_table(kSecondBaseline).what == "only the baseline has group none");
  CHECK(check_policy_table(kSecondBaseline).index == 1);
  CHECK(PolicyRegistry(kBadGroup).errors()[0] ==
        "policy table entry 2 ('a'): its group is not among the fields it SETs");
  CHECK(check_policy_table(PolicyRegistry::get().all()).what.empty());
}

TEST_CASE("policy fields: describe() lists every field in table order", "[policy][fields]") {
  const PolicySet d;
  // One line per row of the table of record, in its order.
  const std::vector<std::string_view> rows = {
#define POLICY_FIELD(Type, name, ...) #name,
#include "model/kernel/policy_fields.def"
  };
  const std::vector<std::string> described = lines_of(describe(d));
  REQUIRE(described.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO(described[i]);
    CHECK(described[i].rfind(std::string(rows[i]) + " = ", 0) == 0);
  }
  // Some defaults, as the unpatched kernel has them.
  for (const char* line : {"node_alloc = kmalloc", "bulk_refill = 0", "prefill = off",
                           "prefill_max = 4096", "waitv_account = profile",
                           "io_alloc_cache_max = kernel", "req_alloc_batch = 8",
                           "memcg_charge_batch = 64", "cqwait_sleep = profile"})
    CHECK(std::count(described.begin(), described.end(), line) == 1);
  const auto fields = policy_fields();
  REQUIRE(fields.size() == rows.size());
  REQUIRE(kNumPolicyFields == rows.size());
  // Every value of every field prints under its name, and reads back.
  for (const PolicyFieldInfo& f : fields) {
    INFO(f.name);
    CHECK(policy_field_by_name(f.name) == &f);
    CHECK(&policy_field(f.id) == &f);
    CHECK_FALSE(f.description.empty());
    std::vector<uint32_t> raws = {0, 1};
    if (f.kind == FieldKind::unsigned_int) raws.push_back(4096);
    if (f.kind == FieldKind::enumeration) {
      raws.clear();
      for (uint32_t i = 0; i < f.values.size(); ++i) raws.push_back(i);
      CHECK(field_raw(d, f.id) == 0);  // an enum's first value is the unpatched kernel
    }
    for (uint32_t raw : raws) {
      PolicySet p;
      set_field_raw(p, f.id, raw);
      CHECK(field_raw(p, f.id) == raw);
      const std::vector<std::string> lines = lines_of(describe(p));
      REQUIRE(lines.size() == kNumPolicyFields);
      CHECK(lines[static_cast<size_t>(f.id)] ==
            std::string(f.name) + " = " + field_value_text(f.id, raw));
    }
  }
  PolicySet bug;
  bug.debug_bug = DebugBug::leak_node;
  CHECK(lines_of(describe(bug)).back() == "debug_bug = set");
}

TEST_CASE("policy fields: kinds, readers and the run record", "[policy][fields]") {
  CHECK(policy_field_by_name("bogus") == nullptr);
  const PolicyFieldInfo& na = *policy_field_by_name("node_alloc");
  CHECK(na.kind == FieldKind::enumeration);
  CHECK(na.type == "NodeAlloc");
  REQUIRE(na.values.size() == 3);
  CHECK(na.values[2].name == "slab_account");
  CHECK(policy_field_by_name("prefill_max")->kind == FieldKind::unsigned_int);
  CHECK(policy_field_by_name("slab_prime")->kind == FieldKind::boolean);
  std::vector<std::string_view> mm_fields;
  for (const PolicyFieldInfo& f : policy_fields())
    if (f.layer == "mm") mm_fields.push_back(f.name);
    else CHECK((f.layer == "io_uring" || f.layer == "memcg" || f.layer == "slab"));
  CHECK(mm_fields == std::vector<std::string_view>{"memcg_batch_charge", "slab_nomerge",
                                                   "memcg_batch_free", "kfree_bulk_sort",
                                                   "random_kmalloc_caches"});

  PolicySet p;
  MmConfig mm;
  REQUIRE(parse_policies("node-slab+bulk-refill+memcg-batch-charge", nullptr, &p, &mm, nullptr));
  const std::vector<PolicyFieldValue> rec = policy_record(p);
  REQUIRE(rec.size() == kNumPolicyFields);
  CHECK(rec[1].field->name == "node_alloc");
  CHECK(rec[1].raw == 1);
  CHECK(rec[1].text == "slab");
  CHECK(rec[2].field->name == "bulk_refill");
  CHECK(rec[2].text == "32");
  CHECK(rec[static_cast<size_t>(policy_field_by_name("memcg_batch_charge")->id)].text == "true");

  // Only a changed mm-layer field is copied: a caller's true survives.
  MmConfig preset;
  preset.slab_nomerge = true;
  export_to_mm(PolicySet{}, preset);
  CHECK(preset.slab_nomerge);
}

TEST_CASE("docs/scenarios.md's policy section is generated from the table", "[policy][docs]") {
  const std::string path = std::string(SIMCACHE_SOURCE_DIR) + "/docs/scenarios.md";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const std::string begin = "<!-- generated from model/kernel/policies.def: begin -->\n";
  const std::string end = "<!-- generated from model/kernel/policies.def: end -->\n";
  const size_t b = doc.find(begin), e = doc.find(end);
  REQUIRE(b != std::string::npos);
  REQUIRE(e != std::string::npos);
  REQUIRE(b < e);
  const std::string want = policy_table_markdown();
  const char* update = std::getenv("SIMCACHE_UPDATE_DOCS");
  if (update && std::string(update) == "1") {
    doc.replace(b + begin.size(), e - b - begin.size(), want);
    std::ofstream(path, std::ios::binary) << doc;
    WARN("rewrote the policy section of " << path);
    return;
  }
  INFO(path << ": the policy section differs from the table; review, then regenerate with "
               "SIMCACHE_UPDATE_DOCS=1 ./build/tests/simcache_tests '[docs]'");
  CHECK(doc.substr(b + begin.size(), e - b - begin.size()) == want);
  for (const PolicyInfo& p : PolicyRegistry::get().all())
    CHECK_THAT(want, Contains("| `" + std::string(p.name) + "` |"));
}

TEST_CASE("docs/model-io_uring.md has one row per policy, naming its group's field",
          "[policy][docs]") {
  std::ifstream in(std::string(SIMCACHE_SOURCE_DIR) + "/docs/model-io_uring.md", std::ios::binary);
  std::vector<std::string> rows;
  bool inside = false;
  for (std::string l; std::getline(in, l);) {
    if (l == "| Name | Field(s) | Exactly what changes |") inside = true;
    else if (inside && l.empty()) break;
    else if (inside && l.rfind("| `", 0) == 0) rows.push_back(l);
  }
  const auto table = PolicyRegistry::get().all();
  REQUIRE(rows.size() == table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const PolicyInfo& p = table[i];
    INFO(rows[i]);
    CHECK(rows[i].rfind("| `" + std::string(p.name) + "` | ", 0) == 0);
    if (p.group != PolicyFieldId::none)
      CHECK_THAT(rows[i], Contains("| `" + std::string(policy_field(p.group).name)));
  }
}

TEST_CASE("cli: --list shows the baseline first, then one line per policy by name",
          "[policy][cli]") {
  const sim::CliOutcome r = sim::run_cli({"--list"});
  REQUIRE(r.status == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  size_t at = 0;
  while (at < lines.size() && lines[at] != "policies (combine with +):") ++at;
  REQUIRE(at < lines.size());
  std::vector<std::string> got;
  for (++at; at < lines.size() && lines[at].rfind("  ", 0) == 0; ++at) got.push_back(lines[at]);
  const auto table = PolicyRegistry::get().all();
  REQUIRE(got.size() == table.size());
  CHECK(got[0] ==
        "  unpatched              the kernel as the profile describes it (null baseline)");
  for (size_t i = 2; i < got.size(); ++i) CHECK(got[i - 1] < got[i]);
  for (const PolicyInfo& p : table) {
    size_t n = 0;
    for (const std::string& l : got)
      n += l.rfind("  " + std::string(p.name) + " ", 0) == 0 &&
           l.find(p.summary) != std::string::npos;
    CHECK(n == 1);
  }
}
