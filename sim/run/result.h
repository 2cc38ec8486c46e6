// What one scenario run produces: exact counts per policy, split into the
// whole run and the measured rounds' timed regions, plus the memory a
// policy leaves behind. Reports and the cost layer read only this.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/counters.h"
#include "model/mm/mm.h"

namespace simcache::sim {

// The SLUB stat files of one cache over the whole run (all CPUs).
struct CacheStats {
  std::string name;
  std::vector<uint64_t> stat;  // indexed by SlubStat
  CacheInfo info;              // at the end of the run (before teardown checks)
};

// One policy column.
struct PolicyResult {
  std::string policy;            // canonical name, e.g. "node-slab+bulk-refill"
  Counters total;                // the whole run, set-up and teardown included
  Counters timed;                // summed over the measured rounds' timed regions
  std::vector<Counters> rounds;  // timed region of each measured round
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
  std::vector<KasanReport> kasan;  // reports, including end-of-run leaks
  // --fail: faults injected per point (every point asked for, even at 0).
  std::map<std::string, uint64_t> faults_injected;
  // Operations that failed for want of a resource: errno name ("ENFILE")
  // -> count. Non-empty means the counts are not the workload asked for.
  std::map<std::string, uint64_t> failures;
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
};

struct RunResult {
  std::string scenario;  // what the user asked for (may be a preset)
  std::string kernel;
  uint64_t seed = 0;
  std::string version;
  std::vector<std::string> policies;
  std::vector<WorkloadResult> workloads;
};

}  // namespace simcache::sim
