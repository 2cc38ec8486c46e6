// Tests for the memcg charging model (model/mm/memcg.cc). Every expected
// count is derived by hand in the comment next to it; PAGE_SIZE = 4096,
// MEMCG_CHARGE_BATCH = 64. Sizes are obj_full_size: kmalloc-cg-32 -> 40,
// kmalloc-cg-2k -> 2056.
#include <catch2/catch.hpp>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "model/mm/memcg.h"

using namespace simcache;

namespace {

// The events this component bumps; expect() checks all of them, so an
// event not listed must be zero.
constexpr Event kMemcgEvents[] = {
    Event::obj_stock_hit,         Event::obj_stock_miss,
    Event::obj_stock_drain,       Event::memcg_charge,
    Event::memcg_stock_hit,       Event::page_counter_charge,
    Event::page_counter_uncharge, Event::memcg_uncharge_pages,
    Event::memcg_vmstat_flush,    Event::memcg_charge_fail};

void expect(const Counters& ev, std::initializer_list<std::pair<Event, uint64_t>> want) {
  for (Event e : kMemcgEvents) {
    uint64_t n = 0;
    for (const auto& [we, wn] : want)
      if (we == e) n = wn;
    INFO("event " << kEventInfo[static_cast<size_t>(e)].name);
    CHECK(ev[e] == n);
  }
}

struct Rig {
  EventSink ev;
  Memcg mc;
  Rig(MemcgShape shape, uint16_t cpus = 1, uint8_t nodes = 1)
      : mc(MemcgConfig{shape, true, 64}, &ev, cpus, nodes) {}
};

const char* shape_name(MemcgShape s) { return s == MemcgShape::v6_18 ? "v6_18" : "v7_1"; }
// Runs the test body once per shape, naming the shape on failure.
#define EACH_SHAPE(var)                                                  \
  const MemcgShape var = GENERATE(MemcgShape::v6_18, MemcgShape::v7_1); \
  INFO("shape " << shape_name(var))

}  // namespace

TEST_CASE("memcg: 1000 kmalloc-cg-32 charges on one CPU", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  // First charge: obj stock empty -> miss; 1 page through try_charge:
  // memcg stock empty, one page_counter walk of batch 64, 63 refilled.
  REQUIRE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL_ACCOUNT));
  expect(r.ev, {{Event::obj_stock_miss, 1}, {Event::memcg_charge, 1},
                {Event::page_counter_charge, 1}});
  CHECK(r.mc.memcg_stock_pages(m) == 63);
  CHECK(r.mc.obj_stock_bytes(m) == 4096 - 40);
  for (int i = 1; i < 1000; ++i) REQUIRE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL_ACCOUNT));
  // No uncharge happens while one objcg stays cached (allow_uncharge is
  // false on the charge path), so after j objects with k misses the stock
  // holds k*4096 - 40j >= 0 and a miss happens exactly when it would go
  // negative: k = ceil(40 * 1000 / 4096) = ceil(9.77) = 10 misses, 990
  // hits. Miss 1 walks page_counter; misses 2..10 take 1 page each from
  // the memcg stock (9 hits, 63 -> 54). Stock left: 40960 - 40000 = 960.
  // vmstat: the first delta is cached, then flushed once |sum| > 4096, i.e.
  // every 103 objects (103 * 40 = 4120): floor(1000 / 103) = 9 flushes,
  // 73 * 40 = 2920 bytes still cached.
  expect(r.ev, {{Event::obj_stock_hit, 990}, {Event::obj_stock_miss, 10},
                {Event::memcg_charge, 10}, {Event::memcg_stock_hit, 9},
                {Event::page_counter_charge, 1}, {Event::memcg_vmstat_flush, 9}});
  CHECK(r.mc.usage_pages(m) == 64);
  CHECK(r.mc.usage_pages(kRootMemcg) == 64);
  CHECK(r.mc.kmem_pages(m) == 10);
  CHECK(r.mc.memcg_stock_pages(m) == 54);
  CHECK(r.mc.obj_stock_bytes(m) == 960);
  CHECK(r.mc.live_obj_bytes(m) == 40000);
  CHECK(r.mc.slab_bytes(m) == 40000);
  Counters before = r.ev;
  for (int i = 0; i < 1000; ++i) r.mc.uncharge_obj(0, m, 0, 40);
  // Frees refill 40 bytes with allow_uncharge: whenever the stock exceeds
  // 4096 (it is then in 4097..4136) one page goes to obj_cgroup_uncharge_pages
  // and back to the memcg stock. The stock ends at 960 + 40000 - 4096u and
  // in 1..4096 (a remainder after an uncharge is >= 1), so u = 9 and 4096
  // bytes stay. vmstat: 2920 cached falls to 0 after 73 frees, then the
  // remaining 927 = 9 * 103 frees flush 9 times and leave 0 cached.
  expect(r.ev - before, {{Event::memcg_vmstat_flush, 9}, {Event::memcg_uncharge_pages, 9}});
  CHECK(r.mc.obj_stock_bytes(m) == 4096);
  CHECK(r.mc.kmem_pages(m) == 1);
  CHECK(r.mc.memcg_stock_pages(m) == 63);
  CHECK(r.mc.usage_pages(m) == 64);
  CHECK(r.mc.live_obj_bytes(m) == 0);
  CHECK(r.mc.slab_bytes(m) == 0);
  // drain_all: the obj stock slot (4096 bytes = 1 page, uncharged straight
  // from page_counter) and the memcg stock slot (63 pages): 2 uncharge
  // walks, 1 obj stock drain, nothing left to flush.
  before = r.ev;
  r.mc.drain_all();
  expect(r.ev - before, {{Event::obj_stock_drain, 1}, {Event::page_counter_uncharge, 2}});
  CHECK(r.mc.usage_pages(m) == 0);
  CHECK(r.mc.kmem_pages(m) == 0);
  CHECK(r.mc.charged_bytes(m) == 0);
}

TEST_CASE("memcg: alternating two memcgs on one CPU", "[memcg]") {
  // A1 B1 A2 B2 ... A100 B100, 40 bytes each, CPU 0.
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId a = r.mc.create(kRootMemcg), b = r.mc.create(kRootMemcg);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(r.mc.charge_obj(0, a, 0, 40, GFP_KERNEL_ACCOUNT));
    REQUIRE(r.mc.charge_obj(0, b, 0, 40, GFP_KERNEL_ACCOUNT));
  }
  if (shape == MemcgShape::v6_18) {
    // One slot: every charge finds the other objcg cached -> 200 misses,
    // 199 drains (all but the first charge), each flushing the 40 cached
    // stat bytes. Page charges: A1 and B1 walk page_counter (64 each),
    // the other 198 hit the memcg stock. Round k >= 2 of an objcg reseeds
    // the stock from its nr_charged_bytes v = 4096 - 40(k-1) and adds the
    // 4056 rest: > 4096 for every k <= 100, so one page is uncharged back
    // to the memcg stock: 99 per memcg, 198 in all.
    expect(r.ev, {{Event::obj_stock_miss, 200}, {Event::obj_stock_drain, 199},
                  {Event::memcg_charge, 200}, {Event::page_counter_charge, 2},
                  {Event::memcg_stock_hit, 198}, {Event::memcg_uncharge_pages, 198},
                  {Event::memcg_vmstat_flush, 199}});
    // A was drained last with v = 4096 - 4000 = 96 into nr_charged_bytes;
    // B is cached with 96.
    CHECK(r.mc.charged_bytes(a) == 96);
    CHECK(r.mc.obj_stock_bytes(b) == 96);
  } else {
    // Five slots hold both objcgs: one miss each (ceil(4000 / 4096) = 1),
    // no drain, no memcg stock use. The single (slot, node) stat
    // accumulator flips slot on every charge after the first: 199 flushes.
    expect(r.ev, {{Event::obj_stock_hit, 198}, {Event::obj_stock_miss, 2},
                  {Event::memcg_charge, 2}, {Event::page_counter_charge, 2},
                  {Event::memcg_vmstat_flush, 199}});
    CHECK(r.mc.obj_stock_bytes(a) == 96);
    CHECK(r.mc.obj_stock_bytes(b) == 96);
  }
  for (MemcgId m : {a, b}) {
    CHECK(r.mc.usage_pages(m) == 64);
    CHECK(r.mc.kmem_pages(m) == 1);
    CHECK(r.mc.live_obj_bytes(m) == 4000);
    CHECK(r.mc.slab_bytes(m) == 4000);
  }
}

TEST_CASE("memcg: v7_1 per-node objcgs share one CPU's 5-slot stock", "[memcg]") {
  // 4 CPUs, 2 nodes: objcg_node = cpu * 2 / 4, CPUs 0-1 -> node 0, 2-3 -> 1.
  Rig r(MemcgShape::v7_1, 4, 2);
  const MemcgId m = r.mc.create(kRootMemcg);
  CHECK(r.mc.objcg_node(1) == 0);
  CHECK(r.mc.objcg_node(2) == 1);
  EventSink ev6;
  CHECK(Memcg(MemcgConfig{}, &ev6, 4, 2).objcg_node(3) == 0);  // one objcg
  // Phase 1, CPU 0: 100 charges on objcg(m, node 0): 1 miss, 99 hits; the
  // stat sum 4000 stays cached (never above 4096).
  for (int i = 0; i < 100; ++i) REQUIRE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL));
  // Phase 2, CPU 2: charge on objcg(m, node 1), free one phase-1 object
  // back to objcg(m, node 0), 100 times. Both objcgs get a slot (no drain,
  // the 1-slot regression); node-1 charges: 1 miss (walk on CPU 2's memcg
  // stock), 99 hits; node-0 frees add up to 4000 <= 4096: no uncharge.
  // The stat accumulator alternates (slot, node) on every op after the
  // first: 199 flushes.
  for (int i = 0; i < 100; ++i) {
    REQUIRE(r.mc.charge_obj(2, m, 1, 40, GFP_KERNEL));
    r.mc.uncharge_obj(2, m, 0, 40, /*objcg_nid=*/0);
  }
  expect(r.ev, {{Event::obj_stock_hit, 198}, {Event::obj_stock_miss, 2},
                {Event::memcg_charge, 2}, {Event::page_counter_charge, 2},
                {Event::memcg_vmstat_flush, 199}});
  CHECK(r.mc.usage_pages(m) == 128);
  CHECK(r.mc.kmem_pages(m) == 2);
  // CPU 0 slot: 96; CPU 2 node-1 slot: 4056 - 99 * 40 = 96; node-0 slot 4000.
  CHECK(r.mc.obj_stock_bytes(m) == 96 + 96 + 4000);
  CHECK(r.mc.live_obj_bytes(m) == 4000);
  CHECK(r.mc.slab_bytes(m) == 4000);
  // Free the phase-2 objects on CPU 0 (to their node-1 objcg) and drain.
  for (int i = 0; i < 100; ++i) r.mc.uncharge_obj(0, m, 1, 40, /*objcg_nid=*/1);
  r.mc.drain_all();
  CHECK(r.mc.usage_pages(m) == 0);
  CHECK(r.mc.kmem_pages(m) == 0);
  CHECK(r.mc.slab_bytes(m) == 0);
  CHECK(r.mc.charged_bytes(m) == 0);
}

TEST_CASE("memcg: v7_1 obj stock evicts round robin past 5 objcgs", "[memcg]") {
  Rig r(MemcgShape::v7_1);
  std::vector<MemcgId> m;
  for (int i = 0; i < 6; ++i) m.push_back(r.mc.create(kRootMemcg));
  // m[0..4] fill slots 0-4; m[5] evicts slot 0 (m[0]); m[0] comes back and
  // evicts slot 1 (m[1]); m[5] still has slot 0: a hit.
  for (MemcgId id : m) REQUIRE(r.mc.charge_obj(0, id, 0, 40, GFP_KERNEL));
  REQUIRE(r.mc.charge_obj(0, m[0], 0, 40, GFP_KERNEL));
  REQUIRE(r.mc.charge_obj(0, m[5], 0, 40, GFP_KERNEL));
  CHECK(r.ev[Event::obj_stock_miss] == 7);
  CHECK(r.ev[Event::obj_stock_hit] == 1);
  CHECK(r.ev[Event::obj_stock_drain] == 2);
  CHECK(r.mc.charged_bytes(m[1]) == 4056);
}

TEST_CASE("memcg: the root and offline kmem are never charged", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape, 2, 1);
  REQUIRE(r.mc.charge_obj(0, kRootMemcg, 0, 40, GFP_NOWAIT));
  REQUIRE(r.mc.charge_pages(1, kRootMemcg, 8, GFP_NOWAIT));
  r.mc.uncharge_obj(0, kRootMemcg, 0, 40);
  r.mc.uncharge_pages(1, kRootMemcg, 8);
  r.mc.drain_all();
  CHECK(r.ev == Counters{});
  CHECK(r.mc.usage_pages(kRootMemcg) == 0);
  CHECK(r.mc.kmem_pages(kRootMemcg) == 0);
  CHECK(r.mc.slab_bytes(kRootMemcg) == 0);
  EventSink ev;
  Memcg off(MemcgConfig{shape, false, 64}, &ev, 1, 1);
  const MemcgId m = off.create(kRootMemcg, 1);
  REQUIRE(off.charge_obj(0, m, 0, 4096 * 4, GFP_NOWAIT));
  REQUIRE(off.charge_pages(0, m, 8, GFP_NOWAIT));
  CHECK(ev == Counters{});
  CHECK(off.usage_pages(m) == 0);
}

TEST_CASE("memcg: memory.max refuses without __GFP_NOFAIL/__GFP_HIGH", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg, 10);
  // Each 1-page charge: batch 64 fails (walk), retry with 1 page (walk).
  for (int i = 0; i < 10; ++i) REQUIRE(r.mc.charge_pages(0, m, 1, GFP_NOWAIT));
  expect(r.ev, {{Event::memcg_charge, 10}, {Event::page_counter_charge, 20}});
  CHECK(r.mc.usage_pages(m) == 10);
  // 11th: both walks fail; GFP_NOWAIT cannot block -> refused.
  CHECK_FALSE(r.mc.charge_pages(0, m, 1, GFP_NOWAIT));
  // An object charge needs a page too: miss, 2 walks, refused, nothing kept.
  CHECK_FALSE(r.mc.charge_obj(0, m, 0, 40, GFP_NOWAIT));
  // GFP_KERNEL: 2 walks, drain_all_stock finds no stock, 1 more walk, refused.
  CHECK_FALSE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL));
  expect(r.ev, {{Event::memcg_charge, 13}, {Event::page_counter_charge, 27},
                {Event::obj_stock_miss, 2}, {Event::memcg_charge_fail, 3}});
  CHECK(r.mc.live_obj_bytes(m) == 0);
  CHECK(r.mc.obj_stock_bytes(m) == 0);
  CHECK(r.mc.usage_pages(m) == 10);
  // Forced: 2 failed walks + the forced page_counter_charge walk each.
  REQUIRE(r.mc.charge_pages(0, m, 1, GFP_NOWAIT | __GFP_NOFAIL));
  REQUIRE(r.mc.charge_pages(0, m, 1, GFP_NOWAIT | __GFP_HIGH));
  expect(r.ev, {{Event::memcg_charge, 15}, {Event::page_counter_charge, 33},
                {Event::obj_stock_miss, 2}, {Event::memcg_charge_fail, 3}});
  CHECK(r.mc.usage_pages(m) == 12);
  CHECK(r.mc.kmem_pages(m) == 12);
  // 12 single-page uncharges go to the memcg stock (1..12 <= 64).
  for (int i = 0; i < 12; ++i) r.mc.uncharge_pages(0, m, 1);
  CHECK(r.mc.memcg_stock_pages(m) == 12);
  CHECK(r.mc.usage_pages(m) == 12);
  r.mc.drain_all();
  CHECK(r.mc.usage_pages(m) == 0);
  CHECK(r.ev[Event::memcg_uncharge_pages] == 12);
  CHECK(r.ev[Event::page_counter_uncharge] == 1);
}

TEST_CASE("memcg: a blocking charge drains other CPUs' stocks", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape, 2, 1);
  const MemcgId m = r.mc.create(kRootMemcg, 64);
  REQUIRE(r.mc.charge_pages(0, m, 1, GFP_KERNEL));    // walk 1: 64, CPU 0 stock 63
  CHECK_FALSE(r.mc.charge_pages(1, m, 1, GFP_NOWAIT));  // walks 2, 3 fail
  // walks 4, 5 fail; drain_all_stock(m) returns CPU 0's 63 pages (usage 1);
  // retry with 1 page: walk 6 succeeds (usage 2), no refill.
  REQUIRE(r.mc.charge_pages(1, m, 1, GFP_KERNEL));
  expect(r.ev, {{Event::memcg_charge, 3}, {Event::page_counter_charge, 6},
                {Event::page_counter_uncharge, 1}, {Event::memcg_charge_fail, 1}});
  CHECK(r.mc.usage_pages(m) == 2);
  CHECK(r.mc.memcg_stock_pages(m) == 0);
}

TEST_CASE("memcg: hierarchy limits and hierarchical stats", "[memcg]") {
  Rig r(MemcgShape::v6_18);
  const MemcgId p = r.mc.create(kRootMemcg, 65);
  const MemcgId c1 = r.mc.create(p), c2 = r.mc.create(p);
  REQUIRE(r.mc.charge_pages(0, c1, 1, GFP_NOWAIT));    // walk 1: C1 64, P 64
  REQUIRE(r.mc.charge_pages(0, c2, 1, GFP_NOWAIT));    // 64 fails at P, 1 ok: walks 2, 3
  CHECK_FALSE(r.mc.charge_pages(0, c2, 1, GFP_NOWAIT));  // walks 4, 5 fail at P
  // walks 6, 7 fail at P; drain_all_stock(P) drains C1's 63 stocked pages
  // (P 2); walk 8 charges 1 page (C2 2, P 3).
  REQUIRE(r.mc.charge_pages(0, c2, 1, GFP_KERNEL));
  expect(r.ev, {{Event::memcg_charge, 4}, {Event::page_counter_charge, 8},
                {Event::page_counter_uncharge, 1}, {Event::memcg_charge_fail, 1}});
  CHECK(r.mc.usage_pages(c1) == 1);
  CHECK(r.mc.usage_pages(c2) == 2);
  CHECK(r.mc.usage_pages(p) == 3);
  CHECK(r.mc.usage_pages(kRootMemcg) == 3);
  CHECK(r.mc.kmem_pages(p) == 3);
  CHECK(r.mc.kmem_pages(c2) == 2);
  CHECK(r.mc.parent(c2) == p);
}

TEST_CASE("memcg: memcg stock evicts round robin past 7 memcgs", "[memcg]") {
  // 6.18 evicts a random slot (get_random_u32_below); the model uses the
  // 7.1 drain_idx round robin for both shapes to stay deterministic.
  EACH_SHAPE(shape);
  Rig r(shape);
  std::vector<MemcgId> m;
  for (int i = 0; i < 8; ++i) m.push_back(r.mc.create(kRootMemcg));
  for (MemcgId id : m) REQUIRE(r.mc.charge_pages(0, id, 1, GFP_KERNEL));
  // 8 walks of 64; the 8th memcg evicts slot 0 (m[0]: 63 pages uncharged).
  CHECK(r.mc.usage_pages(m[0]) == 1);
  CHECK(r.mc.usage_pages(m[7]) == 64);
  CHECK(r.mc.memcg_stock_pages(kRootMemcg) == 7 * 63);
  REQUIRE(r.mc.charge_pages(0, m[0], 1, GFP_KERNEL));  // walk 9, evicts m[1]
  CHECK(r.mc.usage_pages(m[1]) == 1);
  CHECK(r.mc.usage_pages(m[0]) == 65);
  expect(r.ev, {{Event::memcg_charge, 9}, {Event::page_counter_charge, 9},
                {Event::page_counter_uncharge, 2}});
}

TEST_CASE("memcg: an emptied memcg stock slot", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  std::vector<MemcgId> m;
  for (int i = 0; i < 9; ++i) m.push_back(r.mc.create(kRootMemcg));
  for (int i = 0; i < 7; ++i) REQUIRE(r.mc.charge_pages(0, m[i], 1, GFP_KERNEL));
  // 63 stock hits empty m[0]'s slot 0: 6.18 keeps it cached with 0 pages,
  // 7.1 releases it.
  for (int i = 0; i < 63; ++i) REQUIRE(r.mc.charge_pages(0, m[0], 1, GFP_KERNEL));
  REQUIRE(r.mc.charge_pages(0, m[7], 1, GFP_KERNEL));
  REQUIRE(r.mc.charge_pages(0, m[8], 1, GFP_KERNEL));
  if (shape == MemcgShape::v6_18) {
    // m[7] evicts slot 0 (no pages to return), m[8] evicts slot 1 (m[1]).
    CHECK(r.mc.usage_pages(m[1]) == 1);
    CHECK(r.mc.usage_pages(m[7]) == 64);
  } else {
    // m[7] takes the free slot 0; m[8] evicts drain_idx 0, i.e. m[7].
    CHECK(r.mc.usage_pages(m[1]) == 64);
    CHECK(r.mc.usage_pages(m[7]) == 1);
  }
  expect(r.ev, {{Event::memcg_charge, 72}, {Event::page_counter_charge, 9},
                {Event::memcg_stock_hit, 63}, {Event::page_counter_uncharge, 1}});
}

TEST_CASE("memcg: large kmalloc charge_pages", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  // 10 order-3 (8 page) charges: #1 walks (64, stock 56), #2-#8 hit the
  // stock (56 -> 0), #9 misses and walks (stock 56), #10 hits (48).
  for (int i = 0; i < 10; ++i) REQUIRE(r.mc.charge_pages(0, m, 8, GFP_KERNEL_ACCOUNT));
  expect(r.ev, {{Event::memcg_charge, 10}, {Event::memcg_stock_hit, 8},
                {Event::page_counter_charge, 2}});
  CHECK(r.mc.usage_pages(m) == 128);
  CHECK(r.mc.kmem_pages(m) == 80);
  CHECK(r.mc.memcg_stock_pages(m) == 48);
  // 10 uncharges refill the stock: 56, 64, 72 > 64 -> slot drained (72
  // pages to page_counter), then 8, 16, ..., 56.
  for (int i = 0; i < 10; ++i) r.mc.uncharge_pages(0, m, 8);
  CHECK(r.ev[Event::memcg_uncharge_pages] == 10);
  CHECK(r.ev[Event::page_counter_uncharge] == 1);
  CHECK(r.mc.usage_pages(m) == 56);
  CHECK(r.mc.kmem_pages(m) == 0);
  // 128 pages > MEMCG_CHARGE_BATCH: no stock, one walk of exactly 128; the
  // uncharge bypasses the stock too (refill_stock over the batch).
  REQUIRE(r.mc.charge_pages(0, m, 128, GFP_KERNEL_ACCOUNT));
  CHECK(r.ev[Event::page_counter_charge] == 3);
  CHECK(r.mc.usage_pages(m) == 184);
  r.mc.uncharge_pages(0, m, 128);
  CHECK(r.ev[Event::page_counter_uncharge] == 2);
  CHECK(r.mc.usage_pages(m) == 56);
  r.mc.drain_all();
  CHECK(r.mc.usage_pages(m) == 0);
  CHECK(r.ev[Event::page_counter_uncharge] == 3);
}

TEST_CASE("memcg: one slab of kmalloc-cg-2k objects (2056 bytes)", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  for (int i = 0; i < 16; ++i) REQUIRE(r.mc.charge_obj(0, m, 0, 2056, GFP_KERNEL_ACCOUNT));
  // Misses = ceil(16 * 2056 / 4096) = ceil(8.03) = 9 (each gives a 2040
  // rest), hits 7; 1 walk + 8 memcg stock hits (63 -> 55). Stats: 2056
  // cached, the next sum 4112 > 4096 flushes: 8 flushes, 0 cached.
  expect(r.ev, {{Event::obj_stock_hit, 7}, {Event::obj_stock_miss, 9},
                {Event::memcg_charge, 9}, {Event::memcg_stock_hit, 8},
                {Event::page_counter_charge, 1}, {Event::memcg_vmstat_flush, 8}});
  CHECK(r.mc.obj_stock_bytes(m) == 9 * 4096 - 16 * 2056);  // 3968
  CHECK(r.mc.kmem_pages(m) == 9);
  for (int i = 0; i < 16; ++i) r.mc.uncharge_obj(0, m, 0, 2056);
  // Stock 3968 -> 6024 (U) 1928 -> 3984 -> 6040 (U) 1944 -> ... odd frees
  // uncharge a page, the 16th lands on exactly 4096 (not > 4096): 8
  // uncharges, 4096 bytes kept. 8 more stat flushes (-4112 each).
  CHECK(r.ev[Event::memcg_uncharge_pages] == 8);
  CHECK(r.ev[Event::memcg_vmstat_flush] == 16);
  CHECK(r.mc.obj_stock_bytes(m) == 4096);
  CHECK(r.mc.memcg_stock_pages(m) == 63);
  CHECK(r.mc.kmem_pages(m) == 1);
  CHECK(r.mc.slab_bytes(m) == 0);
  r.mc.drain_all();
  CHECK(r.mc.usage_pages(m) == 0);
  CHECK(r.ev[Event::page_counter_uncharge] == 2);
}

TEST_CASE("memcg: a batched run needs the whole run in the stock", "[memcg]") {
  // Seed 002: a run of L objects consumes L * size at once.
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  REQUIRE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL_ACCOUNT));  // stock 4056
  // 102 * 40 = 4080 > 4056: a miss although 101 objects would fit; 1 page
  // from the memcg stock, rest 16 refilled without uncharge: 4072. The
  // stat sum 40 + 4080 = 4120 > 4096 flushes once.
  REQUIRE(r.mc.charge_obj(0, m, 0, 102 * 40, GFP_KERNEL_ACCOUNT));
  expect(r.ev, {{Event::obj_stock_miss, 2}, {Event::memcg_charge, 2},
                {Event::page_counter_charge, 1}, {Event::memcg_stock_hit, 1},
                {Event::memcg_vmstat_flush, 1}});
  CHECK(r.mc.obj_stock_bytes(m) == 4072);
  // A 16 * 2056 = 32896-byte run: more than the 4072 in the stock, so
  // ceil(32896 / 4096) = 9 pages; rest 36864 - 32896 = 3968 -> 8040.
  REQUIRE(r.mc.charge_obj(0, m, 0, 16 * 2056, GFP_KERNEL_ACCOUNT));
  CHECK(r.mc.obj_stock_bytes(m) == 4072 + 3968);
  CHECK(r.mc.kmem_pages(m) == 11);
  CHECK(r.mc.slab_bytes(m) == 40 + 4080 + 32896);
}

TEST_CASE("memcg: slab stat cache flushes only above PAGE_SIZE", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  // 1024-byte deltas: 1024..4096 stay cached (|sum| <= 4096), the 5th makes
  // 5120 and flushes; the 6th starts afresh, the 9th reaches 4096 again.
  for (int i = 0; i < 9; ++i) REQUIRE(r.mc.charge_obj(0, m, 0, 1024, GFP_KERNEL));
  CHECK(r.ev[Event::memcg_vmstat_flush] == 1);
  CHECK(r.mc.slab_bytes(m) == 9 * 1024);
  // A delta for another pgdat flushes the cached 4096 first and is cached
  // itself; switching back flushes those 40 bytes.
  REQUIRE(r.mc.charge_obj(0, m, 1, 40, GFP_KERNEL));
  CHECK(r.ev[Event::memcg_vmstat_flush] == 2);
  REQUIRE(r.mc.charge_obj(0, m, 0, 40, GFP_KERNEL));
  CHECK(r.ev[Event::memcg_vmstat_flush] == 3);
  CHECK(r.mc.slab_bytes(m) == 9 * 1024 + 80);
}

TEST_CASE("memcg: a page-multiple charge and the obj stock", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId a = r.mc.create(kRootMemcg), b = r.mc.create(kRootMemcg);
  REQUIRE(r.mc.charge_obj(0, a, 0, 40, GFP_KERNEL));    // A cached, 4056
  REQUIRE(r.mc.charge_obj(0, b, 0, 8192, GFP_KERNEL));  // 2 pages, rest 0
  if (shape == MemcgShape::v6_18) {
    // 6.18 refills even a zero rest (pgdat is set): the stock switches to
    // B, draining A (4056 -> nr_charged_bytes, its 40 stat bytes flushed);
    // B's 8192 is the first delta, so it is cached.
    expect(r.ev, {{Event::obj_stock_miss, 2}, {Event::memcg_charge, 2},
                  {Event::page_counter_charge, 2}, {Event::obj_stock_drain, 1},
                  {Event::memcg_vmstat_flush, 1}});
    CHECK(r.mc.charged_bytes(a) == 4056);
    CHECK(r.mc.obj_stock_bytes(a) == 0);
  } else {
    // 7.1 skips the refill: B gets no slot and its delta goes straight to
    // the lruvec (one flush); A keeps its slot.
    expect(r.ev, {{Event::obj_stock_miss, 2}, {Event::memcg_charge, 2},
                  {Event::page_counter_charge, 2}, {Event::memcg_vmstat_flush, 1}});
    CHECK(r.mc.obj_stock_bytes(a) == 4056);
  }
  CHECK(r.mc.slab_bytes(b) == 8192);
  CHECK(r.mc.kmem_pages(b) == 2);
}

TEST_CASE("memcg: runs above 64 KiB hit the 7.1 uint16/int16 limits", "[memcg]") {
  EACH_SHAPE(shape);
  Rig r(shape);
  const MemcgId m = r.mc.create(kRootMemcg);
  // A run of 32 kmalloc-cg-2k objects: 65792 bytes -> 17 pages (69632),
  // rest 3840. While the stock holds less than a run every run misses and
  // adds 3840: after 17 runs 65280 < 65792, so run 18 misses too -> 69120.
  for (int i = 0; i < 18; ++i) REQUIRE(r.mc.charge_obj(0, m, 0, 32 * 2056, GFP_KERNEL));
  CHECK(r.ev[Event::obj_stock_miss] == 18);
  if (shape == MemcgShape::v6_18) {
    // unsigned int nr_bytes: kept. Stats: each 65792 delta is cached when
    // the cache is empty and flushed with the next: 9 flushes.
    CHECK(r.mc.obj_stock_bytes(m) == 69120);
    CHECK(r.ev[Event::memcg_uncharge_pages] == 0);
    CHECK(r.ev[Event::memcg_vmstat_flush] == 9);
  } else {
    // uint16 slot: 69120 > 65535 -> 16 pages uncharged, 3584 kept. Stats:
    // 65792 does not fit int16: every delta goes straight out.
    CHECK(r.mc.obj_stock_bytes(m) == 3584);
    CHECK(r.ev[Event::memcg_uncharge_pages] == 1);
    CHECK(r.ev[Event::memcg_vmstat_flush] == 18);
  }
  CHECK(r.mc.kmem_pages(m) * 4096 ==
        18 * 32 * 2056 + static_cast<int64_t>(r.mc.obj_stock_bytes(m)));
}

namespace {

// A seeded random walk of charges and frees over 4 CPUs, 2 nodes and the
// tree a, a/b, a/b/d, c (memory.max 200), tracking what must be live.
struct RandomWalk {
  struct Obj {
    MemcgId memcg;
    uint32_t bytes, pages;  // bytes == 0: a charge_pages() charge
    NodeId nid, pgdat;
  };
  Rig r;
  Memcg& mc = r.mc;
  MemcgId a = mc.create(kRootMemcg), b = mc.create(a);
  MemcgId c = mc.create(kRootMemcg, 200), d = mc.create(b);
  std::vector<Obj> live;
  std::vector<int64_t> bytes = std::vector<int64_t>(mc.nr_memcgs());
  std::vector<int64_t> pages = std::vector<int64_t>(mc.nr_memcgs());
  std::mt19937_64 rng{0x5eed2026};  // raw output only: same everywhere

  explicit RandomWalk(MemcgShape shape) : r(shape, 4, 2) {}
  uint32_t pick(uint64_t n) { return static_cast<uint32_t>(rng() % n); }

  void step() {
    static constexpr uint32_t kSizes[] = {40,   72,   136,  200,    520,   1032,
                                          2056, 4104, 8200, 8 * 40, 16 * 2056};
    static constexpr uint32_t kPages[] = {1, 2, 4, 8, 128};
    const uint32_t op = pick(100);
    const auto cpu = static_cast<CpuId>(pick(4));
    const MemcgId ids[] = {a, b, c, d};
    const MemcgId m = ids[pick(4)];
    const gfp_t gfp = pick(2) ? GFP_KERNEL_ACCOUNT : GFP_NOWAIT | __GFP_ACCOUNT;
    if (op < 50) {
      const Obj o{m, kSizes[pick(std::size(kSizes))], 0, mc.objcg_node(cpu),
                  static_cast<NodeId>(pick(2))};
      if (mc.charge_obj(cpu, m, o.pgdat, o.bytes, gfp)) add(o);
    } else if (op < 58) {
      const uint32_t n = kPages[pick(std::size(kPages))];
      if (mc.charge_pages(cpu, m, n, gfp)) add(Obj{m, 0, n, 0, 0});
    } else if (op < 99) {
      if (!live.empty()) free_one(pick(live.size()));
    } else {
      mc.drain_all();
    }
  }
  void add(const Obj& o) {
    live.push_back(o);
    bytes[o.memcg] += o.bytes;
    pages[o.memcg] += o.bytes ? 0 : o.pages;
  }
  void free_one(size_t i) {
    const Obj o = live[i];
    live[i] = live.back();
    live.pop_back();
    const auto cpu = static_cast<CpuId>(pick(4));
    if (o.bytes == 0) {
      mc.uncharge_pages(cpu, o.memcg, o.pages);
      pages[o.memcg] -= o.pages;
      return;
    }
    if (pick(2)) mc.uncharge_obj(cpu, o.memcg, o.pgdat, o.bytes, o.nid);
    else mc.uncharge_obj(cpu, o.memcg, o.pgdat, o.bytes);  // freeing CPU's node
    bytes[o.memcg] -= o.bytes;
  }
  int64_t subtree(MemcgId root, const std::vector<int64_t>& v) const {
    int64_t sum = 0;
    for (MemcgId x = 1; x < mc.nr_memcgs(); ++x)
      for (MemcgId y = x;; y = mc.parent(y)) {
        if (y == root) sum += v[x];
        if (y == root || y == kRootMemcg) break;
      }
    return sum;
  }
  // Exact at every step: stats match the ground truth; memory.current is
  // MEMCG_KMEM plus stocked pages; MEMCG_KMEM pages are live objects,
  // large charges and precharged bytes (obj stocks, nr_charged_bytes).
  void check(int step) const {
    for (MemcgId x = 0; x < mc.nr_memcgs(); ++x) {
      INFO("step " << step << " memcg " << x);
      const int64_t lb = subtree(x, bytes), lp = subtree(x, pages);
      REQUIRE(mc.live_obj_bytes(x) == lb);
      REQUIRE(mc.slab_bytes(x) == lb);
      REQUIRE(mc.usage_pages(x) ==
              static_cast<uint64_t>(mc.kmem_pages(x)) + mc.memcg_stock_pages(x));
      REQUIRE(mc.kmem_pages(x) * int64_t{PAGE_SIZE} ==
              lb + lp * int64_t{PAGE_SIZE} +
                  static_cast<int64_t>(mc.obj_stock_bytes(x) + mc.charged_bytes(x)));
    }
    REQUIRE(mc.usage_pages(c) <= 200);  // nothing is forced
  }
};

}  // namespace

TEST_CASE("memcg: random charges balance out after drain_all", "[memcg]") {
  EACH_SHAPE(shape);
  RandomWalk w(shape);
  for (int step = 0; step < 20000; ++step) {
    w.step();
    w.check(step);
  }
  // The walk must have exercised the interesting paths.
  CHECK(w.r.ev[Event::obj_stock_drain] > 0);
  CHECK(w.r.ev[Event::memcg_charge_fail] > 0);
  CHECK(w.r.ev[Event::memcg_uncharge_pages] > 0);
  CHECK(w.r.ev[Event::memcg_stock_hit] > 0);
  CHECK(w.r.ev[Event::page_counter_uncharge] > 0);
  while (!w.live.empty()) w.free_one(w.live.size() - 1);
  w.mc.drain_all();
  for (MemcgId x = 0; x < w.mc.nr_memcgs(); ++x) {
    INFO("memcg " << x);
    CHECK(w.mc.usage_pages(x) == 0);
    CHECK(w.mc.kmem_pages(x) == 0);
    CHECK(w.mc.slab_bytes(x) == 0);
    CHECK(w.mc.live_obj_bytes(x) == 0);
    CHECK(w.mc.memcg_stock_pages(x) == 0);
    CHECK(w.mc.obj_stock_bytes(x) == 0);
    CHECK(w.mc.charged_bytes(x) == 0);
  }
}
