// What one scenario run produces: exact counts per policy, split into the
// whole run and the measured rounds' timed regions, plus the memory a
// policy leaves behind. Reports and the cost layer read only this.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/counters.h"
#include "sim/run/build_info.h"
#include "sim/run/latency.h"
#include "model/mm/mm.h"

namespace simcache::sim {

// The timed region of each measured round, in order. Rounds after the
// warm-up mostly repeat one another (a steady state, or a short cycle such
// as the memcg stock's), so each distinct block is kept once and a round
// is an index into them: memory follows the distinct rounds, 4 bytes per
// round beside them, not a Counters block (kNumEvents x 8 bytes) per
// round. A round is compared with the last kRecent distinct blocks only;
// one that matches none is kept as a block of its own.
class RoundLog {
 public:
  static constexpr size_t kRecent = 8;
  void push_back(const Counters& c) {
    const size_t n = blocks_.size();
    for (size_t k = 0; k < std::min(n, kRecent); ++k)
      if (blocks_[n - 1 - k] == c) {
        index_.push_back(static_cast<uint32_t>(n - 1 - k));
        return;
      }
    blocks_.push_back(c);
    index_.push_back(static_cast<uint32_t>(n));
  }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }
  const Counters& operator[](size_t i) const { return blocks_[index_[i]]; }
  const Counters& back() const { return blocks_[index_.back()]; }
  size_t distinct() const { return blocks_.size(); }
  // Rounds in order, each as its block.
  class const_iterator {
   public:
    const_iterator(const RoundLog* l, size_t i) : l_(l), i_(i) {}
    const Counters& operator*() const { return (*l_)[i_]; }
    const_iterator& operator++() { return ++i_, *this; }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const RoundLog* l_;
    size_t i_;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, index_.size()}; }
  // Equal when every round's counts are (however they are stored).
  friend bool operator==(const RoundLog& a, const RoundLog& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

 private:
  std::vector<Counters> blocks_;
  std::vector<uint32_t> index_;
};

// The SLUB stat files of one cache: over the whole run (`total`, with
// per-CPU values and CacheInfo), or a region's deltas (timed, one round;
// info then only carries the name).
struct CacheStats {
  std::string name;
  std::vector<uint64_t> stat;     // indexed by SlubStat, all CPUs
  std::vector<uint64_t> per_cpu;  // total only: [cpu * kNumSlubStats + item]
  CacheInfo info;                 // at the end of the run (before teardown checks)
};

// One ring's io_uring caches at a snapshot.
struct RingState {
  std::string role;            // "source" or "target"
  int ring = -1;               // RingId
  bool live = false;
  uint32_t nodes_cached = 0;   // ctx->node_cache.nr_cached
  uint32_t node_capacity = 0;  // ctx->node_cache.max_cached
  uint32_t futex_cached = 0;   // ctx->futex_cache.nr_cached
  uint32_t table_nodes = 0;    // fixed-file slots holding a node
  uint64_t teardown_freed = 0; // "teardown": cached objects freed by io_ring_ctx_free()
};

// Memory at a point of the run, split the way the RFC discusses it.
struct MemorySplit {
  int64_t payload_bytes = 0;        // io_uring objects held (table + cached), slot size
  int64_t pointer_array_bytes = 0;  // cache entries arrays + fixed-file nodes arrays
  int64_t slab_page_bytes = 0;      // every slab page (NR_SLAB_*_B)
  int64_t large_bytes = 0;          // large kmalloc + vmalloc pages
  int64_t ring_region_bytes = 0;    // the rings' SQ/CQ and SQE region pages
  int64_t memcg_charged_bytes = 0;  // page_counter usage of the task's memcg
};

// A named point of one measured round (the last one that reached it).
struct Snapshot {
  std::string name;  // "registration", "fill", "unregister", "teardown"
  std::vector<RingState> rings;
  MemorySplit memory;
  // Every cache, creation order (--slabinfo-at); empty unless the run
  // asked for it (RunConfig::snapshot_caches).
  std::vector<CacheInfo> caches;
};

// One policy column.
struct PolicyResult {
  std::string policy;            // canonical name, e.g. "node-slab+bulk-refill"
  // The kernel profile the column ran on: the run's, or its own
  // ("POLICY@KERNEL", or one of several --kernel names).
  std::string kernel;
  // The resolved configuration: every policy field ("policy.<field>") and
  // the mm config it ran with ("mm.<field>"), in table order.
  std::vector<std::pair<std::string, std::string>> config;
  // What the column reports depends on the prices its machine ran with:
  // the clock ordered its tasks (Machine::clock_ordered()), or a metric
  // was read off the clock (Recorder::mark_needs_clock()).
  bool needs_clock = false;
  // Measured rounds computed from a steady cycle instead of simulated
  // (sim/run/steady.h); their records are the cycle's, and the run's
  // whole-run statistics beyond its event counters (per-cache and
  // call-site totals, batch histograms) cover the simulated rounds only.
  uint64_t computed_rounds = 0;
  Counters total;                // the whole run, set-up and teardown included
  Counters timed;                // summed over the measured rounds' timed regions
  RoundLog rounds;               // timed region of each measured round
  uint64_t timed_ops = 0;        // operations in `timed` (installs, pairs, ops)
  uint64_t ops_per_round = 0;
  // Model metrics with no kernel counter: name -> value. Always present:
  // bytes_retained (bytes held by io_uring caches and their pointer
  // arrays at the end of the last measured round), nodes_unused (nodes
  // allocated into a cache and never handed out).
  std::map<std::string, int64_t> metrics;
  // Timed counts per named phase of the operation (lifecycle:
  // registration, removal, fill), summed over the measured rounds; when
  // present they partition `timed` exactly.
  std::vector<std::pair<std::string, Counters>> phases;  // in operation order
  std::vector<CacheStats> caches;  // caches that saw any traffic
  std::vector<CacheInfo> slab_state;  // every cache at the end, creation order
  std::vector<CacheStats> timed_caches;              // per-cache deltas, timed regions
  // Per measured round, the largest and the smallest delta of each stat
  // (caches some round touched, the same caches in both, in order).
  std::vector<CacheStats> round_max, round_min;
  CallSiteCounts total_sites, timed_sites;            // counts by call site
  BatchHists total_batches, timed_batches;            // batch-size histograms
  std::vector<Snapshot> snapshots;                    // in the order first recorded
  MemorySplit memory_peak;  // field-wise maximum over the snapshots
  std::vector<KasanReport> kasan;  // reports, including end-of-run leaks
  // --fail: faults injected per point (every point asked for, even at 0).
  std::map<std::string, uint64_t> faults_injected;
  // Operations that failed for want of a resource: errno name ("ENFILE")
  // -> count. Non-empty means the counts are not the workload asked for.
  std::map<std::string, uint64_t> failures;
  // Per operation kind, the virtual-time latency of each operation of the
  // measured rounds' timed regions (sim/run/latency.h). Empty when the
  // run had no cost prices (counts only).
  Latencies latency;
};

// What a report must carry to be reproduced (docs/output.md "Run record").
struct RunRecord {
  std::string command_line;  // the arguments as given (set by the CLI)
  std::string git_commit = build_git_commit();  // at build time, "unknown" outside git
  std::vector<std::pair<std::string, std::string>> kernel_profile;  // field, value
  // Columns on several kernels (--kernel K1,K2, POLICY@KERNEL): every one's
  // profile, in first-use order (kernel_profile is the first); else empty.
  std::vector<std::vector<std::pair<std::string, std::string>>> kernel_profiles;
  std::vector<std::pair<std::string, std::string>> machine;         // name, idle_table, source
  std::string cost_profile;       // name, "" without one
  std::string cost_profile_hash;  // SHA-256 of the profile file's bytes ("built-in")
  // Every input file the run read (op file, trace, measurements, mapping,
  // run configuration, background trace): its role, the path as given and
  // the SHA-256 of its bytes ("" when it could not be hashed, `note` says why).
  struct Input {
    std::string role, path, sha256, note;
  };
  std::vector<Input> inputs;
  // The tables of record compiled into the binary (model/*.def, sim/*.def),
  // each with the SHA-256 of its source file at build time.
  std::span<const BuiltTable> compiled_in = build_tables();
};

// One workload (a scenario with resolved parameters) across policies.
struct WorkloadResult {
  std::string scenario;                   // driver name
  std::string label;                      // row label in tables
  std::map<std::string, int64_t> params;  // resolved parameters
  std::string op_unit;                    // "install", "pair", "op", "object"
  std::string time_unit;                  // "ns" per op, or "us" per op
  std::string note;                       // e.g. the RFC's finding for a hypothesis
  std::vector<PolicyResult> policies;
  // --until-separated (sim/run/extend.h): how the run extended this
  // workload's measured rounds; outcome empty when it did not try.
  struct TailExtension {
    std::string kind;     // the operation kind compared (column A's first)
    std::string outcome;  // "separated", "stopped narrowing", "work budget", ...
    int64_t rounds_from = 0, rounds = 0;  // measured rounds asked for, and run
    int doublings = 0;
  } extension;
  // --seeds N (sim/run/extend.h): the seeds the latency was pooled over
  // (first, count) and whether they were (identical runs are not).
  struct SeedPool {
    uint64_t first = 0;
    uint32_t count = 1;
    bool pooled = false;
  } seeds = {};
};

struct RunResult {
  std::string scenario;  // what the user asked for (may be a preset)
  std::string kernel;
  uint64_t seed = 0;
  std::string version;
  std::vector<std::string> policies;
  std::vector<WorkloadResult> workloads;
  RunRecord record;
};

}  // namespace simcache::sim
