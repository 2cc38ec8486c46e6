// The cost layer: time as a separate layer over the exact event counts.
// A cost profile names parameters, each a cost per event of one or more
// events of the tables of record; the time of a region is the sum over
// events of count x cost. The layer only reads Counters, so a cost change
// can never change a count. Profiles are TOML files (docs/calibration.md);
// the default parameter set is the table of record sim/cost/cost_params.def.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/run/result.h"
#include "model/counters.h"

namespace simcache::sim {

// One row of sim/cost/cost_params.def.
struct CostParamSpec {
  std::string_view name;
  std::string_view group;
  std::string_view unit;
  std::string_view events;  // space-separated event names
  double prior;             // prior mean, ns per event unit
  double prior_sd;          // prior standard deviation
  std::string_view prior_source;
  std::string_view meaning;
};
std::span<const CostParamSpec> default_param_specs();

// Events no parameter prices, and why (sim/cost/cost_params.def).
struct UnpricedSpec {
  std::string_view event;
  std::string_view reason;
};
std::span<const UnpricedSpec> unpriced_events();

struct CostParam {
  std::string name;
  std::string group = "other";
  std::string unit;           // "ns/<event unit>"
  std::vector<Event> events;  // the events it prices
  double value = 0;           // ns per event unit
  std::string source;         // where the value comes from
  bool pinned = true;         // false: the value rests mostly on its prior
  double stderr_ns = -1;      // posterior standard deviation (model uncertainty); < 0: none
  double prior = -1;          // prior mean; < 0: none recorded
  double prior_sd = -1;       // prior standard deviation; < 0: none recorded
  std::string prior_source;   // where the prior comes from
  std::string meaning;
};

// Per-round CV and boot-to-boot drift of real measurements of one workload
// (scenario, optionally narrowed by parameter values), as fractions.
struct NoiseEntry {
  std::string scenario;                   // empty: every scenario
  std::map<std::string, int64_t> params;  // must all match
  double round_cv = 0;
  double drift = 0;
  std::string source;
};

struct NoiseModel {
  NoiseEntry fallback;              // scenario-independent
  std::vector<NoiseEntry> entries;  // narrower ones
  // The entry with the same scenario and the most matching parameters;
  // the fallback if none matches.
  const NoiseEntry& lookup(const std::string& scenario,
                           const std::map<std::string, int64_t>& params) const;
};

class CostModel {
 public:
  std::string name;  // "i7-12700KF"
  std::string description;
  // The figure of each row the fit read (calibrate --statistic): "median"
  // or "fastest"; "" for the mean, which a profile does not write.
  std::string statistic;
  // The rows were scaled to a reference program's reading before the fit
  // (sim/calibrate/reference.h): its configuration and the reading (ns,
  // the fit's statistic) the rows were scaled to; "" and 0 without one.
  std::string reference;
  double reference_ns = 0;
  std::string path;  // file it was loaded from ("" if built in memory)
  // SHA-256 of the bytes it was read from when load_profile() knew it
  // without hashing (a shipped profile's compiled-in copy); "" otherwise.
  std::string sha256;
  std::vector<CostParam> params;
  std::optional<NoiseModel> noise;
  // Posterior correlations between parameters (row-major, params x
  // params; empty: independent). With each stderr_ns it gives the
  // covariance every predicted time's model-uncertainty interval uses.
  std::vector<double> corr;
  // Model inadequacy: the relative standard deviation of the model's error
  // on one configuration (one distinct set of counts) that no parameter
  // value removes, i.e. what the mechanisms the model lacks cost. The fit
  // estimates it from the rows apart from their measurement noise
  // (docs/calibration.md, "Intervals"); 0 when the profile records none.
  double inadequacy = 0;
  // The part of it every configuration of one workload shape shares (a
  // mechanism the model lacks for that program): it moves a time, never
  // an effect between two columns of the same workload.
  double inadequacy_shape = 0;
  // How far a measured time moves between sittings (days, boots) beyond
  // its own standard error, as a fraction (model_drift): the fit's row
  // noise beyond the rows' own errors, seen when sittings are pooled. A
  // time's interval carries it, since a new sitting's measurement moves
  // so; an effect's does not (the noise model carries a delta's noise).
  double drift = 0;
  // The relative measurement noise of one row within a sitting that the
  // fit estimated (model_row_noise: its row noise without model_drift):
  // the finest model inadequacy its rows can resolve.
  // An effect between two configurations carries at least it as the
  // inadequacy it cannot rule out (effect_interval()), so a fit whose
  // inadequacy came out 0 gives no zero-width interval to two
  // configurations the model counts alike. 0: not recorded.
  double row_noise = 0;
  std::string inadequacy_source;

  // Rejects duplicate names, an event priced twice and negative or
  // non-finite values. Call after building or loading; the time functions
  // assume a valid model.
  bool validate(std::string* error);

  double time_ns(const Counters& c) const;
  // ns of each parameter (same order as `params`).
  std::vector<double> contributions(const Counters& c) const;
  const CostParam* find(std::string_view name) const;

  // Counts per parameter (the gradient of time_ns in the values).
  std::vector<double> param_counts(const Counters& c) const;
  // Variance (ns^2) of sum g_j x value_j under the posterior, and under
  // the priors alone. A parameter with no stderr contributes nothing to
  // the posterior one (its value is taken as exact).
  double variance(const std::vector<double>& g) const;
  double prior_variance(const std::vector<double>& g) const;
  // Model variance (ns^2) of a predicted time t_ns with per-op counts g:
  // the parameters' posterior plus both inadequacies, (inadequacy x t)^2.
  double predictive_variance(const std::vector<double>& g, double t_ns) const;

 private:
  std::vector<int> param_of_event_;  // per event: index into params, -1 if unpriced
};

// ns per event unit of every event (kNumEvents, unpriced events 0): the
// prices the machine advances virtual clocks by during a run
// (RunRequest::event_ns), so that a region's clock time is time_ns() of
// its counts plus the time it waited.
std::vector<double> event_prices(const CostModel& m);

// Splits on `sep`; with ' ' empty pieces are dropped.
std::vector<std::string> split_words(std::string_view s, char sep = ' ');


// The default parameter set with every value at its prior (no fit).
CostModel prior_model();

// The time figures of one policy column of a workload.
struct PolicyTime {
  double per_op_ns = 0;                 // timed time / timed_ops
  std::vector<double> round_per_op_ns;  // each measured round / ops_per_round
  // Expected measurement noise of the mean (from the profile's [noise]
  // model, not from the model's parameters), relative.
  double stderr_rel = 0;
  double drift = 0;                     // boot-to-boot drift, relative
  std::vector<double> breakdown;        // ns per op of each parameter
  std::vector<double> counts;           // per-op counts per parameter
  double model_sd_ns = 0;               // model uncertainty of per_op_ns (posterior)
  // Its 90 % interval, positive: time_interval(per_op_ns, model_sd_ns).
  double interval_lo_ns = 0, interval_hi_ns = 0;
  bool prior_based = false;             // the uncertainty rests mostly on priors
  // Per named phase of the operation (PolicyResult::phases): time per op
  // and its model uncertainty; the phases sum exactly to per_op_ns.
  struct Phase {
    std::string name;
    double per_op_ns = 0, model_sd_ns = 0;
    double interval_lo_ns = 0, interval_hi_ns = 0;  // time_interval() of the two
  };
  std::vector<Phase> phases;
};

// Two-sided interval of the model's uncertainty: z for 90 %.
inline constexpr double kIntervalZ = 1.6448536;
inline constexpr double kIntervalLevel = 0.90;

// A positive interval of a time t (or of any positive quantity) with
// model sd `sd`: the log-normal with t's mean and variance, its central
// `kIntervalLevel` part. Never negative, however wide; for sd << t it is
// t +- kIntervalZ sd. sd <= 0 gives [t, t].
struct TimeInterval {
  double lo = 0, hi = 0;
};
TimeInterval time_interval(double t, double sd);

// How the two sides of an effect are related, for the model inadequacy
// its interval carries: the same configuration measured twice (nothing
// the model lacks can differ), two configurations of one workload shape
// (their own errors, 2 sv^2: the shape's shared su cancels), or two
// workload shapes (2 sv^2 + 2 su^2).
enum class EffectRelation { same_config, same_shape, cross_shape };

// Model-uncertainty interval of a relative effect v/b - 1: the delta
// method on the posterior covariance (the full quadratic form of the
// difference of the two count vectors), plus (1 + effect)^2 times the
// inadequacy of `rel`. Two distinct configurations get the inadequacy
// even when their counts are identical: a mechanism the model lacks can
// tell them apart where no priced count does. Their per-configuration
// inadequacy is at least the fit's row noise (row_noise): below it the
// rows cannot tell a configuration's error from none. `prior_based` when the
// priors contribute most of the parameters' variance.
struct EffectInterval {
  double effect = 0, lo = 0, hi = 0;
  bool prior_based = false;
};
// Two policy columns of one workload: two configurations of one shape.
EffectInterval effect_interval(const CostModel& m, const PolicyTime& base, const PolicyTime& v);
EffectInterval effect_interval(const CostModel& m, const std::vector<double>& base_counts,
                               const std::vector<double>& counts,
                               EffectRelation rel = EffectRelation::same_shape);
// A share of a region's time: frac x time_ns(part) / time_ns(whole)
// (`part` a subset of `whole`'s events, frac in [0, 1]; seed 003's iowait
// share: the idle events of the sleeps, times the share of sleeps that
// are I/O wait, over the round). Its 90 % interval by the delta method on
// the ratio under the posterior, plus the model inadequacy of the rest of
// the whole (what the model may miss besides the part moves the share),
// log-normal on the share, or on its complement when the share is above
// one half, so that it stays inside [0, 1]. A share with nothing to
// divide is 0.
struct ShareInterval {
  double share = 0, lo = 0, hi = 0;
  bool prior_based = false;
};
ShareInterval share_interval(const CostModel& m, const Counters& part, const Counters& whole,
                             double frac);
// True when more than half of the prior variance along g survives the fit.
bool rests_on_priors(const CostModel& m, const std::vector<double>& g);
PolicyTime policy_time(const CostModel& m, const WorkloadResult& w, const PolicyResult& p);

// The number of repeats a per-round CV averages over in a workload: its
// `rounds` parameter, else `groups` (lifecycle: CV is over groups of
// operations), else `fallback`.
double noise_rounds(const std::map<std::string, int64_t>& params, double fallback);

// Relative noise of the delta between two columns measured on separate
// boots: sqrt(se_a^2 + se_b^2 + drift^2). A delta below it is not
// significant.
double delta_noise(const PolicyTime& a, const PolicyTime& b);

// ns per `unit` ("ns" or "us").
double unit_scale(std::string_view time_unit);
// A time per op in `time_unit` as the reports print it: one decimal in
// ns, two in us or ms.
std::string format_time_in(double ns, std::string_view time_unit);

// Profiles (sim/cost/cost_profile.cc). The built-in default profile is a file
// in the data directory: $SIMCACHE_DATA_DIR, else the source tree's data/
// (compiled in), else ../data or ../share/simcache beside the binary.
inline constexpr std::string_view kDefaultCostProfile = "i7-12700KF";
// Path of `rel` (e.g. "profiles/mapping.toml") in the data directory, or
// "" if no candidate directory has it.
std::string find_data_file(std::string_view rel);
// Parses a profile. Errors are one line: "FILE:LINE: field: problem".
bool parse_profile(std::string_view text, const std::string& path, CostModel* out,
                   std::string* error);
bool load_profile(const std::string& path, CostModel* out, std::string* error);
// `spec` is a file path, or the name of a profile in data/profiles/.
bool resolve_profile(const std::string& spec, CostModel* out, std::string* error);
// The TOML text of a profile; `header` is emitted as leading # comments.
std::string profile_toml(const CostModel& m, const std::string& header);

}  // namespace simcache::sim
