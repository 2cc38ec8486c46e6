// simcache run-ops FILE and simcache replay TRACE: an op file or a trace
// as the workload, reported like a scenario (sim/replay/replay.h).
#include <algorithm>

#include <fmt/format.h>

#include "sim/cli/cli.h"
#include "sim/cost/cost.h"
#include "sim/cost/toml_reader.h"
#include "sim/replay/replay.h"
#include "sim/replay/text.h"
#include "sim/report/record.h"
#include "sim/report/report.h"

namespace simcache::sim {
namespace {

bool request(const ParsedFlags& f, RunRequest* req, std::string* error) {
  auto v = f.v;
  req->sets = f.sets;
  if (v.count("kernel")) req->kernel = v["kernel"];
  if (v.count("policy")) {
    for (const std::string& one : split_policy_columns(v["policy"])) {
      if (one.empty()) return *error = "--policy: empty policy name in the list", false;
      req->policies.push_back(one);
    }
    if (req->policies.size() > 8) return *error = "--policy: at most 8 columns", false;
  }
  if (v.count("seed")) {
    try {
      req->seed = std::stoull(v["seed"]);
    } catch (...) {
      return *error = fmt::format("--seed '{}': not a non-negative integer", v["seed"]), false;
    }
  }
  return parse_jobs(f, &req->jobs, error);
}

// --max-ops / --max-events: a work budget, 1..2^63-1.
bool parse_budget(const ParsedFlags& f, const char* flag, uint64_t* out, std::string* error) {
  auto it = f.v.find(flag);
  if (it == f.v.end()) return true;
  int64_t n = 0;
  if (!parse_i64(it->second, &n) || n < 1)
    return *error = fmt::format("--{} '{}': expected an integer in [1, {}]", flag, it->second,
                                INT64_MAX),
           false;
  *out = static_cast<uint64_t>(n);
  return true;
}

// Counts by call site (replay's site:FN:* metrics), busiest first, per column.
std::string site_table(const RunResult& r) {
  struct Row {
    std::string fn;
    std::vector<int64_t> allocs, frees, bytes;
  };
  std::vector<Row> rows;
  const auto& cols = r.workloads.at(0).policies;
  for (size_t c = 0; c < cols.size(); ++c) {
    for (const auto& [k, v] : cols[c].metrics) {
      if (k.rfind("site:", 0) != 0) continue;
      const size_t colon = k.rfind(':');
      const std::string fn = k.substr(5, colon - 5), what = k.substr(colon + 1);
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& x) { return x.fn == fn; });
      if (it == rows.end()) {
        rows.push_back({fn, std::vector<int64_t>(cols.size()), std::vector<int64_t>(cols.size()),
                        std::vector<int64_t>(cols.size())});
        it = rows.end() - 1;
      }
      (what == "allocs" ? it->allocs : what == "frees" ? it->frees : it->bytes)[c] = v;
    }
  }
  if (rows.empty()) return "";
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.allocs[0] + a.frees[0] > b.allocs[0] + b.frees[0];
  });
  std::string out = "\nby call site (column A; the same in every column): allocs, frees, bytes requested\n";
  const size_t n = std::min<size_t>(rows.size(), 20);
  for (size_t i = 0; i < n; ++i)
    out += fmt::format("  {:<40} {:>10} {:>10} {:>12}\n", rows[i].fn.substr(0, 40),
                       rows[i].allocs[0], rows[i].frees[0], rows[i].bytes[0]);
  if (rows.size() > n) out += fmt::format("  ... {} more call sites in --format json|csv\n", rows.size() - n);
  return out;
}

// Whether the output shows the run record (the inputs and their hashes):
// JSON, CSV and a table's detail views do; the summary table does not.
bool shows_record(const ParsedFlags& f) {
  ReportOptions shown;
  detail_views(f, &shown);
  return (f.v.count("format") && f.v.at("format") != "table") || table_shows_record(shown);
}
constexpr std::string_view kUnhashed = "not hashed: the report does not show its inputs";

// What a report says of its input, known once the run has read it: the
// workload's note and the input's record entry. False: exit 2 with *error.
using Describe = std::function<bool(std::string* note, RunRecord::Input* input, std::string* error)>;

CliOutcome report(const ParsedFlags& f, const Args& args, const RunRequest& req,
                  const CustomWorkload& w, const Describe& describe) {
  auto v = f.v;
  const std::string format = v.count("format") ? v["format"] : "table";
  if (format != "table" && format != "json" && format != "csv")
    return cli_fail(fmt::format("--format '{}': expected table, json or csv", format));
  std::string error, warning;
  CostModel cost;
  bool have_cost = false;
  const std::string spec = v.count("profile") ? v["profile"] : std::string(kDefaultCostProfile);
  if (spec != "none") {
    if (resolve_profile(spec, &cost, &error)) have_cost = true;
    else if (v.count("profile")) return cli_fail(error);
    else warning = fmt::format("simcache: warning: {}; times omitted\n", error);
  }
  if (v.count("explain") && !have_cost)
    return cli_fail("--explain needs a cost profile (it splits the time per operation)");
  RunResult result;
  if (!run_custom(req, w, &result, &error)) return cli_fail(error);
  std::string note;
  RunRecord::Input input;
  if (!describe(&note, &input, &error)) return cli_fail(error);
  if (!note.empty()) result.workloads[0].note = note;
  fill_run_record(args, have_cost ? &cost : nullptr, &result);
  result.record.inputs.insert(result.record.inputs.begin(), std::move(input));
  ReportOptions ro;
  detail_views(f, &ro);
  if (have_cost) ro.cost = &cost;
  std::string text = format == "json"  ? format_json(result, ro)
                     : format == "csv" ? format_csv(result, ro)
                                       : format_table(result, ro);
  if (!text.empty() && text.back() != '\n') text += '\n';  // the table ends on the note
  if (format == "table") text += site_table(result);
  // As for a scenario: operations that failed (an allocation that returned
  // NULL, the io_uring model's -ENOMEM/-ENFILE/-EMFILE) mean exit 3.
  int status = 0;
  if (const std::string failed = failure_summary(result);
      !failed.empty() && !v.count("allow-failures")) {
    status = 3;
    warning += "simcache: " +
               escape_line(failed + " (the report marks them; --allow-failures accepts this)", 400) +
               "\n";
  }
  if (v.count("output")) {
    if (!write_file_atomic(v["output"], text, &error)) return cli_fail(error);
    return {status, "", warning};
  }
  return {status, text, warning};
}

}  // namespace

CliOutcome run_ops_cli(const ParsedFlags& f, const Args& args) {
  const std::string& file = f.pos.at(0);  // exactly one (commands.cc)
  std::string error;
  RunRequest req;
  if (!request(f, &req, &error)) return cli_fail(error);
  OpLimits limits;
  if (!parse_budget(f, "max-ops", &limits.max_ops, &error)) return cli_fail(error);
  const ScopedOpLimits scoped(limits);  // the op file is parsed below, on this thread
  // One output instead of the report: both at once would write one and
  // silently drop the other.
  if (f.v.count("emit-trace") && f.v.count("emit-ops"))
    return cli_fail("--emit-ops and --emit-trace: each replaces the report; give one");
  for (const char* e : {"emit-trace", "emit-ops"})
    if (f.v.count(e)) {
      if (!emit_ops_run(file, f.v.at(e), std::string(e) == "emit-trace", req, &error))
        return cli_fail(error);
      return {0, "", ""};
    }
  // Hashed before the run reads it (a pipe is read once: not hashed), and
  // only when the output shows the run record (shows_record()): the hash
  // was 15 % of a 1M-line file's instructions.
  RunRecord hashed;
  if (shows_record(f)) record_input(&hashed, "op file", file);
  else hashed.inputs.push_back({"op file", file, "", std::string(kUnhashed)});
  CustomWorkload w;
  if (!ops_workload(file, &w, &error)) return cli_fail(error);
  return report(f, args, req, w, [&](std::string*, RunRecord::Input* input, std::string*) {
    *input = hashed.inputs.at(0);
    return true;
  });
}

namespace {

std::string trace_note(const TraceSummary& s) {
  std::string note = fmt::format("trace: {} lines, {} events, {} skipped", s.lines, s.events,
                                 s.skipped);
  if (s.skipped) note += fmt::format(" (first: {})", s.first_skipped);
  note += s.io_uring ? "; io_uring events drive the io_uring model"
                     : "; kmem events through kmalloc routing and SLUB";
  return note;
}

CliOutcome with_skipped(CliOutcome out, const TraceSummary& s) {
  if (out.status != 2 && s.skipped)
    out.err += fmt::format("simcache: replay: {} malformed line(s) skipped; first: {}\n",
                           s.skipped, s.first_skipped);
  return out;
}

}  // namespace

CliOutcome run_replay_cli(const ParsedFlags& f, const Args& args) {
  const std::string& file = f.pos.at(0);  // exactly one (commands.cc)
  std::string error;
  RunRequest req;
  if (!request(f, &req, &error)) return cli_fail(error);
  ReplayOptions o;
  o.strict = f.v.count("strict") > 0;
  if (!parse_budget(f, "max-events", &o.max_events, &error)) return cli_fail(error);
  bool cpus_set = false;
  for (const auto& [k, v] : req.sets) cpus_set |= k == "cpus";
  // The trace's SHA-256 goes into the run record: hashing 740 MB costs as
  // much CPU as replaying a third of it.
  const bool hash = shows_record(f);
  const std::string unhashed(kUnhashed);
  // One pass where the trace allows it (SinglePass): a regular file or a
  // trace.dat's text. Any failure, or a trace that breaks the pass's
  // guess, is then done again as two passes, so errors and their order
  // are the two-pass ones.
  bool single = !f.v.count("two-pass") && !f.v.count("emit-ops") && !InputSource::is_pipe_path(file);
  for (bool assume_io_uring = false; single; assume_io_uring = true) {
    auto sp = std::make_shared<SinglePass>();
    if (!open_trace(file, o, &sp->opened, &error)) return cli_fail(error);
    sp->options = o;
    sp->cpus_set = cpus_set;
    sp->assume_io_uring = assume_io_uring;
    auto sha = std::make_shared<Sha256>();
    if (hash && !sp->opened.dat) sp->tap = [sha](std::string_view b) { sha->add(b); };
    CliOutcome out = report(f, args, req, trace_workload_single(sp),
                            [&](std::string* note, RunRecord::Input* input, std::string* err) {
                              if (!sp->done) return *err = "replay: no column finished", false;
                              *note = trace_note(sp->result);
                              // A trace.dat's record is its own bytes, not its text's.
                              if (!hash) return *input = {"trace", file, "", unhashed}, true;
                              *input = {"trace", file,
                                        sp->opened.dat ? sha256_source(*sp->opened.src, err)
                                                       : sha->hex(),
                                        ""};
                              return !input->sha256.empty();
                            });
    if (out.status != 2) return with_skipped(std::move(out), sp->result);
    single = sp->retry_io_uring && !assume_io_uring;
  }
  TraceSummary s;
  if (!scan_trace(file, o, &s, &error)) return cli_fail(error);
  if (!cpus_set && s.max_cpu >= kReplayMinCpus)
    req.sets.emplace_back("cpus", std::to_string(s.max_cpu + 1));
  if (f.v.count("emit-ops")) {
    if (!emit_trace_ops(s, f.v.at("emit-ops"), req, &error)) return cli_fail(error);
    return {0, "", ""};
  }
  const std::string note = trace_note(s);
  // The trace as scanned (a pipe's spool): its SHA-256 is that of its bytes.
  RunRecord::Input input{"trace", file, "", unhashed};
  if (hash && (input = {"trace", file, sha256_source(*s.src, &error), ""}).sha256.empty())
    return cli_fail(error);
  return with_skipped(report(f, args, req, trace_workload(s),
                             [&](std::string* n, RunRecord::Input* in, std::string*) {
                               *n = note, *in = input;
                               return true;
                             }),
                      s);
}

}  // namespace simcache::sim
