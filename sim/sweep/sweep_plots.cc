// The sweep's trade-off charts from its records.
#include "sim/sweep/sweep_plots.h"

#include <map>
#include <set>

namespace simcache::sim {
namespace {

std::string series_name(const nlohmann::json& j, bool kernels, bool machines, bool profiles) {
  std::string s = j.at("policy").get<std::string>();
  if (kernels) s = j.at("kernel").get<std::string>() + " " + s;
  if (machines) s = j.at("machine").get<std::string>() + " " + s;
  if (profiles) s += " @" + j.value("cost_profile", std::string());
  for (const auto& [k, v] : j.at("knobs").items()) s += " " + k + "=" + v.get<std::string>();
  if (j.contains("label") && j.at("label").get<std::string>() != j.at("scenario").get<std::string>())
    s += " [" + j.at("label").get<std::string>() + "]";
  return s;
}

// Records are checked on reading (merge_records, or written by run_sweep),
// so the fields an ok record carries are there with their types.
double metric_of(const nlohmann::json& j, const char* k) {
  return j.at("metrics").at(k).get<double>();
}

// Series in order of first appearance (the sweep's point order).
struct Builder {
  PlotChart chart;
  std::map<std::string, size_t> index;
  void add(const std::string& name, double x, double y) {
    auto [it, fresh] = index.emplace(name, chart.series.size());
    if (fresh) chart.series.push_back({name, {}});
    chart.series[it->second].points.emplace_back(x, y);
  }
};

}  // namespace

std::string default_plot_x(const std::vector<nlohmann::json>& records) {
  std::map<std::string, std::map<std::string, int>> seen;
  for (const auto& j : records)
    for (const auto& [k, v] : j.at("grid").items()) seen[k][v.get<std::string>()] = 1;
  std::string best;
  size_t most = 0;
  for (const auto& [k, vs] : seen)
    if (vs.size() > most) best = k, most = vs.size();
  return best;
}

std::vector<PlotChart> sweep_charts(const std::vector<nlohmann::json>& records,
                                    const std::string& plot_x_in) {
  const std::string plot_x = plot_x_in.empty() ? default_plot_x(records) : plot_x_in;
  Builder mem, size, acc;
  mem.chart = {"Memory retained against time per operation", "bytes retained by io_uring caches",
               "ns per operation", false, {}};
  size.chart = {"Time against " + (plot_x.empty() ? std::string("point") : plot_x),
                plot_x.empty() ? "point" : plot_x, "ns per operation", true, {}};
  acc.chart = {"Accounted against unaccounted slab memory", "unaccounted slab bytes",
               "accounted (memcg) slab bytes", false, {}};
  std::set<std::string> kernels, machines, profiles;
  for (const auto& j : records) {
    kernels.insert(j.at("kernel").get<std::string>());
    machines.insert(j.at("machine").get<std::string>());
    profiles.insert(j.value("cost_profile", std::string()));
  }
  for (const auto& j : records) {
    if (j.at("status") != "ok") continue;
    const std::string name = series_name(j, kernels.size() > 1, machines.size() > 1,
                                        profiles.size() > 1);
    const bool ns = j.contains("ns_per_op");
    const double ns_per_op = ns ? j.at("ns_per_op").get<double>() : 0;
    if (ns && j.at("metrics").contains("bytes_retained"))
      mem.add(name, metric_of(j, "bytes_retained"), ns_per_op);
    if (ns) {
      double x = static_cast<double>(j.at("point").get<uint64_t>());
      if (!plot_x.empty() && j.at("params").contains(plot_x))
        x = j.at("params").at(plot_x).get<double>();
      size.add(name, x, ns_per_op);
    }
    acc.add(name, j.at("unaccounted_bytes").get<double>(), j.at("accounted_bytes").get<double>());
  }
  std::vector<PlotChart> out;
  for (Builder* b : {&mem, &size, &acc})
    if (!b->chart.series.empty()) out.push_back(std::move(b->chart));
  return out;
}

}  // namespace simcache::sim
