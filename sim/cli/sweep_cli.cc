// simcache sweep GRID.toml and simcache merge FILE...: see sim/sweep/sweep.h.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <thread>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sim/cli/cli.h"
#include "sim/io/input.h"
#include "sim/cost/cost.h"
#include "sim/report/plot.h"
#include "sim/report/record.h"
#include "sim/run/build_info.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_effects.h"
#include "sim/sweep/sweep_plots.h"

namespace simcache::sim {
namespace {

using Record = std::vector<std::pair<std::string, std::string>>;

// The page's run record: the command line, the build, then `inputs`.
Record page_record(const Args& args, const RunRecord& inputs) {
  Record r = {{"command", shell_command(args)},
              {"simcache", fmt::format("{} (git {})", SIMCACHE_VERSION, build_git_commit())}};
  for (const RunRecord::Input& in : inputs.inputs)
    r.emplace_back(in.role + " " + in.path,
                   in.sha256.empty() ? "not hashed: " + in.note : "sha256 " + in.sha256);
  return r;
}

bool write_plots(const ParsedFlags& f, const std::vector<nlohmann::json>& recs,
                 const std::string& plot_x, const std::string& title, const Record& record,
                 std::string* error) {
  if (!f.v.count("plot") && !f.v.count("html")) return true;
  const std::string x0 = f.v.count("plot-x") ? f.v.at("plot-x") : plot_x;
  const std::string x = x0.empty() ? default_plot_x(recs) : x0;
  // The effects between points and their intervals, priced with the
  // profiles the lines were priced with (checked by their SHA-256).
  std::map<std::string, CostModel> models;
  if (!load_record_profiles(recs, &models, error)) return false;
  std::map<std::string, const CostModel*> costs;
  for (const auto& [name, m] : models) costs[name] = &m;
  const std::vector<PointEffects> effects = sweep_effects(recs, x, costs);
  const std::vector<PlotChart> charts = sweep_charts(recs, x, &effects);
  if (f.v.count("plot") && !write_file_atomic(f.v.at("plot"), svg_document(charts), error))
    return false;
  if (f.v.count("html") &&
      !write_file_atomic(f.v.at("html"),
                         html_page(title, record, charts, records_table(recs, &effects, x)),
                         error))
    return false;
  return true;
}

bool emit(const ParsedFlags& f, const std::string& text, CliOutcome* o, std::string* error) {
  if (f.v.count("output")) return write_file_atomic(f.v.at("output"), text, error);
  o->out = text;
  return true;
}

}  // namespace

CliOutcome run_sweep_cli(const ParsedFlags& f, const Args& args) {
  const std::vector<std::string>& pos = f.pos;  // exactly one (commands.cc)
  std::string error;
  setup_logging(f);
  SweepGrid grid;
  std::vector<SweepPoint> points;
  if (!load_grid(pos[0], &grid, &error)) return cli_fail(error);
  SweepOptions o;
  // Every host core by default; the output does not depend on it.
  o.jobs = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 256);
  if (!parse_jobs(f, &o.jobs, &error)) return cli_fail(error);
  if (f.v.count("shard") && !parse_shard(f.v.at("shard"), &o.shard, &o.shards, &error))
    return cli_fail(error);
  // --profile replaces the grid's profiles with one.
  if (f.v.count("profile")) grid.cost_profiles = {f.v.at("profile")};
  uint64_t max_points = kDefaultMaxPoints;
  if (f.v.count("max-points")) {
    const std::string& v = f.v.at("max-points");
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), max_points);
    if (ec != std::errc() || end != v.data() + v.size() || max_points == 0)
      return cli_fail(fmt::format("--max-points '{}': expected a positive integer", v));
  }
  if (!expand_grid(grid, &points, &error, o.shard, o.shards, max_points)) return cli_fail(error);
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
  RunRecord inputs;
  record_input(&inputs, "grid", pos[0]);
  for (const auto& [name, cost] : o.costs) {
    if (!cost->path.empty()) record_input(&inputs, "cost profile", cost->path, name, cost->sha256);
    else inputs.inputs.push_back({"cost profile", name, "", "built in"});
  }
  // Each line's record: what reproduces it. Of the flags only --profile
  // changes a line (--jobs, --shard, the budget and the outputs do not),
  // so the command that reproduces a line is `simcache sweep GRID` with
  // that one: a sharded or threaded sweep merges into the bytes of a
  // plain one.
  std::vector<std::string> reproduce = {"sweep", pos[0]};
  if (auto p = f.v.find("profile"); p != f.v.end()) reproduce.insert(reproduce.end(), {"--profile", p->second});
  std::map<std::string, std::string> cost_sha;
  for (const RunRecord::Input& in : inputs.inputs)
    if (in.role == "cost profile") cost_sha[in.path] = in.sha256.empty() ? in.note : in.sha256;
  for (nlohmann::json& r : recs) {
    const std::string cp = r.at("cost_profile").get<std::string>();
    r["record"] = {{"reproduce", shell_command(reproduce)},
                   {"git_commit", build_git_commit()},
                   {"grid_sha256", inputs.inputs.at(0).sha256},
                   {"cost_profile_sha256", cost_sha.count(cp) ? cost_sha.at(cp) : ""}};
  }
  CliOutcome out;
  if (!write_plots(f, recs, grid.plot_x, "simcache sweep " + pos[0], page_record(args, inputs),
                   &error) ||
      !emit(f, records_jsonl(recs), &out, &error))
    return cli_fail(error);
  return out;
}

CliOutcome run_merge_cli(const ParsedFlags& f, const Args& args) {
  const std::vector<std::string>& pos = f.pos;  // one or more (commands.cc)
  std::string error;
  const std::string format = f.v.count("format") ? f.v.at("format") : "json";
  if (format != "json" && format != "csv" && format != "table")
    return cli_fail(fmt::format("--format '{}': expected json, csv or table", format));
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& p : pos) {
    std::string text;
    if (!read_input(p, "the sweep shard", &text, &error)) return cli_fail(error);
    files.emplace_back(p, std::move(text));
  }
  std::vector<nlohmann::json> recs;
  if (!merge_records(files, &recs, &error)) return cli_fail(error);
  const std::string text = format == "json"  ? records_jsonl(recs)
                           : format == "csv" ? records_csv(recs)
                                             : records_table(recs);
  RunRecord inputs;
  for (const auto& [name, text] : files) inputs.inputs.push_back({"shard", name, sha256_hex(text), ""});
  CliOutcome out;
  if (!write_plots(f, recs, "", "simcache merge", page_record(args, inputs), &error) || !emit(f, text, &out, &error))
    return cli_fail(error);
  return out;
}

}  // namespace simcache::sim
