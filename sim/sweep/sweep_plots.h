// The trade-offs the threads argue over, drawn from sweep records (as
// run_sweep writes them or merge_records checks them): memory
// retained against ns per operation, time against the swept table size,
// and accounted against unaccounted slab memory; one series per column.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report/plot.h"

namespace simcache::sim {

// The grid parameter with the most distinct values ("" if none).
std::string default_plot_x(const std::vector<nlohmann::json>& records);
// The charts that have data; `plot_x` "" = default_plot_x().
std::vector<PlotChart> sweep_charts(const std::vector<nlohmann::json>& records,
                                    const std::string& plot_x);

}  // namespace simcache::sim
