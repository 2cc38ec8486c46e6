// SLUB proper: kmem_cache state, slabs, per-CPU layers of both
// generations, the node partial lists and the bulk API. One class, four
// source files: slab.cc (slabs, node lists, __slab_free, objects),
// slab_api.cc (the entry points and per-object hooks), slub618.cc
// (per-CPU slab + per-CPU partial list, v6.18) and slub7x.cc (sheaves +
// barn, 7.x). The generation is chosen in one place, the constructor,
// which picks the per-CPU layer's operations (Slub::GenOps); everything
// else is shared. Below SLUB sits the SlabBackend seam (pages, memcg).
// SLUB does not see the kmalloc facade above it: it is handed
// the boot configuration (mm_config.h), the kmalloc size classes for its
// own internal kmallocs (kmalloc_classes.h), and the event sink it counts
// events and batch sizes into (lock_hook.h).
// Nothing here allocates per simulated object once the tables have
// reached their working size.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/counters.h"
#include "model/mm/backend.h"
#include "model/mm/fault.h"
#include "model/mm/geometry.h"
#include "model/mm/kmalloc_classes.h"
#include "model/mm/lock_hook.h"
#include "model/mm/mm_config.h"
#include "model/mm/obj_state.h"
#include "model/mm/slab_ptr.h"
#include "model/mm/state_sig.h"
#include "model/types.h"

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

// Field order: what a fast path touches (decode, object state and
// history, the per-CPU freelist's owner) sits in the first cache line.
struct Slab {
  CacheId cache = kNoCache;
  uint16_t epoch = 0;
  uint16_t objects = 0;
  uint16_t inuse = 0;      // objects not on `freelist`
  SlabWhere where = SlabWhere::kUnused;
  NodeId node = 0;
  uint8_t order = 0;
  CpuId cpu = 0;           // owner while kCpuSlab / kCpuPartial
  Ptr obj_exts = kNull;    // the slabobj_ext vector (a kmalloc object)
  std::vector<ObjState> state;     // not a char type: stores to it alias nothing else
  std::vector<ObjHist> hist;
  // CPU of the last free through the kmalloc facade, per object, or
  // kNoLastFree: slab_alloc_remote. Reset with the slab (a new epoch).
  std::vector<CpuId> last_free;
  std::vector<uint16_t> freelist;  // slab->freelist, LIFO
  int32_t prev = -1, next = -1;  // node partial list, or CPU partial chain
  uint32_t page = 0;
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
  struct Node {
    int32_t partial_head = -1, partial_tail = -1;
    uint32_t nr_partial = 0;
    uint64_t nr_slabs = 0, total_objects = 0;
    std::vector<int32_t> barn_full, barn_empty;  // 7.x node_barn
    uint32_t lock_id = 0;  // list_lock instance for the LockHook: cache * nr_nodes + node
  };
  struct Cpu {
    // 6.18 kmem_cache_cpu
    int32_t slab = -1;
    Ptr slab_base = kNull;            // make_ptr(slab, 0) while slab >= 0
    std::vector<uint16_t> freelist;   // c->freelist: indices into `slab`
    int32_t partial = -1;             // head of the CPU partial chain
    uint32_t partial_slabs = 0;
    // 7.x slub_percpu_sheaves
    int32_t main = -1, spare = -1;
    int32_t rcu_free = -1;  // 7.x pcs->rcu_free: kfree_rcu() objects awaiting a grace period
    NodeId node = 0;        // cpu_to_node() of this CPU
    // This CPU's stat items (s->cpu_slab->stat[]), beside the fields the
    // fast paths already hold: no second index computation.
    std::array<uint64_t, kNumSlubStats> stat{};
  };
  // Hot fields first (every allocation and free reads them).
  std::vector<Cpu> cpu;
  // The same items summed over CPUs, kept as they are counted, so a
  // reader of the cache's totals (the recorder, at every timed boundary)
  // copies one row instead of summing nr_cpus of them.
  std::array<uint64_t, kNumSlubStats> stat_total{};
  uint64_t live = 0;            // objects handed out (allocated or mempool)
  slab_flags_t flags = 0;
  Geometry g;
  uint32_t obj_full_size = 0;  // charged size: s->size + sizeof(objcg ptr)
  bool is_kmalloc = false;
  KmallocType ktype = KmallocType::NORMAL;
  std::vector<Node> node;
  uint32_t usersize = 0;
  uint32_t requested_sheaf_capacity = 0;  // kmem_cache_args.sheaf_capacity
  int refcount = 1;
  std::string name;
  std::vector<std::string> aliases;
};

class Slub {
 public:
  // `kmalloc` (not owned) may be empty until the facade's boot fills it:
  // SLUB reads it only for its own kmallocs, none of which happen during
  // create().
  Slub(const MmConfig& cfg, EventSink* ev, SlabBackend* backend,
       FaultInjector* faults, const KmallocClasses* kmalloc);

  CacheId create(std::string_view name, uint32_t size, uint32_t align,
                 slab_flags_t flags, uint32_t sheaf_capacity, bool is_kmalloc,
                 KmallocType ktype, uint32_t usersize);
  KmemCache& cache(CacheId s) { return caches_[s]; }
  const KmemCache& cache(CacheId s) const { return caches_[s]; }
  size_t nr_caches() const { return caches_.size(); }

  // kNoteCpu (both): the call comes through the kmalloc facade, which counts
  // slab_alloc_remote. An allocation reads and clears the object's
  // last-free CPU (counting the event when it differs from t.cpu).
  template <bool kNoteCpu = false>
  Ptr alloc(CacheId s, gfp_t gfp, const Task& t);
  // alloc() in two halves, as free() below: alloc_fast() takes an object
  // off this CPU's freelist (6.18) or main sheaf (7.x) into *p when no
  // fault is armed at slab_alloc and no post-alloc hook has to run;
  // anything else returns false having changed nothing, and alloc_slow()
  // is then the whole of alloc(). `entry`: the facade's event for the
  // call (kmalloc, ...), counted first on success (kCount: none), so one
  // access to the sink serves both layers.
  template <bool kNoteCpu = false>
  bool alloc_fast(CacheId s, gfp_t gfp, const Task& t, Ptr* p,
                  Event entry = Event::kCount);
  template <bool kNoteCpu = false>
  Ptr alloc_slow(CacheId s, gfp_t gfp, const Task& t);
  // kNoteCpu: the free comes through the kmalloc facade, which counts
  // slab_alloc_remote: record t.cpu as the object's last-free CPU (for
  // any pointer that decodes, valid free or not).
  template <bool kNoteCpu = false>
  void free(CacheId s, Ptr p, const Task& t);
  // free() in two halves, for a caller with work around the one that
  // reports (the facade names the call site in new reports).
  // free_valid(): the free of an allocated object of this cache (any
  // cache for kNoCache), inline as far as the per-CPU fast path (6.18:
  // onto this CPU's freelist, 7.x: the main sheaf) and out of line beyond
  // it; false, having changed nothing but the last-free CPU, for any
  // other pointer, and free_slow() is then the whole of free(), report
  // included. `entry` as for alloc_fast().
  template <bool kNoteCpu = false>
  bool free_valid(CacheId s, Ptr p, const Task& t, Event entry = Event::kCount);
  template <bool kNoteCpu = false>
  void free_slow(CacheId s, Ptr p, const Task& t);
  int alloc_bulk(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_bulk(CacheId s, int n, Ptr* p, const Task& t);
  // kfree_rcu.cc. kfree_bulk(): kmem_cache_free_bulk(NULL, n, p) for slab
  // objects of any caches (the facade has taken out large ones).
  void kfree_bulk(int n, Ptr* p, const Task& t);
  // 7.x kfree_rcu_sheaf(): queue a slab object on the CPU's rcu_free
  // sheaf; false when the object must take the kvfree_rcu batch instead.
  bool kfree_rcu_sheaf(Ptr p, const Task& t);
  // flush_all_rcu_sheaves(): every CPU's partly filled rcu_free sheaf is
  // handed to call_rcu() as a full one would be.
  void flush_rcu_sheaves();
  // A grace period ends: rcu_free_sheaf() runs for every submitted sheaf
  // on the CPU that submitted it (free hooks, then into the barn).
  void rcu_free_sheaves();
  // Objects in rcu_free sheaves, submitted or still filling.
  size_t rcu_sheaf_objects() const;
  void flush_all(CacheId s);   // flush_all() + __kmem_cache_shrink()

  // Pointer decoding and object state.
  bool decode(Ptr p, int32_t* slab, uint32_t* idx) const;
  ObjState state(Ptr p) const {
    const ObjState* st = state_slot(p);
    return st ? *st : ObjState::kFree;
  }
  void set_state(Ptr p, ObjState st) {
    if (ObjState* slot = state_slot(p)) *slot = st;
  }
  // The object's state, for a pointer that decodes; nullptr otherwise.
  // One decode for a check and the update that follows it (KASAN hooks).
  ObjState* state_slot(Ptr p) {
    int32_t id;
    uint32_t idx;
    return decode(p, &id, &idx) ? &slabs_[id].state[idx] : nullptr;
  }
  const ObjState* state_slot(Ptr p) const {
    return const_cast<Slub*>(this)->state_slot(p);
  }
  const Slab& slab(int32_t i) const { return slabs_[i]; }
  size_t nr_slab_slots() const { return slabs_.size(); }
  std::string history(Ptr p) const;
  // slab_alloc_remote bookkeeping (Slab::last_free).
  static constexpr CpuId kNoLastFree = 0xffff;
  void note_free_cpu(Ptr p, CpuId cpu) {
    int32_t id;
    uint32_t idx;
    if (decode(p, &id, &idx)) slabs_[id].last_free[idx] = cpu;
  }
  // For an object the model just handed out: whether a caller last freed
  // it on a CPU other than `cpu`; forgets that free.
  bool take_remote(Ptr p, CpuId cpu) { return take_remote(slabs_[slot_of(p)], idx_of(p), cpu); }
  static bool take_remote(Slab& sl, uint32_t idx, CpuId cpu) {
    CpuId& last = sl.last_free[idx];
    const CpuId was = last;
    last = kNoLastFree;
    return was != kNoLastFree && was != cpu;
  }
  // Per-object slots the tracking holds, over every slab slot.
  size_t last_free_slots() const;
  uint64_t slab_bytes() const { return slab_bytes_; }
  std::vector<Ptr> live_objects() const;
  // Allocations the allocator owns: obj_exts vectors of live slabs and
  // the kmalloc'ed sheaves in use.
  std::vector<Ptr> internal_objects() const;

  void stat(const KmemCache& c, CpuId cpu, SlubStat item, uint64_t n = 1) {
    KmemCache& m = const_cast<KmemCache&>(c);
    stat(m, m.cpu[cpu], item, n);
  }
  // The same, for a caller holding the CPU's entry (pc is c.cpu[cpu]).
  void stat(KmemCache& c, KmemCache::Cpu& pc, SlubStat item, uint64_t n = 1) {
    pc.stat[static_cast<size_t>(item)] += n;
    c.stat_total[static_cast<size_t>(item)] += n;
    if (const Event e = stat_event(item); e != Event::kCount) ev_->add(e, n);
  }
  // The event a stat item is also counted as, when it is a kernel path
  // the cost layer prices on its own (model/events_mm.def); kCount for the
  // items another event already counts (ALLOC_SLAB is allocate_slab, ...)
  // or that are results, not work (BARN_GET_FAIL, DEACTIVATE_BYPASS, ...).
  static constexpr Event stat_event(SlubStat item) {
    switch (item) {
      case SlubStat::ALLOC_REFILL: return Event::alloc_refill;
      case SlubStat::ALLOC_FROM_PARTIAL: return Event::alloc_from_partial;
      case SlubStat::CPU_PARTIAL_NODE: return Event::cpu_partial_node;
      case SlubStat::CPU_PARTIAL_FREE: return Event::cpu_partial_free;
      case SlubStat::CPU_PARTIAL_DRAIN: return Event::cpu_partial_drain;
      case SlubStat::DEACTIVATE_FULL:
      case SlubStat::DEACTIVATE_EMPTY:
      case SlubStat::DEACTIVATE_TO_HEAD:
      case SlubStat::DEACTIVATE_TO_TAIL: return Event::deactivate_slab;
      case SlubStat::FREE_ADD_PARTIAL: return Event::free_add_partial;
      case SlubStat::FREE_REMOVE_PARTIAL: return Event::free_remove_partial;
      case SlubStat::BARN_GET: return Event::barn_get;
      case SlubStat::BARN_PUT: return Event::barn_put;
      default: return Event::kCount;
    }
  }
  void report(std::string kind, Ptr p, CacheId s, std::string detail);
  // Objects held by per-CPU layers (6.18 CPU freelists, 7.x sheaves in
  // CPUs and barns), counted from those structures.
  uint64_t cached_objects(CacheId s) const;
  // Cross-checks every structure against every other one (object states,
  // inuse counts, lists, per-node counters, sheaves). Returns a
  // description of the first violations found, empty when consistent.
  std::string check_invariants() const;
  // What decides the allocator's future behaviour (model/mm/state_sig.h):
  // the slab table with each slab's lists, freelist, object states and
  // last-free CPUs, the sheaves, and every cache's CPU and node state.
  void signature(StateSig* s) const;
  std::vector<KasanReport> reports;

 private:
  using Node = KmemCache::Node;
  // The per-CPU layer of one generation: the only thing that differs
  // between v6.18 and 7.x above the slabs. Picked once, in the constructor,
  // with v7_ for the single-object fast paths (alloc() and free()).
  struct GenOps {
    int (Slub::*alloc_bulk)(CacheId, gfp_t, int, Ptr*, const Task&);
    void (Slub::*free_bulk)(CacheId, int, Ptr*, const Task&);  // hooks done
    // do_slab_free() of one detached freelist (6.18), __slab_free() (7.x).
    void (Slub::*free_group)(CacheId, int32_t, const uint16_t*, int, const Task&);
    void (Slub::*flush_cpu)(CacheId, CpuId, const Task&);
    // 7.x alloc_slab_obj_exts(): a kmalloc slab never holds its own vector.
    bool obj_exts_not_in_own_cache;
  };
  static const GenOps kOps618, kOps7x;

  // slab.cc: slabs and node lists.
  int32_t new_slab(CacheId s, gfp_t gfp, NodeId node, const Task& t);
  void discard_slab(CacheId s, int32_t slab, const Task& t);
  void add_partial(Node& n, int32_t slab, bool tail);
  void remove_partial(Node& n, int32_t slab);
  // The node list a slab goes back to after the per-CPU layer let go of
  // it (__put_partials(), the unused slabs of __refill_objects_node()):
  // empty beyond min_partial goes onto `discard` (chained through
  // Slab::next), anything else onto the list. Returns true if discarded.
  bool add_partial_or_discard(Node& n, int32_t slab, bool tail,
                              int32_t* discard_head, int32_t* discard_tail);
  void discard_chain(CacheId s, int32_t head, bool count_stats, const Task& t);
  // mirrors get_partial() / get_any_partial() (7.x get_from_partial()):
  // the local node, then remote nodes holding more than min_partial
  // slabs; takes each candidate's list_lock and calls take(nid, node)
  // until it returns true.
  template <class Take>
  void get_partial(const KmemCache& c, CpuId cpu, Take&& take);
  void slab_free_slow(CacheId s, int32_t slab, const uint16_t* idx, int cnt,
                      const Task& t);  // __slab_free()
  // The rest of __slab_free() once `cnt` objects are back on the slab's
  // freelist; `prior`: the freelist was non-empty before.
  void slab_freed(CacheId s, int32_t slab, bool prior, int cnt, const Task& t);
  // spin_lock_irqsave(&n->list_lock): counted, and reported to the
  // machine's lock hook; the returned guard releases it at scope exit
  // (or at unlock(), where the kernel unlocks before more work).
  class ListLockHeld {
   public:
    ListLockHeld(EventSink* ev, uint32_t id) : ev_(ev), id_(id) {}
    ListLockHeld(const ListLockHeld&) = delete;
    ListLockHeld& operator=(const ListLockHeld&) = delete;
    ~ListLockHeld() { unlock(); }
    void unlock() {
      if (ev_ && ev_->locks) ev_->locks->release(LockClass::list_lock, id_);
      ev_ = nullptr;
    }

   private:
    EventSink* ev_;
    uint32_t id_;
  };
  [[nodiscard]] ListLockHeld lock(Node& n) {
    lock_raw(n);
    return ListLockHeld{ev_, n.lock_id};
  }
  void lock_raw(Node& n) {
    ev_->add(Event::list_lock);
    if (ev_->locks) ev_->locks->acquire(LockClass::list_lock, n.lock_id);
  }
  void unlock_raw(Node& n) {
    if (ev_->locks) ev_->locks->release(LockClass::list_lock, n.lock_id);
  }
  Ptr make_ptr(int32_t slab, uint32_t idx) const;
  // The object bookkeeping of an allocation and a free: state, KASAN
  // history, the cache's live count (c is caches_[sl.cache]).
  void on_alloc(KmemCache& c, int32_t slab, uint32_t idx, const Task& t) {
    on_alloc(c, slabs_[slab], idx, t);
  }
  void on_alloc(KmemCache& c, Slab& sl, uint32_t idx, const Task& t);
  bool check_free(CacheId s, Ptr p, int32_t* slab, uint32_t* idx);
  void on_free(int32_t slab, uint32_t idx, const Task& t) {
    Slab& sl = slabs_[slab];
    on_free(caches_[sl.cache], sl, idx, t);
  }
  void on_free(KmemCache& c, Slab& sl, uint32_t idx, const Task& t);
  // A fast path's events: the facade's `entry` (kCount: none), then SLUB's.
  void count_entry(Event entry, Event e) {
    if (entry != Event::kCount) ev_->add(entry, e);
    else ev_->add(e);
  }
  bool post_alloc_hook(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_hook(CacheId s, int32_t slab, uint32_t idx, const Task& t);
  void free_valid_slow(int32_t slab, uint32_t idx, const Task& t);
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
  int32_t get_partial_node(CacheId s, Node& n, const Task& t);
  void free_618(CacheId s, int32_t slab, uint32_t idx, const Task& t);
  void do_slab_free(CacheId s, int32_t slab, const uint16_t* idx, int cnt,
                    const Task& t);
  void put_cpu_partial(CacheId s, int32_t slab, bool drain, const Task& t);
  void put_partials(CacheId s, int32_t head, const Task& t);
  void deactivate_slab(CacheId s, CpuId cpu, const Task& t);
  int alloc_bulk_618(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_bulk_618(CacheId s, int n, Ptr* p, const Task& t);
  void flush_cpu_618(CacheId s, CpuId cpu, const Task& t);

  // slub7x.cc. alloc_7x() and free_7x() (inline, below) are the main
  // sheaf's fast paths; the _slow functions everything else.
  Ptr alloc_7x(CacheId s, gfp_t gfp, const Task& t);
  Ptr alloc_7x_slow(CacheId s, gfp_t gfp, const Task& t);
  Ptr alloc_single_7x(CacheId s, gfp_t gfp, const Task& t);  // ___slab_alloc
  int alloc_from_new_slab(int32_t slab, int max, Ptr* out);
  bool replace_empty_main(CacheId s, gfp_t gfp, const Task& t);
  void free_7x(CacheId s, int32_t slab, uint32_t idx, const Task& t);
  void free_7x_slow(CacheId s, int32_t slab, uint32_t idx, const Task& t);
  bool replace_full_main(CacheId s, const Task& t);
  int refill_objects(CacheId s, gfp_t gfp, int min, int max, Ptr* out,
                     const Task& t);
  int refill_from_node(CacheId s, Node& n, int min, int max, Ptr* out,
                       const Task& t);
  int alloc_bulk_7x(CacheId s, gfp_t gfp, int n, Ptr* p, const Task& t);
  void free_bulk_7x(CacheId s, int n, Ptr* p, const Task& t);
  bool bulk_replace_full_main(CacheId s, const Task& t);
  int32_t alloc_sheaf(CacheId s, gfp_t gfp, const Task& t);
  int32_t new_sheaf(CacheId s);
  void install_empty_sheaf(CacheId s, int32_t empty, const Task& t);
  void flush_main(CacheId s, const Task& t);
  void ensure_main(CacheId s, const Task& t);
  // PREEMPT_RT, 7.x: cpu_sheaves->lock is a local_trylock_t, a per-CPU
  // spinlock_t on RT: counted (cpu_slab_local_lock) at each acquisition,
  // every sheaf operation's and each retake after dropping it to refill,
  // allocate a sheaf or flush (alloc_from_pcs(), free_to_pcs(), the
  // replace and flush paths, one a bulk batch). Nothing on !RT, where it
  // only disables preemption.
  void rt_pcs_lock(uint64_t n = 1) {
    if (cfg_.preempt_rt) ev_->add(Event::cpu_slab_local_lock, n);
  }
  void free_sheaf(int32_t sh, const Task& t);
  void flush_sheaf(int32_t sh, const Task& t);
  void flush_cpu_7x(CacheId s, CpuId cpu, const Task& t);
  // The node barn (7.x). Each takes barn->lock once (counted).
  static constexpr int32_t kBarnE2BIG = -2, kBarnENOMEM = -1;
  int32_t barn_replace_empty_sheaf(Node& n, int32_t empty);  // full or -1
  int32_t barn_get_empty_sheaf(Node& n);                     // empty or -1
  int32_t barn_replace_full_sheaf(Node& n, int32_t full);    // empty or -E
  void barn_put_empty_sheaf(Node& n, int32_t empty);

  // Shared by both generations.
  void free_detached(CacheId s, int n, Ptr* p, const Task& t);
  // build_detached_freelist(): takes p[n-1] and the objects of its slab
  // (3-miss look-ahead) out of p[0..*n) into scratch_idx_; returns the slab.
  int32_t detach_group(int* n, Ptr* p);

  MmConfig cfg_;
  const GenOps* gen_;
  // The same choice for the two fast paths, as a branch the compiler can
  // inline around (an indirect call through gen_ cost ~1.5 ns a pair).
  bool v7_;
  EventSink* ev_;
  SlabBackend* backend_;
  FaultInjector* faults_;
  const KmallocClasses* kmalloc_;  // the size classes, for internal kmallocs
  std::vector<KmemCache> caches_;
  std::vector<Slab> slabs_;
  std::vector<int32_t> free_slab_slots_;
  std::vector<Sheaf> sheaves_;
  std::vector<int32_t> free_sheaf_slots_;
  std::vector<uint16_t> scratch_idx_;  // one detached freelist
  std::vector<Ptr> scratch_sort_;      // kfree-bulk-sort: one cache's objects
  struct RcuSheaf {                    // a sheaf handed to call_rcu()
    int32_t sheaf;
    CpuId cpu;
    bool nobarn;                       // rcu_free_sheaf_nobarn(): flushed, freed
  };
  std::vector<RcuSheaf> rcu_pending_;
  uint64_t seq_ = 0;                   // operation number, for histories
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


inline Ptr Slub::make_ptr(int32_t slab, uint32_t idx) const {
  using namespace slub_ptr;
  return (Ptr(slabs_[slab].epoch) << (kIdxBits + kSlotBits)) |
         (Ptr(uint32_t(slab)) << kIdxBits) | idx;
}

inline bool Slub::decode(Ptr p, int32_t* slab, uint32_t* idx) const {
  using namespace slub_ptr;
  if (p == kNull || (p & (kLargeBit | kVmallocBit))) return false;
  const uint64_t slot = (p >> kIdxBits) & kSlotMask;
  // slot < slabs_.size(), compared in bytes: no division by sizeof(Slab).
  const auto bytes = reinterpret_cast<const char*>(std::to_address(slabs_.end())) -
                     reinterpret_cast<const char*>(slabs_.data());
  if (slot * sizeof(Slab) >= static_cast<size_t>(bytes)) return false;
  const Slab& sl = slabs_[slot];
  const uint16_t epoch = static_cast<uint16_t>(p >> (kIdxBits + kSlotBits));
  if (sl.where == SlabWhere::kUnused || sl.epoch != epoch) return false;
  if ((p & kIdxMask) >= sl.objects) return false;
  *slab = static_cast<int32_t>(slot);
  *idx = static_cast<uint32_t>(p & kIdxMask);
  return true;
}

inline void Slub::on_alloc(KmemCache& c, Slab& sl, uint32_t idx, const Task& t) {
  sl.state[idx] = ObjState::kAllocated;
  if (cfg_.track_history) {
    ObjHist& h = sl.hist[idx];
    h.alloc_seq = ++seq_;
    h.alloc_site = t.site;
    h.alloc_cpu = t.cpu;
  }
  ++c.live;
}

// mirrors do_slab_free(), v6.18: objects of this CPU's slab go onto
// c->freelist (the lockless fast path), anything else to __slab_free().
[[gnu::always_inline]] inline void Slub::do_slab_free(
    CacheId s, int32_t id, const uint16_t* idx, int cnt, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[t.cpu];
  if (cpu.slab != id) {
    stat(c, t.cpu, SlubStat::FREE_SLOWPATH);  // counted by __slab_free()
    return slab_free_slow(s, id, idx, cnt, t);
  }
  Slab& sl = slabs_[id];
  for (int i = 0; i < cnt; ++i) {
    cpu.freelist.push_back(idx[i]);
    sl.state[idx[i]] = ObjState::kCpuFreelist;
  }
  stat(c, t.cpu, SlubStat::FREE_FASTPATH, cnt);
  ev_->add(Event::slab_free_fast, cnt);
  // PREEMPT_RT: no lockless fast path, local_lock(&s->cpu_slab->lock).
  if (cfg_.preempt_rt) ev_->add(Event::cpu_slab_local_lock);
}

// mirrors __slab_alloc_node(), v6.18: the lockless this_cpu_cmpxchg pop of
// one object off c->freelist, or kNull.
[[gnu::always_inline]] inline Ptr Slub::pop_cpu_freelist(CacheId s, const Task& t) {
  KmemCache& c = caches_[s];
  KmemCache::Cpu& cpu = c.cpu[t.cpu];
  if (cpu.slab < 0 || cpu.freelist.empty()) return kNull;
  const uint16_t idx = cpu.freelist.back();
  cpu.freelist.pop_back();
  stat(c, t.cpu, SlubStat::ALLOC_FASTPATH);
  ev_->add(Event::slab_alloc_fast);
  if (cfg_.preempt_rt) ev_->add(Event::cpu_slab_local_lock);  // RT: no lockless pop
  on_alloc(c, cpu.slab, idx, t);
  return make_ptr(cpu.slab, idx);
}

// mirrors slab_alloc_node() fast path, v6.18: pop c->freelist.
inline Ptr Slub::alloc_618(CacheId s, gfp_t gfp, const Task& t) {
  const Ptr p = pop_cpu_freelist(s, t);
  return p != kNull ? p : slab_alloc_slow_618(s, gfp, t);
}

// mirrors alloc_from_pcs(), 7.x: pop the main sheaf; anything else (no
// sheaves, no main yet, an empty main) in alloc_7x_slow().
inline Ptr Slub::alloc_7x(CacheId s, gfp_t gfp, const Task& t) {
  KmemCache& c = caches_[s];
  const int32_t main = c.cpu[t.cpu].main;
  if (!c.g.sheaf_capacity || main < 0 || sheaves_[main].objects.empty())
    [[unlikely]] return alloc_7x_slow(s, gfp, t);
  Sheaf& m = sheaves_[main];
  const Ptr p = m.objects.back();
  m.objects.pop_back();
  on_alloc(c, slot_of(p), idx_of(p), t);
  stat(c, t.cpu, SlubStat::ALLOC_FASTPATH);
  ev_->add(Event::slab_alloc_fast);
  rt_pcs_lock();
  return p;
}

// mirrors free_to_pcs(), 7.x: push onto a main sheaf with room, of a
// local object; anything else in free_7x_slow().
inline void Slub::free_7x(CacheId s, int32_t id, uint32_t idx, const Task& t) {
  KmemCache& c = caches_[s];
  const int32_t main = c.cpu[t.cpu].main;
  if (!c.g.sheaf_capacity || main < 0 || slabs_[id].node != cpu_node(t.cpu) ||
      sheaves_[main].objects.size() >= c.g.sheaf_capacity)
    [[unlikely]] return free_7x_slow(s, id, idx, t);
  sheaves_[main].objects.push_back(make_ptr(id, idx));
  slabs_[id].state[idx] = ObjState::kInSheaf;
  stat(c, t.cpu, SlubStat::FREE_FASTPATH);
  ev_->add(Event::slab_free_fast);
  rt_pcs_lock();
}

inline void Slub::free_618(CacheId s, int32_t id, uint32_t idx, const Task& t) {
  const uint16_t i16 = static_cast<uint16_t>(idx);
  do_slab_free(s, id, &i16, 1, t);
}

template <class Take>
void Slub::get_partial(const KmemCache& c, CpuId cpu, Take&& take) {
  const NodeId local = cpu_node(cpu);
  for (uint32_t k = 0; k < cfg_.nr_nodes; ++k) {
    const NodeId nid = static_cast<NodeId>((local + k) % cfg_.nr_nodes);
    Node& n = const_cast<KmemCache&>(c).node[nid];
    if (n.nr_partial == 0 || (k > 0 && n.nr_partial <= c.g.min_partial)) continue;
    auto held = lock(n);
    if (take(nid, n)) return;
  }
}

// push_back() for the fast paths: the vector's growth (rare: a freelist or
// sheaf reaches a new high) out of line, so the inlined fast path keeps no
// reallocation code and the registers it needs.
template <class T>
[[gnu::noinline]] void push_grow(std::vector<T>& v, T x) {
  v.push_back(x);
}
template <class T>
[[gnu::always_inline]] inline void push_fast(std::vector<T>& v, T x) {
  if (v.size() == v.capacity()) [[unlikely]]
    return push_grow(v, x);
  v.push_back(x);
}

// The single-object entry points: the per-CPU fast paths inline in the
// caller (one call from kmalloc()/kfree()), everything else out of line.
// mirrors slab_alloc_node(): pre-hook (failslab), per-CPU layer, post-hook.
template <bool kNoteCpu>
[[gnu::always_inline]] inline Ptr Slub::alloc(CacheId s, gfp_t gfp, const Task& t) {
  Ptr p;
  return alloc_fast<kNoteCpu>(s, gfp, t, &p) ? p : alloc_slow<kNoteCpu>(s, gfp, t);
}

// The fast paths of alloc_618() (pop_cpu_freelist()) and alloc_7x(), for
// an allocation that runs no post-alloc hook (no zeroing, no memcg
// charge): the common case, with the slab and index at hand for the
// bookkeeping instead of decoded again from the pointer. An unarmed
// failslab point has nothing to count.
template <bool kNoteCpu>
[[gnu::always_inline]] inline bool Slub::alloc_fast(CacheId s, gfp_t gfp, const Task& t,
                                                   Ptr* p, Event entry) {
  if (faults_->armed(FaultPoint::slab_alloc)) return false;
  KmemCache& c = caches_[s];
  if ((gfp & (__GFP_ZERO | __GFP_ACCOUNT)) || (c.flags & SLAB_ACCOUNT)) return false;
  KmemCache::Cpu& pc = c.cpu[t.cpu];
  uint32_t idx;
  // The common bookkeeping, in the order alloc_slow() counts it.
  auto commit = [&](int32_t id) __attribute__((always_inline)) {
    Slab* sl = &slabs_[id];
    on_alloc(c, *sl, idx, t);
    stat(c, pc, SlubStat::ALLOC_FASTPATH);
    count_entry(entry, Event::slab_alloc_fast);
    return sl;
  };
  Slab* sl;
  if (v7_) {
    if (pc.main < 0) return false;  // only a cache with sheaves has one
    std::vector<Ptr>& objects = sheaves_[pc.main].objects;
    if (objects.empty()) return false;
    *p = objects.back();
    objects.pop_back();
    idx = idx_of(*p);
    sl = commit(slot_of(*p));
    rt_pcs_lock();
  } else {
    if (pc.slab < 0 || pc.freelist.empty()) return false;
    idx = pc.freelist.back();
    pc.freelist.pop_back();
    *p = pc.slab_base | idx;  // make_ptr(pc.slab, idx)
    sl = commit(pc.slab);
    // PREEMPT_RT: no lockless pop, local_lock(&s->cpu_slab->lock).
    if (cfg_.preempt_rt) ev_->add(Event::cpu_slab_local_lock);
  }
  if constexpr (kNoteCpu) {
    if (take_remote(*sl, idx, t.cpu)) ev_->add(Event::slab_alloc_remote);
  }
  return true;
}

template <bool kNoteCpu>
[[gnu::noinline]] Ptr Slub::alloc_slow(CacheId s, gfp_t gfp, const Task& t) {
  if (faults_->should_fail(FaultPoint::slab_alloc)) return kNull;
  Ptr p = v7_ ? alloc_7x(s, gfp, t) : alloc_618(s, gfp, t);
  if (p == kNull) return kNull;
  if ((gfp & (__GFP_ZERO | __GFP_ACCOUNT)) || (caches_[s].flags & SLAB_ACCOUNT)) {
    if (!post_alloc_hook(s, gfp, 1, &p, t)) return kNull;
  }
  if constexpr (kNoteCpu) {
    if (take_remote(p, t.cpu)) ev_->add(Event::slab_alloc_remote);
  }
  return p;
}

// mirrors slab_free() / kmem_cache_free(): KASAN check, memcg hook, then
// the generation's do_slab_free()/free_to_pcs().
template <bool kNoteCpu>
[[gnu::always_inline]] inline void Slub::free(CacheId s, Ptr p, const Task& t) {
  if (!free_valid<kNoteCpu>(s, p, t)) free_slow<kNoteCpu>(s, p, t);
}

// The fast path inline: an object of a slab without an obj_exts vector
// (so memcg_slab_free_hook() returns at once), when do_slab_free() (6.18:
// an object of this CPU's slab) or free_to_pcs() (7.x: a local object,
// room in the main sheaf) takes the lockless path. Any other valid free
// goes on in free_valid_slow(), whose hook runs for every object of a
// slab with a vector, charged or not.
template <bool kNoteCpu>
[[gnu::always_inline]] inline bool Slub::free_valid(CacheId s, Ptr p, const Task& t,
                                                   Event entry) {
  int32_t id;
  uint32_t idx;
  if (!decode(p, &id, &idx)) return false;
  Slab& sl = slabs_[id];
  if constexpr (kNoteCpu) sl.last_free[idx] = t.cpu;
  if ((s != kNoCache && sl.cache != s) || sl.state[idx] != ObjState::kAllocated)
    return false;
  auto slow = [&] {
    if (entry != Event::kCount) ev_->add(entry);
    free_valid_slow(id, idx, t);
    return true;
  };
  if (sl.obj_exts != kNull) return slow();
  KmemCache& c = caches_[sl.cache];
  KmemCache::Cpu& pc = c.cpu[t.cpu];
  // The common bookkeeping, in the order free_slow() counts it.
  auto commit = [&](ObjState st) __attribute__((always_inline)) {
    on_free(c, sl, idx, t);
    sl.state[idx] = st;
    stat(c, pc, SlubStat::FREE_FASTPATH);
    count_entry(entry, Event::slab_free_fast);
  };
  // Each push comes last: its rare growth then holds nothing else live.
  if (v7_) {
    // A main sheaf exists only in a cache with sheaves (capacity > 0).
    if (pc.main < 0 || sl.node != pc.node) return slow();
    std::vector<Ptr>& objects = sheaves_[pc.main].objects;
    if (objects.size() >= c.g.sheaf_capacity) return slow();
    commit(ObjState::kInSheaf);
    rt_pcs_lock();
    push_fast(objects, p);  // p decoded: it is make_ptr(id, idx)
  } else {
    if (pc.slab != id) return slow();
    commit(ObjState::kCpuFreelist);
    // PREEMPT_RT: no lockless fast path, local_lock(&s->cpu_slab->lock).
    if (cfg_.preempt_rt) ev_->add(Event::cpu_slab_local_lock);
    push_fast(pc.freelist, static_cast<uint16_t>(idx));
  }
  return true;
}

template <bool kNoteCpu>
[[gnu::noinline]] void Slub::free_slow(CacheId s, Ptr p, const Task& t) {
  int32_t id;
  uint32_t idx;
  const bool decoded = decode(p, &id, &idx);
  if constexpr (kNoteCpu) {
    if (decoded) slabs_[id].last_free[idx] = t.cpu;
  }
  const bool ok = decoded &&
                  (s == kNoCache || slabs_[id].cache == s) &&
                  slabs_[id].state[idx] == ObjState::kAllocated;
  if (!ok) [[unlikely]] {
    check_free(s, p, &id, &idx);  // reports
    return;
  }
  free_valid_slow(id, idx, t);
}

// The rest of slab_free() for an allocated object: memcg hook, KASAN
// bookkeeping, the generation's do_slab_free()/free_to_pcs().
[[gnu::noinline]] inline void Slub::free_valid_slow(int32_t id, uint32_t idx, const Task& t) {
  const CacheId owner = slabs_[id].cache;
  if (slabs_[id].obj_exts != kNull) free_hook(owner, id, idx, t);
  on_free(id, idx, t);
  if (v7_) free_7x(owner, id, idx, t);
  else free_618(owner, id, idx, t);
}

// init_percpu_sheaves() / bootstrap_kmalloc_sheaves(): every CPU has an
// (empty) main sheaf from boot. The model creates it on first use, not
// counted and not backed by a kmalloc object (it predates any run).
inline void Slub::ensure_main(CacheId s, const Task& t) {
  KmemCache::Cpu& pcs = caches_[s].cpu[t.cpu];
  if (pcs.main < 0) [[unlikely]] pcs.main = new_sheaf(s);
}

inline void Slub::on_free(KmemCache& c, Slab& sl, uint32_t idx, const Task& t) {
  if (cfg_.track_history) {
    ObjHist& h = sl.hist[idx];
    h.free_seq = ++seq_;
    h.free_site = t.site;
    h.free_cpu = t.cpu;
  }
  --c.live;
}

}  // namespace simcache
