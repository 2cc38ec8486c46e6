// The commands of simcache and their flags: the one place each command
// declares what it takes. CLI11 parses; errors are one line and status 2
// (cli_fail), never CLI11's multi-line help and exit codes. A new command
// is a table of flags, an entry in kCommands and a run function.
#include <CLI/CLI.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "sim/cli/cli.h"
#include "sim/run/build_info.h"

namespace simcache::sim {

struct Command {
  std::string_view name;   // "" = the report run (no subcommand)
  std::string_view alias;  // another spelling, or ""
  std::string_view summary;
  std::string_view positional;  // "" none; "NAME" exactly one; "NAME..." one or more
  std::string_view positional_help;
  std::span<const Flag> flags;
  CliOutcome (*run)(const ParsedFlags&, const Args&);
};

namespace {

using T = Takes;

constexpr Flag kReportFlags[] = {
    {"scenario", T::value, "scenario or preset to run (--list names them)", "NAME"},
    {"set", T::values, "scenario parameter key=value (repeatable); policy.KNOB=V sets a knob",
     "K=V"},
    {"policy", T::value,
     "policy columns, comma-separated; each may combine with + and take knobs: "
     "prefill(max=256)",
     "P[,P]..."},
    {"kernel", T::value,
     "kernel profile, or several comma-separated to set them side by side (--list names them)",
     "K[,K]..."},
    {"machine", T::value,
     "machine: the defaults of cpus, nodes, cpu, kworker_cpu, cgroup and the idle table "
     "(--list names them; default i7-12700KF)",
     "M"},
    {"seed", T::value, "seed of every random choice (--fail draws, random_kmalloc_seed)", "N"},
    {"max-work", T::value,
     "work budget: operations the run may ask for, all columns together (default 1000000000)",
     "N"},
    {"format", T::value, "table, json or csv", "FMT"},
    {"output", T::value, "write the report to FILE instead of stdout (atomically)", "FILE", Names::out_file},
    {"jobs", T::value, "worker threads, 1..256 (output does not depend on it)", "N"},
    {"counts", T::nothing, "table: each workload's count and time block, and the full run record"},
    {"phases", T::nothing, "table: each phase's model time (lifecycle: registration, removal, fill)"},
    {"per-cache", T::nothing, "table: new and discarded slabs of every cache per round"},
    {"latency", T::nothing,
     "table: model-time latency percentiles where tasks contend, with their samples; lock waits"},
    {"seeds", T::value,
     "latency: pool N seeds from --seed, percentile intervals over them too (1, or 5..64; "
     "needs a cost profile)",
     "N"},
    {"until-separated", T::nothing,
     "double the measured rounds until the policies' p99.9 latency intervals separate or stop "
     "narrowing, within --max-work (implies --latency; needs a cost profile)"},
    {"perf-stat", T::nothing,
     "table: each column's counters as perf stat prints them, with a ratio per operation"},
    {"all", T::nothing,
     "table: every detail view (--counts --phases --per-cache --latency --explain --perf-stat)"},
    {"all-counters", T::nothing, "table: every non-zero counter (implies --counts)"},
    {"profile", T::value, "cost profile: a name in data/profiles, a .toml file, or none",
     "P"},
    {"measurements", T::value, "measured rows shown beside the model (TSV), or none", "FILE"},
    {"mapping", T::value, "mapping of measured rows to simulations (TOML)", "FILE"},
    {"explain", T::nothing, "break each policy's time per op into its parameters"},
    {"full", T::nothing,
     "simulate in full: every measured round, and every event priced on the machine's clock as "
     "it happens, also where the output needs neither (by default a one-task table run is "
     "priced after the fact and computes the rounds of a steady state; the output is the same, "
     "only slower)"},
    {"fail", T::values,
     "inject allocation failures at POINT (page_alloc, slab, bulk_short, bulk_zero, kvmalloc, "
     "memcg_charge): POINT=PROBABILITY (drawn from --seed) or POINT=nth:N (repeatable)",
     "SPEC"},
    {"background-trace", T::value,
     "replay this kmem trace's allocs and frees as the background users (rt-arm-loop, "
     "arm-fail; docs/engine.md)",
     "FILE"},
    {"allow-failures", T::nothing, "exit 0 even if operations failed (implied by --fail)"},
    {"cache", T::value, "per-cache stats (table, JSON, CSV) of this cache only (implies --per-cache)", "NAME"},
    {"hist", T::nothing, "table: bpftrace-style log2 histograms of batch sizes and per-round counts"},
    {"latency-hist", T::nothing,
     "table: bpftrace-style log2 histograms of each operation's latency (implies --latency)"},
    {"no-sites", T::nothing,
     "no call-site scopes (JSON sites, --explain sites and KASAN 'in' empty; faster)"},
    {"slabinfo", T::value, "write /proc/slabinfo 2.1 of the end of the run to FILE (- : stdout)",
     "FILE", Names::out_file},
    {"slabinfo-at", T::value, "with --slabinfo: the state at a snapshot (registration, fill, ...)",
     "SNAPSHOT"},
    {"sysfs", T::value, "write a /sys/kernel/slab tree (stats, alias links) into new DIR", "DIR", Names::out_dir},
    {"slabinfo-report", T::value, "table: tools/mm/slabinfo -r report of CACHE", "CACHE"},
    {"list", T::nothing, "list scenarios, presets, policies, knobs and kernel profiles"},
    {"config", T::value, "read flags from a TOML run configuration (docs/knobs.md)", "FILE"},
    {"dump-config", T::nothing, "print the resolved configuration as TOML and exit"},
    {"verbose", T::nothing, "log what is resolved and run (stderr)"},
    {"quiet", T::nothing, "only errors on stderr"},
};

constexpr Flag kSweepFlags[] = {
    {"jobs", T::value, "worker threads, 1..256 (default: every core; output does not depend on it)",
     "N"},
    {"shard", T::value, "run the points with index % N == i", "i/N"},
    {"max-points", T::value, "the work budget: points one run may take (default 100000)", "N"},
    {"output", T::value, "write the JSON lines to FILE instead of stdout", "FILE", Names::out_file},
    {"profile", T::value, "cost profile for ns per operation (default: the grid's, or the default)",
     "P"},
    {"plot", T::value, "draw the trade-off charts into an SVG file", "FILE.svg", Names::out_file},
    {"html", T::value, "write an HTML report embedding the charts", "FILE.html", Names::out_file},
    {"plot-x", T::value, "the parameter of the time-against-size chart", "PARAM"},
    {"verbose", T::nothing, "log the grid and the points"},
    {"quiet", T::nothing, "only errors on stderr"},
};

constexpr Flag kMergeFlags[] = {
    {"format", T::value, "json (the sweep's lines), csv or table", "FMT"},
    {"output", T::value, "write to FILE instead of stdout", "FILE", Names::out_file},
    {"plot", T::value, "draw the trade-off charts into an SVG file", "FILE.svg", Names::out_file},
    {"html", T::value, "write an HTML report embedding the charts", "FILE.html", Names::out_file},
    {"plot-x", T::value, "the parameter of the time-against-size chart", "PARAM"},
};

constexpr Flag kCalibrateFlags[] = {
    {"measurements", T::value,
     "measured rows (TSV with the columns of calibration.tsv), required; FILE,FILE... pools "
     "sittings (an id an earlier file used gets @K, K its file's place in the list)",
     "FILE[,FILE]..."},
    {"out", T::value, "write the fitted profile here (atomically)", "FILE", Names::out_file},
    {"name", T::value, "profile name (default: the --out file's stem, else 'calibrated')", "NAME"},
    {"mapping", T::value, "row -> simulation rules (default data/profiles/mapping.toml)", "FILE"},
    {"jobs", T::value, "worker threads, 1..256 (results do not depend on it)", "N"},
    {"max-work", T::value,
     "work budget: operations x rounds one row may ask for (default 100000000)", "N"},
    {"progress", T::nothing, "rows simulated on stderr, also when it is not a terminal"},
    {"force", T::nothing, "write the profile even when the fit is not credible (still exit 3)"},
    {"statistic", T::value,
     "which figure of each row to fit: mean (the value column, the default), or the median or "
     "fastest round its note gives (the kit's rows; on a loaded or virtual machine the mean is "
     "mostly preemption)",
     "mean|median|fastest"},
};

constexpr Flag kValidateFlags[] = {
    {"measurements", T::value,
     "measured rows (TSV with the columns of calibration.tsv), required; FILE,FILE... pools "
     "sittings (an id an earlier file used gets @K, K its file's place in the list)",
     "FILE[,FILE]..."},
    {"profile", T::value, "cost profile: a name in data/profiles or a .toml file", "P"},
    {"mapping", T::value, "row -> simulation rules (default data/profiles/mapping.toml)", "FILE"},
    {"skip-unmapped", T::nothing, "report rows no rule maps instead of failing"},
    {"statistic", T::value,
     "which figure of each row to compare: mean (the value column, the default), or the median or "
     "fastest round its note gives (the kit's rows; on a loaded or virtual machine the mean is "
     "mostly preemption)",
     "mean|median|fastest"},
    {"leave-out", T::value,
     "out of sample: refit without each group (or workload shape) in turn and validate it "
     "(docs/validation.md); no --profile",
     "group|shape"},
    {"fit-on", T::value,
     "fit a profile to these rows (a kit sitting's calibration suite) with today's fitter and "
     "with the one before the speed factors, and validate --measurements against both "
     "(docs/validation.md); no --profile",
     "FILE[,FILE]..."},
    {"jobs", T::value, "worker threads, 1..256 (results do not depend on it)", "N"},
    {"max-work", T::value,
     "work budget: operations x rounds one row may ask for (default 100000000)", "N"},
    {"progress", T::nothing, "rows simulated on stderr, also when it is not a terminal"},
};

constexpr Flag kGeometryFlags[] = {
    {"sysfs", T::value, "the slab sysfs tree (default /sys/kernel/slab)", "DIR"},
    {"cpus", T::value, "present CPUs the model assumes (default: this machine's)", "N"},
    {"kernel", T::value, "kernel profile (default: the nearest to uname -r)", "K"},
    {"verbose", T::nothing, "one line per compared cache, not only mismatches"},
};

// run-ops and replay: the report flags that apply to a custom workload.
#define SIMCACHE_CUSTOM_FLAGS                                                                  \
  {"policy", T::value, "policy columns, comma-separated; each may combine with +", "P[,P]..."}, \
      {"kernel", T::value, "kernel profile", "K"},                                             \
      {"machine", T::value, "machine whose values are the machine parameters' defaults", "M"}, \
      {"set", T::values, "machine parameter key=value (cpus, nodes, ...; repeatable)", "K=V"}, \
      {"seed", T::value, "seed of every random choice", "N"},                                  \
      {"format", T::value, "table, json or csv", "FMT"},                                       \
      {"output", T::value, "write the report to FILE instead of stdout (atomically)", "FILE", Names::out_file}, \
      {"jobs", T::value, "worker threads, 1..256 (output does not depend on it)", "N"},         \
      {"all-counters", T::nothing, "table: every non-zero counter (implies --counts)"},       \
      {"counts", T::nothing, "table: the count and time block, and the full run record"},     \
      {"phases", T::nothing, "table: each phase's model time"},                                \
      {"per-cache", T::nothing, "table: new and discarded slabs of every cache per round"},    \
      {"latency", T::nothing, "table: model-time latency where tasks contend; lock waits"},    \
      {"perf-stat", T::nothing, "table: the counters as perf stat prints them, per operation"}, \
      {"all", T::nothing, "table: every detail view"},                                         \
      {"profile", T::value, "cost profile: a name in data/profiles, a .toml file, or none",   \
       "P"},                                                                                   \
      {"explain", T::nothing, "break each policy's time per op into its parameters"},          \
      {"allow-failures", T::nothing, "exit 0 even if operations failed"},                      \
      {"emit-ops", T::value, "write the ops as an op file instead of reporting", "FILE", Names::out_file}

constexpr Flag kOpsFlags[] = {
    SIMCACHE_CUSTOM_FLAGS,
    {"emit-trace", T::value, "write the ops as a trace instead of reporting", "FILE", Names::out_file},
    {"max-ops", T::value,
     "work budget: operations the file may ask for, repeats and calls expanded (default "
     "100000000)",
     "N"},
};
constexpr Flag kReplayFlags[] = {
    SIMCACHE_CUSTOM_FLAGS,
    {"strict", T::nothing, "stop at the first malformed line instead of skipping it"},
    {"max-events", T::value, "work budget: lines the trace may have (default 1000000000)", "N"},
    {"two-pass", T::nothing,
     "check every line before any column runs (the output is the same; one pass is the default)"},
};
#undef SIMCACHE_CUSTOM_FLAGS

constexpr Command kCommands[] = {
    {"", "", "run a scenario and report counts and times (the default command)", "", "",
     kReportFlags, run_report_cli},
    {"sweep", "", "run a grid of scenarios, policies, knobs, kernels and seeds (docs/sweeps.md)",
     "GRID", "the grid file (TOML)", kSweepFlags, run_sweep_cli},
    {"merge", "", "join sweep shards into one table, CSV or JSON (docs/sweeps.md)", "FILE...",
     "the sweep's JSON-lines files", kMergeFlags, run_merge_cli},
    {"calibrate", "", "fit a cost profile to measured rows (docs/calibration.md)", "", "",
     kCalibrateFlags, run_calibrate_cli},
    {"validate", "", "compare predicted and measured times (docs/validation.md)", "", "",
     kValidateFlags, run_validate_cli},
    {"run-ops", "", "run an op file as the workload (docs/ops.md)", "FILE",
     "the op file", kOpsFlags, run_ops_cli},
    {"replay", "", "replay a kmem or io_uring trace as the workload (docs/ops.md)", "TRACE",
     "the trace (ftrace or bpftrace text)", kReplayFlags, run_replay_cli},
    {"geometry-check", "check-geometry",
     "compare the model's cache geometry with /sys/kernel/slab; exit 0 agree, 1 mismatch, 77 "
     "unreadable",
     "", "", kGeometryFlags, run_geometry_cli},
};

constexpr const char* kFooter =
    "Each command takes -h/--help. --list names the scenarios, presets, policies, knobs\n"
    "and kernels. Bad input: one line on stderr, exit status 2 (docs/cli.md).";

struct Bound {
  const Command* cmd;
  CLI::App* app;
  std::vector<std::pair<const Flag*, CLI::Option*>> opts;
  CLI::Option* pos = nullptr;
};

void declare(const Command& c, CLI::App* app, Bound* b) {
  b->cmd = &c;
  b->app = app;
  app->allow_extras(true);  // unknown flags and stray words: our own one-line errors
  for (const Flag& f : c.flags) {
    const std::string name = "--" + std::string(f.name), help(f.help);
    CLI::Option* o = f.takes == Takes::nothing
                         ? app->add_flag(name, help)
                         : app->add_option(name, help)
                               ->expected(1)
                               ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                               ->type_name(std::string(f.metavar));
    b->opts.emplace_back(&f, o);
  }
  if (c.positional.empty()) return;
  const bool many = c.positional.ends_with("...");
  const std::string name(c.positional.substr(0, c.positional.size() - (many ? 3 : 0)));
  const std::string help(c.positional_help);
  b->pos = app->add_option(name, help)
               ->expected(1, many ? CLI::detail::expected_max_vector_size : 1)
               ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
               ->allow_extra_args(many)
               ->type_name("");
}

// "--name=value" of a flag that takes none: CLI11 would read the value as
// a boolean; the old parser refused it, and so does this one.
bool check_no_value(const Args& args, size_t from, const Command& c, std::string* error) {
  for (size_t i = from; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--") break;
    if (!a.starts_with("--")) continue;
    const std::string_view body = a.substr(2);
    const size_t eq = body.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string name(body.substr(0, eq));
    bool none = name == "help" || (c.name.empty() && name == "version");
    for (const Flag& f : c.flags) none |= f.takes == Takes::nothing && f.name == name;
    if (none) return *error = fmt::format("flag '--{}' takes no value", name), false;
  }
  return true;
}

bool collect(const Bound& b, ParsedFlags* out, std::string* error) {
  const std::vector<std::string> rest = b.app->remaining();
  if (!rest.empty()) {
    const std::string& a = rest[0];
    const std::string help =
        b.cmd->name.empty() ? "--help" : fmt::format("simcache {} --help", b.cmd->name);
    if (a.rfind("--", 0) == 0 && a.size() > 2)
      return *error = fmt::format("unknown flag '--{}' (see {})", a.substr(2, a.find('=') - 2),
                                  help),
             false;
    return *error = fmt::format("unexpected argument '{}' (see {})", a, help), false;
  }
  for (const auto& [flag, o] : b.opts) {
    if (o->count() == 0) continue;
    const std::string name(flag->name);
    if (flag->takes == Takes::nothing) {
      out->v[name] = "";
      continue;
    }
    for (const std::string& value : o->results()) {
      if (name == "fail") {
        out->fails.push_back(value);
      } else if (name == "set") {
        const size_t e = value.find('=');
        if (e == std::string::npos || e == 0)
          return *error = fmt::format("--set '{}': expected key=value", value), false;
        out->sets.emplace_back(value.substr(0, e), value.substr(e + 1));
      } else {
        out->v[name] = value;  // the last one wins
      }
    }
  }
  if (b.pos) out->pos = b.pos->results();
  const std::string_view p = b.cmd->positional;
  if (!p.empty() && out->pos.empty())
    return *error = fmt::format("{} needs {} (see simcache {} --help)", b.cmd->name,
                                p.ends_with("...") ? "at least one file" : "a file", b.cmd->name),
           false;
  return true;
}

// CLI11's error for a flag at the end of the line: "--seed: 1 required ...".
std::string parse_error_text(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.rfind("--", 0) == 0)
    return fmt::format("flag '{}' needs a value", what.substr(0, what.find(':')));
  return what;
}

}  // namespace

Parsed parse_command(const Args& args, bool subcommands, const Command** cmd, ParsedFlags* out,
                     std::string* text) {
  CLI::App app{"simcache: a userspace simulator of the io_uring allocation caches and the "
               "SLUB allocator beneath them, with memcg charging and calibrated costs.",
               "simcache"};
  app.set_help_flag("-h,--help", "print this help and exit");
  app.get_formatter()->column_width(30);
  app.footer(kFooter);
  std::vector<Bound> bound(1);
  declare(kCommands[0], &app, &bound[0]);
  if (subcommands) {
    app.set_version_flag("--version",
                         fmt::format("simcache {} (git {})", SIMCACHE_VERSION, build_git_commit()),
                         "print the version and git commit and exit");
    app.require_subcommand(0, 1);
    for (const Command& c : std::span(kCommands).subspan(1)) {
      CLI::App* sub = app.add_subcommand(std::string(c.name), std::string(c.summary));
      if (!c.alias.empty()) sub->alias(std::string(c.alias));
      bound.emplace_back();
      // Only the command the first word names gets its flags: another
      // command's name later on is refused below whatever follows it, and
      // declaring every command's flags was most of a short run's
      // command-line parsing (docs/performance.md, "Start-up").
      if (!args.empty() && !c.name.empty() && (args[0] == c.name || args[0] == c.alias)) {
        declare(c, sub, &bound.back());
      } else {
        bound.back().cmd = &c;
        bound.back().app = sub;
        sub->allow_extras(true);
      }
    }
  }
  // A subcommand is the first word; anything after it is its own.
  const Bound* chosen = &bound[0];
  for (const Bound& b : bound)
    if (!args.empty() && !b.cmd->name.empty() && (args[0] == b.cmd->name || args[0] == b.cmd->alias))
      chosen = &b;
  *cmd = chosen->cmd;
  if (!check_no_value(args, chosen == &bound[0] ? 0 : 1, *chosen->cmd, text)) return Parsed::error;
  try {
    app.parse(Args(args.rbegin(), args.rend()));  // CLI11 takes them reversed
  } catch (const CLI::CallForHelp&) {
    *text = app.help();
    return Parsed::help;
  } catch (const CLI::CallForVersion& e) {
    *text = std::string(e.what()) + "\n";
    return Parsed::version;
  } catch (const CLI::ParseError& e) {
    *text = parse_error_text(e);
    return Parsed::error;
  }
  // A subcommand word after the report's flags ("--jobs 2 sweep") is a
  // stray argument: the subcommand must come first.
  for (const Bound& b : bound)
    if (&b != chosen && b.app != &app && b.app->parsed()) {
      *text = fmt::format("unexpected argument '{}' (a command comes first; see --help)",
                          b.cmd->name);
      return Parsed::error;
    }
  return collect(*chosen, out, text) ? Parsed::run : Parsed::error;
}

std::span<const Flag> report_flags() { return kReportFlags; }

bool check_output_flags(std::string_view command, const ParsedFlags& f, std::string* error) {
  for (const Command& c : kCommands) {
    if (c.name != command) continue;
    for (const Flag& fl : c.flags) {
      const auto it = f.v.find(std::string(fl.name));
      if (fl.names == Names::other || it == f.v.end()) continue;
      const std::string flag = "--" + std::string(fl.name);
      if (fl.names == Names::out_dir ? !check_output_dir(it->second, flag, error)
                                     : !check_output(it->second, flag, error))
        return false;
    }
  }
  return true;
}

// Every output path is checked before the command computes anything, and
// its outputs are staged in one batch: they reach their targets together
// when it ends with status 0 or 3 (failed operations are a result), and
// none of them does when it ends with an error.
CliOutcome run_command(const Command& cmd, const ParsedFlags& f, const Args& args) {
  std::string error;
  if (!check_output_flags(cmd.name, f, &error)) return cli_fail(error);
  OutputBatch batch;
  CliOutcome r = cmd.run(f, args);
  if (r.status == 0 || r.status == 3)
    if (!batch.commit(&error)) return cli_fail(error);
  return r;
}

}  // namespace simcache::sim
