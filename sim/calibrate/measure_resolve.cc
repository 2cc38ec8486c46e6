// Resolving one measured row through the mapping rules.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include "sim/calibrate/measure.h"
#include "sim/cost/toml_reader.h"
#include "sim/run/engine.h"
#include "sim/run/scenario.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"

namespace simcache::sim {
namespace {
// No measured per-operation time comes near an hour; a larger value is a
// unit or typing error (and 1e308 ms would overflow to infinity). Nor
// below a nanosecond's billionth: a relative error against 1e-320 is
// infinite.
constexpr double kMaxValueNs = 3.6e12;
constexpr double kMinValueNs = 1e-9;
}  // namespace

// Rows moved to a new list: each kept row's bases at their new places
// (`new_index[old]`, SIZE_MAX for a row not kept); with a base not kept,
// the effect is not compared rather than compared with fewer bases.
void remap_bases(std::vector<MappedRow>* kept, const std::vector<size_t>& new_index) {
  for (MappedRow& r : *kept) {
    std::vector<size_t> bases;
    for (size_t b : r.bases)
      if (b < new_index.size() && new_index[b] != SIZE_MAX) bases.push_back(new_index[b]);
    r.bases = bases.size() == r.bases.size() ? bases : std::vector<size_t>{};
  }
}

std::vector<std::string_view> note_fields(std::string_view note) {
  std::vector<std::string_view> out;
  while (!note.empty()) {
    const size_t semi = note.find(';');
    std::string_view f = note.substr(0, semi);
    note = semi == std::string_view::npos ? std::string_view() : note.substr(semi + 1);
    while (!f.empty() && f.front() == ' ') f.remove_prefix(1);
    while (!f.empty() && f.back() == ' ') f.remove_suffix(1);
    out.push_back(f);
  }
  return out;
}

std::string out_of_range(const MeasuredRow& r, const char* column, double v, double scale) {
  const double ns = v * scale;
  if (std::isfinite(ns) && ns <= kMaxValueNs && ns >= kMinValueNs) return "";
  return fmt::format("{}: {}: {} {} is {} ns, not a measurement", r.where(column), column, v,
                     escape_line(r.unit),
                     ns >= kMinValueNs ? fmt::format("more than {:g} (an hour)", kMaxValueNs)
                                       : fmt::format("less than {:g}", kMinValueNs));
}

namespace {

// "ns/install" -> (1, "install"); "us" -> (1000, ""). False if unknown.
bool parse_unit(const std::string& u, double* scale, std::string* op, std::string* unit) {
  const size_t slash = u.find('/');
  *unit = u.substr(0, slash);
  *op = slash == std::string::npos ? "" : u.substr(slash + 1);
  if (*unit == "ns")
    *scale = 1;
  else if (*unit == "us")
    *scale = 1e3;
  else if (*unit == "ms")
    *scale = 1e6;
  else
    return false;
  return slash == std::string::npos || !op->empty();
}

using Groups = std::vector<std::optional<std::string>>;

bool apply_pattern(const ShapeRule& s, const ShapeRule::Pattern& p, const Groups& m,
                   const MeasuredRow& r, Params* out, std::string* error) {
  for (size_t i = 0; i < p.captures.size(); ++i) {
    const std::string& name = p.captures[i];
    if (name.empty() || i + 1 >= m.size() || !m[i + 1]) continue;
    const std::string& text = *m[i + 1];
    auto vit = s.values.find(name);
    if (vit != s.values.end()) {
      auto w = vit->second.find(text);
      if (w == vit->second.end()) {
        *error = fmt::format("{}: shape: '{}' is not a known word for parameter '{}' (rule '{}')",
                             r.where("shape"), escape_line(text), name, s.name);
        return false;
      }
      (*out)[name] = w->second;
      continue;
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size()) {
      *error = fmt::format("{}: shape: '{}' captured for '{}' is not an integer (rule '{}')",
                           r.where("shape"), escape_line(text), name, s.name);
      return false;
    }
    (*out)[name] = v;
  }
  return true;
}

const ShapeRule* find_shape(const Mapping& m, const MeasuredRow& r, Groups* match,
                            std::string* error) {
  bool workload_known = false, kind_known = false;
  for (const ShapeRule& s : m.shapes) {
    if (!regex_search(s.workload, r.workload)) continue;
    workload_known = true;
    if (s.kind != r.kind) continue;
    kind_known = true;
    if (regex_search(s.shape.re, r.shape, match)) return &s;
  }
  if (!workload_known)
    *error = fmt::format("{}: workload: no [[shape]] rule of {} covers workload '{}'",
                         r.where("workload"), m.path, escape_line(r.workload));
  else if (!kind_known)
    *error = fmt::format("{}: kind: no [[shape]] rule of {} covers kind '{}' of workload '{}'",
                         r.where("kind"), m.path, escape_line(r.kind), escape_line(r.workload));
  else
    *error = fmt::format("{}: shape: no [[shape]] rule of {} matches this shape of '{}'",
                         r.where("shape"), m.path, escape_line(r.workload));
  return nullptr;
}

const VariantRule* find_variant(const Mapping& m, const MeasuredRow& r, Groups* match,
                                std::string* error) {
  for (const VariantRule& v : m.variants) {
    if (v.workload && !regex_search(v.workload, r.workload)) continue;
    if (regex_search(v.match, r.variant, match)) return &v;
  }
  *error = fmt::format("{}: variant: no [[variant]] rule of {} matches '{}'", r.where("variant"),
                       m.path, escape_line(r.variant));
  return nullptr;
}

// "v$1" with match "v6.18" -> "v6.18".
std::string substitute(const std::string& tmpl, const Groups& m) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] == '$' && i + 1 < tmpl.size() &&
        std::isdigit(static_cast<unsigned char>(tmpl[i + 1]))) {
      const size_t g = static_cast<size_t>(tmpl[++i] - '0');
      if (g < m.size() && m[g]) out += *m[g];
    } else {
      out += tmpl[i];
    }
  }
  return out;
}

bool resolve_variant(const Mapping& m, const MeasuredRow& r, MappedRow* out, std::string* error) {
  Groups vm;
  const VariantRule* v = find_variant(m, r, &vm, error);
  if (!v) return false;
  out->kernel = substitute(v->kernel, vm);
  out->policy = v->policy;
  out->base = v->base;
  out->against = v->against;
  out->against_text = v->against_text;
  out->variant_line = v->line;
  std::string err;
  const iou::KernelProfile* prof = iou::profile_by_name(out->kernel, &err);
  if (!prof) {
    *error = fmt::format("{}: variant: rule on line {} of {}: {}", r.where("variant"), v->line,
                         m.path, escape_line(err));
    return false;
  }
  iou::PolicySet ps;
  MmConfig mc;
  if (!iou::parse_policies(out->policy, prof, &ps, &mc, &err)) {
    *error = fmt::format("{}: variant: policy '{}' on kernel {}: {}", r.where("variant"),
                         out->policy, escape_line(out->kernel), escape_line(err));
    return false;
  }
  return true;
}

// The phase a metric names, for scenarios that time phases (lifecycle):
// "registration time ...", "fill ...", "removal ...", "refill ...". An
// "interval" (registration or removal start to fill end) is the whole.
std::string metric_phase(const std::string& scenario, const std::string& metric) {
  if (scenario != "lifecycle") return "";
  static const Regex interval = compile_regex(R"(\binterval\b)", nullptr);
  static const Regex phase = compile_regex(R"(^\s*(registration|removal|refill|fill)\b)", nullptr);
  std::vector<std::optional<std::string>> m;
  if (regex_search(interval, metric) || !regex_search(phase, metric, &m) || !m[1]) return "";
  std::string p = *m[1];
  for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return p;
}

// Why a row is not a time the model can predict, or "".
std::string not_a_time(const MeasuredRow& r) {
  // A word unit ends at a word boundary; "%" is not a word character, so
  // \b after it would need one to follow.
  static const Regex ratio = compile_regex(R"(^\s*(?:(?:ratio|percent|x|pp)\b|%))", nullptr);
  if (regex_search(ratio, r.unit))
    return fmt::format("{}: unit: '{}' is a ratio, not a time; row {} skipped", r.where("unit"),
                       escape_line(r.unit), r.id);
  if (r.value <= 0)
    return fmt::format("{}: value: {} is not positive (a difference, not a time); row {} skipped",
                       r.where("value"), r.value, r.id);
  return "";
}

}  // namespace

bool map_row(const Mapping& m, const MeasuredRow& r, MappedRow* out, std::string* error) {
  Groups sm;
  const ShapeRule* s = find_shape(m, r, &sm, error);
  if (!s) return false;
  MappedRow mr;
  mr.row = r;
  mr.scenario = s->scenario;
  mr.params = s->defaults;
  if (!apply_pattern(*s, s->shape, sm, r, &mr.params, error)) return false;
  // The row's group is its shape less what it recorded of the machine's
  // state (an extra pattern whose captures are all condition_params): two
  // readings of that state are one configuration measured twice.
  std::string group_shape = r.shape;
  for (const ShapeRule::Pattern& p : s->extra) {
    Groups em;
    if (!regex_search(p.re, r.shape, &em)) continue;
    if (!apply_pattern(*s, p, em, r, &mr.params, error)) return false;
    const bool condition =
        !p.captures.empty() &&
        std::all_of(p.captures.begin(), p.captures.end(), [&](const std::string& c) {
          return std::find(m.fit.condition_params.begin(), m.fit.condition_params.end(), c) !=
                 m.fit.condition_params.end();
        });
    if (condition && em[0] && !em[0]->empty())
      if (const size_t at = group_shape.find(*em[0]); at != std::string::npos)
        group_shape.erase(at, em[0]->size());
  }
  for (const auto& [k, v] : s->set) mr.params[k] = v;
  double scale = 1;
  std::string op;
  if (!parse_unit(r.unit, &scale, &op, &mr.time_unit)) {
    *error = fmt::format("{}: unit: '{}' is not ns, us or ms (optionally /<operation>)",
                         r.where("unit"), escape_line(r.unit));
    return false;
  }
  if (!s->op.empty() && !op.empty() && op != s->op) {
    *error = fmt::format("{}: unit: '{}' is per {}, rule '{}' measures per {}", r.where("unit"),
                         escape_line(r.unit), escape_line(op), s->name, s->op);
    return false;
  }
  mr.value_ns = r.value * scale;
  mr.unit_ns = scale;
  if (std::string why = out_of_range(r, "value", r.value, scale); !why.empty()) {
    *error = std::move(why);
    return false;
  }
  std::vector<std::pair<std::string, std::string>> sets;
  for (const auto& [k, v] : mr.params) sets.emplace_back(k, std::to_string(v));
  Params resolved;
  std::string err;
  ScenarioInfo info = *ScenarioRegistry::get().find(s->scenario);
  for (const ParamSpec& p : machine_params()) info.params.push_back(p);  // cpus=2, ...
  if (!resolve_params(info, {}, sets, &resolved, &err) || !check_machine(resolved, &err)) {
    *error = fmt::format("{}: shape: rule '{}': {}", r.where("shape"), s->name, err);
    return false;
  }
  if (!resolve_variant(m, r, &mr, error)) return false;
  mr.group = r.workload + '\x1f' + group_shape + '\x1f' + r.metric + '\x1f' + r.unit;
  mr.phase = metric_phase(mr.scenario, r.metric);
  *out = std::move(mr);
  return true;
}

bool parse_row_statistic(std::string_view s, RowStatistic* out) {
  for (RowStatistic k : {RowStatistic::mean, RowStatistic::median, RowStatistic::fastest})
    if (s == row_statistic_name(k)) return *out = k, true;
  return false;
}

std::string_view row_statistic_name(RowStatistic s) {
  switch (s) {
    case RowStatistic::median: return "median";
    case RowStatistic::fastest: return "fastest";
    case RowStatistic::mean: break;
  }
  return "mean";
}

namespace {
// One mapped row's `s` figure (not the mean) read from its note into its
// time; apply_row_statistic() of one row.
bool read_row_statistic(RowStatistic s, MappedRow* row, std::string* error) {
  // The note's fields are "; "-separated; the kit writes "median X" and
  // "fastest Y" (measure/, docs/measure.md).
  const std::string_view name = row_statistic_name(s);
  const std::string key = std::string(name) + " ";
  MappedRow& m = *row;
  const MeasuredRow& r = m.row;
  std::string_view text;
  int found = 0;
  for (std::string_view field : note_fields(r.note))
    if (field.substr(0, key.size()) == key) text = field.substr(key.size()), ++found;
  if (found != 1)
    return *error = fmt::format(
               "{}: note: {} '{}' figures (--statistic {} reads the kit's rows, whose note "
               "gives one median and one fastest round; row {} {})",
               r.where("note"), found ? "two" : "no", name, name, escape_line(r.id),
               found ? "names it twice" : "has the mean only"),
           false;
  double v = 0;
  if (!parse_value(text, &v) || !(v > 0))
    return *error = fmt::format("{}: note: {} '{}' is not a positive number (row {})",
                                r.where("note"), name, escape_line(std::string(text)),
                                escape_line(r.id)),
           false;
  if (std::string why = out_of_range(r, "note", v, m.unit_ns); !why.empty())
    return *error = std::move(why), false;
  m.row.value = v;
  m.value_ns = v * m.unit_ns;
  return true;
}
}  // namespace

bool apply_row_statistic(RowStatistic s, std::vector<MappedRow>* rows, std::string* error) {
  if (s == RowStatistic::mean) return true;
  for (MappedRow& m : *rows)
    if (!read_row_statistic(s, &m, error)) return false;
  return true;
}

// Each effect's base, by the pattern its variant rule names.
bool resolve_bases(const Mapping& m, std::vector<MappedRow>* rows, std::string* error) {
  for (size_t i = 0; i < rows->size(); ++i) {
    MappedRow& r = (*rows)[i];
    r.bases.clear();
    if (r.base) continue;
    for (size_t j = 0; j < rows->size(); ++j)
      if (j != i && (*rows)[j].group == r.group && (*rows)[j].row.file == r.row.file &&
          regex_search(r.against, (*rows)[j].row.variant))
        r.bases.push_back(j);
    if (r.bases.empty()) {
      *error = fmt::format(
          "{}: variant: no row of the same workload, shape (less its recorded conditions), "
          "metric and unit matches its base "
          "'{}' (rule on line {} of {})",
          r.row.where("variant"), escape_line(r.against_text), r.variant_line, m.path);
      return false;
    }
  }
  return true;
}

constexpr size_t kMaxMessage = 4000;

bool map_rows(const Mapping& m, const std::vector<MeasuredRow>& rows, std::vector<MappedRow>* out,
              std::vector<std::string>* skipped, std::string* error,
              std::vector<std::string>* not_timed) {
  out->clear();
  for (const MeasuredRow& r : rows) {
    MappedRow mr;
    std::string err;
    // The messages quote the row's fields: escaped here, once, so a
    // control character in a field cannot break the one-line rule.
    if (const std::string why = not_a_time(r); !why.empty()) {
      if (std::vector<std::string>* to = not_timed ? not_timed : skipped)
        to->push_back(escape_line(why, kMaxMessage));
      continue;
    }
    if (map_row(m, r, &mr, &err)) {
      out->push_back(std::move(mr));
    } else if (skipped) {
      skipped->push_back(escape_line(err, kMaxMessage));
    } else {
      *error = escape_line(err, kMaxMessage);
      return false;
    }
  }
  if (out->empty()) {
    *error =
        rows.empty() ? "no measured rows" : fmt::format("{}: no row could be mapped", rows[0].file);
    return false;
  }
  if (!resolve_bases(m, out, error)) return *error = escape_line(*error, kMaxMessage), false;
  return true;
}

Params shape_params(const MappedRow& r, const FitSettings& fit) {
  Params p = r.params;
  for (const std::string& k : fit.repeat_params) p.erase(k);
  return p;
}

std::vector<MeasuredPoint> measured_points(const std::vector<MappedRow>& rows,
                                           const FitSettings& fit) {
  std::vector<MeasuredPoint> out;
  std::vector<size_t> n;
  for (const MappedRow& r : rows) {
    const Params sp = shape_params(r, fit);
    size_t i = 0;
    while (i < out.size() && !(out[i].scenario == r.scenario && out[i].params == sp &&
                               out[i].kernel == r.kernel && out[i].policy == r.policy))
      ++i;
    if (i == out.size()) {
      out.push_back({r.scenario, sp, r.kernel, r.policy, 0, {}});
      n.push_back(0);
    }
    out[i].value_ns += r.value_ns;
    out[i].ids.push_back(r.row.id);
    ++n[i];
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].value_ns /= static_cast<double>(n[i]);
  return out;
}

std::vector<MeasuredPoint> report_points(const Mapping& map, const std::vector<MeasuredRow>& rows,
                                         RowStatistic s) {
  std::vector<MappedRow> mapped;
  std::vector<std::string> skipped;
  std::string ignored;
  map_rows(map, rows, &mapped, &skipped, &ignored);
  if (s != RowStatistic::mean)
    std::erase_if(mapped, [&](MappedRow& m) { return !read_row_statistic(s, &m, &ignored); });
  return measured_points(mapped, map.fit);
}

RowStatistic fitted_statistic(const CostModel& profile) {
  RowStatistic s = RowStatistic::mean;
  if (!profile.statistic.empty()) parse_row_statistic(profile.statistic, &s);  // checked on load
  return s;
}

bool shipped_report_points(std::vector<MeasuredPoint>* out) {
  if (!generated_shipped_points) return false;
  const ShippedPoints* s = generated_shipped_points();
  if (!s) return false;
  out->clear();
  out->reserve(s->points.size());
  for (const ShippedPoint& p : s->points) {
    MeasuredPoint m{std::string(p.scenario), {}, std::string(p.kernel), std::string(p.policy),
                    p.value_ns, {}};
    for (const ShippedKeyValue& kv : s->params.subspan(p.param_first, p.param_count))
      m.params.emplace(std::string(kv.key), kv.value);
    for (std::string_view id : s->ids.subspan(p.id_first, p.id_count)) m.ids.emplace_back(id);
    out->push_back(std::move(m));
  }
  return true;
}

}  // namespace simcache::sim
