// The sweep page of docs/sweeps.md's grid (shipped as
// data/grids/sparse-fill.toml): series are kernel x policy, no two alike
// within a chart, small multiples for every other dimension so no line
// crosses an unplotted parameter, a log2 axis for power-of-two sizes, the
// change against the first policy, the run record, and no chart text
// outside its SVG once headless Chromium has laid the page out.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
// GCC 12 at -O1 with the sanitizers warns inside libstdc++'s <regex>
// (as tests/main.cc notes for Catch2's use); not our code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <regex>
#pragma GCC diagnostic pop
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>
#include "sim/cli/cli.h"
#include "sim/report/plot.h"
#include "sim/report/record.h"
#include "sim/run/build_info.h"
#include "sim/sweep/sweep_plots.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
namespace fs = std::filesystem;
// A missing file throws (the test fails), never reads as "".
using simcache::testing::read_text;

namespace {

const std::string kGridPath = std::string(SIMCACHE_SOURCE_DIR) + "/data/grids/sparse-fill.toml";

struct Dir {
  fs::path path = fs::temp_directory_path() /
                  ("simcache-page-test-" + std::to_string(::getpid()) + "-" +
                   std::to_string(reinterpret_cast<uintptr_t>(this)));
  Dir() { fs::create_directories(path); }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& n) const { return (path / n).string(); }
};

CliOutcome page_ok(const std::vector<std::string>& args) {
  CliOutcome o = run_cli(args);
  INFO(o.err);
  REQUIRE(o.status == 0);
  return o;
}

// One chart of a page, read back from its SVG.
struct Chart {
  std::string title, subtitle, x_scale;
  std::vector<std::string> names;                          // legend, in order
  std::vector<std::pair<std::string, std::string>> looks;  // (colour, marker)
  std::vector<std::vector<double>> lines;                  // each polyline's x
  std::vector<std::pair<double, std::string>> x_ticks;     // (x, label)
};

std::vector<Chart> charts_of(const std::string& page) {
  std::vector<Chart> out;
  static const std::regex title(R"re(font-weight="bold">([^<]*)(<tspan font-weight="normal">: ([^<]*)</tspan>)?</text>)re"),
      scale(R"re(data-x-scale="(\w+)")re"),
      legend(R"re(<g class="legend" data-colour="([^"]*)" data-marker="([^"]*)">.*?<text[^>]*>([^<]*)</text></g>)re"),
      poly(R"re(<polyline points="([^"]*)")re"),
      tick(R"re(<line x1="([0-9.]+)" y1="\d+" x2="[0-9.]+" y2="\d+" stroke="#dddddd"/><text x="[0-9.]+" y="\d+" text-anchor="middle">([^<]*)</text>)re");
  for (size_t at = page.find("<svg "); at != std::string::npos; at = page.find("<svg ", at + 1)) {
    const std::string svg = page.substr(at, page.find("</svg>", at) - at);
    Chart c;
    std::smatch m;
    if (std::regex_search(svg, m, title)) c.title = m[1], c.subtitle = m[3];
    if (std::regex_search(svg, m, scale)) c.x_scale = m[1];
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), legend); it != std::sregex_iterator(); ++it) {
      c.looks.emplace_back((*it)[1], (*it)[2]);
      c.names.push_back((*it)[3]);
    }
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), poly); it != std::sregex_iterator(); ++it) {
      std::istringstream pts((*it)[1].str());
      std::vector<double> xs;
      for (std::string p; pts >> p;) xs.push_back(std::stod(p.substr(0, p.find(','))));
      c.lines.push_back(xs);
    }
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick); it != std::sregex_iterator(); ++it)
      c.x_ticks.emplace_back(std::stod((*it)[1]), (*it)[2]);
    out.push_back(c);
  }
  return out;
}

const std::vector<std::string> kSeries = {
    "v6.13 unpatched",        "v6.18 unpatched",   "v6.18 node-slab+prefill",
    "v6.18 prefill-grow",     "v6.18 node-slab+prefill-lazy", "v7.1 unpatched",
    "v7.1 node-slab+prefill", "v7.1 prefill-grow", "v7.1 node-slab+prefill-lazy"};

// Every <text> of every chart of `html` inside its <svg>, as headless
// Chromium lays the page out: "" or the texts that stick out; `texts` the
// number it measured.
std::string clipped_texts(const Dir& d, const std::string& html, int* texts) {
  std::string page = html;
  const std::string script =
      "<script>let n = 0; const bad = [];\n"
      "for (const svg of document.querySelectorAll('svg')) {\n"
      "  const r = svg.getBoundingClientRect();\n"
      "  for (const t of svg.querySelectorAll('text')) {\n"
      "    const b = t.getBoundingClientRect(); ++n;\n"
      "    if (b.left < r.left - 0.5 || b.right > r.right + 0.5 || b.top < r.top - 0.5 ||\n"
      "        b.bottom > r.bottom + 0.5) bad.push(t.textContent);\n"
      "  }\n}\n"
      "document.body.setAttribute('data-texts', String(n));\n"
      "document.body.setAttribute('data-clipped', bad.join('|'));</script>\n";
  page.insert(page.rfind("</body>"), script);
  const std::string file = d.file("measure.html");
  std::ofstream(file, std::ios::binary) << page;
  const std::string dom = d.file("dom.html");
  const std::string cmd = "timeout 120 chromium --headless --no-sandbox --disable-gpu "
                          "--window-size=1100,1000 --dump-dom file://" + file + " >" + dom +
                          " 2>/dev/null";
  INFO("needs chromium (scripts/bootstrap installs it): " << cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::smatch m;
  const std::string out = read_text(dom);
  REQUIRE(std::regex_search(out, m, std::regex(R"re(data-texts="(\d+)" data-clipped="([^"]*)")re")));
  *texts = std::stoi(m[1]);
  return m[2];
}

}  // namespace

TEST_CASE("plots: docs/sweeps.md's grid is data/grids/sparse-fill.toml and its command runs",
          "[plot]") {
  const std::string doc = read_text(std::string(SIMCACHE_SOURCE_DIR) + "/docs/sweeps.md");
  const size_t open = doc.find("```toml\n");
  REQUIRE(open != std::string::npos);
  const size_t close = doc.find("```", open + 8);
  CHECK(doc.substr(open + 8, close - open - 8) == read_text(kGridPath));
  // The command the doc shows, with its outputs in a scratch directory.
  const std::string shown =
      "simcache sweep data/grids/sparse-fill.toml --output sweep.jsonl --html sweep.html";
  REQUIRE(doc.find("```sh\n" + shown + "\n```") != std::string::npos);
  CHECK(doc.find("runs its 216 points (162 ok;") != std::string::npos);
  Dir d;
  page_ok({"sweep", kGridPath, "--output", d.file("sweep.jsonl"), "--html", d.file("sweep.html")});
  const std::string out = read_text(d.file("sweep.jsonl"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 216);
  size_t ok_points = 0;
  for (size_t at = out.find("\"status\":\"ok\""); at != std::string::npos;
       at = out.find("\"status\":\"ok\"", at + 1))
    ++ok_points;
  CHECK(ok_points == 162);
  CHECK(fs::file_size(d.file("sweep.html")) > 0);
}

TEST_CASE("plots: the sweep page of the docs' grid (series, looks, small multiples, log2, "
          "change, record)",
          "[plot]") {
  Dir d;
  const std::string html = d.file("page.html"), svg = d.file("page.svg");
  page_ok({"sweep", kGridPath, "--jobs", "1", "--quiet", "--output", d.file("out.jsonl"), "--html",
      html, "--plot", svg});
  const std::string page = read_text(html);
  const std::vector<Chart> charts = charts_of(page);
  // 6 small multiples (installs x prefill_max) of time and change, then the
  // two scatters.
  REQUIRE(charts.size() == 14);
  std::set<std::string> facets;
  for (size_t i = 0; i < 12; ++i) {
    const Chart& c = charts[i];
    INFO(i << " " << c.title << ": " << c.subtitle);
    CHECK(c.title == (i % 2 ? "Change in time per operation against unpatched"
                            : "Time against slots"));
    facets.insert(c.subtitle);
    if (i % 2) CHECK(c.subtitle == charts[i - 1].subtitle);
    // Series: kernel x policy only; the change leaves out the first policy
    // and v6.13, which runs only that one.
    std::vector<std::string> want = kSeries;
    if (i % 2)
      want.erase(std::remove_if(want.begin(), want.end(),
                                [](const std::string& s) {
                                  return s.find("unpatched") != std::string::npos;
                                }),
                 want.end());
    CHECK(c.names == want);
    // One line per series, through the 3 slot counts left to right: no line
    // joins points that differ in another parameter.
    CHECK(c.lines.size() == want.size());
    for (const auto& xs : c.lines) {
      CHECK(xs.size() == 3);
      CHECK(std::adjacent_find(xs.begin(), xs.end(), std::greater_equal<double>()) == xs.end());
    }
    // log2 axis: ticks at each power of two, equally spaced.
    CHECK(c.x_scale == "log2");
    REQUIRE(c.x_ticks.size() == 5);
    const std::vector<std::string> labels = {"256", "512", "1024", "2048", "4096"};
    for (size_t t = 0; t < 5; ++t) {
      CHECK(c.x_ticks[t].second == labels[t]);
      if (t > 1)
        CHECK(std::abs((c.x_ticks[t].first - c.x_ticks[t - 1].first) -
                       (c.x_ticks[1].first - c.x_ticks[0].first)) < 0.11);
    }
  }
  CHECK(facets == std::set<std::string>{"installs=64, prefill_max=256", "installs=64, prefill_max=1024",
                                        "installs=64, prefill_max=4096", "installs=4096, prefill_max=256",
                                        "installs=4096, prefill_max=1024",
                                        "installs=4096, prefill_max=4096"});
  CHECK(charts[12].title == "Memory retained against time per operation");
  CHECK(charts[13].title == "Accounted against unaccounted slab memory");
  for (size_t i = 12; i < 14; ++i) {
    CHECK(charts[i].names == kSeries);
    CHECK(charts[i].lines.empty());
    CHECK(charts[i].x_scale == "linear");
  }
  // No two series of a chart alike: colour by policy, marker by kernel.
  for (const Chart& c : charts) {
    INFO(c.title << ": " << c.subtitle);
    CHECK(std::set(c.looks.begin(), c.looks.end()).size() == c.looks.size());
  }
  CHECK(charts[0].looks[0] == std::pair<std::string, std::string>{plot_palette()[0], "circle"});
  CHECK(charts[0].looks[8] == std::pair<std::string, std::string>{plot_palette()[3], "triangle"});
  // The run record: command line, build, the grid's and profile's hashes.
  CHECK(page.find("<code>simcache sweep " + kGridPath + " --jobs 1 --quiet --output " +
                  d.file("out.jsonl") + " --html " + html + " --plot " + svg + "</code>") !=
        std::string::npos);
  CHECK(page.find(build_git_commit()) != std::string::npos);
  CHECK(page.find("<tr><td>grid " + kGridPath + "</td><td><code>sha256 " +
                  sha256_hex(read_text(kGridPath)) + "</code>") != std::string::npos);
  CHECK(page.find("<tr><td>cost profile i7-12700KF</td><td><code>sha256 ") != std::string::npos);
  // The same bytes at any --jobs (the command line aside).
  page_ok({"sweep", kGridPath, "--jobs", "2", "--quiet", "--output", d.file("out2.jsonl"), "--html",
      d.file("page2.html"), "--plot", d.file("page2.svg")});
  CHECK(read_text(d.file("page2.svg")) == read_text(svg));
  const auto drop_command = [](std::string s) {
    const size_t a = s.find("<tr><td>command</td>");
    return s.erase(a, s.find("</tr>", a) - a);
  };
  CHECK(drop_command(read_text(d.file("page2.html"))) == drop_command(page));
  // The change is against the first policy at the same point.
  std::vector<nlohmann::json> recs;
  std::istringstream in(read_text(d.file("out.jsonl")));
  for (std::string line; std::getline(in, line);) recs.push_back(nlohmann::json::parse(line));
  auto ns = [&](const std::string& policy) {
    for (const auto& j : recs)
      if (j["kernel"] == "v7.1" && j["policy"] == policy && j["grid"]["slots"] == "4096" &&
          j["grid"]["installs"] == "4096" && j["knobs"]["prefill_max"] == "1024")
        return j["ns_per_op"].get<double>();
    return -1.0;
  };
  const double want = 100 * (ns("node-slab+prefill-lazy") / ns("unpatched") - 1);
  bool seen = false;
  for (const PlotChart& c : sweep_charts(recs, ""))
    if (c.title.rfind("Change", 0) == 0 && c.subtitle == "installs=4096, prefill_max=1024")
      for (const PlotSeries& s : c.series)
        if (s.name == "v7.1 node-slab+prefill-lazy")
          for (const auto& [x, y] : s.points)
            if (x == 4096) {
              CHECK(y == Approx(want).epsilon(1e-12));
              seen = true;
            }
  CHECK(seen);
}

TEST_CASE("plots: no text of a chart is clipped, laid out in headless Chromium", "[plot]") {
  Dir d;
  const std::string html = d.file("page.html");
  page_ok({"sweep", kGridPath, "--quiet", "--output", d.file("out.jsonl"), "--html", html});
  int texts = 0;
  CHECK(clipped_texts(d, read_text(html), &texts) == "");
  CHECK(texts > 14 * 20);
  // Wide names (capitals and signs), many of them: the legend grows.
  PlotChart c{"Wide", "x", "y", true, {}, "", false};
  for (int i = 0; i < 61; ++i)
    c.series.push_back({std::string(i % 2 ? 28 : 20, i % 3 ? 'W' : 'm') + "+=%" +
                            std::to_string(i),
                        {{1.0 * i, 2.0}, {2.0 * i + 1, 3.0}}});
  const std::string wide = html_page("wide", {{"command", "simcache"}}, {c}, "");
  CHECK(clipped_texts(d, wide, &texts) == "");
  CHECK(texts > 61);
}

TEST_CASE("plots: no two series alike past 10 policies, 6 kernels or 60 series", "[plot]") {
  const nlohmann::json base = nlohmann::json::parse(
      "{\"accounted_bytes\":53248,\"cost_profile\":\"i7-12700KF\",\"grid\":{},\"kasan\":0,"
      "\"knobs\":{},\"label\":\"sparse-fill\",\"machine\":\"i7-12700KF\","
      "\"metrics\":{\"bytes_retained\":256},\"op_unit\":\"install\",\"params\":{},"
      "\"resolved\":\"\",\"scenario\":\"sparse-fill\",\"seed\":1,\"status\":\"ok\","
      "\"timed_ops\":64,\"unaccounted_bytes\":131072,\"workload\":0}");
  // kernels x policies: 2 x 11 (colour and marker by place in that order),
  // 7 x 10 (70 series: two parts of at most 60, by place in the chart).
  for (const auto& [kernels, policies, charts] :
       std::vector<std::tuple<int, int, size_t>>{{2, 11, 4}, {7, 10, 8}}) {
    std::vector<nlohmann::json> recs;
    uint64_t point = 0;
    for (int k = 0; k < kernels; ++k)
      for (int slots : {256, 1024})
        for (int p = 0; p < policies; ++p) {
          nlohmann::json j = base;
          j["kernel"] = "k" + std::to_string(k);
          j["policy"] = "p" + std::to_string(p);
          j["grid"]["slots"] = std::to_string(slots);
          j["params"]["slots"] = slots;
          j["ns_per_op"] = 100.0 + p + k + slots / 256;
          j["point"] = point++;
          recs.push_back(j);
        }
    INFO(kernels << " kernels x " << policies << " policies");
    const std::vector<PlotChart> pcs = sweep_charts(recs, "");
    const std::vector<Chart> cs = charts_of(html_page("t", {}, pcs, ""));
    REQUIRE(cs.size() == charts);
    size_t series = 0;
    for (const Chart& c : cs) {
      INFO(c.title);
      CHECK(c.names.size() <= plot_max_series());
      CHECK(std::set(c.looks.begin(), c.looks.end()).size() == c.looks.size());
      if (c.title.rfind("Time", 0) == 0) series += c.names.size();
    }
    CHECK(series == static_cast<size_t>(kernels * policies));
  }
}
