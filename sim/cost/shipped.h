// The shipped data files compiled into the simcache binary in parsed
// form: the default cost profile, the mapping and the measured rows
// (data/profiles/i7-12700KF.toml, data/profiles/mapping.toml,
// data/measurements/calibration.tsv). sim/cli/gen_shipped.cc, run at build
// time, reads each with the same readers a run uses (every range check
// included) and writes their bytes, their SHA-256 and what the readers
// made of them as C++ tables (build/generated/shipped_data.cc).
//
// A run still reads every input through sim/io/input.h; it uses the
// compiled-in form only when the bytes it read are byte for byte the
// compiled-in copy (an edited file never matches, and is parsed), and
// then skips the parse and the hash. A binary built without the
// generated file (the fuzz targets, the generator itself) parses every
// time.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "model/counters.h"
#include "sim/cost/cost.h"

namespace simcache::sim {

struct ShippedFile {
  std::string_view rel;     // path under data/: "profiles/mapping.toml"
  std::string_view bytes;   // the file's bytes when the binary was built
  std::string_view sha256;  // their SHA-256, 64 hex digits
};

// The compiled-in file whose bytes are exactly `text`, as read_input()
// returned it (`had_bom`: it dropped a byte-order mark, so the file's
// bytes differ from `text` and nothing matches), or null. Whatever the
// path it was read from: a copy of a shipped file is that file.
const ShippedFile* shipped_match(std::string_view text, bool had_bom);

// The parsed form of shipped profile `rel`: what parse_profile() makes of
// its bytes, with `path` and `sha256` left for the caller. False when the
// binary has none.
bool shipped_profile(std::string_view rel, CostModel* out);

// The generated tables. Ranges are [first, first + count) of the arrays
// of the same ShippedProfile.
struct ShippedKeyValue {
  std::string_view key;
  int64_t value;
};
struct ShippedParam {
  std::string_view name, group, unit, source, prior_source, meaning;
  double value, stderr_ns, prior, prior_sd;
  bool pinned;
  uint32_t event_first, event_count;
};
struct ShippedCorr {
  uint32_t i, j;  // i < j
  double value;
};
struct ShippedNoise {
  std::string_view scenario, source;
  double round_cv, drift;
  uint32_t param_first, param_count;
};
struct ShippedProfile {
  std::string_view rel;  // its ShippedFile
  std::string_view name, description, statistic, inadequacy_source;
  double inadequacy, inadequacy_shape, drift, row_noise;
  std::span<const ShippedParam> params;
  std::span<const Event> events;
  bool has_corr;  // a [correlation] table (corr is then params x params)
  std::span<const ShippedCorr> corr;
  bool has_noise;                       // a [noise] table: noise[0] its fallback
  std::span<const ShippedNoise> noise;  // then the [[noise.entry]] tables
  std::span<const ShippedKeyValue> noise_params;
};

// Defined by the generated file; absent (null) in binaries without it.
[[gnu::weak]] std::span<const ShippedFile> generated_shipped_files();
[[gnu::weak]] std::span<const ShippedProfile> generated_shipped_profiles();

}  // namespace simcache::sim
