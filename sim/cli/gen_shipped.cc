// Build-time generator of the compiled-in shipped data (sim/cost/shipped.h):
//   gen_shipped DATA_DIR OUT.cc
// reads the default cost profile, the mapping and the measured rows of
// DATA_DIR with the readers a run uses and writes, as C++ tables, their
// bytes, their SHA-256, the parsed profile and the points a report shows
// beside the model. Any error in the shipped files fails the build with
// the reader's own one-line message. Not part of the simcache binary.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/calibrate/measure.h"
#include "sim/cost/cost.h"
#include "sim/cost/shipped.h"
#include "sim/cost/toml_reader.h"
#include "sim/io/input.h"
#include "sim/io/output.h"
#include "sim/report/record.h"

namespace simcache::sim {
namespace {

// A C++ string_view expression holding exactly `s` (NULs included),
// split into literals at newlines and every 100 bytes.
std::string lit(std::string_view s) {
  std::string out = "std::string_view{\"";
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c == '\n')
      out += "\\n";
    else if (c >= 0x20 && c < 0x7f && c != '?')
      out += static_cast<char>(c);
    else
      out += fmt::format("\\{:03o}", c);  // three digits: never runs into the next one
    if ((c == '\n' || ++run >= 100) && i + 1 < s.size()) {
      out += "\"\n    \"";
      run = 0;
    }
  }
  return out + fmt::format("\", {}}}", s.size());
}

// Exact: a hexadecimal floating literal round-trips every double.
std::string num(double v) { return fmt::format("{:a}", v); }

std::string i64(int64_t v) {
  return fmt::format("static_cast<int64_t>(UINT64_C({}))", static_cast<uint64_t>(v));
}

// An array definition, or "" and `name` as an empty span when `rows` is.
std::string array(const char* type, const std::string& name, const std::vector<std::string>& rows,
                  std::string* ref) {
  if (rows.empty()) {
    *ref = fmt::format("std::span<const {}>{{}}", type);
    return "";
  }
  *ref = name;
  std::string out = fmt::format("const {} {}[] = {{\n", type, name);
  for (const std::string& r : rows) out += "    " + r + ",\n";
  return out + "};\n";
}

bool read(const std::string& dir, const std::string& rel, std::string* text, std::string* error) {
  bool bom = false;
  if (!read_input(dir + "/" + rel, rel, text, error, 0, &bom)) return false;
  // The run compares the bytes read_input() returns; with a BOM dropped
  // they are not the file's, and the compiled-in hash would be wrong.
  if (bom) return *error = dir + "/" + rel + ": starts with a byte-order mark", false;
  return true;
}

bool generate(const std::string& dir, std::string* out, std::string* error) {
  const std::string profile_rel = fmt::format("profiles/{}.toml", kDefaultCostProfile);
  const std::string mapping_rel = "profiles/mapping.toml";
  const std::string rows_rel = "measurements/calibration.tsv";
  std::string ptext, mtext, rtext;
  if (!read(dir, profile_rel, &ptext, error) || !read(dir, mapping_rel, &mtext, error) ||
      !read(dir, rows_rel, &rtext, error))
    return false;
  CostModel m;
  Mapping map;
  std::vector<MeasuredRow> rows;
  if (!parse_profile(ptext, dir + "/" + profile_rel, &m, error) ||
      !parse_mapping(mtext, dir + "/" + mapping_rel, &map, error) ||
      !parse_measurements(rtext, escape_line(dir + "/" + rows_rel), &rows, error))
    return false;
  const std::vector<MeasuredPoint> points = report_points(map, rows);

  std::string s =
      "// Generated at build time by sim/cli/gen_shipped.cc from data/: do not edit.\n"
      "#include \"sim/calibrate/measure.h\"\n#include \"sim/cost/shipped.h\"\n\n"
      "namespace simcache::sim {\nnamespace {\n\n";
  std::vector<std::string> files;
  int k = 0;
  for (const auto& [rel, text] : {std::pair<const std::string&, const std::string&>{profile_rel, ptext},
                                  {mapping_rel, mtext},
                                  {rows_rel, rtext}}) {
    s += fmt::format("constexpr std::string_view kBytes{} =\n    {};\n\n", k, lit(text));
    files.push_back(fmt::format("{{{}, kBytes{}, {}}}", lit(rel), k++, lit(sha256_hex(text))));
  }
  std::string files_ref;
  s += array("ShippedFile", "kFiles", files, &files_ref) + "\n";

  // The profile.
  std::vector<std::string> params, events, corr, noise, noise_params;
  for (const CostParam& p : m.params) {
    params.push_back(fmt::format("{{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}",
                                 lit(p.name), lit(p.group), lit(p.unit), lit(p.source),
                                 lit(p.prior_source), lit(p.meaning), num(p.value),
                                 num(p.stderr_ns), num(p.prior), num(p.prior_sd),
                                 p.pinned ? "true" : "false", events.size(), p.events.size()));
    for (Event e : p.events)
      events.push_back(fmt::format("Event::{}", kEventInfo[static_cast<size_t>(e)].name));
  }
  const size_t np = m.params.size();
  const bool has_corr = !m.corr.empty();
  if (has_corr && m.corr.size() != np * np) return *error = "correlation matrix of a wrong size", false;
  for (size_t i = 0; i < np && has_corr; ++i)
    for (size_t j = i + 1; j < np; ++j) {
      const double c = m.corr[i * np + j];
      if (c != 0 || std::signbit(c)) corr.push_back(fmt::format("{{{}, {}, {}}}", i, j, num(c)));
    }
  auto add_noise = [&](const NoiseEntry& e) {
    noise.push_back(fmt::format("{{{}, {}, {}, {}, {}, {}}}", lit(e.scenario), lit(e.source),
                                num(e.round_cv), num(e.drift), noise_params.size(),
                                e.params.size()));
    for (const auto& [key, v] : e.params)
      noise_params.push_back(fmt::format("{{{}, {}}}", lit(key), i64(v)));
  };
  if (m.noise) {
    add_noise(m.noise->fallback);
    for (const NoiseEntry& e : m.noise->entries) add_noise(e);
  }
  std::string params_ref, events_ref, corr_ref, noise_ref, noise_params_ref;
  s += array("ShippedParam", "kParams", params, &params_ref) + "\n";
  s += array("Event", "kEvents", events, &events_ref) + "\n";
  s += array("ShippedCorr", "kCorr", corr, &corr_ref) + "\n";
  s += array("ShippedNoise", "kNoise", noise, &noise_ref) + "\n";
  s += array("ShippedKeyValue", "kNoiseParams", noise_params, &noise_params_ref) + "\n";
  s += fmt::format(
      "const ShippedProfile kProfiles[] = {{{{\n    {}, {}, {}, {},\n    {},\n    {}, {}, {}, {},\n"
      "    {}, {}, {}, {}, {}, {}, {}}}}};\n\n",
      lit(profile_rel), lit(m.name), lit(m.description), lit(m.statistic),
      lit(m.inadequacy_source),
      num(m.inadequacy), num(m.inadequacy_shape), num(m.drift), num(m.row_noise), params_ref,
      events_ref,
      has_corr ? "true" : "false", corr_ref, m.noise ? "true" : "false", noise_ref,
      noise_params_ref);

  // The measured points.
  std::vector<std::string> pts, pt_params, pt_ids;
  for (const MeasuredPoint& p : points) {
    pts.push_back(fmt::format("{{{}, {}, {}, {}, {}, {}, {}, {}}}", lit(p.scenario), lit(p.kernel),
                              lit(p.policy), num(p.value_ns), pt_params.size(), p.params.size(),
                              pt_ids.size(), p.ids.size()));
    for (const auto& [key, v] : p.params)
      pt_params.push_back(fmt::format("{{{}, {}}}", lit(key), i64(v)));
    for (const std::string& id : p.ids) pt_ids.push_back(lit(id));
  }
  std::string pts_ref, pt_params_ref, pt_ids_ref;
  s += array("ShippedPoint", "kPoints", pts, &pts_ref) + "\n";
  s += array("ShippedKeyValue", "kPointParams", pt_params, &pt_params_ref) + "\n";
  s += array("std::string_view", "kPointIds", pt_ids, &pt_ids_ref) + "\n";
  s += fmt::format("const ShippedPoints kShippedPoints{{{}, {}, {}}};\n\n", pts_ref, pt_params_ref,
                   pt_ids_ref);

  s += fmt::format(
      "}}  // namespace\n\n"
      "std::span<const ShippedFile> generated_shipped_files() {{ return {}; }}\n"
      "std::span<const ShippedProfile> generated_shipped_profiles() {{ return kProfiles; }}\n"
      "const ShippedPoints* generated_shipped_points() {{ return &kShippedPoints; }}\n\n"
      "}}  // namespace simcache::sim\n",
      files_ref);
  *out = std::move(s);
  return true;
}

}  // namespace
}  // namespace simcache::sim

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: gen_shipped DATA_DIR OUT.cc\n");
    return 2;
  }
  std::string text, error, old, ignored;
  if (!simcache::sim::generate(argv[1], &text, &error)) {
    std::fprintf(stderr, "gen_shipped: %s\n", error.c_str());
    return 2;
  }
  // Unchanged text is not rewritten: the build (ninja's restat) then
  // recompiles nothing after a library change that leaves the data alone.
  if (simcache::sim::read_input(argv[2], "the generated file", &old, &ignored) && old == text)
    return 0;
  if (!simcache::sim::write_file_atomic(argv[2], text, &error)) {
    std::fprintf(stderr, "gen_shipped: %s\n", error.c_str());
    return 2;
  }
  return 0;
}
