// Effects between sweep points, each with its 90 % model interval: a
// point against the grid's first policy at the same coordinates (two
// configurations of one workload shape), and against the same series at
// the smallest plot_x value (a different workload shape when plot_x is a
// scenario parameter, so the interval carries both shapes' inadequacy;
// one shape when it is a knob). Computed from the records' per-operation
// parameter counts (`param_counts`) and the cost profile they were priced
// with, by effect_interval() (sim/cost/cost.h), the same formula the
// report's "vs A" column uses. docs/sweeps.md, "Effects and their
// intervals".
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace simcache::sim {

class CostModel;

struct SweepEffect {
  bool valid = false;     // false: no base point, or no counts to price
  double effect = 0;      // relative: v / base - 1
  double lo = 0, hi = 0;  // its 90 % model interval, relative
  bool on_priors = false;  // the interval rests mostly on priors
  bool cross_shape = false;
};
struct PointEffects {
  SweepEffect vs_policy;  // against the grid's first policy
  SweepEffect vs_x;       // against the series' smallest plot_x
};

// One entry per record (in order); skipped records and records without
// a profile get none. `costs`: the profiles by the name records carry.
std::vector<PointEffects> sweep_effects(const std::vector<nlohmann::json>& records,
                                        const std::string& plot_x,
                                        const std::map<std::string, const CostModel*>& costs);

// Loads the cost profiles the records name (their `cost_profile`) and
// checks each against the SHA-256 its lines recorded: an effect priced
// with a profile that changed since the sweep would not be the sweep's.
// Records without a profile need none. Errors are one line.
bool load_record_profiles(const std::vector<nlohmann::json>& records,
                          std::map<std::string, CostModel>* out, std::string* error);

}  // namespace simcache::sim
