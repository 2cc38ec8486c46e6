// Sweeps over the existing engine: a grid file (TOML) crosses scenarios,
// scenario parameters, policy columns, knob values, kernels and seeds;
// every point is one engine run with one column, written as one JSON line.
// A point whose policy does not apply to its kernel is recorded as
// skipped, with the reason. Points are numbered in a fixed order, so a
// shard (--shard i/N: the points with index % N == i) and any --jobs give
// lines that merge() joins into the bytes of the unsharded sweep.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace simcache::sim {

class CostModel;

// One point of the cross product, before it runs.
struct SweepPoint {
  size_t index = 0;
  std::string scenario, kernel;
  std::string machine;  // a model/kernel/machine.def row
  uint64_t seed = 1;
  std::vector<std::pair<std::string, std::string>> params;  // scenario --set
  std::string policy;                                       // the column as written
  std::string cost_profile;                                 // "" = counts only
  std::vector<std::pair<std::string, std::string>> knobs;   // policy.NAME=VALUE
};

struct SweepGrid {
  std::string path;
  std::vector<std::string> scenarios, kernels, machines, policies;
  std::vector<uint64_t> seeds;
  // Each key's values, crossed in key order.
  std::map<std::string, std::vector<std::string>> params, knobs;
  // Cost profiles crossed like kernels (names, files or "none"); empty:
  // the default profile.
  std::vector<std::string> cost_profiles;
  std::string plot_x;        // the parameter "time against table size" uses
};

// Reads a grid. Errors name the file, the line and the field.
bool load_grid(const std::string& path, SweepGrid* out, std::string* error);
// The points of shard i/N (index % N == i) in their fixed order, each with
// its index in the whole grid; the rest are never made. Checks every
// kernel and scenario, and every column of the shard, before anything
// runs (an error names the point's field). More than `max_points` points
// in the shard is an error naming both numbers (the work budget).
inline constexpr uint64_t kDefaultMaxPoints = 100000;
bool expand_grid(const SweepGrid& g, std::vector<SweepPoint>* out, std::string* error,
                 uint32_t shard = 0, uint32_t shards = 1,
                 uint64_t max_points = kDefaultMaxPoints);

struct SweepOptions {
  int jobs = 1;
  uint32_t shard = 0, shards = 1;
  // The loaded cost profiles, by the name the points carry.
  std::map<std::string, const CostModel*> costs;
  bool progress = false;  // a progress line on stderr (a terminal)
};
// Parses "i/N" (0 <= i < N <= 100000).
bool parse_shard(const std::string& s, uint32_t* shard, uint32_t* shards, std::string* error);

// Runs the points of the shard; returns one JSON record per workload of
// each point, in point order. A run error stops the sweep.
bool run_sweep(const std::vector<SweepPoint>& points, const SweepOptions& o,
               std::vector<nlohmann::json>* out, std::string* error);

// One record as its output line (no newline): keys sorted, compact.
std::string record_line(const nlohmann::json& r);

// Joins shard outputs: parses every line of every text, orders by
// (point, workload) and rejects a duplicate or malformed line, naming the
// file and line. Each record's fields and their types are checked here,
// once ("FILE:LINE: field 'X': missing"), so the formatters below and
// sweep_charts() may assume them.
bool merge_records(const std::vector<std::pair<std::string, std::string>>& files,
                   std::vector<nlohmann::json>* out, std::string* error);
std::string records_jsonl(const std::vector<nlohmann::json>& r);
std::string records_csv(const std::vector<nlohmann::json>& r);
// With `effects` (sweep_effects() of the same records), two more columns:
// the change against the grid's first policy and against the series'
// smallest `plot_x`, each with its 90 % model interval.
struct PointEffects;
std::string records_table(const std::vector<nlohmann::json>& r,
                          const std::vector<PointEffects>* effects = nullptr,
                          const std::string& plot_x = "");

}  // namespace simcache::sim
