#include "sim/report/plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace simcache::sim {
namespace {

constexpr int kLeft = 80, kRight = 330, kTop = 34, kBottom = 48;
constexpr int kMaxTicks = 40;  // nice_step() aims at about five

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A "nice" tick step (1, 2 or 5 x 10^k) giving about five ticks.
double nice_step(double span) {
  if (!(span > 0)) return 1;
  const double raw = span / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

struct Axis {
  double lo = 0, hi = 1, step = 1;
};

Axis axis_of(double lo, double hi) {
  if (lo > 0 && lo < hi * 0.5) lo = 0;  // start at zero unless the data sits far above it
  if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::abs(lo) * 0.1);
  Axis a;
  a.step = nice_step(hi - lo);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  return a;
}

std::string tick_text(double v) {
  const double a = std::abs(v);
  if (a >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

}  // namespace

const std::vector<std::string>& plot_palette() {
  static const std::vector<std::string> p = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                             "#ff7f0e", "#17becf", "#e377c2", "#8c564b",
                                             "#bcbd22", "#0000ff"};
  return p;
}

std::string svg_chart(const PlotChart& c, int width, int height) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const PlotSeries& s : c.series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (x0 > x1) x0 = y0 = 0, x1 = y1 = 1;
  const Axis ax = axis_of(x0, x1), ay = axis_of(y0, y1);
  const int pw = width - kLeft - kRight, ph = height - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - ax.lo) / (ax.hi - ax.lo) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - ay.lo) / (ay.hi - ay.lo) * ph; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}</text>\n",
      width, height, kLeft, esc(c.title));
  // At most kMaxTicks: once the step is below the precision of the values
  // (1e17 and 1e17 + 16 differ by one ulp), v += step no longer moves.
  int n = 0;
  for (double v = ax.lo; v <= ax.hi + ax.step / 2 && n < kMaxTicks; v += ax.step, ++n)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#dddddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     px(v), kTop, kTop + ph, kTop + ph + 16, tick_text(v));
  n = 0;
  for (double v = ay.lo; v <= ay.hi + ay.step / 2 && n < kMaxTicks; v += ay.step, ++n)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#dddddd\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     kLeft, py(v), kLeft + pw, kLeft - 6, py(v) + 4, tick_text(v));
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                   "stroke=\"#333333\"/>\n",
                   kLeft, kTop, pw, ph);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2,
                   height - 10, esc(c.x_label));
  s += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                   kTop + ph / 2, esc(c.y_label));
  const auto& pal = plot_palette();
  for (size_t i = 0; i < c.series.size(); ++i) {
    const PlotSeries& sr = c.series[i];
    const std::string& col = pal[i % pal.size()];
    std::vector<std::pair<double, double>> pts = sr.points;
    if (c.lines) {
      std::stable_sort(pts.begin(), pts.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::string poly;
      for (const auto& [x, y] : pts) poly += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       poly, col);
    }
    for (const auto& [x, y] : pts)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\"/>\n", px(x), py(y),
                       col);
    const int ly = kTop + 10 + static_cast<int>(i) * 20;
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
                     "<text x=\"{}\" y=\"{}\">{}</text>\n",
                     kLeft + pw + 12, ly - 11, col, kLeft + pw + 32, ly, esc(sr.name));
  }
  return s + "</svg>\n";
}

std::string svg_document(const std::vector<PlotChart>& charts) {
  constexpr int w = kChartWidth, h = kChartHeight;
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\">\n",
      w, h * static_cast<int>(std::max<size_t>(1, charts.size())));
  for (size_t i = 0; i < charts.size(); ++i) {
    std::string c = svg_chart(charts[i], w, h);
    c.insert(4, fmt::format(" x=\"0\" y=\"{}\"", static_cast<int>(i) * h));
    s += c;
  }
  return s + "</svg>\n";
}

std::string html_page(const std::string& title, const std::vector<PlotChart>& charts,
                      const std::string& table) {
  std::string s = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<style>body{{margin:16px;background:#ffffff;font-family:sans-serif}}"
      "pre{{font-size:11px}}</style></head>\n<body>\n<h1 style=\"font-size:18px\">{0}</h1>\n",
      esc(title));
  for (const PlotChart& c : charts)
    s += "<div>\n" + svg_chart(c, kChartWidth, kChartHeight) + "</div>\n";
  return s + "<pre>" + esc(table) + "</pre>\n</body></html>\n";
}

}  // namespace simcache::sim
