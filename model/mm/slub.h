// SLUB proper: kmem_cache state, slabs, per-CPU layers of both
// generations, the node partial lists and the bulk API. One class, three
// source files: slab.cc (slabs, node lists, __slab_free, objects),
// slub618.cc (per-CPU slab + per-CPU partial list, v6.18) and slub7x.cc
// (sheaves + barn, 7.x). The generation is chosen once per Mm and switched
// on per call; nothing here allocates per simulated object.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/counters.h"
#include "model/mm/geometry.h"
#include "model/mm/mm.h"
#include "model/mm/page_alloc.h"

namespace simcache {

enum class SlabWhere : uint8_t {
  kUnused,       // slot free in the slab table
  kNodePartial,  // on kmem_cache_node.partial (SL_partial)
  kCpuPartial,   // 6.18: on some CPU's partial list (unfrozen)
  kCpuSlab,      // 6.18: a CPU slab (frozen)
  kFull,         // on no list
  kIsolated,     // 7.x: taken off the list by a refill
};

// One object's last allocation and free, for KASAN-style reports.
struct ObjHist {
  uint64_t alloc_seq = 0, free_seq = 0;
  SiteId alloc_site = 0, free_site = 0;
  CpuId alloc_cpu = 0, free_cpu = 0;
};

struct Slab {
  CacheId cache = kNoCache;
  NodeId node = 0;
  uint8_t order = 0;
  SlabWhere where = SlabWhere::kUnused;
  uint16_t epoch = 0;
  uint16_t objects = 0;
  uint16_t inuse = 0;      // objects not on `freelist`
  CpuId cpu = 0;           // owner while kCpuSlab / kCpuPartial
  int32_t prev = -1, next = -1;  // node partial list, or CPU partial chain
  uint32_t page = 0;
  Ptr obj_exts = kNull;    // the slabobj_ext vector (a kmalloc object)
  std::vector<uint16_t> freelist;  // slab->freelist, LIFO
  std::vector<uint8_t> state;      // ObjState per object
  std::vector<ObjHist> hist;
  std::vector<MemcgId> objcg;      // charged memcg per object (obj_exts)
  std::vector<NodeId> objcg_node;  // 7.1+: node of the per-node objcg charged
};

struct Sheaf {
  CacheId cache = kNoCache;
  uint32_t capacity = 0;
  Ptr self = kNull;            // the sheaf's own kmalloc allocation
  std::vector<Ptr> objects;    // size() is sheaf->size
};

struct KmemCache {
  std::string name;
  std::vector<std::string> aliases;
  Geometry g;
  slab_flags_t flags = 0;
  uint32_t usersize = 0;
  uint32_t requested_sheaf_capacity = 0;  // kmem_cache_args.sheaf_capacity
  int refcount = 1;
  bool is_kmalloc = false;
  KmallocType ktype = KmallocType::NORMAL;
  uint32_t obj_full_size = 0;  // charged size: s->size + sizeof(objcg ptr)

  struct Node {
    int32_t partial_head = -1, partial_tail = -1;
    uint32_t nr_partial = 0;
    uint64_t nr_slabs = 0, total_objects = 0;
    std::vector<int32_t> barn_full, barn_empty;  // 7.x node_barn
  };
  struct Cpu {
    // 6.18 kmem_cache_cpu
    int32_t slab = -1;
    std::vector<uint16_t> freelist;   // c->freelist: indices into `slab`
    int32_t partial = -1;             // head of the CPU partial chain
    uint32_t partial_slabs = 0;
    // 7.x slub_percpu_sheaves
    int32_t main = -1, spare = -1;
  };
  std::vector<Node> node;
  std::vector<Cpu> cpu;
  std::vector<uint64_t> stats;  // [cpu * kNumSlubStats + item]
  uint64_t live = 0;            // objects handed out (allocated or mempool)
};

class Slub {
 public:
  Slub(Mm* mm, const MmConfig& cfg, Counters* ev, PageAllocator* pages,
       FaultInjector* faults, Memcg* memcg);

  CacheId create(std::string_view name, uint32_t size, uint32_t align,
                 slab_flags_t flags, uint32_t sheaf_capacity, bool is_kmalloc,
                 KmallocType ktype, uint32_t usersize);
  KmemCache& cache(CacheId s) { return caches_[s]; }
  const KmemCache& cache(CacheId s) const { return caches_[s]; }
  size_t nr_caches() const { return caches_.size(); }

  Ptr alloc(CacheId s, gfp_t gfp, const Task& t);
  void free(CacheId s, Ptr p, const Task& t);
  int alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_bulk(CacheId s, int n, Ptr* p, const Task& t);
  void flush_all(CacheId s);   // flush_all() + __kmem_cache_shrink()

  // Pointer decoding and object state.
  bool decode(Ptr p, int32_t* slab, uint32_t* idx) const;
  ObjState state(Ptr p) const;
  void set_state(Ptr p, ObjState st);
  const Slab& slab(int32_t i) const { return slabs_[i]; }
  size_t nr_slab_slots() const { return slabs_.size(); }
  std::string history(Ptr p) const;
  uint64_t seq() const { return seq_; }
  uint64_t next_seq() { return ++seq_; }
  uint64_t slab_bytes() const { return slab_bytes_; }
  std::vector<Ptr> live_objects() const;
  // Allocations the allocator owns: obj_exts vectors of live slabs and
  // the kmalloc'ed sheaves in use.
  std::vector<Ptr> internal_objects() const;

  void stat(const KmemCache& c, CpuId cpu, SlubStat item, uint64_t n = 1) {
    const_cast<KmemCache&>(c).stats[cpu * kNumSlubStats +
                                     static_cast<size_t>(item)] += n;
  }
  void report(std::string kind, Ptr p, CacheId s, std::string detail);
  // Objects held by per-CPU layers (6.18 CPU freelists, 7.x sheaves in
  // CPUs and barns), counted from those structures.
  uint64_t cached_objects(CacheId s) const;
  // Cross-checks every structure against every other one (object states,
  // inuse counts, lists, per-node counters, sheaves). Returns a
  // description of the first violations found, empty when consistent.
  std::string check_invariants() const;
  std::vector<KasanReport> reports;

 private:
  // slab.cc: slabs and node lists.
  int32_t new_slab(CacheId s, gfp_t gfp, NodeId node, const Task& t);
  void discard_slab(CacheId s, int32_t slab, const Task& t);
  void add_partial(KmemCache::Node& n, int32_t slab, bool tail);
  void remove_partial(KmemCache::Node& n, int32_t slab);
  void slab_free_slow(CacheId s, int32_t slab, const uint16_t* idx, int cnt,
                      const Task& t);  // __slab_free()
  void lock(KmemCache::Node&) { ev_->add(Event::list_lock); }
  Ptr make_ptr(int32_t slab, uint32_t idx) const;
  void on_alloc(int32_t slab, uint32_t idx, const Task& t);
  bool check_free(CacheId s, Ptr p, int32_t* slab, uint32_t* idx);
  void on_free(int32_t slab, uint32_t idx, const Task& t);
  bool post_alloc_hook(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_hook(CacheId s, int32_t slab, uint32_t idx, const Task& t);
  struct FreeRun {  // memcg-batch-free: objects awaiting one uncharge
    MemcgId memcg = kRootMemcg;
    NodeId node = 0, objcg_node = 0;
    uint32_t objects = 0;
  };
  void free_hook_batched(CacheId s, int32_t slab, uint32_t idx, const Task& t, FreeRun* run);
  void flush_free_run(CacheId s, const Task& t, FreeRun* run);
  bool ensure_obj_exts(int32_t slab, const Task& t);

  // slub618.cc
  Ptr alloc_618(CacheId s, gfp_t gfp, const Task& t);
  Ptr pop_cpu_freelist(CacheId s, const Task& t);
  Ptr slab_alloc_slow_618(CacheId s, gfp_t gfp, const Task& t);
  void free_618(CacheId s, int32_t slab, const uint16_t* idx, int cnt,
                const Task& t);
  void put_cpu_partial(CacheId s, int32_t slab, bool drain, const Task& t);
  void put_partials(CacheId s, int32_t head, const Task& t);
  void deactivate_slab(CacheId s, CpuId cpu, const Task& t);
  int alloc_bulk_618(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void flush_cpu_618(CacheId s, CpuId cpu, const Task& t);

  // slub7x.cc
  Ptr alloc_7x(CacheId s, gfp_t gfp, const Task& t);
  Ptr alloc_single_7x(CacheId s, gfp_t gfp, const Task& t);  // ___slab_alloc
  bool replace_empty_main(CacheId s, gfp_t gfp, const Task& t);
  void free_7x(CacheId s, Ptr p, int32_t slab, uint32_t idx, const Task& t);
  bool replace_full_main(CacheId s, const Task& t);
  int refill_objects(CacheId s, gfp_t gfp, int min, int max, Ptr* out,
                     const Task& t);
  int refill_from_node(CacheId s, NodeId node, int min, int max, Ptr* out,
                       const Task& t);
  int alloc_bulk_7x(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_bulk_7x(CacheId s, int n, Ptr* p, const Task& t);
  int32_t alloc_sheaf(CacheId s, gfp_t gfp, const Task& t);
  int32_t new_sheaf(CacheId s);
  void install_empty_sheaf(CacheId s, int32_t empty, const Task& t);
  void flush_main(CacheId s, const Task& t);
  void ensure_main(CacheId s, const Task& t);
  void free_sheaf(int32_t sh, const Task& t);
  void flush_sheaf(int32_t sh, const Task& t);
  void flush_cpu_7x(CacheId s, CpuId cpu, const Task& t);

  // Shared by both generations.
  void free_detached(CacheId s, int n, Ptr* p, const Task& t);

  Mm* mm_;
  MmConfig cfg_;
  Counters* ev_;
  PageAllocator* pages_;
  FaultInjector* faults_;
  Memcg* memcg_;
  std::vector<KmemCache> caches_;
  std::vector<Slab> slabs_;
  std::vector<int32_t> free_slab_slots_;
  std::vector<Sheaf> sheaves_;
  std::vector<int32_t> free_sheaf_slots_;
  std::vector<uint16_t> scratch_idx_;
  uint64_t seq_ = 0;
  uint64_t slab_bytes_ = 0;
  std::vector<NodeId> cpu_node_;  // cpu_to_node(): contiguous blocks of CPUs
  NodeId cpu_node(CpuId cpu) const { return cpu_node_[cpu]; }
  // Slab slot and index of a pointer the model itself handed out (no
  // validation: for objects taken from the model's own structures).
  static int32_t slot_of(Ptr p) {
    return static_cast<int32_t>((p >> slub_ptr_idx_bits) & 0xffffffffu);
  }
  static uint32_t idx_of(Ptr p) { return static_cast<uint32_t>(p & 0x7fff); }
  static constexpr int slub_ptr_idx_bits = 15;
};

// ---- Hot helpers, inline: every simulated allocation and free uses them.

namespace slub_ptr {
inline constexpr int kIdxBits = 15;
inline constexpr int kSlotBits = 32;
inline constexpr Ptr kIdxMask = (1ull << kIdxBits) - 1;
inline constexpr Ptr kSlotMask = (1ull << kSlotBits) - 1;
}  // namespace slub_ptr

inline Ptr Slub::make_ptr(int32_t slab, uint32_t idx) const {
  using namespace slub_ptr;
  return (Ptr(slabs_[slab].epoch) << (kIdxBits + kSlotBits)) |
         (Ptr(uint32_t(slab)) << kIdxBits) | idx;
}

inline bool Slub::decode(Ptr p, int32_t* slab, uint32_t* idx) const {
  using namespace slub_ptr;
  if (p == kNull || (p & (kLargeBit | kVmallocBit))) return false;
  const uint64_t slot = (p >> kIdxBits) & kSlotMask;
  if (slot >= slabs_.size()) return false;
  const Slab& sl = slabs_[slot];
  const uint16_t epoch = static_cast<uint16_t>(p >> (kIdxBits + kSlotBits));
  if (sl.where == SlabWhere::kUnused || sl.epoch != epoch) return false;
  if ((p & kIdxMask) >= sl.objects) return false;
  *slab = static_cast<int32_t>(slot);
  *idx = static_cast<uint32_t>(p & kIdxMask);
  return true;
}

inline void Slub::on_alloc(int32_t id, uint32_t idx, const Task& t) {
  Slab& sl = slabs_[id];
  sl.state[idx] = static_cast<uint8_t>(ObjState::kAllocated);
  if (cfg_.track_history) {
    ObjHist& h = sl.hist[idx];
    h.alloc_seq = ++seq_;
    h.alloc_site = t.site;
    h.alloc_cpu = t.cpu;
  }
  ++caches_[sl.cache].live;
}

// mirrors do_slab_free(), v6.18: objects of this CPU's slab go onto
// c->freelist (the lockless fast path), anything else to __slab_free().
inline void Slub::free_618(CacheId s, int32_t id, const uint16_t* idx, int cnt,
                           const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[t.cpu];
  if (cpu.slab != id) return slab_free_slow(s, id, idx, cnt, t);
  Slab& sl = slabs_[id];
  for (int i = 0; i < cnt; ++i) {
    cpu.freelist.push_back(idx[i]);
    sl.state[idx[i]] = static_cast<uint8_t>(ObjState::kCpuFreelist);
  }
  stat(c, t.cpu, SlubStat::FREE_FASTPATH, cnt);
  ev_->add(Event::slab_free_fast, cnt);
}

// init_percpu_sheaves() / bootstrap_kmalloc_sheaves(): every CPU has an
// (empty) main sheaf from boot. The model creates it on first use, not
// counted and not backed by a kmalloc object (it predates any run).
inline void Slub::ensure_main(CacheId s, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[t.cpu];
  if (pcs.main < 0) [[unlikely]] pcs.main = new_sheaf(s);
}

inline void Slub::on_free(int32_t id, uint32_t idx, const Task& t) {
  Slab& sl = slabs_[id];
  if (cfg_.track_history) {
    ObjHist& h = sl.hist[idx];
    h.free_seq = ++seq_;
    h.free_site = t.site;
    h.free_cpu = t.cpu;
  }
  --caches_[sl.cache].live;
}

}  // namespace simcache
