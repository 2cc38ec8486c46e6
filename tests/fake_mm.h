// A counting fake of the mm layer for the io_uring tests: implements the
// simcache::Mm subset the io_uring layer uses (iou::IoAllocator), records
// every call (op, cache, size, gfp, cpu), tracks every object it ever
// handed out (live, parked in a caller's cache, freed) and reports
// KASAN-style errors: double free, wrong-cache free, kfree of kvmalloc
// memory, double put, use after put, use after free, leaks.
//
// Geometry is trivial (order-0 slabs, no merging); failure injection is by
// call number or predicate, and bulk allocations can be made short (the
// real Mm's bulk is all-or-nothing; the RFC code must cope with both).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <stdexcept>
#include <utility>
#include <vector>

#include "model/counters.h"
#include "model/mm/mm.h"
#include "model/types.h"

namespace simcache::testing {

enum class Op : uint8_t {
  kmalloc, kfree, kmem_cache_alloc, kmem_cache_free,
  kmem_cache_alloc_bulk, kmem_cache_free_bulk, kvmalloc, kvfree,
  alloc_page_region, free_page_region,
};

struct Call {
  Op op;
  CacheId cache = kNoCache;  // kmalloc: the size-class cache (kNoCache if large)
  uint32_t size = 0;         // requested size (kmalloc/kvmalloc) or object size
  gfp_t gfp = 0;
  CpuId cpu = 0;
  MemcgId memcg = kRootMemcg;
  int n = 0;                 // bulk: requested
  int got = 0;               // bulk: returned
  Ptr p = kNull;             // single-object calls
};

struct FakeReport {
  std::string kind;
  Ptr p = kNull;
  std::string who;
};

class FakeMm {
 public:
  enum class State : uint8_t { live, parked, freed };
  struct Obj {
    uint32_t size;
    CacheId cache;
    Op how;
    gfp_t gfp;
    CpuId cpu;
    State state;
    int64_t slab = -1;  // fake page: every objs_per_slab allocations of a cache
  };
  struct Cache {
    std::string name;
    uint32_t object_size, slot, align;
    slab_flags_t flags;
  };

  // --- the IoAllocator surface -------------------------------------------
  CacheId kmem_cache_create(std::string_view name, uint32_t size, uint32_t align,
                            slab_flags_t flags, uint32_t /*sheaf_capacity*/ = 0) {
    uint32_t a = align ? align : 8;
    if (flags & SLAB_HWCACHE_ALIGN) {
      uint32_t line = 64;
      while (size <= line / 2) line /= 2;
      a = std::max(a, line);
    }
    const uint32_t slot = (size + a - 1) / a * a;
    caches_.push_back(Cache{std::string(name), size, slot, a, flags});
    return static_cast<CacheId>(caches_.size() - 1);
  }

  static uint32_t kmalloc_class(uint32_t size) {
    if (size <= 8) return 8;
    if (size <= 16) return 16;
    if (size <= 32) return 32;
    if (size <= 64) return 64;
    if (size <= 96) return 96;
    if (size <= 128) return 128;
    if (size <= 192) return 192;
    uint32_t c = 256;
    while (c < size) c <<= 1;
    return c;
  }

  CacheId kmalloc_cache(uint32_t size, gfp_t gfp, SiteId /*site*/) {
    if (size > 8192) return kNoCache;
    const uint32_t cls = kmalloc_class(size);
    const bool cg = (gfp & __GFP_ACCOUNT) != 0;
    // Created on first use; remembered by (class, accounted).
    for (const auto& [k, id] : kmalloc_ids_)
      if (k.first == cls && k.second == cg) return id;
    const std::string name = std::string(cg ? "kmalloc-cg-" : "kmalloc-") + std::to_string(cls);
    for (size_t i = 0; i < caches_.size(); i++)
      if (caches_[i].name == name) return static_cast<CacheId>(i);
    const CacheId id = kmem_cache_create(
        name, cls, cls >= 8 ? std::min<uint32_t>(cls & -cls, 4096) : 8, SLAB_KMALLOC);
    kmalloc_ids_.push_back({{cls, cg}, id});
    return id;
  }

  Ptr kmalloc(uint32_t size, gfp_t gfp, const Task& t) {
    Call c{Op::kmalloc, kmalloc_cache(size, gfp, t.site), size, gfp, t.cpu, t.memcg};
    if (should_fail(c)) return fail(c);
    c.p = make(size, c.cache, Op::kmalloc, gfp, t.cpu);
    events_.add(size > 8192 ? Event::kmalloc_large : Event::kmalloc);
    return record(c);
  }

  void kfree(Ptr p, const Task& t) {
    if (p == kNull) return;
    Obj* o = lookup(p, "kfree");
    Call c{Op::kfree, o ? o->cache : kNoCache, o ? o->size : 0, 0, t.cpu, t.memcg};
    c.p = p;
    calls_.push_back(c);
    // A region is freed only by free_page_region(): as Mm, report and
    // free nothing.
    if (o != nullptr && o->how == Op::alloc_page_region && o->state == State::live)
      return report("invalid-free", p, "kfree");
    if (o == nullptr || !release(*o, p, "kfree")) return;
    if (o->how == Op::kvmalloc) report("kfree-of-kvmalloc", p, "kfree");
    events_.add(o->size > 8192 ? Event::kfree_large : Event::kfree);
  }

  Ptr kmem_cache_alloc(CacheId s, gfp_t gfp, const Task& t) {
    Call c{Op::kmem_cache_alloc, s, caches_.at(s).object_size, gfp, t.cpu, t.memcg};
    if (should_fail(c)) return fail(c);
    c.p = make(c.size, s, Op::kmem_cache_alloc, gfp, t.cpu);
    events_.add(Event::kmem_cache_alloc);
    return record(c);
  }

  void kmem_cache_free(CacheId s, Ptr p, const Task& t) {
    Obj* o = lookup(p, "kmem_cache_free");
    Call c{Op::kmem_cache_free, s, caches_.at(s).object_size, 0, t.cpu, t.memcg};
    c.p = p;
    calls_.push_back(c);
    if (o == nullptr) return;
    if (o->cache != s) report("wrong-cache-free", p, caches_.at(s).name);
    if (release(*o, p, "kmem_cache_free")) events_.add(Event::kmem_cache_free);
  }

  int kmem_cache_alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* out, const Task& t) {
    Call c{Op::kmem_cache_alloc_bulk, s, caches_.at(s).object_size, gfp, t.cpu, t.memcg};
    c.n = n;
    events_.add(Event::kmem_cache_alloc_bulk);
    if (should_fail(c)) {
      fail(c);
      return 0;
    }
    const int got = bulk_limit >= 0 ? std::min(n, bulk_limit) : n;
    for (int i = 0; i < got; i++) out[i] = make(c.size, s, Op::kmem_cache_alloc_bulk, gfp, t.cpu);
    c.got = got;
    events_.add(Event::bulk_objects, static_cast<uint64_t>(got));
    calls_.push_back(c);
    return got;
  }

  void kmem_cache_free_bulk(CacheId s, int n, Ptr* p, const Task& t) {
    Call c{Op::kmem_cache_free_bulk, s, caches_.at(s).object_size, 0, t.cpu, t.memcg};
    c.n = n;
    calls_.push_back(c);
    events_.add(Event::kmem_cache_free_bulk);
    for (int i = 0; i < n; i++)
      if (Obj* o = lookup(p[i], "kmem_cache_free_bulk")) release(*o, p[i], "kmem_cache_free_bulk");
  }

  Ptr kvmalloc(uint64_t size, gfp_t gfp, const Task& t) {
    Call c{Op::kvmalloc, kNoCache, static_cast<uint32_t>(size), gfp, t.cpu, t.memcg};
    if (should_fail(c)) return fail(c);
    c.p = make(c.size, kNoCache, Op::kvmalloc, gfp, t.cpu);
    events_.add(Event::kvmalloc);
    return record(c);
  }

  void kvfree(Ptr p, const Task& t) {
    if (logged_free(p, Op::kvfree, "kvfree", t, false)) events_.add(Event::kvfree);
  }

  // A page region: one object of nr_pages pages; freed only by
  // free_page_region() (kfree() or kvfree() of one is reported and frees
  // nothing, as in Mm).
  Ptr alloc_page_region(uint32_t nr_pages, gfp_t gfp, const Task& t) {
    Call c{Op::alloc_page_region, kNoCache, nr_pages * 4096u, gfp, t.cpu, t.memcg};
    if (should_fail(c)) return fail(c);
    c.p = make(c.size, kNoCache, Op::alloc_page_region, gfp, t.cpu);
    return record(c);
  }

  void free_page_region(Ptr p, const Task& t) {
    logged_free(p, Op::free_page_region, "free_page_region", t, true);
  }

  bool kasan_mempool_poison_object(Ptr p, const Task&) {
    Obj* o = lookup(p, "kasan_mempool_poison_object");
    if (o == nullptr) return false;
    if (o->state != State::live) {
      report(o->state == State::parked ? "double-put" : "put-after-free", p,
             "kasan_mempool_poison_object");
      return false;
    }
    o->state = State::parked;
    return true;
  }

  void kasan_mempool_unpoison_object(Ptr p, const Task&) {
    Obj* o = lookup(p, "kasan_mempool_unpoison_object");
    if (o == nullptr) return;
    if (o->state != State::parked)
      report("unpoison-of-unparked", p, "kasan_mempool_unpoison_object");
    else
      o->state = State::live;
  }

  void kasan_check_access(Ptr p, std::string_view who) {
    Obj* o = lookup(p, who);
    if (o == nullptr) return;
    if (o->state == State::freed) report("use-after-free", p, who);
    if (o->state == State::parked) report("use-after-put", p, who);
  }

  Counters& events() { return events_; }
  const Counters& events() const { return events_; }

  int64_t slab_of(Ptr p) const {
    const Obj* o = find(p);
    return o == nullptr ? -1 : o->slab;
  }

  CacheInfo info(CacheId s) const {
    CacheInfo ci;
    const Cache& c = caches_.at(s);
    ci.name = c.name;
    ci.object_size = c.object_size;
    ci.slab_size = c.slot;
    ci.align = c.align;
    ci.objs_per_slab = PAGE_SIZE / c.slot;
    ci.flags = c.flags;
    return ci;
  }

  // --- test API -----------------------------------------------------------
  const std::vector<Call>& calls() const { return calls_; }
  const Cache& cache(CacheId s) const { return caches_.at(s); }
  CacheId find_cache(std::string_view name) const {
    for (size_t i = 0; i < caches_.size(); i++)
      if (caches_[i].name == name) return static_cast<CacheId>(i);
    return kNoCache;
  }

  template <class Pred>
  uint64_t count_if(Pred pred) const {
    uint64_t n = 0;
    for (const Call& c : calls_) n += pred(c) ? 1 : 0;
    return n;
  }
  uint64_t count(Op op) const {
    return count_if([op](const Call& c) { return c.op == op; });
  }
  uint64_t count(Op op, uint32_t size) const {
    return count_if([op, size](const Call& c) { return c.op == op && c.size == size; });
  }
  // Objects returned by bulk calls.
  uint64_t bulk_objects() const {
    uint64_t n = 0;
    for (const Call& c : calls_) n += c.op == Op::kmem_cache_alloc_bulk ? c.got : 0;
    return n;
  }

  uint64_t live_objects() const {
    uint64_t n = 0;
    for (const Obj& o : objs_) n += o.state != State::freed ? 1 : 0;
    return n;
  }
  uint64_t parked_objects() const {
    uint64_t n = 0;
    for (const Obj& o : objs_) n += o.state == State::parked ? 1 : 0;
    return n;
  }
  State state(Ptr p) const {
    const Obj* o = find(p);
    if (o == nullptr) throw std::out_of_range("FakeMm::state: not an object");
    return o->state;
  }

  // End-of-run check: one "leak" report per live object; returns how many.
  size_t check_leaks() {
    size_t n = 0;
    for (size_t i = 0; i < objs_.size(); i++) {
      const Obj& o = objs_[i];
      if (o.state != State::freed) {
        report("leak", kFirst + kStride * i,
               o.cache != kNoCache ? caches_[o.cache].name : "kvmalloc/large");
        n++;
      }
    }
    return n;
  }

  const std::vector<FakeReport>& reports() const { return reports_; }
  bool has_report(std::string_view kind) const {
    for (const FakeReport& r : reports_)
      if (r.kind == kind) return true;
    return false;
  }

  // Forgets the call log (objects and reports stay).
  void clear_calls() { calls_.clear(); }

  // Fault injection: the nth allocation call (kmalloc, kmem_cache_alloc,
  // kmem_cache_alloc_bulk, kvmalloc, alloc_page_region) counted from now,
  // 1-based, fails.
  void fail_nth_alloc(uint64_t nth) {
    alloc_calls_ = 0;
    fail_nth_ = nth;
  }
  std::function<bool(const Call&)> fail_if;  // also fails a call when true
  int bulk_limit = -1;                       // >= 0: bulk returns at most this many

 private:
  bool should_fail(const Call& c) {
    ++alloc_calls_;
    if (fail_nth_ != 0 && alloc_calls_ == fail_nth_) return true;
    return fail_if && fail_if(c);
  }
  Ptr fail(Call& c) {
    events_.add(Event::alloc_failed);
    calls_.push_back(c);
    return kNull;
  }
  Ptr make(uint32_t size, CacheId cache, Op how, gfp_t gfp, CpuId cpu) {
    Obj o{size, cache, how, gfp, cpu, State::live};
    if (cache < caches_.size()) {
      // Fresh pages only, never reused: page k of a cache holds its
      // allocations k*P .. k*P+P-1 (P = objs_per_slab).
      if (made_.size() < caches_.size()) made_.resize(caches_.size(), 0);
      const uint64_t per = std::max<uint32_t>(1, PAGE_SIZE / caches_[cache].slot);
      o.slab = static_cast<int64_t>(cache) << 32 | static_cast<int64_t>(made_[cache]++ / per);
    }
    objs_.push_back(o);
    return kFirst + kStride * (objs_.size() - 1);
  }
  // Pointers are handed out in order, kStride apart from kFirst, and
  // never reused: the index of the object at `p`, or objs_.size() or
  // beyond when `p` is none.
  size_t index_of(Ptr p) const {
    if (p < kFirst || (p - kFirst) % kStride != 0) return objs_.size();
    return (p - kFirst) / kStride;
  }
  // The object at `p`, or null.
  const Obj* find(Ptr p) const {
    const size_t i = index_of(p);
    return i < objs_.size() ? &objs_[i] : nullptr;
  }
  Ptr record(Call& c) {
    calls_.push_back(c);
    return c.p;
  }
  Obj* lookup(Ptr p, std::string_view who) {
    if (const size_t i = index_of(p); i < objs_.size()) return &objs_[i];
    report("invalid-pointer", p, who);
    return nullptr;
  }
  // Frees `o`; reports and refuses frees of freed or parked objects.
  // A free that takes no cache (kvfree, free_page_region), logged: a
  // page region is freed only by free_page_region() and nothing else by
  // it (as Mm: reported, nothing freed). True when the object was released.
  bool logged_free(Ptr p, Op op, std::string_view who, const Task& t, bool of_region) {
    if (p == kNull) return false;
    Obj* o = lookup(p, who);
    Call c{op, kNoCache, o ? o->size : 0, 0, t.cpu, t.memcg};
    c.p = p;
    calls_.push_back(c);
    if (o == nullptr) return false;
    if ((o->how == Op::alloc_page_region) != of_region && o->state == State::live) {
      report("invalid-free", p, who);
      return false;
    }
    return release(*o, p, who);
  }
  bool release(Obj& o, Ptr p, std::string_view who) {
    if (o.state == State::freed) {
      report("double-free", p, who);
      return false;
    }
    if (o.state == State::parked) {
      report("free-of-parked", p, who);
      return false;
    }
    o.state = State::freed;
    return true;
  }
  void report(std::string kind, Ptr p, std::string_view who) {
    reports_.push_back(FakeReport{std::move(kind), p, std::string(who)});
  }

  std::vector<Cache> caches_;
  static constexpr Ptr kFirst = 0x100040;
  static constexpr Ptr kStride = 0x40;
  std::vector<Obj> objs_;  // by allocation order: objs_[i] is at kFirst + kStride * i
  std::vector<std::pair<std::pair<uint32_t, bool>, CacheId>> kmalloc_ids_;
  std::vector<Call> calls_;
  std::vector<FakeReport> reports_;
  Counters events_;
  std::vector<uint64_t> made_;  // allocations per cache (fake pages)
  uint64_t alloc_calls_ = 0;
  uint64_t fail_nth_ = 0;
};

}  // namespace simcache::testing
