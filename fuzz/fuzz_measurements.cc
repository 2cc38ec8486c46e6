// libFuzzer target: measurements TSV (sim/calibrate/measure.cc), then the
// rows mapped through the shipped mapping (its patterns on fuzzed fields).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "sim/calibrate/measure.h"
#include "sim/calibrate/reference.h"
#include "sim/cost/cost.h"

using namespace simcache::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Mapping map = [] {
    Mapping m;
    std::string err;
    if (!load_mapping(find_data_file("profiles/mapping.toml"), &m, &err)) std::abort();
    return m;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<MeasuredRow> rows;
  std::string error;
  const bool ok = parse_measurements(text, "fuzz.tsv", &rows, &error);
  simcache::fuzz::check_error(ok, error);
  if (!ok) return 0;
  std::vector<MappedRow> mapped;
  std::vector<std::string> skipped;
  map_rows(map, rows, &mapped, &skipped, &error);
  for (const std::string& s : skipped) simcache::fuzz::check_error(false, s);
  for (const MappedRow& r : mapped)
    if (!(r.value_ns > 0) || r.value_ns > 3.6e12) std::abort();
  // --statistic median / fastest: the figure read from each mapped row's
  // note, in the value column's range.
  for (RowStatistic s : {RowStatistic::median, RowStatistic::fastest}) {
    std::vector<MappedRow> copy = mapped;
    std::string why;
    const bool read = apply_row_statistic(s, &copy, &why);
    simcache::fuzz::check_error(read, why);
    if (read)
      for (const MappedRow& r : copy)
        if (!(r.value_ns > 0) || r.value_ns > 3.6e12 || !std::isfinite(r.value_ns)) std::abort();
  }
  // The reference (rows paired with an anchor, scaled by it): every
  // statistic, to the rows' own typical reading and to a given one.
  for (RowStatistic s : {RowStatistic::mean, RowStatistic::median, RowStatistic::fastest})
    for (double typical : {0.0, 300.0}) {
      std::vector<MappedRow> copy = mapped;
      std::string why;
      if (!apply_row_statistic(s, &copy, &why)) continue;
      for (bool lenient : {false, true}) {
        std::vector<MappedRow> rows = copy;
        std::vector<std::string> left_out;
        ReferenceScaling ref;
        const bool scaled = apply_reference(&rows, map.fit, s, typical, "",
                                            lenient ? &left_out : nullptr, &ref, &why);
        simcache::fuzz::check_error(scaled, why);
        if (!scaled) continue;
        for (const std::string& l : left_out) simcache::fuzz::check_error(false, l);
        if (rows.size() > copy.size() || (!lenient && rows.size() + ref.references > copy.size()))
          std::abort();
        for (const MappedRow& r : rows) {
          if (!(r.value_ns > 0) || r.value_ns > 3.6e12 || !std::isfinite(r.value_ns)) std::abort();
          for (size_t b : r.bases)  // effects keep bases among the rows left
            if (b >= rows.size()) std::abort();
        }
        (void)ref.line("");
      }
    }
  return 0;
}
