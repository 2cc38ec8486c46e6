// The trade-offs the threads argue over, drawn from sweep records (as
// run_sweep writes them or merge_records checks them): memory
// retained against ns per operation, time against the swept table size,
// and accounted against unaccounted slab memory, and the change in time
// against the grid's first policy. One series per kernel x policy (colour
// by policy, marker by kernel); the other dimensions with several values
// (scenario, machine, profile, seed, parameters and knobs other than
// plot_x) make small multiples of the time and change charts, so a line
// joins only points that differ in plot_x. x is on a log2 scale when every
// x is a power of two.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report/plot.h"
#include "sim/sweep/sweep_effects.h"

namespace simcache::sim {

// The grid parameter with the most distinct values ("" if none).
std::string default_plot_x(const std::vector<nlohmann::json>& records);
// The charts that have data; `plot_x` (a parameter or a knob) "" =
// default_plot_x(). Per small multiple: time, then change; then memory
// and accounted.
// With `effects` (sweep_effects() of the same records and plot_x), each
// change point carries its 90 % effect interval as a whisker; each time
// point carries its own model interval (ns_per_op_lo/hi) either way.
std::vector<PlotChart> sweep_charts(const std::vector<nlohmann::json>& records,
                                    const std::string& plot_x,
                                    const std::vector<PointEffects>* effects = nullptr);

}  // namespace simcache::sim
