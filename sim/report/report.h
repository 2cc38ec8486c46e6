// Report formats: an LKML-ready plain-text table (<= 80 columns), a
// stable JSON document (docs/output.md) and a long-format CSV. With a
// cost model, every workload gains time rows (docs/calibration.md), and
// measured values are shown beside the model where a row maps to the
// workload, kernel and policy.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/run/result.h"

namespace simcache::sim {

class CostModel;  // cost.h: optional time rows
struct ShareInterval;  // cost.h

// Measured rows that map to one (workload shape, kernel, policy); several
// rows (boots A and B of a parent) are averaged.
struct MeasuredPoint {
  std::string scenario;
  std::map<std::string, int64_t> params;  // shape parameters; all must match
  std::string kernel, policy;
  double value_ns = 0;  // mean of the rows, ns per op
  std::vector<std::string> ids;
};

struct ReportOptions {
  const CostModel* cost = nullptr;  // null: counts only
  const std::vector<MeasuredPoint>* measured = nullptr;
  std::string measured_file;  // named under each block
  // The rows' figure shown, as the cost profile was fitted: "" for the
  // mean, else "median" or "fastest" (the round the kit's note gives).
  std::string measured_statistic;
  // The table opens with the summary (format_summary()); each detail
  // view is one flag (docs/output.md "Details"), --all sets every one.
  bool counts = false;        // --counts: count and time blocks, the full record
  bool phases = false;        // --phases: each phase's time
  bool per_cache = false;     // --per-cache: new and discarded slabs per cache
  bool latency = false;       // --latency: latency where tasks contend, lock waits
  bool all_counters = false;  // table: every non-zero counter (implies counts)
  bool explain = false;       // table: --explain sections
  bool latency_hist = false;  // table: --latency-hist log2 histograms (implies latency)
  bool perf_stat = false;     // --perf-stat: each column's counters as perf stat prints them
  std::string cache;          // --cache: per-cache stats of this cache only (implies per_cache)
};

// The latency figures every format reports (p = 0: the maximum).
struct LatencyPoint {
  double p;
  const char* name;
};
inline constexpr LatencyPoint kLatencyPoints[] = {
    {50, "p50"}, {90, "p90"}, {99, "p99"}, {99.9, "p99.9"}, {0, "max"}};

std::string format_table(const RunResult& r, const ReportOptions& o = {});
// Whether a table shows the run record (the inputs and their hashes):
// only a detail view does. JSON and CSV always do.
bool table_shows_record(const ReportOptions& o);
// The summary screen the table opens with (report_summary.cc): at most 40
// lines of 80 columns.
std::string format_summary(const RunResult& r, const ReportOptions& o = {});
std::string format_json(const RunResult& r, const ReportOptions& o = {});
// The record of one policy column's kernel-format output (the --sysfs
// tree's .simcache-record.json): version, scenario, kernel, the column's
// policy and typed configuration, and the run record as the JSON report
// writes it.
std::string column_record_json(const RunResult& r, const PolicyResult& p);
std::string format_csv(const RunResult& r, const ReportOptions& o = {});
// One CSV field as RFC 4180 writes it: a field with a comma, quote, CR or
// LF is quoted, its quotes doubled (the CSV report and sweep merge's).
std::string csv_field(const std::string& v);
// The --explain sections: each policy's ns per op split by parameter.
std::string format_explain(const RunResult& r, const ReportOptions& o);
// The --perf-stat view (report_perf_stat.cc): per workload and column, the
// timed-region counters value first, with a ratio per operation.
std::string format_perf_stat(const RunResult& r, const ReportOptions& o);

// Counts by call site of each workload's timed region (part of --explain).
std::string format_sites(const RunResult& r);

// The counters a table shows by default, in order (shown when non-zero).
const std::vector<Event>& headline_events();

// True when the cost profile was fitted to one of the point's rows (its
// parameters' sources name them in a measurements file of that name):
// model and measurement then agree by construction, not as a validation.
bool measured_in_sample(const ReportOptions& o, const MeasuredPoint& m);

// Seed 003's iowait share of one round (the waiting CPU's I/O-wait idle
// time over the round): the round's sleep idle counts
// (cqwait_idle_counts()) times the share of its sleeps that were I/O wait,
// over the round, with its interval (share_interval()). Exact where all
// the round's sleeps are alike, as in qd1-read and idle-wait.
ShareInterval iowait_share(const CostModel& m, const Counters& round);
// A column's iowait share as the reports print it: its `iowait_ppm`
// metric (from the clock) as a fraction, with the interval of its last
// measured round's iowait_share() scaled to it. False when the column has
// no such metric.
bool iowait_share(const CostModel* m, const PolicyResult& p, ShareInterval* out);

// The measured point for one policy column of a workload (on the
// column's kernel), or null.
const MeasuredPoint* find_measured(const ReportOptions& o, const WorkloadResult& w,
                                   const PolicyResult& p);

}  // namespace simcache::sim
