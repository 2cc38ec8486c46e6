// Measured rows (the columns of data/measurements/calibration.tsv) and the mapping
// file that turns each row into a simulation: scenario and parameters,
// kernel profile, policy, and the metric. Errors are one line naming the
// file, line and column ("FILE:LINE:COL: field: problem").
#pragma once

#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "sim/cost/cost.h"
#include "sim/cost/shipped.h"
#include "sim/run/engine.h"
#include "sim/report/report.h"
#include "sim/run/result.h"
#include "sim/run/scenario.h"

namespace re2 {
class RE2;
}

namespace simcache::sim {

// Patterns of the mapping file are RE2 (linear time, no recursion on the
// input): neither a long field nor a pathological pattern can blow the
// stack or backtrack forever. Case-insensitive, unanchored search.
using Regex = std::shared_ptr<const re2::RE2>;
// Compiles `pattern`; on failure returns null and sets `error` (one line,
// if given).
Regex compile_regex(const std::string& pattern, std::string* error);
// Unanchored search; `groups` (if given) gets group 0..N, unmatched groups
// as std::nullopt.
bool regex_search(const Regex& re, std::string_view text,
                  std::vector<std::optional<std::string>>* groups = nullptr);
int regex_groups(const Regex& re);

// Input limits (docs/reliability.md): a longer line or field, or more
// rows, is an error naming the limit (the file's size: sim/io/input.h).
inline constexpr size_t kMaxLineBytes = 64u << 10;
inline constexpr size_t kMaxFieldBytes = 1024;
inline constexpr size_t kMaxRows = 100000;

struct MeasuredRow {
  std::string file;
  int line = 0;
  std::string id, workload, shape, variant, metric, unit, kind, source, note;
  double value = 0;
  std::map<std::string, int> col;                      // column name -> 1-based character column
  std::string where(const std::string& column) const;  // "FILE:LINE:COL"
};

// Reads a TSV with a header line naming at least id, workload, shape,
// variant, metric, value and unit (kind, source, note optional). Blank
// lines and lines starting with '#' are skipped.
bool parse_measurements(std::string_view text, const std::string& file,
                        std::vector<MeasuredRow>* out, std::string* error);
bool read_measurements(const std::string& path, std::vector<MeasuredRow>* out, std::string* error);

// The files of a --measurements list "A,B,...", as given (a comma always
// separates; an empty name stays, for the caller to refuse).
std::vector<std::string> sitting_files(const std::string& list);

// The file names (no directories) of a --measurements list "A,B,...",
// comma-separated as given: what a report or a profile says it was
// fitted to.
std::string file_names(const std::string& list);

// data/profiles/mapping.toml, see the comments in that file.
struct FitSettings {
  double noise_cv = 0.01;                  // relative noise per row assumed for pinning
  double pin_threshold = 0.5;              // pinned needs posterior sd <= this x prior sd
  // ... and posterior sd <= this x value (the value at least two sds from
  // 0): a posterior narrow against a wide prior but as wide as its value
  // pins nothing.
  double pin_relative = 0.5;
  std::vector<std::string> repeat_params;  // do not change a per-op mean
  // The machine's state a row recorded (the kit's cache share): the
  // simulation takes it, but it does not make another configuration.
  std::vector<std::string> condition_params;
  // What a row and the anchor it was measured beside may differ in for
  // the pair to be twins (the same program in another condition, such as
  // the root and a child memcg): the row is then read as an effect
  // against its anchor, the ratio measured round by round, and neither
  // is scaled by a reference (sim/calibrate/reference.h).
  std::vector<std::string> twin_params;
};

struct ShapeRule {
  struct Pattern {
    std::string text;
    Regex re;
    std::vector<std::string> captures;  // parameter per group ("" skips one)
  };
  std::string name;
  int line = 0;
  Regex workload;
  Pattern shape;                                                 // must match
  std::vector<Pattern> extra;                                    // optional further captures
  std::map<std::string, std::map<std::string, int64_t>> values;  // word -> int
  std::string scenario;
  Params set;
  // Values a row's captures may override (a machine parameter older rows
  // did not record): applied first, then the captures, then `set`.
  Params defaults;
  std::string kind = "timing";
  std::string op;  // expected "/op" of the unit column ("" any)
};

struct VariantRule {
  int line = 0;
  Regex match;
  Regex workload;  // null: any workload
  std::string kernel, policy;  // kernel may use $1..$9 from `match`
  bool base = false;           // role = "base": the reference of its group
  // Every other rule names the configuration its rows are measured against:
  // a pattern on the variant column of the rows of the same group (the
  // parents of an A/B/A, U of a U/B/C). Required unless role = "base".
  Regex against;
  std::string against_text;
};

struct Mapping {
  std::string path;
  FitSettings fit;
  std::vector<ShapeRule> shapes;
  std::vector<VariantRule> variants;
};

bool load_mapping(const std::string& path, Mapping* out, std::string* error);
bool parse_mapping(std::string_view text, const std::string& path, Mapping* out,
                   std::string* error);

// A row resolved to a simulation.
struct MappedRow {
  MeasuredRow row;
  std::string scenario;
  Params params;  // every parameter the mapping sets
  std::string kernel, policy;
  bool base = false;
  // The rule's base pattern and, after map_rows(), the rows of the same
  // group it matches: the effect of this row is against their mean.
  Regex against;
  std::string against_text;
  int variant_line = 0;
  std::vector<size_t> bases;  // indices into map_rows()'s output
  // A row measured round by round beside its twin (FitSettings::
  // twin_params; its one base): the ratio of the two, round by round (the
  // statistic validate reads), and its standard error; 0 for any other row.
  double twin_ratio = 0, twin_se = 0;
  bool twin_round_by_round = false;  // the ratio is the kit's, round by round
  // Scaled by a reference's reading (apply_reference()): on the scale of
  // the set's typical reading, not as measured.
  bool reference_scaled = false;
  // The anchor a twin was measured beside (apply_reference()): unscaled.
  bool twin_anchor = false;
  double value_ns = 0;    // the measurement in ns per op
  std::string time_unit;  // unit of the value ("ns", "us")
  double unit_ns = 1;     // ns per unit of the value column (1, 1e3, 1e6)
  std::string group;      // rows of the same program and shape
  // The part of the timed operation the metric column names
  // ("registration", "fill", "removal", "refill"), or "" for the whole
  // timed region (an interval, a mean, a first fill).
  std::string phase;
};

// A measured number: decimal or exponent notation, finite, blanks around
// it allowed (the value column, a note's figures).
bool parse_value(std::string_view s, double* v);
// Rows moved to a new list: each kept row's bases at their new places
// (`new_index[old]`, SIZE_MAX for a row not kept); with a base not kept,
// the effect is not compared rather than compared with fewer bases.
void remap_bases(std::vector<MappedRow>* kept, const std::vector<size_t>& new_index);

// A note's "; "-separated fields, blanks around each trimmed (the kit
// writes "median X", "fastest Y", "se Z%", ...).
std::vector<std::string_view> note_fields(std::string_view note);
// A time of `v` in the row's unit (`scale` ns each) read from `column`:
// "" if it is in range (a nanosecond's billionth to an hour), else one
// line saying why not.
std::string out_of_range(const MeasuredRow& r, const char* column, double v, double scale);

// Which figure of a row calibrate and validate read (--statistic): the
// value column (the mean of the rounds), or the median or fastest round
// the kit writes into the note ("; median X; fastest Y", in the row's
// unit). On a loaded or virtual machine the mean is mostly preemption.
enum class RowStatistic { mean, median, fastest };
// "mean", "median" or "fastest"; false otherwise.
bool parse_row_statistic(std::string_view s, RowStatistic* out);
std::string_view row_statistic_name(RowStatistic s);
// Sets each mapped row's time (value_ns, and row.value) to its `s`
// figure; rows map_rows() skipped (not times, unmapped) are not read. A
// row whose note has no such figure (the seeds' rows carry the mean
// only) or two, or whose figure is not a number in the value column's
// range, is one error naming the file, line and note.
bool apply_row_statistic(RowStatistic s, std::vector<MappedRow>* rows, std::string* error);

// Resolves a row; an unmappable row is an error naming the column that
// no rule accepts.
bool map_row(const Mapping& m, const MeasuredRow& r, MappedRow* out, std::string* error);
// Maps every row; stops at the first error unless `skipped` is given, in
// which case unmappable rows are reported there and left out.
// Every row that is not a base gets its `bases`: the rows of its group
// its rule's base pattern matches; none is an error naming the row.
// Rows that are not times (a ratio or percentage unit, a negative value)
// are never errors: they are left out with the reason in `not_timed` (or
// in `skipped` when `not_timed` is null).
bool map_rows(const Mapping& m, const std::vector<MeasuredRow>& rows, std::vector<MappedRow>* out,
              std::vector<std::string>* skipped, std::string* error,
              std::vector<std::string>* not_timed = nullptr);

// The row's parameters without the repeat parameters (what identifies the
// workload's shape).
Params shape_params(const MappedRow& r, const FitSettings& fit);

// Rows grouped by (scenario, shape parameters, kernel, policy), values
// averaged: what report tables show beside the model.
std::vector<MeasuredPoint> measured_points(const std::vector<MappedRow>& rows,
                                           const FitSettings& fit);

// The points a report shows beside the model: every row `map` maps,
// grouped by measured_points(); rows no rule maps are left out. With a
// statistic other than the mean, each row's figure of it, and rows
// without one are left out too.
std::vector<MeasuredPoint> report_points(const Mapping& map, const std::vector<MeasuredRow>& rows,
                                         RowStatistic s = RowStatistic::mean);
// The statistic a profile was fitted to (its `statistic` field, which
// calibrate --statistic writes); the mean where it has none.
RowStatistic fitted_statistic(const CostModel& profile);
// report_points() of the shipped mapping and measured rows, compiled in
// (sim/cost/shipped.h); false when the binary has none.
bool shipped_report_points(std::vector<MeasuredPoint>* out);
// The generated table: each point's parameters and ids are ranges
// [first, first + count) of `params` and `ids`.
struct ShippedPoint {
  std::string_view scenario, kernel, policy;
  double value_ns;
  uint32_t param_first, param_count, id_first, id_count;
};
struct ShippedPoints {
  std::span<const ShippedPoint> points;
  std::span<const ShippedKeyValue> params;
  std::span<const std::string_view> ids;
};
// Defined by the generated file; absent (null) in binaries without it.
[[gnu::weak]] const ShippedPoints* generated_shipped_points();

// Compact id list: "SF-001..SF-003, SF-197".
std::string id_ranges(const std::vector<std::string>& ids);

}  // namespace simcache::sim
