// The kernel-native outputs of a report run (--slabinfo, --slabinfo-at,
// --sysfs, --slabinfo-report, --hist, --cache) and the run record the CLI
// fills in (command line, cost profile hash, input files). Kept apart from cli.cc so
// the flag plumbing there stays small.
#include <sstream>

#include <fmt/format.h>
#include "sim/cli/cli.h"
#include "sim/io/input.h"
#include "sim/cost/cost.h"
#include "sim/report/kernel_formats.h"
#include "sim/report/record.h"
#include "sim/report/report.h"

namespace simcache::sim {
namespace {

const char kNames[] = "ABCDEFGH";

// The one policy column a state file describes.
bool one_column(const RunResult& r, const char* flag, const PolicyResult** out,
                std::string* error) {
  if (r.workloads.size() != 1 || r.workloads[0].policies.size() != 1)
    return *error = fmt::format("{}: the run has {} workload(s) x {} column(s); pick one "
                                "scenario and one --policy",
                                flag, r.workloads.size(),
                                r.workloads.empty() ? 0 : r.workloads[0].policies.size()),
           false;
  *out = &r.workloads[0].policies[0];
  return true;
}

std::string histograms(const RunResult& r) {
  std::string out;
  for (const WorkloadResult& w : r.workloads) {
    for (size_t c = 0; c < w.policies.size(); ++c) {
      const PolicyResult& p = w.policies[c];
      std::string body;
      for (size_t b = 0; b < kNumBatches; ++b)
        if (std::string h = format_log2_hist(p.timed_batches.h[b]); !h.empty())
          body += fmt::format("\n@{}[{}]:\n{}", kBatchNames[b], kNames[c], h);
      for (Event e : {Event::allocate_slab, Event::slab_alloc_slow, Event::io_cache_alloc_new}) {
        std::vector<uint64_t> v;
        for (const Counters& rc : p.rounds) v.push_back(rc[e]);
        if (std::string h = format_log2_hist(log2_buckets(v)); !h.empty())
          body += fmt::format("\n@{}_per_round[{}]:\n{}", kEventInfo[size_t(e)].name, kNames[c], h);
      }
      if (!body.empty())
        out += fmt::format("\n{}, {} = {}:\n  timed-region batch sizes and per-round counts\n{}",
                           w.label, kNames[c], p.policy, body);
    }
  }
  return out;
}

std::string slabinfo_reports(const RunResult& r, const std::string& name) {
  std::string out;
  for (const WorkloadResult& w : r.workloads) {
    for (size_t c = 0; c < w.policies.size(); ++c) {
      for (const CacheStats& cs : w.policies[c].caches) {
        bool match = cs.name == name;
        for (const std::string& a : cs.info.aliases) match |= a == name;
        if (!match) continue;
        out += fmt::format("\n{}, {} = {}: slabinfo -r {}\n", w.label, kNames[c],
                           w.policies[c].policy, name);
        out += format_slabinfo_report(cs);
      }
    }
  }
  return out;
}

}  // namespace

void fill_run_record(const std::vector<std::string>& args, const CostModel* cost,
                     RunResult* r) {
  r->record.command_line = shell_command(args);
  if (cost) {
    r->record.cost_profile = cost->name;
    std::string error;
    r->record.cost_profile_hash = cost->path.empty()     ? "built-in"
                                  : !cost->sha256.empty() ? cost->sha256
                                  : sha256_file(cost->path, "the cost profile", &error);
    if (r->record.cost_profile_hash.empty()) r->record.cost_profile_hash = "unreadable";
  }
}

void detail_views(const ParsedFlags& f, ReportOptions* ro) {
  auto on = [&](const char* k) { return f.v.count(k) > 0; };
  const bool all = on("all");
  ro->all_counters = on("all-counters");
  ro->counts = all || ro->all_counters || on("counts");
  ro->phases = all || on("phases");
  ro->latency_hist = on("latency-hist");
  ro->latency = all || ro->latency_hist || on("latency") || on("until-separated") || on("seeds");
  ro->explain = all || on("explain");
  ro->perf_stat = all || on("perf-stat");
  if (auto c = f.v.find("cache"); c != f.v.end()) ro->cache = c->second;
  ro->per_cache = all || on("per-cache") || !ro->cache.empty();
}

void record_report_inputs(const ParsedFlags& f, const MeasuredFiles& measured, RunResult* r) {
  if (!measured.file.empty()) {
    record_input(&r->record, "measurements", measured.file,
                 f.v.count("measurements") ? "" : "data/measurements/calibration.tsv",
                 measured.file_sha256);
    if (auto m = f.v.find("mapping"); m != f.v.end())
      record_input(&r->record, "mapping", m->second);
    else if (const std::string mapping = find_data_file("profiles/mapping.toml"); !mapping.empty())
      record_input(&r->record, "mapping", mapping, "data/profiles/mapping.toml",
                   measured.mapping_sha256);
  }
  if (auto b = f.v.find("background-trace"); b != f.v.end())
    record_input(&r->record, "background trace", b->second);
}

bool kernel_outputs(const ParsedFlags& f, const RunResult& r, std::string* text,
                    std::string* error) {
  auto get = [&](const char* k) -> const std::string* {
    auto it = f.v.find(k);
    return it == f.v.end() ? nullptr : &it->second;
  };
  if (const std::string* name = get("slabinfo-report")) {
    std::string rep = slabinfo_reports(r, *name);
    if (rep.empty())
      return *error = fmt::format("--slabinfo-report: no cache '{}' saw traffic in this run",
                                  *name),
             false;
    *text += rep;
  }
  if (get("hist")) *text += histograms(r);
  if (const std::string* dir = get("sysfs")) {
    const PolicyResult* p;
    if (!one_column(r, "--sysfs", &p, error)) return false;
    const auto nodes = static_cast<uint16_t>(r.workloads[0].params.at("nodes"));
    if (!write_sysfs(*dir, *p, nodes, column_record_json(r, *p), error)) return false;
  }
  const std::string* at = get("slabinfo-at");
  const std::string* file = get("slabinfo");
  if (at && !file) return *error = "--slabinfo-at needs --slabinfo FILE|-", false;
  if (!file) return true;
  const PolicyResult* p;
  if (!one_column(r, "--slabinfo", &p, error)) return false;
  const std::vector<CacheInfo>* state = &p->slab_state;
  if (at) {
    state = nullptr;
    std::string names;
    for (const Snapshot& s : p->snapshots) {
      names += (names.empty() ? "" : ", ") + s.name;
      if (s.name == *at) state = &s.caches;
    }
    if (!state)
      return *error = fmt::format("--slabinfo-at '{}': no such snapshot (this run has: {})", *at,
                                  names.empty() ? "none" : names),
             false;
  }
  const std::string info = format_slabinfo(*state);
  if (*file == "-") {
    *text = info;
    return true;
  }
  return write_file_atomic(*file, info, error);
}

}  // namespace simcache::sim
