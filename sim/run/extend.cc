#include "sim/run/extend.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/run/engine.h"

namespace simcache::sim {

namespace {

const OpLatency* op_of(const PolicyResult& p, const std::string& kind) {
  for (const OpLatency& l : p.latency)
    if (l.kind == kind && l.hist.count()) return &l;
  return nullptr;
}

// Pools one column's latency over its runs (runs[0] is `p`'s own).
// Returns false when every kind's histograms are identical in every run.
bool pool_latency(PolicyResult* p, const std::vector<const PolicyResult*>& runs) {
  std::vector<std::string> kinds;  // first-seen order over the runs
  for (const PolicyResult* r : runs)
    for (const OpLatency& l : r->latency)
      if (std::find(kinds.begin(), kinds.end(), l.kind) == kinds.end()) kinds.push_back(l.kind);
  Latencies pooled;
  bool differ = false;
  for (const std::string& kind : kinds) {
    OpLatency o{kind, {}, {}};
    for (const PolicyResult* r : runs) {
      LatencyHist h;
      for (const OpLatency& l : r->latency)
        if (l.kind == kind) {
          h = l.hist;
          o.tail += l.tail;
        }
      differ |= !o.seeds.empty() && !(h == o.seeds.front());
      o.hist += h;
      o.seeds.push_back(std::move(h));
    }
    pooled.push_back(std::move(o));
  }
  if (differ) p->latency = std::move(pooled);
  return differ;
}

// The kind the measured program times first in column A (its own
// operation: futex_wait before the background users' kmalloc).
std::string first_kind(const WorkloadResult& w) {
  if (w.policies.empty()) return "";
  for (const OpLatency& l : w.policies[0].latency)
    if (l.hist.count()) return l.kind;
  return "";
}

uint64_t workload_work(const RunWorkload& w, uint32_t seeds) {
  return work_product({static_cast<int64_t>(std::min<uint64_t>(w.info->work(w.params), INT64_MAX)),
                       static_cast<int64_t>(w.columns.size()), std::max<int64_t>(seeds, 1)});
}

}  // namespace

std::string extension_decision(const WorkloadResult& w, const std::string& kind,
                               const std::vector<double>& prev_widths,
                               std::vector<double>* widths) {
  widths->clear();
  std::vector<LatencyHist::Interval> iv;
  for (const PolicyResult& p : w.policies) {
    const OpLatency* l = op_of(p, kind);
    if (!l) return "a column has no " + kind;
    iv.push_back(l->interval(kExtendPercentile));
    widths->push_back(iv.back().hi_ns - iv.back().lo_ns);
  }
  bool separated = iv.size() > 1;
  for (size_t i = 1; i < iv.size(); ++i)
    separated &= iv[i].hi_ns < iv[0].lo_ns || iv[0].hi_ns < iv[i].lo_ns;
  if (separated) return "separated";
  if (prev_widths.size() != widths->size()) return "";
  // An unbounded interval that became bounded narrowed; one still
  // unbounded needs more samples, so it counts as narrowing too.
  for (size_t i = 0; i < iv.size(); ++i) {
    const double was = prev_widths[i], now = (*widths)[i];
    if (!std::isfinite(now) || now < was * (1 - kExtendMinNarrowing)) return "";
  }
  return "stopped narrowing";
}

void run_pooled(const RunConfig& cfg, RunResult* out) {
  run(cfg, out);
  const uint32_t n = cfg.request.seeds;
  for (WorkloadResult& w : out->workloads) w.seeds = {cfg.seed, 1, false};
  if (n <= 1) return;
  std::vector<RunResult> more(n - 1);
  for (uint32_t k = 1; k < n; ++k) {
    RunConfig c = cfg;
    c.seed = cfg.seed + k;
    run(c, &more[k - 1]);
  }
  for (size_t i = 0; i < out->workloads.size(); ++i) {
    WorkloadResult& w = out->workloads[i];
    bool pooled = false;
    for (size_t c = 0; c < w.policies.size(); ++c) {
      std::vector<const PolicyResult*> runs = {&w.policies[c]};
      for (const RunResult& r : more) runs.push_back(&r.workloads[i].policies[c]);
      const PolicyResult own = w.policies[c];
      runs[0] = &own;
      pooled |= pool_latency(&w.policies[c], runs);
    }
    // A column whose runs were all identical (it draws nothing from the
    // seed) keeps its one run: copies of it are not replications.
    w.seeds = {cfg.seed, n, pooled};
  }
}

void run_until_separated(RunConfig* cfg, RunResult* out) {
  run_pooled(*cfg, out);
  uint64_t spent = cfg->work;
  const uint64_t budget = cfg->request.max_work;
  struct State {
    std::string kind;
    std::vector<double> widths;
    bool active = false;
  };
  std::vector<State> st(cfg->workloads.size());
  for (size_t i = 0; i < cfg->workloads.size(); ++i) {
    const RunWorkload& rw = cfg->workloads[i];
    WorkloadResult& w = out->workloads[i];
    w.extension.kind = first_kind(w);
    auto it = rw.params.find("rounds");
    if (it != rw.params.end()) w.extension.rounds_from = w.extension.rounds = it->second;
    if (w.extension.kind.empty()) w.extension.outcome = "no latency recorded";
    else if (it == rw.params.end()) w.extension.outcome = "no rounds parameter";
    else st[i] = {w.extension.kind, {}, true};
  }
  for (;;) {
    // Decide each active workload on its latest results.
    std::vector<size_t> next;
    for (size_t i = 0; i < st.size(); ++i) {
      if (!st[i].active) continue;
      WorkloadResult& w = out->workloads[i];
      std::vector<double> widths;
      const std::string d = extension_decision(w, st[i].kind, st[i].widths, &widths);
      st[i].widths = widths;
      if (!d.empty()) {
        w.extension.outcome = d;
        st[i].active = false;
        continue;
      }
      const RunWorkload& rw = cfg->workloads[i];
      int64_t max_rounds = INT64_MAX;
      for (const ParamSpec& ps : rw.info->params)
        if (ps.name == "rounds") max_rounds = ps.max;
      if (rw.params.at("rounds") >= max_rounds) {
        w.extension.outcome = "rounds at their maximum";
        st[i].active = false;
        continue;
      }
      next.push_back(i);
    }
    if (next.empty()) return;
    // The next step: every undecided workload at twice its rounds (capped
    // at the parameter's maximum), if the work of all runs stays in budget.
    RunConfig step = *cfg;
    step.workloads.clear();
    uint64_t work = 0;
    for (size_t i : next) {
      RunWorkload rw = cfg->workloads[i];
      int64_t max_rounds = INT64_MAX;
      for (const ParamSpec& ps : rw.info->params)
        if (ps.name == "rounds") max_rounds = ps.max;
      int64_t& r = rw.params.at("rounds");
      r = r > max_rounds / 2 ? max_rounds : 2 * r;
      const uint64_t wk = workload_work(rw, cfg->request.seeds);
      work = wk > UINT64_MAX - work ? UINT64_MAX : work + wk;
      step.workloads.push_back(std::move(rw));
    }
    if (work > budget || spent > budget - work) {
      for (size_t i : next) out->workloads[i].extension.outcome = "work budget";
      return;
    }
    spent += work;
    step.work = work;
    RunResult more;
    run_pooled(step, &more);
    for (size_t k = 0; k < next.size(); ++k) {
      const size_t i = next[k];
      WorkloadResult::TailExtension ext = out->workloads[i].extension;
      cfg->workloads[i].params = step.workloads[k].params;
      out->workloads[i] = std::move(more.workloads[k]);
      ext.rounds = cfg->workloads[i].params.at("rounds");
      ++ext.doublings;
      out->workloads[i].extension = ext;
    }
  }
}

}  // namespace simcache::sim
