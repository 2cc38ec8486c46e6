// Report formats: an LKML-ready plain-text table (<= 80 columns), a
// stable JSON document (docs/output.md) and a long-format CSV.
#pragma once

#include <string>

#include "result.h"

namespace simcache::sim {

class CostModel;  // cost.h: optional time rows

struct ReportOptions {
  const CostModel* cost = nullptr;  // null: counts only
  bool all_counters = false;        // table: every non-zero counter
};

std::string format_table(const RunResult& r, const ReportOptions& o = {});
std::string format_json(const RunResult& r, const ReportOptions& o = {});
std::string format_csv(const RunResult& r, const ReportOptions& o = {});

// The counters a table shows by default, in order (shown when non-zero).
const std::vector<Event>& headline_events();

}  // namespace simcache::sim
