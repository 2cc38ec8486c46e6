// Joining shard outputs, and the sweep's table and CSV views.
#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "sim/report/report.h"
#include "sim/sweep/sweep.h"
#include "sim/sweep/sweep_effects.h"

namespace simcache::sim {
namespace {

using Key = std::pair<uint64_t, uint64_t>;  // (point, workload)

Key key_of(const nlohmann::json& j) {
  return {j.at("point").get<uint64_t>(), j.at("workload").get<uint64_t>()};
}

std::string text_of(const nlohmann::json& j, const char* k) {
  if (!j.contains(k)) return "";
  const auto& v = j.at(k);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string grid_text(const nlohmann::json& j) {
  std::string s;
  for (const char* part : {"grid", "knobs"})
    for (const auto& [k, v] : j.at(part).items())
      s += fmt::format("{}{}{}={}", s.empty() ? "" : " ", part == std::string("knobs") ? "policy." : "",
                       k, v.get<std::string>());
  return s;
}

std::string ns_text(const nlohmann::json& j, const char* k = "ns_per_op") {
  return j.contains(k) ? fmt::format("{:.1f}", j.at(k).get<double>()) : "";
}

std::string metric(const nlohmann::json& j, const char* k) {
  return j.contains("metrics") && j.at("metrics").contains(k) ? j.at("metrics").at(k).dump() : "";
}

// The fields a record must carry (run_point and workload_record in
// sweep.cc write them), checked once on reading so the formatters and
// charts may assume them.
enum class Kind { Uint, Int, Number, Bool, String, StringMap, NumberMap, Object, Record };
enum class When { Always, Ok, Skipped, IfPresent };
struct Field {
  const char* name;
  Kind kind;
  When when;
};
constexpr Field kFields[] = {
    {"point", Kind::Uint, When::Always},          {"workload", Kind::Uint, When::Always},
    {"scenario", Kind::String, When::Always},     {"kernel", Kind::String, When::Always},
    {"machine", Kind::String, When::Always},
    {"seed", Kind::Uint, When::Always},           {"policy", Kind::String, When::Always},
    {"cost_profile", Kind::String, When::Always}, {"grid", Kind::StringMap, When::Always},
    {"knobs", Kind::StringMap, When::Always},     {"reason", Kind::String, When::Skipped},
    {"label", Kind::String, When::Ok},            {"resolved", Kind::String, When::Ok},
    {"op_unit", Kind::String, When::Ok},          {"timed_ops", Kind::Uint, When::Ok},
    {"params", Kind::NumberMap, When::Ok},        {"metrics", Kind::NumberMap, When::Ok},
    {"accounted_bytes", Kind::Int, When::Ok},     {"unaccounted_bytes", Kind::Int, When::Ok},
    {"kasan", Kind::Uint, When::Ok},              {"ns_per_op", Kind::Number, When::IfPresent},
    {"ns_per_op_lo", Kind::Number, When::IfPresent}, {"ns_per_op_hi", Kind::Number, When::IfPresent},
    {"ns_per_op_on_priors", Kind::Bool, When::IfPresent}, {"config", Kind::Object, When::Ok},
    {"param_counts", Kind::NumberMap, When::IfPresent},
    {"record", Kind::Record, When::Always},
};
// A line's record (sim/cli/sweep_cli.cc): what reproduces it.
constexpr const char* kRecordFields[] = {"reproduce", "git_commit", "grid_sha256",
                                         "cost_profile_sha256"};

// "" when v is of kind k, else what is wrong with it.
std::string type_error(const nlohmann::json& v, Kind k) {
  // A number too large for a double parses as infinity and would be
  // written back as null.
  auto finite = [](const nlohmann::json& n) {
    return n.is_number() && std::isfinite(n.get<double>());
  };
  auto map_of = [&](bool strings) -> std::string {
    if (!v.is_object()) return "expected an object";
    for (const auto& [key, e] : v.items())
      if (strings ? !e.is_string() : !finite(e))
        return fmt::format("'{}': expected {}", key, strings ? "a string" : "a finite number");
    return "";
  };
  switch (k) {
    case Kind::Uint: return v.is_number_unsigned() ? "" : "expected an unsigned integer";
    case Kind::Int: return v.is_number_integer() ? "" : "expected an integer";
    case Kind::Number: return finite(v) ? "" : "expected a finite number";
    case Kind::Bool: return v.is_boolean() ? "" : "expected true or false";
    case Kind::Object: return v.is_object() ? "" : "expected an object";
    case Kind::String: return v.is_string() ? "" : "expected a string";
    case Kind::StringMap: return map_of(true);
    case Kind::NumberMap: return map_of(false);
    case Kind::Record: {
      if (!v.is_object() || v.size() != std::size(kRecordFields))
        return "expected an object of reproduce, git_commit, grid_sha256, cost_profile_sha256";
      for (const char* k : kRecordFields)
        if (!v.contains(k) || !v.at(k).is_string()) return fmt::format("'{}': expected a string", k);
      return "";
    }
  }
  return "";
}

// "" when j is a well-formed record, else "field 'X': what is wrong".
std::string record_error(const nlohmann::json& j) {
  if (!j.contains("status")) return "field 'status': missing";
  const auto& st = j.at("status");
  if (!st.is_string() || (st != "ok" && st != "skipped"))
    return "field 'status': expected \"ok\" or \"skipped\"";
  const bool ok = st == "ok";
  for (const Field& f : kFields) {
    const bool needed = f.when == When::Always || (f.when == When::Ok && ok) ||
                        (f.when == When::Skipped && !ok);
    if (!j.contains(f.name)) {
      if (needed) return fmt::format("field '{}': missing", f.name);
      continue;
    }
    const std::string why = type_error(j.at(f.name), f.kind);
    if (!why.empty()) return fmt::format("field '{}': {}", f.name, why);
  }
  return "";
}

}  // namespace

bool merge_records(const std::vector<std::pair<std::string, std::string>>& files,
                   std::vector<nlohmann::json>* out, std::string* error) {
  out->clear();
  std::set<Key> seen;
  for (const auto& [name, text] : files) {
    size_t line = 0, from = 0;
    while (from < text.size()) {
      size_t nl = text.find('\n', from);
      if (nl == std::string::npos) nl = text.size();
      const std::string l = text.substr(from, nl - from);
      from = nl + 1;
      ++line;
      if (l.empty()) continue;
      nlohmann::json j = nlohmann::json::parse(l, nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return *error = fmt::format("{}:{}: not a sweep record (expected a JSON object)", name,
                                    line),
               false;
      const std::string why = record_error(j);
      if (!why.empty()) return *error = fmt::format("{}:{}: {}", name, line, why), false;
      if (!seen.insert(key_of(j)).second)
        return *error = fmt::format("{}:{}: point {} workload {} appears twice", name, line,
                                    j["point"].get<uint64_t>(), j["workload"].get<uint64_t>()),
               false;
      out->push_back(std::move(j));
    }
  }
  std::sort(out->begin(), out->end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return key_of(a) < key_of(b); });
  return true;
}

std::string records_csv(const std::vector<nlohmann::json>& r) {
  std::string s =
      "point,workload,scenario,label,kernel,cost_profile,seed,policy,settings,status,reason,"
      "ns_per_op,ns_per_op_lo,ns_per_op_hi,"
      "bytes_retained,nodes_unused,accounted_bytes,unaccounted_bytes,"
      "reproduce,git_commit,grid_sha256,cost_profile_sha256\n";
  for (const auto& j : r) {
    std::vector<std::string> f = {
        text_of(j, "point"),  text_of(j, "workload"), text_of(j, "scenario"),
        text_of(j, "label"),  text_of(j, "kernel"),   text_of(j, "cost_profile"),
        text_of(j, "seed"),
        text_of(j, "policy"), grid_text(j),           text_of(j, "status"),
        text_of(j, "reason"), ns_text(j),             ns_text(j, "ns_per_op_lo"),
        ns_text(j, "ns_per_op_hi"),                   metric(j, "bytes_retained"),
        metric(j, "nodes_unused"), text_of(j, "accounted_bytes"),
        text_of(j, "unaccounted_bytes")};
    for (const char* k : kRecordFields) f.push_back(j.at("record").at(k).get<std::string>());
    for (size_t i = 0; i < f.size(); ++i) s += (i ? "," : "") + csv_field(f[i]);
    s += "\n";
  }
  return s;
}

namespace {
// "+12.3% [+8.1,+16.5]", "*" after it when on priors, "-" when none.
std::string effect_text(const SweepEffect& e) {
  if (!e.valid) return "-";
  return fmt::format("{:+.1f}% [{:+.1f},{:+.1f}]{}", 100 * e.effect, 100 * e.lo, 100 * e.hi,
                     e.on_priors ? "*" : "");
}
}  // namespace

std::string records_table(const std::vector<nlohmann::json>& r,
                          const std::vector<PointEffects>* effects, const std::string& plot_x) {
  const bool fx = effects != nullptr && effects->size() == r.size();
  const std::string first = [&] {
    for (const auto& j : r)
      if (text_of(j, "status") == "ok") return text_of(j, "policy");
    return std::string();
  }();
  std::string s = fmt::format("{:>5}  {:<7} {:<28} {:>10} {:>10}  ", "point", "kernel", "policy",
                              "ns/op", "retained");
  if (fx)
    s += fmt::format("{:<28} {:<28} ", "vs " + first, "vs smallest " + plot_x);
  s += "settings\n";
  for (size_t i = 0; i < r.size(); ++i) {
    const auto& j = r[i];
    const std::string status = text_of(j, "status");
    const std::string ns = status == "ok" ? ns_text(j) : status;
    s += fmt::format("{:>5}  {:<7} {:<28} {:>10} {:>10}  ", text_of(j, "point"),
                     text_of(j, "kernel"), text_of(j, "policy"), ns.empty() ? "-" : ns,
                     status == "ok" ? metric(j, "bytes_retained") : "");
    if (fx)
      s += fmt::format("{:<28} {:<28} ", effect_text((*effects)[i].vs_policy),
                       effect_text((*effects)[i].vs_x));
    s += fmt::format("{}{}\n", grid_text(j),
                     status == "skipped" ? "  (" + text_of(j, "reason") + ")" : "");
  }
  if (fx)
    s += "vs: the change in ns/op and its 90 % model interval (* on priors); against the "
         "smallest " + plot_x + " of the same series, a cross-shape effect when " + plot_x +
         " is a scenario parameter (both shapes' inadequacy)\n";
  return s;
}

}  // namespace simcache::sim
