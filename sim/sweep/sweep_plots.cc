// The sweep's trade-off charts from its records.
#include "sim/sweep/sweep_plots.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace simcache::sim {
namespace {

std::string str(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// A record's coordinates other than kernel and policy: (dimension, value).
// Records are checked on reading (merge_records, or written by run_sweep),
// so the fields they carry are there with their types.
std::vector<std::pair<std::string, std::string>> coords(const nlohmann::json& j) {
  std::vector<std::pair<std::string, std::string>> c = {
      {"scenario", j.value("label", j.at("scenario").get<std::string>())},
      {"machine", j.at("machine").get<std::string>()},
      {"profile", j.value("cost_profile", std::string())},
      {"seed", str(j.at("seed"))}};
  for (const auto& [k, v] : j.at("grid").items()) c.emplace_back(k, str(v));
  for (const auto& [k, v] : j.at("knobs").items()) c.emplace_back(k, str(v));
  return c;
}

// First-appearance order of values.
struct Order {
  std::map<std::string, int> index;
  std::vector<std::string> names;
  int add(const std::string& s) {
    auto [it, fresh] = index.emplace(s, static_cast<int>(names.size()));
    if (fresh) names.push_back(s);
    return it->second;
  }
};

bool power_of_two(double x) {
  return x >= 1 && x <= 1e18 && x == std::floor(x) &&
         (static_cast<uint64_t>(x) & (static_cast<uint64_t>(x) - 1)) == 0;
}

// One chart's series by (kernel, policy), sorted so at the end; each
// point with its interval (lo > hi: none).
struct Builder {
  PlotChart chart;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> points, bars;
};
constexpr std::pair<double, double> kNoBar = {1, 0};

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
                                    const std::string& plot_x_in,
                                    const std::vector<PointEffects>* effects) {
  const std::string plot_x = plot_x_in.empty() ? default_plot_x(records) : plot_x_in;
  // The dimensions with more than one value (other than plot_x) make the
  // small multiples: a line joins only points that differ in plot_x.
  Order kernels, policies;
  std::map<std::string, std::set<std::string>> values;
  for (const auto& j : records) {
    kernels.add(j.at("kernel").get<std::string>());
    policies.add(j.at("policy").get<std::string>());
    for (const auto& [k, v] : coords(j)) values[k].insert(v);
  }
  // x: plot_x's value (a parameter or a knob; a knob that is not a number
  // by its order of appearance), else the point's index.
  Order x_order;
  auto x_of = [&](const nlohmann::json& j, std::string* text) {
    const nlohmann::json* v = nullptr;
    if (j.at("params").contains(plot_x)) v = &j.at("params").at(plot_x);
    else if (j.at("knobs").contains(plot_x)) v = &j.at("knobs").at(plot_x);
    if (!v) return *text = "", static_cast<double>(j.at("point").get<uint64_t>());
    *text = str(*v);
    if (v->is_number()) return v->get<double>();
    char* end = nullptr;
    const double d = std::strtod(text->c_str(), &end);
    return !text->empty() && *end == 0 ? d : static_cast<double>(x_order.add(*text));
  };
  auto facet_of = [&](const nlohmann::json& j) {
    std::string f;
    for (const auto& [k, v] : coords(j)) {
      if (k == plot_x || values[k].size() < 2) continue;
      if (!f.empty()) f += ", ";
      f += k == "scenario" || k == "machine" ? v : k == "profile" ? "profile " + v : k + "=" + v;
    }
    return f;
  };
  const bool multi_kernel = kernels.names.size() > 1;
  const std::string x_label = plot_x.empty() ? "point" : plot_x;
  const std::string first = policies.names.empty() ? "" : policies.names[0];

  Builder mem, acc;
  mem.chart = {"Memory retained against time per operation", "bytes retained by io_uring caches",
               "ns per operation", false, {}, "", false};
  acc.chart = {"Accounted against unaccounted slab memory", "unaccounted slab bytes",
               "accounted (memcg) slab bytes", false, {}, "", false};
  Order facets;
  std::vector<Builder> size, change;
  std::map<std::string, double> base;  // facet, kernel, x -> the first policy's ns/op
  bool all_pow2 = true;
  struct Timed {
    int facet, k, p;
    double x, ns;
    std::string key;
    size_t record;
  };
  std::vector<Timed> timed;
  for (size_t ri = 0; ri < records.size(); ++ri) {
    const nlohmann::json& j = records[ri];
    if (j.at("status") != "ok") continue;
    const int k = kernels.add(j.at("kernel").get<std::string>());
    const int p = policies.add(j.at("policy").get<std::string>());
    acc.points[{k, p}].emplace_back(j.at("unaccounted_bytes").get<double>(),
                                    j.at("accounted_bytes").get<double>());
    if (!j.contains("ns_per_op")) continue;
    const double ns = j.at("ns_per_op").get<double>();
    if (j.at("metrics").contains("bytes_retained"))
      mem.points[{k, p}].emplace_back(j.at("metrics").at("bytes_retained").get<double>(), ns);
    const std::string facet = facet_of(j);
    const int fi = facets.add(facet);
    if (static_cast<size_t>(fi) == size.size()) {
      size.push_back({{"Time against " + x_label, x_label, "ns per operation", true, {}, facet,
                       false},
                      {},
                      {}});
      change.push_back({{"Change in time per operation against " + first, x_label,
                         "% change in ns per operation", true, {}, facet, false},
                        {},
                        {}});
    }
    std::string xt;
    const double x = x_of(j, &xt);
    all_pow2 = all_pow2 && !xt.empty() && power_of_two(x);
    size[fi].points[{k, p}].emplace_back(x, ns);
    size[fi].bars[{k, p}].push_back(
        j.contains("ns_per_op_lo")
            ? std::pair{j.at("ns_per_op_lo").get<double>(), j.at("ns_per_op_hi").get<double>()}
            : kNoBar);
    const std::string key = facet + '\x1f' + kernels.names[k] + '\x1f' + xt;
    if (p == 0) base[key] = ns;
    timed.push_back({fi, k, p, x, ns, key, ri});
  }
  for (const Timed& t : timed) {
    auto b = base.find(t.key);
    if (t.p == 0 || b == base.end() || !(b->second > 0)) continue;
    change[t.facet].points[{t.k, t.p}].emplace_back(t.x, 100 * (t.ns / b->second - 1));
    const SweepEffect* e =
        effects && t.record < effects->size() ? &(*effects)[t.record].vs_policy : nullptr;
    change[t.facet].bars[{t.k, t.p}].push_back(e && e->valid ? std::pair{100 * e->lo, 100 * e->hi}
                                                             : kNoBar);
  }
  // Styles: colour by policy and marker by kernel when both fit; else by
  // the series' place in kernel x policy order; else by place in the chart
  // (and a chart of more series than pairs is split).
  const size_t np = plot_palette().size(), nm = plot_markers().size();
  const size_t nk = kernels.names.size(), npol = policies.names.size();
  const bool by_policy = npol <= np && nk <= nm, by_pair = nk * npol <= np * nm;
  std::vector<PlotChart> out;
  auto finish = [&](Builder& b) {
    if (b.points.empty()) return;
    PlotChart& c = b.chart;
    for (auto& [kp, pts] : b.points) {  // (kernel, policy) order
      const auto [k, p] = kp;
      PlotSeries s{(multi_kernel ? kernels.names[k] + " " : "") + policies.names[p],
                   std::move(pts), std::move(b.bars[kp]), -1, -1};
      const size_t i = k * npol + p;
      if (by_policy) s.colour = p, s.marker = k;
      else if (by_pair) s.colour = static_cast<int>(i % np), s.marker = static_cast<int>(i / np);
      c.series.push_back(std::move(s));
    }
    c.log2_x = c.lines && all_pow2;
    const size_t max = plot_max_series(), parts = (c.series.size() + max - 1) / max;
    for (size_t part = 0; part < parts; ++part) {
      PlotChart piece = c;
      piece.series.assign(c.series.begin() + part * max,
                          c.series.begin() + std::min(c.series.size(), (part + 1) * max));
      if (parts > 1) piece.title += " (part " + std::to_string(part + 1) + ")";
      out.push_back(std::move(piece));
    }
  };
  for (size_t f = 0; f < size.size(); ++f) finish(size[f]), finish(change[f]);
  finish(mem);
  finish(acc);
  return out;
}

}  // namespace simcache::sim
