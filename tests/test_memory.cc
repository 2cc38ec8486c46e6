// Memory follows live objects, not rounds run: a dead ring frees its
// per-slot state. Live heap bytes are counted by replacing the global
// operator new/delete (malloc_usable_size), or under ASan/TSan by the
// sanitizer's allocator statistics, so the check measures memory, not time.
#include <catch2/catch.hpp>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/io_uring/io_uring_mm.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"
#include "sim/run/scenario.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SIMCACHE_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SIMCACHE_SANITIZER_ALLOCATOR 1
#endif
#endif

#ifdef SIMCACHE_SANITIZER_ALLOCATOR
// Under a sanitizer, its allocator counts live bytes itself (replacing
// operator new there would mix allocators).
// (declared here: GCC's package does not ship <sanitizer/allocator_interface.h>)
extern "C" size_t __sanitizer_get_current_allocated_bytes();
namespace {
int64_t live_bytes() { return static_cast<int64_t>(__sanitizer_get_current_allocated_bytes()); }
}  // namespace
#else
// GCC cannot see that these replacements pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<int64_t> g_live{0};
int64_t live_bytes() { return g_live.load(std::memory_order_relaxed); }
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  g_live.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}
void operator delete(void* p) noexcept {
  if (!p) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }
void* operator new[](size_t n) { return operator new(n); }
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete[](void* p, size_t) noexcept { operator delete(p); }
#endif

using namespace simcache;

TEST_CASE("rounds of fresh rings keep live memory flat", "[memory]") {
  std::string err;
  const iou::KernelProfile* prof = iou::profile_by_name("v6.18", &err);
  REQUIRE(prof);
  for (const char* pol : {"unpatched", "node-slab+bulk-refill+prefill"}) {
    MmConfig mc;
    iou::apply_profile(*prof, mc);
    iou::PolicySet ps;
    REQUIRE(iou::parse_policies(pol, prof, &ps, &mc, &err));
    Mm mm(mc);
    iou::MmIoUring io(mm, *prof, ps);
    const Task app{2, mm.memcg().create(kRootMemcg), 0}, kworker{3, kRootMemcg, 0};
    const int src = io.ring_create(app, {256, 0, false});
    REQUIRE(src >= 0);
    REQUIRE(io.files_register(src, 1) == 0);
    constexpr uint32_t kSlots = 1 << 16;
    auto round = [&] {
      const int dst = io.ring_create(app, {256, 0, false});
      REQUIRE(dst >= 0);
      REQUIRE(io.files_register_sparse(dst, kSlots) == 0);
      for (int i = 0; i < 512; ++i)
        REQUIRE(io.msg_ring_send_fd(src, dst, 0, iou::IORING_FILE_INDEX_ALLOC) >= 0);
      io.files_unregister(dst);
      io.ring_exit(dst, kworker);
    };
    for (int i = 0; i < 20; ++i) round();
    const int64_t after_warmup = live_bytes();
    int64_t peak = after_warmup;
    for (int i = 0; i < 200; ++i) {
      round();
      peak = std::max(peak, live_bytes());
    }
    INFO(pol << ": live after 20 rounds " << after_warmup << " B, peak over the next 200 "
             << peak << " B");
    // Before the fix: 8 bytes per slot per round, 200 x 64 Ki x 8 = 100 MiB.
    // Allowed: the ring vector's growth (ids are never reused) and a round's
    // transient arrays.
    CHECK(peak - after_warmup < (2 << 20));
    io.ring_exit(src, kworker);
  }
}

// The Recorder folds each round's per-cache stat deltas into a running
// minimum and maximum, not a [cache][stat] vector per round (caches x
// stats x 8 bytes, ~30 KB at 20 CPUs); and its rounds' timed counts
// (PolicyResult::rounds, the per-round spread the cost layer reads) keep
// each distinct block once: a round that repeats an earlier one costs an
// index, not a Counters block.
TEST_CASE("the Recorder's per-cache round deltas do not grow with rounds", "[memory]") {
  MmConfig mc;
  Mm mm(mc);
  sim::Recorder rec(mm);
  const Task t{0, kRootMemcg, 0};
  auto round = [&] {
    rec.begin_round(true);
    rec.timed_begin();
    for (uint32_t size : {24u, 100u, 500u, 3000u}) mm.kfree(mm.kmalloc(size, GFP_KERNEL, t), t);
    rec.timed_end();
    rec.end_round(4);
  };
  for (int i = 0; i < 100; ++i) round();
  const int64_t before = live_bytes();
  constexpr int kRounds = 2000;
  for (int i = 0; i < kRounds; ++i) round();
  const int64_t grown = live_bytes() - before;
  const int64_t per_cache_round = static_cast<int64_t>(mm.caches().size() * kNumSlubStats * 8);
  INFO("grew " << grown << " B over " << kRounds << " rounds; a [cache][stat] vector per round "
               << "would add " << per_cache_round << " B each");
  // Identical rounds: a 4-byte index each (a vector grows by doubling:
  // at most 8 bytes a round), far under one Counters block a round.
  CHECK(grown <= 8 * kRounds + 4096);
  CHECK(grown < kRounds * static_cast<int64_t>(sizeof(Counters)) / 50);
  // ... and well under one [cache][stat] vector per round.
  CHECK(grown < kRounds * per_cache_round / 4);
  sim::PolicyResult out;
  rec.finish(&out);
  CHECK(out.rounds.size() == 2100);
  CHECK(out.rounds.distinct() <= 4);  // the first rounds may differ (slabs still growing)
  CHECK(out.rounds[2099] == out.rounds[100]);
  CHECK(!out.round_max.empty());
}

TEST_CASE("RoundLog: rounds in order, each distinct block kept once", "[memory]") {
  const auto block = [](uint64_t n) {
    Counters c;
    c.add(Event::kmalloc, n);
    return c;
  };
  sim::RoundLog log;
  for (uint64_t n : {1, 2, 1, 2, 3, 1}) log.push_back(block(n));
  REQUIRE(log.size() == 6);
  CHECK(log.distinct() == 3);
  std::vector<uint64_t> seen;
  for (const Counters& c : log) seen.push_back(c[Event::kmalloc]);
  CHECK(seen == std::vector<uint64_t>{1, 2, 1, 2, 3, 1});
  CHECK(log.back()[Event::kmalloc] == 1);
  CHECK(log[4][Event::kmalloc] == 3);
  // A cycle longer than the blocks it looks back over is kept in full,
  // and still read back in order.
  sim::RoundLog cyc;
  const uint64_t period = sim::RoundLog::kRecent + 2;
  for (uint64_t i = 0; i < 3 * period; ++i) cyc.push_back(block(i % period));
  CHECK(cyc.distinct() == 3 * period);
  for (uint64_t i = 0; i < 3 * period; ++i) CHECK(cyc[i][Event::kmalloc] == i % period);
  // Equal logs compare equal however they were stored.
  sim::RoundLog a, b;
  for (uint64_t n : {5, 5, 6}) a.push_back(block(n));
  for (uint64_t n : {5, 5, 6}) b.push_back(block(n));
  CHECK(a == b);
  b.push_back(block(5));
  CHECK_FALSE(a == b);
}
