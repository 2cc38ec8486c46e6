// Validation: the model's prediction for every mapped measurement, as
// absolute values and as effects between the variants of a group (the
// A/B(/A) comparisons the measurements were made for).
#pragma once

#include <string>
#include <vector>

#include "sim/calibrate/calibrate.h"
#include "sim/cost/cost.h"
#include "sim/calibrate/measure.h"

namespace simcache::sim {

struct Effect {
  size_t row = 0;             // the variant row
  std::vector<size_t> bases;  // the rows it is compared with (their mean)
  double measured = 0;        // variant / mean(bases) - 1
  double model = 0;
  double noise = 0;  // relative noise of a measured delta
  // Direction: +1 / -1, or 0 when the effect is within `noise` (no
  // significant change). `agrees`: the model's direction is the measured
  // one; `same_sign`: the raw signs agree, ignoring the noise.
  int dir_measured = 0, dir_model = 0;
  bool agrees = false, same_sign = false;
  // The model's 90 % uncertainty interval of the effect (posterior of the
  // profile; measurement noise kept apart), whether it rests mostly on
  // priors, and whether the measured effect falls inside it (`covered`),
  // or inside it widened by the measurement noise (`covered_noise`).
  double lo = 0, hi = 0;
  bool prior_based = false, covered = false, covered_noise = false;
};

struct Validation {
  std::vector<double> predicted;  // ns per op, per row
  std::vector<double> lo, hi;     // 90 % model-uncertainty interval per row
  std::vector<bool> prior_based;  // the row's interval rests mostly on priors
  size_t rows_covered = 0;        // measured value inside [lo, hi]
  // ... or inside it widened (in log space) by the error of the row's
  // measured mean (measurement_spread(): the note's standard error, else
  // its round CV over sqrt(measured rounds), or half its repeat drift).
  size_t rows_covered_noise = 0;
  size_t effects_covered = 0, effects_covered_noise = 0;
  std::vector<Effect> effects;
  double mean_abs_err = 0, max_abs_err = 0;  // relative, over rows
  size_t max_row = 0;
  double mean_abs_effect_err = 0;  // percentage points
  size_t agree = 0, same_sign = 0;
};

// Per-op counts per parameter of `m` (the gradient of the predicted time).
std::vector<double> param_counts(const CostModel& m, const PerOpCounts& c);

// Group effects follow docs/workloads.md: a group is the rows of one
// program and shape (workload, shape, metric and unit columns); base rows
// are the reference (their midpoint); each other row is one effect.
// `fit` gives the shape parameters (row_relation): which inadequacy an
// effect carries.
Validation validate_rows(const CostModel& m, const std::vector<MappedRow>& rows,
                         const std::vector<PerOpCounts>& per_op, const FitSettings& fit);

std::string format_validation(const Validation& v, const CostModel& m,
                              const std::vector<MappedRow>& rows, const Mapping& map,
                              const std::string& measurements,
                              const std::vector<std::string>& skipped);

}  // namespace simcache::sim

namespace simcache::sim {

// Out of sample (docs/validation.md): each unit of rows left out in turn,
// the profile refitted from `structure`'s priors on the rest, and the unit
// validated against that fit. A unit is a group (one program and shape:
// MappedRow::group) or, `by_shape`, a workload shape (row_relation): then
// no row of the program and shape left out is in the fit.
struct LeaveOutUnit {
  std::vector<size_t> rows;  // indices into the rows passed in
  Validation v;              // over those rows, in that order
  bool refused = false;      // the fit of the rest is not credible
};
struct LeaveOut {
  bool by_shape = false;
  std::vector<LeaveOutUnit> units;
  size_t rows_in = 0, rows_in_noise = 0, rows_all = 0, effects_in = 0, effects_noise = 0, effects_all = 0,
         refused = 0;
  // Units every row of which is inside its interval: a unit's rows are
  // predicted from the same prices, so their errors go together and the
  // row share rests on fewer independent outcomes than the rows' count.
  size_t units_in = 0;
  double median_row_width = 0;     // of the predicted row time
  double median_effect_width = 0;  // percentage points / 100
};
// Fewer than two units: the units alone, nothing fitted or validated.
LeaveOut leave_out(const CostModel& structure, const FitSettings& fit,
                   const std::vector<MappedRow>& rows, const std::vector<PerOpCounts>& per_op,
                   bool by_shape, int jobs, FitMethod method = FitMethod::current);

// The summary line, then (with `table`) one line per unit and effect.
std::string format_leave_out(const LeaveOut& l, const std::vector<MappedRow>& rows, bool table);

// Two fitters judged on the same rows (docs/validation.md, "Today's
// fitter beside the one before it"): what validate prints beside its
// own figures.
struct FitterFigures {
  FitMethod method = FitMethod::current;
  size_t fits = 0, refused = 0;  // fits made; of them, not credible (fit_problems())
  double rms_fitted = -1;        // one fit: its rms relative residual on its own rows
  size_t rows_in = 0, rows_all = 0, effects_in = 0, effects_all = 0;
  double median_row_width = 0, median_effect_width = 0;
  double mean_abs_err = 0;  // of the rows' predictions, relative
};
FitterFigures figures_of(const LeaveOut& l, FitMethod method);
FitterFigures figures_of(const Validation& v, const std::vector<MappedRow>& rows,
                         const FitReport& f, FitMethod method);
// validate --fit-on: rows of the validated set that repeat a configuration
// of the fitted rows (row_relation: same_config; the kit's validation
// suite opens and closes with one). The fit has seen their configuration,
// so they are set apart from the validation; what they measure is how far
// the machine moved between the two suites.
struct Repeat {
  MappedRow row;                  // the validated row
  std::vector<std::string> of;    // ids of the fitted rows of its configuration
  double fitted_ns = 0;           // their mean measured time (the chosen statistic)
  double rel_se = 0;              // the ratio's relative standard error (the rows' notes)
  double ratio() const { return row.value_ns / fitted_ns; }
};
// Moves the rows of `rows` (and their `per_op`, `failed` and bases
// reindexed; an effect with a base moved loses its bases) that repeat a
// configuration of `fitted`, measured the same way (the same recorded
// conditions, metric and unit), into the result, in their order.
std::vector<Repeat> split_repeats(std::vector<MappedRow>* rows, std::vector<PerOpCounts>* per_op,
                                  std::vector<RowFailure>* failed,
                                  const std::vector<MappedRow>& fitted, const FitSettings& fit);
// The drift block: each repeat against its fitted rows with the ratio's
// standard error, their median ratio (the mean of two) and whether it is
// more than twice its standard error, and the validated rows (`v` over
// `rows`) judged again with each measurement divided by it; or the line
// saying no row repeats one.
std::string format_drift(const std::vector<Repeat>& repeats, const Validation& v,
                         const std::vector<MappedRow>& rows);

// A table, one line per fitter; `what` says which rows the figures are on.
std::string format_fitter_comparison(const std::vector<FitterFigures>& f, const std::string& what);
// validate --leave-out's comparison: `today` (FitMethod::current) and
// `before` (FitMethod::unscaled) over the same units.
std::string format_leave_out_comparison(const LeaveOut& today, const LeaveOut& before);

}  // namespace simcache::sim
