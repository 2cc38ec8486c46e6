// --until-separated: a run that extends itself until the p99.9 latency
// intervals of the policies it compares separate or stop narrowing, within
// the work budget (docs/stats.md "Extending a run until the tails
// separate"). Deterministic: every decision reads simulated results only.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/run/result.h"
#include "sim/run/run_config.h"

namespace simcache::sim {

// The percentile whose intervals decide (p99.9), and the least relative
// narrowing of an interval over one doubling that counts as narrowing.
inline constexpr double kExtendPercentile = 99.9;
inline constexpr double kExtendMinNarrowing = 0.05;

// The decision for one workload's results: "separated" when every
// column's p99.9 interval of `kind` is disjoint from column A's (never
// with one column: then only its own narrowing decides);
// "stopped narrowing" when no column's finite interval narrowed by
// kExtendMinNarrowing since `prev_widths` (empty: the first run);
// "" to go on. `widths` receives this run's widths (+inf: unbounded).
std::string extension_decision(const WorkloadResult& w, const std::string& kind,
                               const std::vector<double>& prev_widths,
                               std::vector<double>* widths);

// Runs `cfg` once per seed of cfg.request.seeds (seed, seed + 1, ...)
// and pools each column's latency histograms; the counts, times and
// everything else are the first seed's. The seeds' own histograms stay
// beside the pool (OpLatency::seeds) for the intervals over seeds. Runs
// whose histograms are all identical (a workload that draws nothing from
// the seed) are not replications: then the first run's samples stand
// alone and WorkloadResult::seeds says so.
void run_pooled(const RunConfig& cfg, RunResult* out);

// Runs `cfg` (run_pooled()), then, for each workload that records latencies, has a
// `rounds` parameter, doubles its measured rounds and runs it again
// until the decision above is made (one column: until its own interval
// stops narrowing),
// its rounds reach the parameter's maximum, or the next run would take
// the work of all runs so far past cfg.request.max_work. `cfg` keeps the
// rounds run; each workload's result says what happened (extension).
void run_until_separated(RunConfig* cfg, RunResult* out);

}  // namespace simcache::sim
