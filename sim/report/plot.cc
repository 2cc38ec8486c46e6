#include "sim/report/plot.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

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
  double lo = 0, hi = 1, step = 1;  // on a log2 axis: exponents
  bool log2 = false;
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

// A log2 axis: a tick at every power of two (every second, ... when
// there are more than 12), from the power at or below lo to the one at or
// above hi.
Axis log2_axis_of(double lo, double hi) {
  Axis a;
  a.log2 = true;
  a.lo = std::floor(std::log2(lo));
  a.hi = std::max(a.lo + 1, std::ceil(std::log2(hi)));
  a.step = std::ceil((a.hi - a.lo) / 12);
  return a;
}

// A power of two's tick: the integer up to 65536, then 2^k.
std::string pow2_text(double k) {
  return k <= 16 ? fmt::format("{:g}", std::exp2(k)) : fmt::format("2^{:g}", k);
}

// Text width in pixels at font-size 12 (sans-serif), erring wide: wide
// glyphs (capitals, m, w and the signs) 12, others 8.
int text_width(const std::string& t) {
  int w = 0;
  for (unsigned char ch : t)
    w += (std::isupper(ch) || std::strchr("mwMW+=%@", ch)) ? 12 : 8;
  return w;
}

constexpr int kLegendRow = 20, kMarkerBox = 30;

std::string marker_svg(int kind, double x, double y, const std::string& col) {
  auto poly = [&](std::initializer_list<std::pair<double, double>> pts) {
    std::string p;
    for (const auto& [dx, dy] : pts) p += fmt::format("{:.1f},{:.1f} ", x + dx, y + dy);
    p.pop_back();
    return fmt::format("<polygon points=\"{}\" fill=\"{}\"/>", p, col);
  };
  switch (kind) {
    case 1:
      return fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>",
                         x - 5, y - 5, col);
    case 2: return poly({{0, -6.5}, {6, 4.5}, {-6, 4.5}});
    case 3: return poly({{0, -7}, {7, 0}, {0, 7}, {-7, 0}});
    case 4: return poly({{0, 6.5}, {6, -4.5}, {-6, -4.5}});
    case 5:
      return poly({{-2, -7}, {2, -7}, {2, -2}, {7, -2}, {7, 2}, {2, 2}, {2, 7}, {-2, 7}, {-2, 2},
                   {-7, 2}, {-7, -2}, {-2, -2}});
    default:
      return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\"/>", x, y, col);
  }
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

const std::vector<std::string>& plot_markers() {
  static const std::vector<std::string> m = {"circle",   "square",        "triangle",
                                             "diamond", "down-triangle", "plus"};
  return m;
}

int legend_width(const PlotChart& c) {
  int w = 0;
  for (const PlotSeries& s : c.series) w = std::max(w, text_width(s.name));
  return std::max(160, 12 + kMarkerBox + w + 12);
}

int chart_height(const PlotChart& c) {
  // The last legend row's baseline, then room for its descenders.
  const int n = static_cast<int>(c.series.size());
  return std::max(kChartHeight, kTop + 10 + kLegendRow * std::max(0, n - 1) + 12);
}

std::string svg_chart(const PlotChart& c, int width, int height) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const PlotSeries& s : c.series) {
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
    for (const auto& [lo, hi] : s.bars)
      if (lo <= hi) y0 = std::min(y0, lo), y1 = std::max(y1, hi);
  }
  if (x0 > x1) x0 = y0 = 0, x1 = y1 = 1;
  const Axis ax = c.log2_x && x0 > 0 ? log2_axis_of(x0, x1) : axis_of(x0, x1);
  const Axis ay = axis_of(y0, y1);
  const int right = legend_width(c);
  const int pw = width - kLeft - right, ph = height - kTop - kBottom;
  auto px = [&](double x) {
    const double v = ax.log2 ? std::log2(x) : x;
    return kLeft + (v - ax.lo) / (ax.hi - ax.lo) * pw;
  };
  auto py = [&](double y) { return kTop + ph - (y - ay.lo) / (ay.hi - ay.lo) * ph; };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\" "
      "data-x-scale=\"{4}\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{3}",
      width, height, kLeft, esc(c.title), ax.log2 ? "log2" : "linear");
  if (!c.subtitle.empty())
    s += fmt::format("<tspan font-weight=\"normal\">: {}</tspan>", esc(c.subtitle));
  s += "</text>\n";
  // At most kMaxTicks: once the step is below the precision of the values
  // (1e17 and 1e17 + 16 differ by one ulp), lo + n step no longer moves.
  // Each tick from lo (lo + n step, zero where it rounds to it: 0.1 + 0.2
  // - 0.3 is not 0 and would print as -2.8e-17).
  auto tick = [](const Axis& a, int n) {
    const double v = a.lo + n * a.step;
    return std::abs(v) < a.step * 1e-9 ? 0.0 : v;
  };
  int n = 0;
  for (double v = ax.lo; v <= ax.hi + ax.step / 2 && n < kMaxTicks; v = tick(ax, ++n)) {
    const double x = kLeft + (v - ax.lo) / (ax.hi - ax.lo) * pw;
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#dddddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     x, kTop, kTop + ph, kTop + ph + 16, ax.log2 ? pow2_text(v) : tick_text(v));
  }
  n = 0;
  for (double v = ay.lo; v <= ay.hi + ay.step / 2 && n < kMaxTicks; v = tick(ay, ++n))
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#dddddd\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     kLeft, py(v), kLeft + pw, kLeft - 6, py(v) + 4, tick_text(v));
  if (ay.lo < 0 && ay.hi > 0)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#888888\"/>\n",
                     kLeft, py(0), kLeft + pw);
  s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                   "stroke=\"#333333\"/>\n",
                   kLeft, kTop, pw, ph);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2,
                   height - 10, esc(c.x_label + (ax.log2 ? " (log2 scale)" : "")));
  s += fmt::format("<text x=\"16\" y=\"{0}\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 16 {0})\">{1}</text>\n",
                   kTop + ph / 2, esc(c.y_label));
  const auto& pal = plot_palette();
  const size_t np = pal.size(), nm = plot_markers().size();
  for (size_t i = 0; i < c.series.size(); ++i) {
    const PlotSeries& sr = c.series[i];
    const std::string& col = pal[sr.colour >= 0 ? sr.colour % np : i % np];
    const int mk = static_cast<int>(sr.marker >= 0 ? sr.marker % nm : (i / np) % nm);
    // Points with their bars, in x order when the series is a line.
    std::vector<size_t> order(sr.points.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    if (c.lines)
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return sr.points[a].first < sr.points[b].first;
      });
    std::vector<std::pair<double, double>> pts;
    for (size_t k : order) pts.push_back(sr.points[k]);
    // The whiskers first, under the markers: a vertical line from lo to
    // hi with a cap at each end.
    for (size_t k : order) {
      if (k >= sr.bars.size() || !(sr.bars[k].first <= sr.bars[k].second)) continue;
      const double x = px(sr.points[k].first), lo = py(sr.bars[k].first), hi = py(sr.bars[k].second);
      s += fmt::format("<path class=\"interval\" d=\"M{0:.1f} {1:.1f}V{2:.1f}M{3:.1f} {1:.1f}H{4:.1f}"
                       "M{3:.1f} {2:.1f}H{4:.1f}\" stroke=\"{5}\" stroke-width=\"1.5\" "
                       "fill=\"none\"/>\n",
                       x, lo, hi, x - 5, x + 5, col);
    }
    if (c.lines) {
      std::string poly;
      for (const auto& [x, y] : pts) poly += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n",
                       poly, col);
    }
    for (const auto& [x, y] : pts) s += marker_svg(mk, px(x), py(y), col) + "\n";
    const int lx = kLeft + pw + 12, ly = kTop + 10 + static_cast<int>(i) * kLegendRow;
    s += fmt::format("<g class=\"legend\" data-colour=\"{}\" data-marker=\"{}\">", col,
                     plot_markers()[mk]);
    if (c.lines)
      s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" "
                       "stroke-width=\"2\"/>",
                       lx, ly - 4, lx + 24, ly - 4, col);
    s += marker_svg(mk, lx + 12, ly - 4, col) +
         fmt::format("<text x=\"{}\" y=\"{}\">{}</text></g>\n", lx + kMarkerBox, ly, esc(sr.name));
  }
  return s + "</svg>\n";
}

std::string svg_document(const std::vector<PlotChart>& charts) {
  constexpr int w = kChartWidth;
  int total = 0;
  for (const PlotChart& c : charts) total += chart_height(c);
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\">\n",
      w, std::max(total, kChartHeight));
  int y = 0;
  for (const PlotChart& pc : charts) {
    const int h = chart_height(pc);
    std::string c = svg_chart(pc, w, h);
    c.insert(4, fmt::format(" x=\"0\" y=\"{}\"", y));
    s += c;
    y += h;
  }
  return s + "</svg>\n";
}

std::string html_page(const std::string& title,
                      const std::vector<std::pair<std::string, std::string>>& record,
                      const std::vector<PlotChart>& charts, const std::string& table) {
  std::string s = fmt::format(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<style>body{{margin:16px;background:#ffffff;font-family:sans-serif}}"
      "pre{{font-size:11px;overflow-x:auto}}td{{font-size:12px;padding:1px 8px 1px 0;"
      "vertical-align:top}}code{{word-break:break-all}}</style></head>\n<body>\n"
      "<h1 style=\"font-size:18px\">{0}</h1>\n<table id=\"record\">\n",
      esc(title));
  for (const auto& [k, v] : record)
    s += "<tr><td>" + esc(k) + "</td><td><code>" + esc(v) + "</code></td></tr>\n";
  s += "</table>\n";
  for (const PlotChart& c : charts)
    s += "<div>\n" + svg_chart(c, kChartWidth, chart_height(c)) + "</div>\n";
  return s + "<pre>" + esc(table) + "</pre>\n</body></html>\n";
}

}  // namespace simcache::sim
