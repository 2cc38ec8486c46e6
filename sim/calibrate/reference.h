// The reference: rows the kit measured round by round beside one fixed
// program (its --anchor; scripts/measure pairs every row of its suites
// with the scalar wait-wake control), scaled to the reference's typical
// reading before they are fitted or validated. On a virtual machine the
// speed moves in spells of seconds to minutes by up to half; the
// reference, run between the row's rounds, moves with it (docs/measure.md,
// "The reference").
#pragma once

#include <string>
#include <vector>

#include "sim/calibrate/measure.h"

namespace simcache::sim {

struct ReferenceScaling {
  size_t scaled = 0;      // rows divided by their reference's reading
  size_t unpaired = 0;    // rows of the same files measured without one (as they are)
  size_t references = 0;  // reference rows, taken out of the rows
  double typical_ns = 0;  // what every reference reading is scaled to (the chosen statistic)
  double lo_ns = 0, hi_ns = 0;  // the references' readings
  std::string program;    // the reference's workload and configuration, as its row maps
  bool given = false;     // typical_ns came from another set of rows (validate --fit-on)
  size_t twins = 0;       // rows read as effects against their twin anchors
  size_t twin_phases = 0;   // phase rows of twins left out (their ratio is to the whole)
  std::string twin_params;  // what twins differ in (FitSettings::twin_params)
  // One line for a report ("" when no row had a reference).
  std::string line(const std::string& from_what) const;
  // One line on the twins ("" when there are none): read as effects
  // (validate), or fitted as ratios to their anchors (calibrate: beside
  // rows a reference scaled, the ratio alone).
  std::string twin_line(bool effects) const;
};

// Scales the rows paired with a reference (the kit's note "paired round by
// round with anchor ID", ID a row of the same file whose note says "anchor
// of ..., round by round") and takes the reference rows out. A row whose
// note gives its ratio to the anchor round by round becomes typical x that
// ratio's mean or median (`statistic`, the one apply_row_statistic read),
// its se, max group CV and max role drift the ratio's; otherwise (and for
// the fastest round) its figure is scaled by typical / its reference's
// figure and the reference's standard error is added to its own in
// quadrature (the note's "se"). `typical_ns` > 0 is the figure
// to scale to (validate --fit-on: the fitted rows'); else the median of
// these rows' references. Every reference must map to one simulation; a
// paired row whose reference is missing, or a reference paired with no
// row, is an error naming the file, line and note.
// One program: the same scenario, kernel, metric and shape parameters
// (shape_params(): rounds and warm-up may differ); `expected_program`,
// when given, is the one the profile or the fitted rows were scaled by.
// Twins (FitSettings::twin_params: a row whose anchor is its own program
// in another condition, such as the root and a child memcg) are not
// scaled, and their anchors stay: the row's one base becomes its anchor
// and its twin_ratio the ratio read as `statistic`, in ns over ns (the
// fastest rounds: the two figures' ratio, their errors added). Other
// rows paired with a twin anchor (a lifecycle's phase rows, whose ratio
// is to the whole program's round) are left out, counted in twin_phases.
// Effects keep their bases (remap_bases). With `skipped` (--skip-unmapped:
// a row or its anchor may have been skipped), a paired row without its
// anchor, or an anchor without its row, is left out with a line there
// instead of an error.
bool apply_reference(std::vector<MappedRow>* rows, const FitSettings& fit, RowStatistic statistic,
                     double typical_ns, const std::string& expected_program,
                     std::vector<std::string>* skipped, ReferenceScaling* out,
                     std::string* error);

}  // namespace simcache::sim
