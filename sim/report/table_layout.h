// The table's row layout, shared by the count block (report_table.cc) and
// the latency block (report_latency.cc): one renderer keeps every block
// within 80 columns the same way.
#pragma once

#include <string>
#include <vector>

#include "sim/run/result.h"

namespace simcache::sim {

inline constexpr char kNames[] = "ABCDEFGH";  // column names of the policies

struct Row {
  std::string label;
  std::vector<double> v;
  std::vector<std::string> text;  // preformatted cells (time rows) instead of v
};

// Rows under a header of column names, wrapped into blocks of columns
// that fit in 80 (report_table.cc).
void render(std::string* out, const std::vector<Row>& rows, size_t ncols);

// The latency block of one workload's table: per operation kind, each
// policy's percentiles with the change against column A; with `hist`,
// a bpftrace log2 histogram per kind and policy. "" without latencies.
std::string format_latency_block(const WorkloadResult& w, bool hist);

// "  --until-separated: separated (futex_wait p99.9), rounds 1 -> 8 (3
// doublings)\n", or "" when the run did not extend (sim/run/extend.h).
std::string extension_line(const WorkloadResult& w);

}  // namespace simcache::sim
