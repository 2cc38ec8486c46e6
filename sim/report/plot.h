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
  // Each point's 90 % interval (lo, hi) in y, drawn as a whisker; empty:
  // none, else one per point (a point without one has lo > hi).
  std::vector<std::pair<double, double>> bars = {};
  // Index into plot_palette() and plot_markers(); -1: from the series'
  // position (colour i % palette, marker i / palette).
  int colour = -1, marker = -1;
};

struct PlotChart {
  std::string title, x_label, y_label;
  bool lines = false;  // join each series' points (sorted by x)
  std::vector<PlotSeries> series;
  std::string subtitle;  // what the chart holds fixed (a small multiple's values)
  bool log2_x = false;   // x on a log2 scale, a tick at each power of two
};

// The series colours, in order: distinct, saturated, and none of them
// grey, black or white, so a screenshot's pixels tell the series apart.
const std::vector<std::string>& plot_palette();
// The marker shapes' names, in order (circle, square, ...). A chart
// draws at most palette x markers series, each with its own pair.
const std::vector<std::string>& plot_markers();
inline size_t plot_max_series() { return plot_palette().size() * plot_markers().size(); }

// The width of each chart in svg_document() and html_page(); the height
// is at least kChartHeight and grows with the legend (chart_height()).
inline constexpr int kChartWidth = 1000, kChartHeight = 360;
int chart_height(const PlotChart& c);
// The width the legend takes right of the plot (markers and names).
int legend_width(const PlotChart& c);

// One chart as an <svg> element of `width` x `height` pixels.
std::string svg_chart(const PlotChart& c, int width, int height);
// Every chart stacked in one SVG document.
std::string svg_document(const std::vector<PlotChart>& charts);
// An HTML page with a title, the run record (`record`: label and value,
// shown in that order), every chart inline and `table` (plain text,
// escaped into a <pre>).
std::string html_page(const std::string& title,
                      const std::vector<std::pair<std::string, std::string>>& record,
                      const std::vector<PlotChart>& charts, const std::string& table);

}  // namespace simcache::sim
