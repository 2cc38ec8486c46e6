// Cost profiles as TOML: reading (strict, one-line errors naming file,
// line and field), writing, and finding the built-in ones.
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "sim/cost/cost.h"
#include "sim/cost/shipped.h"
#include "sim/cost/toml_reader.h"
#include <fmt/format.h>

namespace simcache::sim {
namespace {

namespace fs = std::filesystem;

// Error reporting against one file; a required string may not be empty.
struct Reader : TomlReader {
  Reader(std::string p, std::string* e) : TomlReader{std::move(p), e, true} {}
};

bool read_param(const Reader& r, const toml::table& t, size_t idx, CostParam* p) {
  std::string where = fmt::format("param[{}].", idx);
  if (!r.str(t, "name", where, true, &p->name)) return false;
  where = fmt::format("param '{}': ", p->name);
  if (!r.keys(t,
              {"name", "value", "unit", "events", "source", "group", "pinned", "stderr", "meaning",
               "prior", "prior_sd", "prior_source"},
              where))
    return false;
  if (!r.num(t, "value", where, true, 0, 1e12, &p->value)) return false;
  if (!r.str(t, "unit", where, true, &p->unit)) return false;
  if (p->unit.rfind("ns/", 0) != 0)
    return r.fail(t.get("unit"), where + "unit", "expected 'ns/<event unit>'");
  if (!r.str(t, "source", where, true, &p->source)) return false;
  if (!r.str(t, "group", where, false, &p->group)) return false;
  if (!r.str(t, "meaning", where, false, &p->meaning)) return false;
  if (!r.num(t, "stderr", where, false, 0, 1e12, &p->stderr_ns)) return false;
  if (!r.num(t, "prior", where, false, 0, 1e12, &p->prior)) return false;
  if (!r.num(t, "prior_sd", where, false, 0, 1e12, &p->prior_sd)) return false;
  if (!r.str(t, "prior_source", where, false, &p->prior_source)) return false;
  if (const toml::node* n = t.get("pinned")) {
    if (!n->is_boolean()) return r.fail(n, where + "pinned", "expected true or false");
    p->pinned = n->value<bool>().value_or(true);
  }
  const toml::node* ev = t.get("events");
  if (!ev) return r.fail(&t, where + "events", "missing");
  const toml::array* arr = ev->as_array();
  if (!arr || arr->empty())
    return r.fail(ev, where + "events", "expected a non-empty array of event names");
  for (const toml::node& e : *arr) {
    Event out;
    const std::string name = e.value<std::string>().value_or("");
    if (!e.is_string() || !event_by_name(name, &out))
      return r.fail(&e, where + "events",
                    fmt::format("'{}' is not an event of the tables of record", name));
    p->events.push_back(out);
  }
  return true;
}

bool read_noise_entry(const Reader& r, const toml::table& t, const std::string& where,
                      NoiseEntry* e) {
  if (!r.keys(t, {"scenario", "params", "round_cv", "drift", "source", "entry"}, where))
    return false;
  if (!r.num(t, "round_cv", where, true, 0, 1, &e->round_cv)) return false;
  if (!r.num(t, "drift", where, true, 0, 1, &e->drift)) return false;
  if (!r.str(t, "source", where, true, &e->source)) return false;
  if (!r.str(t, "scenario", where, false, &e->scenario)) return false;
  if (const toml::node* n = t.get("params")) {
    const toml::table* pt = n->as_table();
    if (!pt) return r.fail(n, where + "params", "expected a table of integers");
    for (const auto& [k, v] : *pt) {
      if (!v.is_integer())
        return r.fail(&v, where + "params." + std::string(k.str()), "expected an integer");
      e->params[std::string(k.str())] = v.value<int64_t>().value_or(0);
    }
  }
  return true;
}

bool read_noise(const Reader& r, const toml::node& n, NoiseModel* out) {
  const toml::table* t = n.as_table();
  if (!t) return r.fail(&n, "noise", "expected a table");
  if (!read_noise_entry(r, *t, "noise.", &out->fallback)) return false;
  if (!out->fallback.scenario.empty() || !out->fallback.params.empty())
    return r.fail(t, "noise", "the [noise] table itself applies to every scenario");
  const toml::node* en = t->get("entry");
  if (!en) return true;
  const toml::array* arr = en->as_array();
  if (!arr) return r.fail(en, "noise.entry", "expected [[noise.entry]] tables");
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* et = (*arr)[i].as_table();
    const std::string where = fmt::format("noise.entry[{}].", i);
    if (!et) return r.fail(&(*arr)[i], where, "expected a table");
    NoiseEntry e;
    if (!read_noise_entry(r, *et, where, &e)) return false;
    if (e.scenario.empty()) return r.fail(et, where + "scenario", "missing");
    out->entries.push_back(std::move(e));
  }
  return true;
}

// [correlation] x = { y = -0.93, z = 0.1 }: the posterior correlations of
// parameter x with the ones listed (each pair once).
bool read_correlations(const Reader& r, const toml::node& n, CostModel* m) {
  const toml::table* tbl = n.as_table();
  if (!tbl) return r.fail(&n, "correlation", "expected a [correlation] table");
  const size_t np = m->params.size();
  auto index = [&](std::string_view name) {
    for (size_t k = 0; k < np; ++k)
      if (m->params[k].name == name) return k;
    return np;
  };
  m->corr.assign(np * np, 0.0);
  for (size_t i = 0; i < np; ++i) m->corr[i * np + i] = 1;
  for (const auto& [ka, va] : *tbl) {
    const std::string where = "correlation." + std::string(ka.str());
    const size_t ia = index(ka.str());
    if (ia == np) return r.fail(&va, where, "not a parameter of this profile");
    const toml::table* row = va.as_table();
    if (!row) return r.fail(&va, where, "expected an inline table of correlations");
    for (const auto& [kb, vb] : *row) {
      const size_t ib = index(kb.str());
      const std::string w2 = where + "." + std::string(kb.str());
      if (ib == np || ib == ia) return r.fail(&vb, w2, "not another parameter of this profile");
      const std::optional<double> v = vb.value<double>();
      if (!vb.is_number() || !v || !(*v >= -1 && *v <= 1))
        return r.fail(&vb, w2, "expected a number in [-1, 1]");
      m->corr[ia * np + ib] = m->corr[ib * np + ia] = *v;
    }
  }
  return true;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20)
      out += fmt::format("\\u{:04x}", int(c));
    else
      out += c;
  }
  return out + "\"";
}

std::string number(double v) { return fmt::format("{:.6g}", v); }

std::string noise_toml(const NoiseEntry& e, bool fallback) {
  std::string out = fallback ? "\n[noise]\n" : "\n[[noise.entry]]\n";
  if (!fallback) {
    out += fmt::format("scenario = {}\n", quote(e.scenario));
    if (!e.params.empty()) {
      std::string ps;
      for (const auto& [k, v] : e.params)
        ps += fmt::format("{}{} = {}", ps.empty() ? "" : ", ", k, v);
      out += fmt::format("params = {{ {} }}\n", ps);
    }
  }
  out += fmt::format("round_cv = {}\ndrift = {}\nsource = {}\n", number(e.round_cv),
                     number(e.drift), quote(e.source));
  return out;
}

}  // namespace

bool parse_profile(std::string_view text, const std::string& path, CostModel* out,
                   std::string* error) {
  Reader r{path, error};
  toml::table tbl;
  if (!r.parse(text, &tbl)) return false;
  CostModel m;
  m.path = path;
  if (!r.keys(tbl,
              {"name", "description", "statistic", "reference", "reference_ns", "generated_by",
               "param", "noise", "correlation",
               "model_inadequacy", "model_inadequacy_shape", "model_drift", "model_row_noise",
               "model_inadequacy_source"},
              ""))
    return false;
  if (!r.str(tbl, "name", "", true, &m.name)) return false;
  if (!r.str(tbl, "description", "", false, &m.description)) return false;
  if (!r.str(tbl, "statistic", "", false, &m.statistic)) return false;
  if (tbl.get("statistic") && m.statistic != "mean" && m.statistic != "median" &&
      m.statistic != "fastest")
    return r.fail(tbl.get("statistic"), "statistic", "expected mean, median or fastest");
  if (m.statistic == "mean") m.statistic.clear();
  // The reference the fit scaled its rows to: both or neither.
  if (!r.str(tbl, "reference", "", false, &m.reference) ||
      !r.num(tbl, "reference_ns", "", false, 1e-3, 1e12, &m.reference_ns))
    return false;
  if (m.reference.empty() != (m.reference_ns == 0))
    return r.fail(tbl.get(m.reference.empty() ? "reference_ns" : "reference"),
                  m.reference.empty() ? "reference_ns" : "reference",
                  "reference and reference_ns go together (the program and its reading)");
  // The top-level error-model fractions, each optional, in [0, 1).
  for (const auto& [key, field] : {std::pair{"model_inadequacy", &m.inadequacy},
                                   std::pair{"model_inadequacy_shape", &m.inadequacy_shape},
                                   std::pair{"model_drift", &m.drift},
                                   std::pair{"model_row_noise", &m.row_noise}}) {
    const toml::node* in = tbl.get(key);
    if (!in) continue;
    const std::optional<double> v = in->value<double>();
    if (!in->is_number() || !v || !(*v >= 0 && *v < 1))
      return r.fail(in, key, "expected a fraction in [0, 1)");
    *field = *v;
  }
  if (!r.str(tbl, "model_inadequacy_source", "", false, &m.inadequacy_source)) return false;
  const toml::node* pn = tbl.get("param");
  const toml::array* arr = pn ? pn->as_array() : nullptr;
  if (!arr || arr->empty()) return r.fail(pn ? pn : &tbl, "param", "expected [[param]] tables");
  for (size_t i = 0; i < arr->size(); ++i) {
    const toml::table* t = (*arr)[i].as_table();
    if (!t) return r.fail(&(*arr)[i], fmt::format("param[{}]", i), "expected a table");
    CostParam p;
    if (!read_param(r, *t, i, &p)) return false;
    m.params.push_back(std::move(p));
  }
  if (const toml::node* cn = tbl.get("correlation"))
    if (!read_correlations(r, *cn, &m)) return false;
  if (const toml::node* nn = tbl.get("noise")) {
    NoiseModel nm;
    if (!read_noise(r, *nn, &nm)) return false;
    m.noise = std::move(nm);
  }
  std::string verr;
  if (!m.validate(&verr)) return r.fail(pn, "param", verr);
  *out = std::move(m);
  return true;
}

bool load_profile(const std::string& path, CostModel* out, std::string* error) {
  std::string text;
  bool had_bom = false;
  if (!read_input(path, "the profile", &text, error, 0, &had_bom)) return false;
  // A shipped profile's bytes: its compiled-in parse (sim/cost/shipped.h).
  if (const ShippedFile* f = shipped_match(text, had_bom); f && shipped_profile(f->rel, out)) {
    out->path = path;
    out->sha256 = std::string(f->sha256);
    return true;
  }
  return parse_profile(text, path, out, error);
}

std::string find_data_file(std::string_view rel) {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("SIMCACHE_DATA_DIR"); env && *env) dirs.emplace_back(env);
#ifdef SIMCACHE_DATA_DIR
  dirs.emplace_back(SIMCACHE_DATA_DIR);
#endif
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path().parent_path() / "data");
    dirs.push_back(exe.parent_path().parent_path() / "share" / "simcache");
  }
  for (const fs::path& d : dirs) {
    const fs::path p = d / rel;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

// A spec that looks like a path (has a '/' or ends in .toml) is a file;
// anything else is a name looked up only in the data directory, so a file
// of that name in the working directory is never picked up by accident.
bool resolve_profile(const std::string& spec, CostModel* out, std::string* error) {
  if (spec.find('/') != std::string::npos || spec.ends_with(".toml"))
    return load_profile(spec, out, error);
  const bool name_ok = !spec.empty() && spec.size() <= 64 &&
                       std::all_of(spec.begin(), spec.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                                c == '_' || c == '.';
                       });
  const std::string path = name_ok ? find_data_file("profiles/" + spec + ".toml") : "";
  if (path.empty()) {
    *error = fmt::format(
        "--profile '{}': no profile of that name in the data directory "
        "(a file must contain '/' or end in .toml, e.g. ./{}.toml)",
        escape_line(spec), escape_line(spec));
    return false;
  }
  return load_profile(path, out, error);
}

std::string profile_toml(const CostModel& m, const std::string& header) {
  std::string out;
  for (const std::string& line : split_words(header, '\n'))
    out += line.empty() ? "#\n" : fmt::format("# {}\n", line);
  out += fmt::format("\nname = {}\n", quote(m.name));
  if (!m.description.empty()) out += fmt::format("description = {}\n", quote(m.description));
  if (!m.statistic.empty()) out += fmt::format("statistic = {}\n", quote(m.statistic));
  if (!m.reference.empty())
    out += fmt::format("reference = {}\nreference_ns = {:.9g}\n", quote(m.reference),
                       m.reference_ns);
  if (m.inadequacy > 0 || m.inadequacy_shape > 0 || m.drift > 0 || m.row_noise > 0) {
    out += fmt::format("model_inadequacy = {:.9g}\nmodel_inadequacy_shape = {:.9g}\n",
                       m.inadequacy, m.inadequacy_shape);
    if (m.drift > 0) out += fmt::format("model_drift = {:.9g}\n", m.drift);
    if (m.row_noise > 0) out += fmt::format("model_row_noise = {:.9g}\n", m.row_noise);
    if (!m.inadequacy_source.empty())
      out += fmt::format("model_inadequacy_source = {}\n", quote(m.inadequacy_source));
  }
  for (const CostParam& p : m.params) {
    out += fmt::format("\n[[param]]\nname = {}\nvalue = {}\nunit = {}\nevents = [", quote(p.name),
                       number(p.value), quote(p.unit));
    for (size_t i = 0; i < p.events.size(); ++i)
      out += (i ? ", " : "") + quote(kEventInfo[static_cast<size_t>(p.events[i])].name);
    out += fmt::format("]\ngroup = {}\npinned = {}\n", quote(p.group), p.pinned ? "true" : "false");
    // At the correlations' precision: the posterior variance along a tight
    // combination is a difference of large terms.
    if (p.stderr_ns >= 0) out += fmt::format("stderr = {:.9g}\n", p.stderr_ns);
    out += fmt::format("source = {}\n", quote(p.source));
    if (p.prior >= 0) out += fmt::format("prior = {}\n", number(p.prior));
    if (p.prior_sd >= 0) out += fmt::format("prior_sd = {}\n", number(p.prior_sd));
    if (!p.prior_source.empty()) out += fmt::format("prior_source = {}\n", quote(p.prior_source));
    if (!p.meaning.empty()) out += fmt::format("meaning = {}\n", quote(p.meaning));
  }
  // Every correlation the fit gives, at full precision: the posterior is
  // tight only along combinations of parameters, and dropping or rounding
  // small correlations would widen every interval.
  const size_t np = m.params.size();
  if (m.corr.size() == np * np) {
    std::string block;
    for (size_t i = 0; i < np; ++i) {
      std::string row;
      for (size_t j = i + 1; j < np; ++j)
        if (m.corr[i * np + j] != 0)
          row += fmt::format("{}{} = {:.9g}", row.empty() ? "" : ", ", m.params[j].name,
                             m.corr[i * np + j]);
      if (!row.empty()) block += fmt::format("{} = {{ {} }}\n", m.params[i].name, row);
    }
    if (!block.empty()) out += "\n[correlation]\n" + block;
  }
  if (m.noise) {
    out += noise_toml(m.noise->fallback, true);
    for (const NoiseEntry& e : m.noise->entries) out += noise_toml(e, false);
  }
  return out;
}

}  // namespace simcache::sim
