// The reference (reference.h): rows scaled by the program run beside them.
#include "sim/calibrate/reference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "sim/calibrate/calibrate.h"
#include "sim/cost/toml_reader.h"

namespace simcache::sim {
namespace {

constexpr std::string_view kPaired = "paired round by round with anchor ";
constexpr std::string_view kAnchorOf = "anchor of ";
constexpr std::string_view kRoundByRound = ", round by round";

// The anchor a row names, or nullopt; *twice when it names more than one.
std::optional<std::string> paired_with(const std::string& note, bool* twice) {
  std::optional<std::string> id;
  for (std::string_view f : note_fields(note))
    if (f.substr(0, kPaired.size()) == kPaired) {
      if (id) *twice = true;
      id = std::string(f.substr(kPaired.size()));
    }
  return id;
}

// The partner an anchor's note names ("anchor of P, round by round"), or
// nullopt for a row that is no anchor.
std::optional<std::string> anchor_partner(const std::string& note) {
  for (std::string_view f : note_fields(note))
    if (f.substr(0, kAnchorOf.size()) == kAnchorOf && f.size() > kRoundByRound.size() &&
        f.substr(f.size() - kRoundByRound.size()) == kRoundByRound)
      return std::string(f.substr(kAnchorOf.size(), f.size() - kAnchorOf.size() - kRoundByRound.size()));
  return std::nullopt;
}

// An id without the "@K" read_sittings() appends to an id an earlier
// file used.
std::string bare_id(const std::string& id) {
  const size_t at = id.rfind('@');
  if (at == std::string::npos || at + 1 == id.size() ||
      !std::all_of(id.begin() + static_cast<std::ptrdiff_t>(at) + 1, id.end(),
                   [](char c) { return c >= '0' && c <= '9'; }))
    return id;
  return id.substr(0, at);
}

// `row_id` names `named` as written in its file (perhaps renamed "@K").
bool same_id(const std::string& row_id, const std::string& named) {
  return row_id == named || bare_id(row_id) == named;
}

// The note with its field starting `name ` replaced by "name X%" (X
// given as a fraction); added when it has none.
std::string with_figure(const std::string& note, const std::string& name, double x) {
  const std::string figure = fmt::format("{} {:.6f}%", name, x * 100);
  std::string out;
  bool done = false;
  for (std::string_view f : note_fields(note)) {
    if (!out.empty()) out += "; ";
    if (!done && f.substr(0, name.size() + 1) == name + " " && f.back() == '%')
      out += figure, done = true;
    else
      out += f;
  }
  if (!done) out += (out.empty() ? "" : "; ") + figure;
  return out;
}

// The kit's "ratio to anchor ns round by round: mean A, median B, se C%,
// max group CV D%, max role drift E%": each round of the row (its unit)
// over the anchor's round before it (ns per its operation).
struct Ratio {
  double mean = 0, median = 0, se = 0, cv = 0, drift = 0;  // se, cv, drift as fractions
};
constexpr std::string_view kRatio = "ratio to anchor ns round by round: ";

// 0: the note has no ratio; 1: read; -1: malformed (error set).
int read_ratio(const MappedRow& m, Ratio* out, std::string* error) {
  for (std::string_view f : note_fields(m.row.note)) {
    if (f.substr(0, kRatio.size()) != kRatio) continue;
    f.remove_prefix(kRatio.size());
    int seen = 0;
    while (!f.empty()) {
      const size_t comma = f.find(',');
      std::string_view item = f.substr(0, comma);
      f = comma == std::string_view::npos ? std::string_view() : f.substr(comma + 1);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      const size_t sp = item.rfind(' ');
      if (sp == std::string_view::npos) break;
      const std::string_view name = item.substr(0, sp);
      std::string_view num = item.substr(sp + 1);
      const bool pct = !num.empty() && num.back() == '%';
      if (pct) num.remove_suffix(1);
      double v = 0;
      if (!parse_value(num, &v) || !(v >= 0) || (!pct && !(v > 0))) break;
      if (name == "mean" && !pct) out->mean = v, seen |= 1;
      else if (name == "median" && !pct) out->median = v, seen |= 2;
      else if (name == "se" && pct) out->se = v / 100, seen |= 4;
      else if (name == "max group CV" && pct) out->cv = v / 100, seen |= 8;
      else if (name == "max role drift" && pct) out->drift = v / 100, seen |= 16;
      else break;
    }
    if (seen == 31) return 1;
    *error = fmt::format("{}: note: the ratio to its anchor is not \"{}mean A, median B, se C%, "
                         "max group CV D%, max role drift E%\" (row {})",
                         m.row.where("note"), kRatio, escape_line(m.row.id));
    return -1;
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string ns(double v) { return fmt::format("{:.3f} ns", v); }

std::string program_of(const MappedRow& r, const FitSettings& fit) {
  std::string s = r.scenario;
  Params p = shape_params(r, fit);
  for (const std::string& k : fit.condition_params) p.erase(k);
  for (const auto& [k, v] : p) s += fmt::format(" {}={}", k, v);
  return s + " on " + r.kernel;
}

// The twin parameters and the condition parameters, which twins may
// also differ in, as one list.
std::vector<std::string> twin_free(const FitSettings& fit) {
  std::vector<std::string> k = fit.twin_params;
  k.insert(k.end(), fit.condition_params.begin(), fit.condition_params.end());
  return k;
}

std::string twin_names(const FitSettings& fit) {
  std::string s;
  for (const std::string& k : fit.twin_params) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// One program apart from the twin parameters, and different in one of
// them: a row and its twin (an anchor of the same configuration is a
// reference, whatever its program).
bool is_twin(const MappedRow& a, const MappedRow& b, const FitSettings& fit) {
  if (fit.twin_params.empty() || a.scenario != b.scenario || a.kernel != b.kernel ||
      a.policy != b.policy || a.row.metric != b.row.metric)
    return false;
  Params pa = shape_params(a, fit), pb = shape_params(b, fit);
  bool differ = false;
  for (const std::string& k : fit.twin_params) {
    const auto x = pa.find(k), y = pb.find(k);
    differ |= (x == pa.end()) != (y == pb.end()) || (x != pa.end() && x->second != y->second);
  }
  for (const std::string& k : twin_free(fit)) pa.erase(k), pb.erase(k);
  return differ && pa == pb;
}

}  // namespace

std::string ReferenceScaling::twin_line(bool effects) const {
  if (twins == 0) return "";
  return fmt::format(
      "the twins: {} row{} measured round by round beside the same program in another {}, {}, "
      "neither scaled{} (docs/measure.md, \"Charged and uncharged\")\n",
      twins, twins == 1 ? "" : "s", twin_params,
      effects ? "each read as an effect against it"
      : scaled
          ? "each fitted as its ratio to its anchor (the pair's level left free beside rows "
            "scaled by a reference)"
          : "each fitted at its anchor's figure times that ratio, the pair sharing one level",
      twin_phases ? fmt::format("; {} phase row{} of twins left out (their ratio is to the "
                                "whole program)",
                                twin_phases, twin_phases == 1 ? "" : "s")
                  : "");
}

std::string ReferenceScaling::line(const std::string& from_what) const {
  if (references == 0) return "";
  return fmt::format(
      "the reference: {} row{} measured round by round beside {} ({} reading{} from {} to {}), "
      "each scaled by {} / its reference's reading ({}){} (docs/measure.md, \"The reference\")\n",
      scaled, scaled == 1 ? "" : "s", program, references, references == 1 ? "" : "s",
      ns(lo_ns), ns(hi_ns), ns(typical_ns),
      given ? from_what : "the median of these readings",
      unpaired ? fmt::format("; {} row{} without one, as measured", unpaired,
                             unpaired == 1 ? "" : "s")
               : "");
}

bool apply_reference(std::vector<MappedRow>* rows, const FitSettings& fit, RowStatistic statistic,
                     double typical_ns, const std::string& expected_program,
                     std::vector<std::string>* skipped, ReferenceScaling* out,
                     std::string* error) {
  *out = ReferenceScaling{};
  const size_t n = rows->size();
  std::vector<bool> ref(n), drop(n);
  std::vector<size_t> refs;
  for (size_t i = 0; i < n; ++i)
    if (anchor_partner((*rows)[i].row.note)) ref[i] = true, refs.push_back(i);
  // Each paired row's anchor (n: none named; n + 1: named, not found).
  std::vector<size_t> anchor_of(n, n);
  std::vector<bool> used(n);
  for (size_t i = 0; i < n; ++i) {
    if (ref[i]) continue;
    const MappedRow& m = (*rows)[i];
    bool twice = false;
    const std::optional<std::string> anchor = paired_with(m.row.note, &twice);
    if (!anchor) continue;
    if (twice)
      return *error = fmt::format("{}: note: names two anchors (row {})", m.row.where("note"),
                                  escape_line(m.row.id)),
             false;
    anchor_of[i] = n + 1;
    for (size_t j : refs)
      if ((*rows)[j].row.file == m.row.file && same_id((*rows)[j].row.id, *anchor))
        anchor_of[i] = j, used[j] = true;
    if (anchor_of[i] != n + 1) continue;
    // Its anchor is not among the rows: an error, or with --skip-unmapped
    // (the anchor's row skipped) the row is left out with it.
    const std::string why = fmt::format(
        "{}: note: its anchor '{}' is not {} row of {} (row {})", m.row.where("note"),
        escape_line(*anchor), refs.empty() ? "a" : "an anchor", escape_line(m.row.file),
        escape_line(m.row.id));
    if (!skipped) return *error = why, false;
    skipped->push_back(why + ": left out");
    drop[i] = true;
  }
  // An anchor no row names: a lifecycle anchor's phase rows (its id and
  // "-reg" or "-fill", "@K" where read_sittings renamed them, the same
  // partner in the note) are set aside with it; any other is an error, or
  // with --skip-unmapped (its row skipped) left out.
  for (size_t j : refs) {
    if (used[j]) continue;
    const MappedRow& r = (*rows)[j];
    const std::string id = bare_id(r.row.id);
    const bool phase = std::any_of(refs.begin(), refs.end(), [&](size_t k) {
      const MappedRow& a = (*rows)[k];
      const std::string base = bare_id(a.row.id);
      return used[k] && a.row.file == r.row.file && anchor_partner(a.row.note) ==
                                                        anchor_partner(r.row.note) &&
             (id == base + "-reg" || id == base + "-fill");
    });
    if (phase) continue;
    const std::string why =
        fmt::format("{}: note: an anchor no row of its file is paired with (row {})",
                    r.row.where("note"), escape_line(r.row.id));
    if (!skipped) return *error = why, false;
    skipped->push_back(why + ": left out");
  }
  // Twins: a row and its anchor one program apart from the twin
  // parameters, in which they differ (FitSettings::twin_params). The row
  // becomes an effect against its anchor; neither is scaled.
  std::vector<bool> twin(n), twin_anchor(n);
  for (size_t i = 0; i < n; ++i)
    if (anchor_of[i] < n && is_twin((*rows)[i], (*rows)[anchor_of[i]], fit))
      twin[i] = true, twin_anchor[anchor_of[i]] = true, out->twin_params = twin_names(fit);
  std::vector<size_t> readers;  // the anchors rows are scaled by
  for (size_t j : refs)
    if (used[j] && !twin_anchor[j]) readers.push_back(j);
  if (!readers.empty()) {
    // One reference program for every row, the one a profile or the
    // fitted rows were scaled by where given.
    const MappedRow& first = (*rows)[readers[0]];
    out->program = program_of(first, fit);
    if (!expected_program.empty() && expected_program != out->program)
      return *error = fmt::format(
                 "{}: note: this anchor runs {}; the rows it is compared with were scaled by {}: "
                 "a reading of one program does not scale the other's",
                 first.row.where("note"), escape_line(out->program), escape_line(expected_program)),
             false;
    std::vector<double> readings;
    for (size_t j : readers) {
      const MappedRow& r = (*rows)[j];
      if (program_of(r, fit) != out->program || r.row.metric != first.row.metric)
        return *error = fmt::format(
                   "{}: note: this anchor runs {}, the first ({} on line {}) ran {}: the rows of "
                   "one set are scaled by one reference program",
                   r.row.where("note"), escape_line(program_of(r, fit)),
                   escape_line(first.row.id), first.row.line, out->program),
               false;
      readings.push_back(r.value_ns);
    }
    out->references = readers.size();
    out->lo_ns = *std::min_element(readings.begin(), readings.end());
    out->hi_ns = *std::max_element(readings.begin(), readings.end());
    out->given = typical_ns > 0;
    out->typical_ns = out->given ? typical_ns : median(readings);
  }
  for (size_t i = 0; i < n; ++i) {
    if (ref[i] || drop[i]) continue;
    MappedRow& m = (*rows)[i];
    if (anchor_of[i] == n) {
      out->unpaired += !readers.empty();
      continue;
    }
    const MappedRow& r = (*rows)[anchor_of[i]];
    Ratio ratio;
    const int has = read_ratio(m, &ratio, error);
    if (has < 0) return false;
    if (twin[i]) {
      // The ratio round by round, or the two figures' (the fastest
      // rounds, or a note without the ratio) with their errors added.
      if (has && statistic != RowStatistic::fastest) {
        // The kit's ratio is the row in its unit over the anchor in ns.
        m.twin_ratio =
            (statistic == RowStatistic::median ? ratio.median : ratio.mean) * m.unit_ns;
        m.twin_se = ratio.se;
        m.twin_round_by_round = true;
      } else {
        m.twin_ratio = m.value_ns / r.value_ns;
        m.twin_se = std::hypot(measurement_spread(m.row.note, measured_rounds(m)),
                               measurement_spread(r.row.note, measured_rounds(r)));
      }
      ++out->twins;
      continue;
    }
    if (twin_anchor[anchor_of[i]]) {
      // A phase row of a twin pair (a lifecycle's registration or fill,
      // whose ratio is to the whole anchor program's round): left out,
      // as the anchor's own phase rows are.
      drop[i] = true;
      ++out->twin_phases;
      continue;
    }
    if (has && statistic != RowStatistic::fastest) {
      // Round by round: each of the row's rounds over the anchor's before
      // it, so that a spell starting between two rounds moves both; the
      // row's spread becomes the ratio's.
      m.row.value = (statistic == RowStatistic::median ? ratio.median : ratio.mean) *
                    out->typical_ns;
      m.value_ns = m.row.value * m.unit_ns;
      m.row.note = with_figure(with_figure(with_figure(m.row.note, "se", ratio.se),
                                           "max group CV", ratio.cv),
                               "max role drift", ratio.drift);
    } else {
      // The row's figure over its anchor's (the fastest rounds, or a note
      // without the ratio): their errors add in quadrature.
      const double scale = out->typical_ns / r.value_ns;
      m.value_ns *= scale;
      m.row.value *= scale;
      const double se = measurement_spread(m.row.note, measured_rounds(m));
      const double se_ref = measurement_spread(r.row.note, measured_rounds(r));
      if (se_ref > 0)
        m.row.note = with_figure(m.row.note, "se", std::min(1.0, std::hypot(se, se_ref)));
    }
    if (const std::string why = out_of_range(m.row, "note", m.row.value, m.unit_ns); !why.empty())
      return *error = why, false;
    m.reference_scaled = true;
    ++out->scaled;
  }
  // The anchors (but twins) and the rows left out go; effects keep their
  // bases, and a twin's one base is its anchor.
  std::vector<size_t> new_index(n, SIZE_MAX);
  std::vector<MappedRow> kept;
  for (size_t i = 0; i < n; ++i)
    if ((!ref[i] || twin_anchor[i]) && !drop[i])
      new_index[i] = kept.size(), kept.push_back(std::move((*rows)[i]));
  remap_bases(&kept, new_index);
  for (size_t i = 0; i < n; ++i)
    if (twin[i] && new_index[i] != SIZE_MAX) {
      MappedRow& m = kept[new_index[i]];
      m.base = false;
      m.bases = {new_index[anchor_of[i]]};
      if (new_index[anchor_of[i]] != SIZE_MAX) kept[new_index[anchor_of[i]]].twin_anchor = true;
    }
  *rows = std::move(kept);
  return true;
}

}  // namespace simcache::sim
