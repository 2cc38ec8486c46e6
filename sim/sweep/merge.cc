// Joining shard outputs, and the sweep's table and CSV views.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "sim/sweep/sweep.h"

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

std::string ns_text(const nlohmann::json& j) {
  return j.contains("ns_per_op") ? fmt::format("{:.1f}", j.at("ns_per_op").get<double>()) : "";
}

std::string metric(const nlohmann::json& j, const char* k) {
  return j.contains("metrics") && j.at("metrics").contains(k) ? j.at("metrics").at(k).dump() : "";
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
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
      if (j.is_discarded() || !j.is_object() || !j.contains("point") || !j.contains("workload") ||
          !j["point"].is_number_unsigned() || !j["workload"].is_number_unsigned())
        return *error = fmt::format("{}:{}: not a sweep record (expected a JSON object with "
                                    "point and workload)", name, line),
               false;
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
      "ns_per_op,"
      "bytes_retained,nodes_unused,accounted_bytes,unaccounted_bytes\n";
  for (const auto& j : r) {
    const std::vector<std::string> f = {
        text_of(j, "point"),  text_of(j, "workload"), text_of(j, "scenario"),
        text_of(j, "label"),  text_of(j, "kernel"),   text_of(j, "cost_profile"),
        text_of(j, "seed"),
        text_of(j, "policy"), grid_text(j),           text_of(j, "status"),
        text_of(j, "reason"), ns_text(j),             metric(j, "bytes_retained"),
        metric(j, "nodes_unused"), text_of(j, "accounted_bytes"),
        text_of(j, "unaccounted_bytes")};
    for (size_t i = 0; i < f.size(); ++i) s += (i ? "," : "") + csv_field(f[i]);
    s += "\n";
  }
  return s;
}

std::string records_table(const std::vector<nlohmann::json>& r) {
  std::string s = fmt::format("{:>5}  {:<7} {:<28} {:>10} {:>10}  {}\n", "point", "kernel",
                              "policy", "ns/op", "retained", "settings");
  for (const auto& j : r) {
    const std::string status = text_of(j, "status");
    const std::string ns = status == "ok" ? ns_text(j) : status;
    s += fmt::format("{:>5}  {:<7} {:<28} {:>10} {:>10}  {}{}\n", text_of(j, "point"),
                     text_of(j, "kernel"), text_of(j, "policy"), ns.empty() ? "-" : ns,
                     status == "ok" ? metric(j, "bytes_retained") : "", grid_text(j),
                     status == "skipped" ? "  (" + text_of(j, "reason") + ")" : "");
  }
  return s;
}

}  // namespace simcache::sim
