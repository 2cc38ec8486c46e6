// Command-line front end shared by the simcache binary and the tests:
// parses arguments, runs, writes the report. Errors are one line naming
// the bad flag, value or name, and the exit status is 2.
//
//   simcache --scenario NAME ...          run and report (counts and times)
//   simcache calibrate --measurements F   fit a cost profile (calibrate_cli.cc)
//   simcache validate --measurements F    predicted vs measured (calibrate_cli.cc)
//   simcache run-ops FILE / replay TRACE  op files and traces (replay_cli.cc)
//   simcache sweep GRID / merge FILE...   sweeps (sweep_cli.cc)
//   simcache geometry-check               model geometry vs sysfs (geometry_cli.cc)
// commands.cc declares every command and its flags (CLI11).
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/io/output.h"
#include "sim/run/engine.h"

namespace simcache::sim {

struct RunRequest;  // sim/run/engine.h
class CostModel;

struct CliOutcome {
  int status = 0;
  std::string out;  // what goes to stdout (unless --output)
  std::string err;  // what goes to stderr
};

// argv without the program name.
CliOutcome run_cli(const std::vector<std::string>& args);
// The argument checks of a report run (flags, --set syntax, --fail,
// --seed, --jobs, --format) without reading files or running: the CLI
// fuzz target's entry point.
bool parse_report_args(const std::vector<std::string>& args, RunRequest* req, std::string* error);

// write_file_atomic(), OutputBatch: sim/io/output.h, the one way out.

// Shared by the subcommands. Each command declares its flags once, in
// commands.cc; CLI11 parses them into ParsedFlags.
enum class Takes { nothing, value, values };  // values: every occurrence is kept
// What a flag's value names: an output file or a new output directory is
// checked before the command runs (sim/io/output.h).
enum class Names { other, out_file, out_dir };
struct Flag {
  std::string_view name;  // without the leading "--"
  Takes takes;
  std::string_view help;
  std::string_view metavar = "V";
  Names names = Names::other;
};
struct ParsedFlags {
  std::map<std::string, std::string> v;                   // last value of each flag
  std::vector<std::pair<std::string, std::string>> sets;  // every --set key=value
  std::vector<std::string> fails;                         // every --fail value
  std::vector<std::string> pos;                           // positional arguments
  // Where a run configuration set a [set] key: "set.KEY" -> "FILE:LINE",
  // so a key the scenario lacks is reported there (check_config_sets()).
  std::map<std::string, std::string> origin;
};
// Every output flag of `command`'s table ("" is the report run) set in `f`
// (by the flag tables' Names) names a path that can take it; else one
// line naming the flag and the path.
bool check_output_flags(std::string_view command, const ParsedFlags& f, std::string* error);
// The report run's flags (commands.cc): a run configuration takes each of
// them but list, config and dump-config (config.cc).
std::span<const Flag> report_flags();
// --fail POINT=PROBABILITY or POINT=nth:N (cli.cc); `error` names the spec.
bool parse_fault(const std::string& spec, RunRequest::Fault* out, std::string* error);
// --max-work and --seeds values ("" error: fine). The command line and a
// run configuration (which names the file and line) check them alike.
std::string max_work_error(const std::string& text, uint64_t* out);
std::string seeds_error(const std::string& text, uint32_t* out);
// Exit status 2 and one line on stderr: control characters in `msg`
// (user strings included) are escaped, so it cannot span lines.
CliOutcome cli_fail(const std::string& msg);
// "simcache: warning: ..." as one line.
std::string cli_warning(const std::string& msg);
// "4095 operations failed (sparse-fill A: 4095 x -ENFILE)", or "" (exit
// status 3 unless --allow-failures; docs/reliability.md).
std::string failure_summary(const RunResult& r);
// A warning line naming the parameters of the table of record that `m`
// lacks (their events then cost nothing), or "".
std::string profile_warning(const CostModel& m);
// "--jobs" value (1..256), default 1.
bool parse_jobs(const ParsedFlags& f, int* jobs, std::string* error);

// outputs_cli.cc: the run record's CLI part, and the kernel-format
// outputs (--slabinfo, --slabinfo-at, --sysfs, --slabinfo-report, --hist)
// added to or written beside the report text.
struct RunResult;
class CostModel;
void fill_run_record(const std::vector<std::string>& args, const CostModel* cost, RunResult* r);
// The measured rows a report shows and where they came from (load_measured()).
struct MeasuredFiles {
  std::string file;  // the measurements' path, "" for none
  // SHA-256 of the measurements and of the mapping when known without
  // hashing (a shipped file's compiled-in copy); "": hash the file.
  std::string file_sha256, mapping_sha256;
};
// The report run's input files in the record, with their SHA-256: the
// measurements shown, the mapping that placed them, a background trace.
void record_report_inputs(const ParsedFlags& f, const MeasuredFiles& measured, RunResult* r);
bool kernel_outputs(const ParsedFlags& f, const RunResult& r, std::string* text,
                    std::string* error);
// The table's detail views from the flags (--counts, --phases,
// --per-cache, --latency, --explain, --all and what implies them).
struct ReportOptions;
void detail_views(const ParsedFlags& f, ReportOptions* ro);

// --policy's columns: split at commas outside parentheses, so
// "prefill(max=256,mode=lazy),unpatched" is two columns.
std::vector<std::string> split_policy_columns(const std::string& s);

// Run configurations (config.cc): a TOML file holding everything a command
// line can say. load_config() fills `out` as parse_flags() would; errors
// name the file, the line and the field. overlay_flags() puts the command
// line's flags over it (the command line wins; --set keys replace the
// file's of the same name). dump_config() writes the resolved request back
// as TOML (toml++'s formatter); loading that gives the same request.
bool load_config(const std::string& path, ParsedFlags* out, std::string* error);
void overlay_flags(const ParsedFlags& cli, ParsedFlags* base);
// The [set] keys a configuration gave, checked against the scenario of the
// merged flags (which the command line may name): an unknown key or a value
// out of range is "FILE:LINE: set.KEY: why".
bool check_config_sets(const ParsedFlags& f, std::string* error);
bool dump_config(const ParsedFlags& f, const RunRequest& req, std::string* out,
                 std::string* error);

// Logging (spdlog, stderr): --verbose shows what is resolved and run,
// --quiet only errors; progress lines only when stderr is a terminal.
void setup_logging(const ParsedFlags& f);
void log_request(const RunRequest& req);

// Subcommands: what each runs once its flags are parsed (commands.cc
// declares them). `args` is the command line as given, for the run record.
using Args = std::vector<std::string>;
CliOutcome run_report_cli(const ParsedFlags& f, const Args& args);     // cli.cc
CliOutcome run_sweep_cli(const ParsedFlags& f, const Args& args);      // sweep_cli.cc
CliOutcome run_merge_cli(const ParsedFlags& f, const Args& args);      // sweep_cli.cc
CliOutcome run_calibrate_cli(const ParsedFlags& f, const Args& args);  // calibrate_cli.cc
CliOutcome run_validate_cli(const ParsedFlags& f, const Args& args);   // calibrate_cli.cc
CliOutcome run_geometry_cli(const ParsedFlags& f, const Args& args);   // geometry_cli.cc
CliOutcome run_ops_cli(const ParsedFlags& f, const Args& args);        // replay_cli.cc
CliOutcome run_replay_cli(const ParsedFlags& f, const Args& args);     // replay_cli.cc

// commands.cc: the table of commands and their flags, parsed with CLI11.
// kind: what parse_command() found. `cmd` names the command ("" for the
// report run); help and version put their text in `*text`.
enum class Parsed { run, help, version, error };
struct Command;
Parsed parse_command(const Args& args, bool subcommands, const Command** cmd, ParsedFlags* out,
                     std::string* text);
// Runs the command parse_command() found.
CliOutcome run_command(const Command& cmd, const ParsedFlags& f, const Args& args);

}  // namespace simcache::sim
