// simcache sweep GRID.toml and simcache merge FILE...: see sim/sweep/sweep.h.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <thread>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sim/cli/cli.h"
#include "sim/cost/cost.h"
#include "sim/report/plot.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_plots.h"

namespace simcache::sim {
namespace {

constexpr const char* kSweepUsage =
    "usage: simcache sweep GRID.toml [--jobs N] [--shard i/N] [--output FILE]\n"
    "                [--profile NAME|FILE|none] [--plot FILE.svg] [--html FILE.html]\n"
    "                [--verbose|--quiet]\n";
constexpr const char* kMergeUsage =
    "usage: simcache merge FILE... [--format json|csv|table] [--output FILE]\n"
    "                [--plot FILE.svg] [--html FILE.html] [--plot-x PARAM]\n";

constexpr Flag kSweepFlags[] = {
    {"jobs", true, "worker threads (output does not depend on it)"},
    {"shard", true, "run the points with index % N == i"},
    {"output", true, "write the JSON lines to FILE instead of stdout"},
    {"profile", true, "cost profile for ns per operation (default: the grid's, or the default)"},
    {"plot", true, "draw the trade-off charts into an SVG file"},
    {"html", true, "write an HTML report embedding the charts"},
    {"plot-x", true, "the parameter of the time-against-size chart"},
    {"verbose", false, "log the grid and the points"},
    {"quiet", false, "only errors on stderr"},
    {"help", false, "this text"},
};
constexpr Flag kMergeFlags[] = {
    {"format", true, "json (the sweep's lines), csv or table"},
    {"output", true, "write to FILE instead of stdout"},
    {"plot", true, "draw the trade-off charts into an SVG file"},
    {"html", true, "write an HTML report embedding the charts"},
    {"plot-x", true, "the parameter of the time-against-size chart"},
    {"help", false, "this text"},
};

// Positional arguments up to the first flag.
size_t positionals(const std::vector<std::string>& args, std::vector<std::string>* out) {
  size_t i = 1;
  for (; i < args.size() && args[i].rfind("--", 0) != 0; ++i) out->push_back(args[i]);
  return i;
}

bool write_plots(const ParsedFlags& f, const std::vector<nlohmann::json>& recs,
                 const std::string& plot_x, const std::string& title, std::string* error) {
  if (!f.v.count("plot") && !f.v.count("html")) return true;
  const std::string x = f.v.count("plot-x") ? f.v.at("plot-x") : plot_x;
  const std::vector<PlotChart> charts = sweep_charts(recs, x);
  if (f.v.count("plot") && !write_file_atomic(f.v.at("plot"), svg_document(charts), error))
    return false;
  if (f.v.count("html") &&
      !write_file_atomic(f.v.at("html"), html_page(title, charts, records_table(recs)), error))
    return false;
  return true;
}

bool emit(const ParsedFlags& f, const std::string& text, CliOutcome* o, std::string* error) {
  if (f.v.count("output")) return write_file_atomic(f.v.at("output"), text, error);
  o->out = text;
  return true;
}

}  // namespace

CliOutcome run_sweep_cli(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  const size_t start = positionals(args, &pos);
  ParsedFlags f;
  std::string error;
  if (!parse_flags(args, start, kSweepFlags, kSweepUsage, &f, &error)) return cli_fail(error);
  if (f.v.count("help")) return {0, kSweepUsage, ""};
  if (pos.size() != 1) return cli_fail(fmt::format("sweep takes one grid file\n{}", kSweepUsage));
  setup_logging(f);
  SweepGrid grid;
  std::vector<SweepPoint> points;
  if (!load_grid(pos[0], &grid, &error)) return cli_fail(error);
  SweepOptions o;
  // Every host core by default; the output does not depend on it.
  o.jobs = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 256);
  if (!parse_jobs(f, &o.jobs, &error)) return cli_fail(error);
  if (f.v.count("shard") && !parse_shard(f.v["shard"], &o.shard, &o.shards, &error))
    return cli_fail(error);
  // --profile replaces the grid's profiles with one.
  if (f.v.count("profile")) grid.cost_profiles = {f.v["profile"]};
  if (!expand_grid(grid, &points, &error)) return cli_fail(error);
  std::map<std::string, CostModel> costs;
  for (const SweepPoint& p : points)
    if (!p.cost_profile.empty() && !costs.count(p.cost_profile)) {
      if (!resolve_profile(p.cost_profile, &costs[p.cost_profile], &error))
        return cli_fail(fmt::format("{}: profile: {}", pos[0], error));
      o.costs[p.cost_profile] = &costs[p.cost_profile];
    }
  o.progress = isatty(2) && !f.v.count("quiet");
  spdlog::debug("sweep {}: {} points, shard {}/{}, {} job(s)", pos[0], points.size(), o.shard,
                o.shards, o.jobs);
  std::vector<nlohmann::json> recs;
  if (!run_sweep(points, o, &recs, &error)) return cli_fail(error);
  size_t skipped = 0;
  for (const auto& r : recs) skipped += r.at("status") == "skipped";
  if (skipped) spdlog::info("sweep {}: {} point(s) skipped (see their reason)", pos[0], skipped);
  CliOutcome out;
  if (!write_plots(f, recs, grid.plot_x, "simcache sweep " + pos[0], &error) ||
      !emit(f, records_jsonl(recs), &out, &error))
    return cli_fail(error);
  return out;
}

CliOutcome run_merge_cli(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  const size_t start = positionals(args, &pos);
  ParsedFlags f;
  std::string error;
  if (!parse_flags(args, start, kMergeFlags, kMergeUsage, &f, &error)) return cli_fail(error);
  if (f.v.count("help")) return {0, kMergeUsage, ""};
  if (pos.empty()) return cli_fail(fmt::format("merge needs at least one file\n{}", kMergeUsage));
  const std::string format = f.v.count("format") ? f.v["format"] : "json";
  if (format != "json" && format != "csv" && format != "table")
    return cli_fail(fmt::format("--format '{}': expected json, csv or table", format));
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& p : pos) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return cli_fail(fmt::format("{}: cannot read", p));
    std::stringstream ss;
    ss << in.rdbuf();
    files.emplace_back(p, ss.str());
  }
  std::vector<nlohmann::json> recs;
  if (!merge_records(files, &recs, &error)) return cli_fail(error);
  const std::string text = format == "json"  ? records_jsonl(recs)
                           : format == "csv" ? records_csv(recs)
                                             : records_table(recs);
  CliOutcome out;
  if (!write_plots(f, recs, "", "simcache merge", &error) || !emit(f, text, &out, &error))
    return cli_fail(error);
  return out;
}

}  // namespace simcache::sim
