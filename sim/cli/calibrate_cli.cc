// simcache calibrate and simcache validate: reading the inputs shared by
// both, then the command itself.
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include "sim/calibrate/calibrate.h"
#include "sim/cli/cli.h"
#include <fmt/format.h>
#include "sim/calibrate/reference.h"
#include "sim/calibrate/validate.h"
#include "sim/cost/toml_reader.h"
#include "sim/report/record.h"

namespace simcache::sim {
namespace {

struct Inputs {
  int jobs = 1;
  Mapping map;
  std::vector<MappedRow> rows;
  std::vector<std::string> skipped;
  std::vector<PerOpCounts> per_op;
  std::vector<RowFailure> failed;
  std::string measurements;
  RowStatistic statistic = RowStatistic::mean;  // --statistic
  ReferenceScaling reference;                   // rows scaled by the program run beside them
  // "" for the mean; else the line the report opens with.
  std::string statistic_line() const {
    if (statistic == RowStatistic::mean) return "";
    return fmt::format("rows read as their {} round (--statistic {}): the figure in each row's "
                       "note, not its value column (the mean)\n",
                       row_statistic_name(statistic), row_statistic_name(statistic));
  }
};

// --max-work N (1..2^64-1) and the progress line.
bool simulate_options(const ParsedFlags& f, const char* command, SimulateOptions* o,
                      std::string* error) {
  if (auto it = f.v.find("max-work"); it != f.v.end()) {
    const std::string& v = it->second;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), o->max_work);
    if (ec != std::errc() || end != v.data() + v.size() || o->max_work == 0)
      return *error = fmt::format("--max-work '{}': expected a positive integer", v), false;
  }
  // On a terminal once the work has taken 2 s; elsewhere only with
  // --progress (then from the first row). stdout never changes.
  const bool asked = f.v.count("progress") > 0, tty = isatty(2) != 0;
  if (!asked && !tty) return true;
  const auto start = std::chrono::steady_clock::now();
  o->progress = [=, shown = false](size_t done, size_t total) mutable {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!asked && s < 2 && !shown) return;
    shown = true;
    std::fprintf(stderr, "%ssimcache: %s: %zu/%zu rows simulated (%.1f s)%s", tty ? "\r" : "",
                 command, done, total, s, tty && done < total ? "" : "\n");
    std::fflush(stderr);
  };
  return true;
}

// --measurements FILE[,FILE]...: each file one sitting of the kit (or any
// rows), pooled; a comma always separates files (a path with a comma in
// it cannot be named). A row whose id an earlier file used is the same
// measurement taken again: its id gets "@K", K the file's place in the
// list (1-based), so every row stays named; the fit sees the two as repeats of one
// configuration (row_relation), which is what tells it how much a
// measurement moves between sittings. A file named twice is refused.
bool read_sittings(const std::string& list, std::vector<MeasuredRow>* rows, std::string* error,
                   const std::string& flag = "--measurements") {
  const std::vector<std::string> files = sitting_files(list);
  std::set<std::string> seen_ids;
  for (size_t k = 0; k < files.size(); ++k) {
    const std::string& file = files[k];
    if (file.empty())
      return *error = fmt::format("{} '{}': an empty file name in the list", flag,
                                  escape_line(list)),
             false;
    for (size_t j = 0; j < k; ++j) {
      std::error_code ec;
      if (files[j] == file || std::filesystem::equivalent(files[j], file, ec))
        return *error = fmt::format("{}: {} is named twice (a sitting counts once)", flag,
                                    escape_line(file)),
               false;
    }
    std::vector<MeasuredRow> got;
    if (!read_measurements(file, &got, error)) return false;
    std::set<std::string> own;  // this file's ids as written
    for (const MeasuredRow& r : got) own.insert(r.id);
    for (MeasuredRow& r : got) {
      if (k > 0 && seen_ids.count(r.id)) {
        r.id += fmt::format("@{}", k + 1);
        if (seen_ids.count(r.id) || own.count(r.id))
          return *error = fmt::format("{}: id: '{}' is already a row of this or an earlier file",
                                      r.where("id"), escape_line(r.id)),
                 false;
      }
      rows->push_back(std::move(r));
    }
    for (const MeasuredRow& r : *rows) seen_ids.insert(r.id);
  }
  return true;
}

// Mapping, measured rows, their mapping and simulation. The rows come
// from the flag `flag` names (validate --fit-on reads a second set).
// reference_ns > 0: the reading the rows' reference is scaled to (the
// fitted rows' or the profile's), else their own references' median.
bool read_inputs(const ParsedFlags& f, bool skip_unmapped, const char* command, Inputs* in,
                 std::string* error, const std::string& flag = "measurements",
                 double reference_ns = 0, const std::string& reference_program = "") {
  auto it = f.v.find(flag);
  if (it == f.v.end()) return *error = "--" + flag + " FILE.tsv is required", false;
  in->measurements = it->second;
  auto mit = f.v.find("mapping");
  const std::string mpath =
      mit == f.v.end() ? find_data_file("profiles/mapping.toml") : mit->second;
  if (mpath.empty())
    return *error = "no data/profiles/mapping.toml found (pass --mapping FILE)", false;
  if (auto s = f.v.find("statistic");
      s != f.v.end() && !parse_row_statistic(s->second, &in->statistic))
    return *error = fmt::format("--statistic '{}': expected mean, median or fastest",
                                escape_line(s->second)),
           false;
  std::vector<MeasuredRow> rows;
  SimulateOptions o;
  if (!parse_jobs(f, &in->jobs, error) || !simulate_options(f, command, &o, error) ||
      !load_mapping(mpath, &in->map, error) ||
      !read_sittings(in->measurements, &rows, error, "--" + flag) ||
      !map_rows(in->map, rows, &in->rows, skip_unmapped ? &in->skipped : nullptr, error,
                &in->skipped) ||
      !apply_row_statistic(in->statistic, &in->rows, error) ||
      !apply_reference(&in->rows, in->map.fit, in->statistic, reference_ns, reference_program,
                       skip_unmapped ? &in->skipped : nullptr, &in->reference, error))
    return false;
  return simulate_rows(in->rows, in->jobs, &in->per_op, error, &in->failed, o);
}

std::string profile_header(const FitReport& r, const Inputs& in, const ParsedFlags& f,
                           const std::string& out, const std::vector<std::string>& problems) {
  std::string bad;
  for (const std::string& p : problems) bad += "\nNOT CREDIBLE (written with --force): " + p;
  // The command that writes this profile again: every flag that shapes
  // it, quoted for a shell.
  std::vector<std::string> args = {"calibrate", "--measurements", in.measurements};
  if (in.statistic != RowStatistic::mean)
    args.insert(args.end(), {"--statistic", std::string(row_statistic_name(in.statistic))});
  for (const char* k : {"mapping", "name"})
    if (auto it = f.v.find(k); it != f.v.end())
      args.insert(args.end(), {std::string("--") + k, it->second});
  args.insert(args.end(), {"--out", out});
  if (!problems.empty()) args.push_back("--force");
  return fmt::format(
      "simcache cost profile '{}': fitted by simcache calibrate. Do not edit by hand;\n"
      "regenerate with\n"
      "  {}\n"
      "({} rows, rms relative residual {:.2f}%{}; method and every parameter:\n"
      "docs/calibration.md). Values are ns per event unit.{}",
      r.model.name, shell_command(args), in.rows.size(), r.rms_rel * 100,
      r.rms_rows != in.rows.size()
          ? fmt::format(" over {} rows and twins' ratios", r.rms_rows)
          : std::string(),
      bad);
}

}  // namespace

CliOutcome run_calibrate_cli(const ParsedFlags& f, const Args&) {
  std::string error;
  Inputs in;
  if (!read_inputs(f, false, "calibrate", &in, &error)) return cli_fail(error);
  std::string name = "calibrated";
  if (f.v.count("out")) name = std::filesystem::path(f.v.at("out")).stem().string();
  if (f.v.count("name")) name = f.v.at("name");
  FitReport rep = fit_profile(prior_model(), in.map.fit, in.rows, in.per_op, name);
  rep.model.description = fmt::format(
      "fitted to {} ({} rows{}) by simcache calibrate", file_names(in.measurements),
      in.rows.size(),
      in.statistic == RowStatistic::mean
          ? std::string()
          : fmt::format(", their {} rounds", row_statistic_name(in.statistic)));
  if (in.statistic != RowStatistic::mean) rep.model.statistic = row_statistic_name(in.statistic);
  if (in.reference.references)
    rep.model.reference = in.reference.program, rep.model.reference_ns = in.reference.typical_ns;
  std::string text = in.statistic_line() + in.reference.line("") + in.reference.twin_line(false) +
                     format_fit(rep, in.rows, in.measurements, in.map) +
                     format_row_failures(in.rows, in.failed, in.map.fit);
  // A fit that is not credible (docs/calibration.md, "A fit that refuses
  // to lie"): one line per cause on stderr, the rows that disagree most,
  // exit 3, and no profile unless --force.
  const std::vector<std::string> problems = fit_problems(rep);
  const bool force = f.v.count("force") > 0;
  if (f.v.count("out") && (problems.empty() || force)) {
    const std::string& out = f.v.at("out");
    if (!write_file_atomic(out, profile_toml(rep.model, profile_header(rep, in, f, out, problems)),
                           &error))
      return cli_fail("--out " + error);
    text += fmt::format("wrote {}{}\n", out, problems.empty() ? "" : " (--force)");
  }
  if (problems.empty()) return {0, text, ""};
  std::string err;
  for (const std::string& p : problems) err += "simcache: calibrate: not credible: " + p + "\n";
  err += "simcache: calibrate: rows that disagree most: " + worst_rows(rep, in.rows, 5) + "\n";
  if (f.v.count("out"))
    err += force ? fmt::format("simcache: calibrate: wrote {} anyway (--force)\n", f.v.at("out"))
                 : fmt::format("simcache: calibrate: no profile written to {} (--force writes "
                               "it)\n",
                               f.v.at("out"));
  return {3, text, err};
}

CliOutcome run_validate_cli(const ParsedFlags& f, const Args&) {
  std::string error;
  bool by_shape = false;
  const bool leave = f.v.count("leave-out") > 0;
  if (leave) {
    const std::string& v = f.v.at("leave-out");
    if (v != "group" && v != "shape")
      return cli_fail(fmt::format("--leave-out '{}': expected group or shape", v));
    if (f.v.count("profile"))
      return cli_fail("--leave-out refits from the priors on the rest of the rows; it takes no "
                      "--profile");
    by_shape = v == "shape";
  }
  const bool fit_on = f.v.count("fit-on") > 0;
  if (fit_on && (leave || f.v.count("profile")))
    return cli_fail(fmt::format("--fit-on fits the profile it validates; it takes no {}",
                                leave ? "--leave-out" : "--profile"));
  CostModel m;
  const std::string spec = f.v.count("profile") ? f.v.at("profile") : std::string(kDefaultCostProfile);
  if (!leave && !fit_on && !resolve_profile(spec, &m, &error)) return cli_fail(error);
  // --fit-on's rows first, read as calibrate reads them (every row must
  // map: --skip-unmapped is for --measurements), so a mistake in that list
  // shows before the rows to validate are simulated.
  Inputs cal;
  if (fit_on && !read_inputs(f, false, "validate --fit-on", &cal, &error, "fit-on")) {
    if (error.rfind("--fit-on", 0) != 0) error = "--fit-on: " + error;
    if (error.find(": no [[") != std::string::npos)
      error += " (every --fit-on row must map, as in calibrate; --skip-unmapped applies to "
               "--measurements only)";
    return cli_fail(error);
  }
  Inputs in;
  const bool skip = f.v.count("skip-unmapped") > 0;
  // Rows measured beside a reference are scaled to the reading the fit
  // scaled its rows to: --fit-on's, or the profile's (reference.h).
  const double ref_ns = fit_on ? cal.reference.typical_ns : leave ? 0 : m.reference_ns;
  const std::string ref_program = fit_on ? cal.reference.program : leave ? "" : m.reference;
  if (!read_inputs(f, skip, "validate", &in, &error, "measurements", ref_ns, ref_program)) {
    if (!skip && error.find(": no [[") != std::string::npos)
      error += " (--skip-unmapped validates the rows that map)";
    return cli_fail(error);
  }
  const std::string ref_from =
      fit_on ? "the median reading of --fit-on's references"
             : fmt::format("the reading profile {} was fitted at", m.name);
  std::string ref_lines = in.reference.line(ref_from) + in.reference.twin_line(true);
  if (fit_on && cal.reference.references) ref_lines = "--fit-on " + cal.reference.line("") + ref_lines;
  if (leave) {
    const LeaveOut l = leave_out(prior_model(), in.map.fit, in.rows, in.per_op, by_shape, in.jobs);
    // Leaving the only unit out would fit no rows at all.
    if (l.units.size() < 2)
      return cli_fail(fmt::format("--leave-out {}: {} has {} {}; leaving one out needs two",
                                  by_shape ? "shape" : "group", in.measurements, l.units.size(),
                                  by_shape ? "workload shape" : "group"));
    // The same units refitted by the fitter before the speed factors.
    const LeaveOut before = leave_out(prior_model(), in.map.fit, in.rows, in.per_op, by_shape,
                                      in.jobs, FitMethod::unscaled);
    std::string text = in.statistic_line() + ref_lines;
    for (const std::string& s : in.skipped) text += "skipped: " + s + "\n";
    return {0,
            text + format_leave_out(l, in.rows, true) +
                format_leave_out_comparison(l, before) +
                format_row_failures(in.rows, in.failed, in.map.fit),
            ""};
  }
  // --fit-on: both fitters on those rows; this report shows today's fit,
  // then both fits' figures on the rows validated.
  std::string fitted_text;
  std::vector<FitterFigures> fitters;
  size_t cal_rows = 0;
  std::string notes;  // stderr: refusals, rows in both sets
  // --fit-on: rows that repeat a fitted configuration (split_repeats),
  // shown as the drift block unless the two sets are one suite.
  std::vector<Repeat> repeats;
  bool show_drift = false;
  std::string pooled_note;
  if (fit_on) {
    for (const std::string& s : cal.skipped) fitted_text += "--fit-on skipped: " + s + "\n";
    std::string failed = format_row_failures(cal.rows, cal.failed, cal.map.fit);
    for (size_t at = 0; at < failed.size();) {  // each line marked as the fitted rows'
      const size_t end = std::min(failed.find('\n', at), failed.size() - 1);
      fitted_text += "--fit-on " + failed.substr(at, end + 1 - at);
      at = end + 1;
    }
    cal_rows = cal.rows.size();
    // A file in both lists validates rows the fit saw: in sample.
    bool in_sample = false;
    for (const std::string& a : sitting_files(cal.measurements))
      for (const std::string& b : sitting_files(in.measurements)) {
        std::error_code ec;
        if (a == b || std::filesystem::equivalent(a, b, ec))
          in_sample = true,
          notes += cli_warning(fmt::format(
              "{} is in --fit-on and --measurements: its rows are validated in sample, and "
              "their coverage says nothing about a shape the fit has not seen",
              escape_line(b)));
      }
    // Another suite's rows that repeat a fitted configuration measure the
    // machine's drift between the suites, not the model: set apart, for
    // one sitting's two suites (pooled sittings drift apart each on its
    // own; a row of one compared with the mean of several says nothing).
    const bool pooled = sitting_files(cal.measurements).size() > 1 ||
                        sitting_files(in.measurements).size() > 1;
    if (!in_sample && pooled) {
      pooled_note =
          "\ndrift between the suites: not measured for pooled sittings (one --fit-on file and "
          "one --measurements file, a sitting's two suites, are compared; no row is set apart)\n";
    } else if (!in_sample) {
      std::vector<MappedRow> rows = in.rows;
      std::vector<PerOpCounts> per_op = in.per_op;
      std::vector<RowFailure> failed = in.failed;
      repeats = split_repeats(&rows, &per_op, &failed, cal.rows, in.map.fit);
      show_drift = !rows.empty();
      if (show_drift) {
        if (failed.size() < in.failed.size())
          notes += cli_warning(fmt::format(
              "{} of the rows set apart as repeats had failed ops (their counts are not the "
              "measured workload)",
              in.failed.size() - failed.size()));
        in.rows = std::move(rows), in.per_op = std::move(per_op), in.failed = std::move(failed);
      } else {
        notes += cli_warning(
            "every row of --measurements repeats a configuration of --fit-on: they are "
            "validated as they are, and no drift is shown");
        repeats.clear();
      }
    }
    for (FitMethod method : {FitMethod::current, FitMethod::unscaled}) {
      FitReport r = fit_profile(prior_model(), cal.map.fit, cal.rows, cal.per_op, "fit-on", method);
      r.model.name = fmt::format("fitted here by {} fitter to {}", fit_method_label(method),
                                 file_names(cal.measurements));
      r.model.path = "validate --fit-on";
      if (cal.statistic != RowStatistic::mean)
        r.model.statistic = row_statistic_name(cal.statistic);
      const Validation vm = validate_rows(r.model, in.rows, in.per_op, in.map.fit);
      fitters.push_back(figures_of(vm, in.rows, r, method));
      for (const std::string& p : fit_problems(r))
        notes += cli_warning(fmt::format(
            "--fit-on: {} is not credible (calibrate would refuse it): {}",
            method == FitMethod::current ? "today's fit"
                                         : "the fit by the fitter before the speed factors",
            p));
      if (method == FitMethod::current) m = r.model;
    }
  }
  const Validation v = validate_rows(m, in.rows, in.per_op, in.map.fit);
  const std::string drift = show_drift ? format_drift(repeats, v, in.rows) : pooled_note;
  // A profile fitted to one statistic of the rows, validated on another
  // (calibrate writes it into the profile: CostModel::statistic).
  std::string warning = notes + profile_warning(m);
  const RowStatistic fitted = fitted_statistic(m);
  if (fitted != in.statistic)
    warning += cli_warning(fmt::format(
        "profile {} was fitted to the rows' {}; these rows are read as their {} "
        "(--statistic {} compares like with like)",
        m.name,
        fitted == RowStatistic::mean ? std::string("means")
                                     : fmt::format("{} rounds", row_statistic_name(fitted)),
        row_statistic_name(in.statistic), row_statistic_name(fitted)));
  std::string text = in.statistic_line() + ref_lines +
                     format_validation(v, m, in.rows, in.map, in.measurements, in.skipped) +
                     format_row_failures(in.rows, in.failed, in.map.fit) + drift + fitted_text;
  if (fit_on)
    text += format_fitter_comparison(
        fitters, fmt::format("each fitted to {} ({} rows) and validated on these {} rows",
                             f.v.at("fit-on"), cal_rows, in.rows.size()));
  return {0, text, warning};
}

}  // namespace simcache::sim
