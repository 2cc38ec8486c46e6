// The mapping file: which simulation each measured row is.
#include <toml++/toml.h>

#include <cmath>
#include <set>

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

struct MapReader : TomlReader {
  bool regex(const toml::table& t, const char* key, const std::string& where, bool required,
             Regex* out, std::string* text = nullptr) const {
    std::string s;
    if (!str(t, key, where, required, &s)) return false;
    if (!t.get(key)) return true;
    std::string err;
    *out = compile_regex(s, &err);
    if (!*out) return fail(t.get(key), where + key, err);
    if (text) *text = s;
    return true;
  }
};

bool read_pattern(const MapReader& r, const toml::table& t, const std::string& where,
                  const char* key, ShapeRule::Pattern* p) {
  if (!r.regex(t, key, where, true, &p->re, &p->text)) return false;
  const toml::node* c = t.get("captures");
  const toml::array* arr = c ? c->as_array() : nullptr;
  if (c && !arr) return r.fail(c, where + "captures", "expected an array of parameter names");
  if (arr) {
    for (const toml::node& n : *arr) {
      if (!n.is_string())
        return r.fail(&n, where + "captures",
                      "expected a parameter name (a string; \"\" skips a group)");
      p->captures.push_back(n.value<std::string>().value_or(""));
    }
  }
  const size_t groups = static_cast<size_t>(regex_groups(p->re));
  if (p->captures.size() != groups)
    return r.fail(c ? c : t.get(key), where + "captures",
                  fmt::format("{} names for {} groups in the pattern", p->captures.size(), groups));
  return true;
}

bool check_params(const MapReader& r, const toml::node* n, const ShapeRule& s,
                  const std::string& where) {
  const ScenarioInfo* info = ScenarioRegistry::get().find(s.scenario);
  if (!info)
    return r.fail(n, where + "scenario",
                  fmt::format("unknown scenario '{}' (valid: {})", s.scenario,
                              ScenarioRegistry::get().names()));
  std::vector<std::string> names(s.shape.captures);
  for (const auto& e : s.extra) names.insert(names.end(), e.captures.begin(), e.captures.end());
  for (const auto& [k, v] : s.set) names.push_back(k);
  for (const auto& [k, v] : s.defaults) names.push_back(k);
  for (const std::string& name : names) {
    bool ok = name.empty();
    for (const ParamSpec& p : info->params) ok |= p.name == name;
    for (const ParamSpec& p : machine_params()) ok |= p.name == name;
    if (!ok)
      return r.fail(n, where + "captures/set/defaults",
                    fmt::format("scenario {} has no parameter '{}'", s.scenario, name));
  }
  return true;
}

bool read_shape(const MapReader& r, const toml::table& t, size_t i, ShapeRule* s) {
  std::string where = fmt::format("shape[{}].", i);
  s->line = static_cast<int>(t.source().begin.line);
  if (!r.keys(t,
              {"name", "workload", "shape", "captures", "extra", "values", "scenario", "set",
               "defaults", "kind", "op"},
              where))
    return false;
  if (!r.str(t, "name", where, true, &s->name)) return false;
  if (!r.regex(t, "workload", where, true, &s->workload)) return false;
  if (!read_pattern(r, t, where, "shape", &s->shape)) return false;
  if (!r.str(t, "scenario", where, true, &s->scenario)) return false;
  if (!r.str(t, "kind", where, false, &s->kind)) return false;
  if (!r.str(t, "op", where, false, &s->op)) return false;
  if (const toml::node* n = t.get("extra")) {
    const toml::array* arr = n->as_array();
    if (!arr) return r.fail(n, where + "extra", "expected an array of { pattern, captures }");
    for (const toml::node& e : *arr) {
      const toml::table* et = e.as_table();
      if (!et) return r.fail(&e, where + "extra", "expected { pattern = '...', captures = [...] }");
      ShapeRule::Pattern p;
      if (!read_pattern(r, *et, where + "extra.", "pattern", &p)) return false;
      s->extra.push_back(std::move(p));
    }
  }
  for (const auto& [key, out] : {std::pair{"set", &s->set}, std::pair{"defaults", &s->defaults}}) {
    const toml::node* n = t.get(key);
    if (!n) continue;
    const toml::table* st = n->as_table();
    if (!st) return r.fail(n, where + key, "expected a table of integers");
    for (const auto& [k, v] : *st) {
      if (!v.is_integer())
        return r.fail(&v, where + key + "." + std::string(k.str()), "expected an integer");
      (*out)[std::string(k.str())] = v.value<int64_t>().value_or(0);
    }
  }
  if (const toml::node* n = t.get("values")) {
    const toml::table* vt = n->as_table();
    if (!vt) return r.fail(n, where + "values", "expected { param = { word = int } }");
    for (const auto& [k, v] : *vt) {
      const toml::table* words = v.as_table();
      if (!words)
        return r.fail(&v, where + "values." + std::string(k.str()), "expected { word = int }");
      for (const auto& [w, iv] : *words) {
        if (!iv.is_integer()) return r.fail(&iv, where + "values", "expected an integer");
        s->values[std::string(k.str())][std::string(w.str())] = iv.value<int64_t>().value_or(0);
      }
    }
  }
  return check_params(r, &t, *s, where);
}

bool read_variant(const MapReader& r, const toml::table& t, size_t i, VariantRule* v) {
  const std::string where = fmt::format("variant[{}].", i);
  v->line = static_cast<int>(t.source().begin.line);
  if (!r.keys(t, {"match", "workload", "kernel", "policy", "role", "base"}, where)) return false;
  if (!r.regex(t, "match", where, true, &v->match)) return false;
  if (!r.regex(t, "workload", where, false, &v->workload)) return false;
  if (!r.str(t, "kernel", where, true, &v->kernel)) return false;
  if (!r.str(t, "policy", where, true, &v->policy)) return false;
  std::string role = "variant";
  if (!r.str(t, "role", where, false, &role)) return false;
  if (role != "base" && role != "variant")
    return r.fail(t.get("role"), where + "role", "expected \"base\" or \"variant\"");
  v->base = role == "base";
  // The base is data: each effect names what it is measured against.
  if (v->base && t.get("base"))
    return r.fail(t.get("base"), where + "base", "a rule with role = \"base\" has no base");
  if (!r.regex(t, "base", where, !v->base, &v->against, &v->against_text)) return false;
  iou::PolicySet ps;
  MmConfig mc;
  std::string err;
  if (!iou::parse_policies(v->policy, nullptr, &ps, &mc, &err))
    return r.fail(t.get("policy"), where + "policy", err);
  return true;
}

bool read_fit(const MapReader& r, const toml::node* n, FitSettings* f) {
  if (!n) return true;
  const toml::table* t = n->as_table();
  if (!t) return r.fail(n, "fit", "expected a table");
  if (!r.keys(*t, {"noise_cv", "pin_threshold", "repeat_params", "condition_params", "twin_params"},
              "fit."))
    return false;
  for (auto [key, out] :
       {std::pair{"noise_cv", &f->noise_cv}, std::pair{"pin_threshold", &f->pin_threshold}}) {
    if (const toml::node* v = t->get(key)) {
      const double d = v->value<double>().value_or(-1);
      if (!v->is_number() || !(d > 0) || d > 10)
        return r.fail(v, std::string("fit.") + key, "expected a number in (0, 10]");
      *out = d;
    }
  }
  for (auto [key, out] : {std::pair{"repeat_params", &f->repeat_params},
                         std::pair{"condition_params", &f->condition_params},
                         std::pair{"twin_params", &f->twin_params}}) {
    const toml::node* v = t->get(key);
    if (!v) continue;
    const toml::array* arr = v->as_array();
    if (!arr) return r.fail(v, std::string("fit.") + key, "expected an array of names");
    for (const toml::node& e : *arr) {
      if (!e.is_string()) return r.fail(&e, std::string("fit.") + key, "expected a parameter name");
      out->push_back(e.value<std::string>().value_or(""));
    }
  }
  return true;
}

}  // namespace

bool parse_mapping(std::string_view text, const std::string& path, Mapping* out,
                   std::string* error) {
  MapReader r{{path, error}};
  toml::table tbl;
  if (!r.parse(text, &tbl)) return false;
  Mapping m;
  m.path = path;
  if (!r.keys(tbl, {"fit", "shape", "variant"}, "")) return false;
  if (!read_fit(r, tbl.get("fit"), &m.fit)) return false;
  for (const char* key : {"shape", "variant"}) {
    const toml::node* n = tbl.get(key);
    const toml::array* arr = n ? n->as_array() : nullptr;
    if (!arr || arr->empty())
      return r.fail(n ? n : &tbl, key, fmt::format("expected [[{}]] tables", key));
    for (size_t i = 0; i < arr->size(); ++i) {
      const toml::table* t = (*arr)[i].as_table();
      if (!t) return r.fail(&(*arr)[i], key, "expected a table");
      if (key[0] == 's') {
        ShapeRule s;
        if (!read_shape(r, *t, i, &s)) return false;
        m.shapes.push_back(std::move(s));
      } else {
        VariantRule v;
        if (!read_variant(r, *t, i, &v)) return false;
        m.variants.push_back(std::move(v));
      }
    }
  }
  *out = std::move(m);
  return true;
}

bool load_mapping(const std::string& path, Mapping* out, std::string* error) {
  std::string text;
  if (!read_input(path, "the mapping file", &text, error)) return false;
  return parse_mapping(text, path, out, error);
}

}  // namespace simcache::sim
