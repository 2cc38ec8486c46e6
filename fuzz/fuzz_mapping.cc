// libFuzzer target: the measurement mapping TOML (sim/calibrate/measure_map.cc),
// then its rules applied to the shipped rows (the patterns run on real fields).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "sim/calibrate/measure.h"
#include "sim/cost/cost.h"

using namespace simcache::sim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<MeasuredRow> rows = [] {
    std::vector<MeasuredRow> r;
    std::string err;
    read_measurements(find_data_file("measurements/calibration.tsv"), &r, &err);
    return r;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  Mapping m;
  std::string error;
  const bool ok = parse_mapping(text, "fuzz.toml", &m, &error);
  simcache::fuzz::check_error(ok, error);
  if (!ok) return 0;
  std::vector<MappedRow> mapped;
  std::vector<std::string> skipped;
  map_rows(m, rows, &mapped, &skipped, &error);
  for (const std::string& s : skipped) simcache::fuzz::check_error(false, s);
  return 0;
}
