// A small SVG writer for the sweep's trade-off charts (scatter and line
// charts with axes, ticks and a legend), and an HTML page embedding them.
// Our own rather than a library: Debian 12 has no C++ plotting library
// that writes standalone SVG without a GUI toolkit or a Python runtime
// (docs/sweeps.md, "Plots"). Output is deterministic: same charts, same
// bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace simcache::sim {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

struct PlotChart {
  std::string title, x_label, y_label;
  bool lines = false;  // join each series' points (sorted by x)
  std::vector<PlotSeries> series;
};

// The series colours, in order: distinct, saturated, and none of them
// grey, black or white, so a screenshot's pixels tell the series apart.
const std::vector<std::string>& plot_palette();

// The size of each chart in svg_document() and html_page().
inline constexpr int kChartWidth = 1000, kChartHeight = 360;

// One chart as an <svg> element of `width` x `height` pixels.
std::string svg_chart(const PlotChart& c, int width, int height);
// Every chart stacked in one SVG document.
std::string svg_document(const std::vector<PlotChart>& charts);
// An HTML page with a title, every chart inline and `table` (plain text,
// escaped into a <pre>).
std::string html_page(const std::string& title, const std::vector<PlotChart>& charts,
                      const std::string& table);

}  // namespace simcache::sim
