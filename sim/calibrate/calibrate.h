// Calibration: simulate every mapped measurement, build the design matrix
// (per-op event counts priced by each parameter), combine it with every
// parameter's prior in a non-negative regularised fit on the relative
// error, and write a profile with the posterior uncertainties and
// correlations. docs/calibration.md has the method.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sim/cost/cost.h"
#include "sim/calibrate/measure.h"

namespace simcache::sim {

using PerOpCounts = std::array<double, kNumEvents>;

// The work budget of calibrate and validate (docs/calibration.md, "Work
// budget"): the work a row asks for is its simulation's operations per
// round times its rounds, warm-up and smoke rounds included (row_work());
// a row beyond the budget is refused before anything is simulated.
inline constexpr uint64_t kDefaultMaxRowWork = 100'000'000;

struct RowWork {
  uint64_t per_round = 1;  // operations of one round
  uint64_t rounds = 1;     // rounds simulated, warm-up and smoke included
  uint64_t work = 1;       // the scenario's ScenarioInfo::work, saturating at 2^64-1
  std::string what;        // what is counted: "operations"
};
// What the row's simulation asks for, from its resolved parameters.
// False (and `error`) if its parameters do not resolve.
bool row_work(const MappedRow& r, RowWork* out, std::string* error);
// Whether the scenario states its work (every registered one must).
bool has_work_entry(std::string_view scenario);

// Simulates each distinct (scenario, parameters, kernel) once with all
// the policies its rows need; `per_op[i]` is row i's timed counts divided
// by its timed operations.
// `failed` (if given) gets one entry per row whose simulation had failed
// operations (PolicyResult::failures): its counts are not the workload
// the row measured, and calibrate and validate say so.
struct RowFailure {
  size_t row = 0;                            // index into `rows`
  std::map<std::string, uint64_t> failures;  // errno name -> count
};

struct SimulateOptions {
  uint64_t max_work = kDefaultMaxRowWork;
  // Called after each distinct simulation (from the calling thread): rows
  // whose simulation is done, rows in all.
  std::function<void(size_t done, size_t total)> progress;
  // The reference the tests compare with: every measured round simulated,
  // with call-site scopes and every timed view on. By default a one-task
  // simulation computes its rounds once they repeat (sim/run/steady.h)
  // and records counts only, with the same counts.
  bool full = false;
  // Where set, the measured rounds computed instead of simulated, summed
  // over the rows' simulations.
  uint64_t* computed_rounds = nullptr;
  // Where set, how many distinct simulations ran; one this process had
  // already run with the same key is remembered, not run again
  // (docs/calibration.md, "Calibration", step 3).
  uint64_t* simulated = nullptr;
};

bool simulate_rows(const std::vector<MappedRow>& rows, int jobs, std::vector<PerOpCounts>* per_op,
                   std::string* error, std::vector<RowFailure>* failed = nullptr,
                   const SimulateOptions& options = SimulateOptions{});
// Forgets the simulations this process remembers (a test starts clean).
void forget_simulations();
// One line per affected row ("failed ops: SF-117 (sparse-fill ... on
// v6.13, slab-prime): 3 x -ENOMEM"); "" when there is none.
std::string format_row_failures(const std::vector<MappedRow>& rows,
                                const std::vector<RowFailure>& failed, const FitSettings& fit);

// Which of the machine's speed factors scales a parameter's prior: none
// for a definition ("1000 ns per microsecond of sleep": its prior_source
// begins "definition") and a hardware latency (a C-state's exit latency:
// "hardware:"); the memory factor for per-byte or per-slot work that
// streams through memory ("memory:": zeroing, a table's slots), which
// runs near the memory's bandwidth on a machine whose kernel paths are
// slow (a VM); the CPU factor for every other price on the priors'
// machine.
enum class SpeedClass : uint8_t { none = 0, cpu = 1, memory = 2 };
SpeedClass speed_class(const CostParam& p);
bool speed_scaled(const CostParam& p);  // speed_class(p) != none

// A penalty: the extra a cold or remote state costs over the warm path
// (a ring's first use, the cold start after a sleep, an object last freed
// on another CPU, a wake-up below the iowait boost); its prior_source
// begins "penalty:" (a CPU-work speed class). A machine may
// show none, so a penalty at 0 is reported, never refused; a price of
// work (instructions a path runs) at 0 is a refusal (fit_problems).
bool is_penalty(const CostParam& p);

// How two rows are related for the fit's error model and an effect's
// interval: the same configuration (scenario, shape parameters, phase,
// kernel and policy: a repeat on another boot), two configurations of
// one workload shape (scenario, shape parameters and phase), or two
// shapes. Identical counts do not make one configuration: two kernels
// or policies the model prices alike may still differ by a mechanism it
// lacks.
EffectRelation row_relation(const MappedRow& a, const MappedRow& b, const FitSettings& fit);

// ns per op that `m` predicts from per-op counts.
double predict_ns(const CostModel& m, const PerOpCounts& c);

enum class PinStatus { pinned, no_data, collinear, weak };

struct ParamFit {
  PinStatus status = PinStatus::no_data;
  std::string reason;             // why it is not pinned (empty if pinned)
  double fitted = 0;              // posterior mode
  double stderr_ns = -1;          // posterior standard deviation
  double data_share = 0;          // 1 - posterior variance / prior variance
  std::vector<std::string> rows;  // ids of the rows that count its events
  // FitMethod::unscaled (NNLS), the one fit that can put work at 0:
  // at 0 (its bound), how hard the rows and its prior push it below 0, in
  // posterior sds given the prices above 0, which move with it (a score
  // test: the pull over the square root of the Schur complement; <= 0).
  double bound_z = 0;
  // A work price at 0 that the rows allow there: they measure only its
  // sum with a price above 0 (posterior correlation at least
  // kAllowedPartnerCorr in size, named in `reason`), and push it below 0
  // by at most kBoundRefuseZ sds. Any other work price at 0 refuses the fit.
  bool allowed_at_zero = false;
  std::string partner;  // that price above 0, if one moves with it so
  // FitMethod::current, a price of work (log-normal prior): the fitted
  // price's distance from its prior's centre, in prior sds of its
  // logarithm (negative: below). 0 for a penalty and for the unscaled fit.
  double prior_z = 0;
};

// A work price the rows measure, fitted more than kPriorConflictZ prior
// log-sds below its prior's centre: the rows and the prior disagree
// beyond what one price in a few hundred does by chance (the prior puts
// 0.13 % below -3 sd), and a fit that took the prices of whole request
// paths toward 0 (rows far faster than any such price) lands there.
// Refused, naming the price; a penalty may be near 0 on a machine.
inline constexpr double kPriorConflictZ = 3.0;

// A price at 0 whose rows push it below by more than one posterior sd is
// a fit the rows contradict: unconstrained, they would put it more than
// an sd under 0. A sitting whose per-slot registration work is all
// zeroing may put file_table_slot at 0 (a fraction of an sd below,
// correlation near -1 with zero_bytes): allowed. Prices at 0 with no partner above 0 (the scalar
// wait-wake rows made 20 times faster than the model: futex_wait,
// futex_wake and the request path all at 0, each within an sd) are a
// collapse, refused whatever their pull.
inline constexpr double kBoundRefuseZ = 1.0;
// The relinearisation rounds stop when they move the error model by at
// most kStill (relative); a fit whose eighth and last round still moved
// it by more than kSettled has not settled and is refused (of the 27
// shipped fits, the oldest VM sitting's by its mean rounds).
inline constexpr double kStill = 1e-6;
inline constexpr double kSettled = 0.01;
inline constexpr double kAllowedPartnerCorr = 0.9;

// The row noise's prior: log s ~ N(log s0, sd^2) with sd = log 2, s0 the
// rms of the rows' own standard errors (measurement_spread(): the kit's
// se, else a round's CV over the rounds) and at least noise_cv. Row noise
// is what a row's mean would move if measured again; only repeats of a
// configuration measure it in the fit. Without repeats the rows cannot
// tell it from the model's inadequacy (both are one variance per row),
// and the fit would put all that it cannot explain into noise, which no
// prediction interval carries. The rows' own spreads say what the noise
// is; what the fit cannot explain beyond it is then inadequacy. Many
// repeats (sittings pooled) outweigh the prior.
inline constexpr double kNoisePriorSd = 0.6931471805599453;

struct FitReport {
  CostModel model;                // the fitted profile
  std::vector<ParamFit> params;   // same order as model.params
  std::vector<double> predicted;  // ns per op, per row
  double rms_rel = 0, max_rel = 0;
  size_t max_row = 0;
  bool converged = true;
  // The relative move of the speed factors and error terms in the fit's
  // last relinearisation round: above kSettled, a cause of its own.
  double error_model_move = 0;
  // FitMethod::unscaled: work too has a Gaussian prior bounded at 0
  // (NNLS), so a price of work the rows measure can sit at 0. Under
  // today's log-normal priors only a penalty (or a price whose prior
  // centre is not above 0, held there) can.
  bool bounded_work = false;
  // The machine's speed relative to the priors' (every scaled prior is
  // the table's times it), by type-II maximum likelihood: for CPU work,
  // and for streaming memory work (SpeedClass::memory).
  double speed = 1, speed_memory = 1;
  double row_noise = 0;         // relative measurement noise of a row (>= noise_cv)
  // The row noise's prior centre: noise_prior_rms, the rms of the own
  // standard errors of noise_prior_rows rows that passed their gate (0:
  // none), at least noise_cv.
  double noise_prior = 0, noise_prior_rms = 0;
  size_t noise_prior_rows = 0;
  // The row noise beyond noise_prior, sqrt(row_noise^2 - noise_prior^2)
  // (0 when within it): how far a row moves between sittings or boots
  // beyond its own standard error. The profile records it as model_drift,
  // which every time's interval carries.
  double drift = 0;
  double inadequacy = 0;        // relative model error of one configuration (CostModel)
  double inadequacy_shape = 0;  // ... shared by the configurations of one workload shape
  size_t configs = 0;           // distinct configurations (row_relation)
  size_t shapes = 0;            // distinct workload shapes (scenario + shape parameters)
  double effective_params = 0;  // what the rows determine, P - tr(H^-1)
  // Where the error-model search ended at an edge of its range: the cap
  // of 30 % (row noise, either inadequacy) or the end of the speed
  // factor's search (a factor of 30 from the rows' geometric mean).
  bool noise_at_cap = false, inadequacy_at_cap = false, inadequacy_shape_at_cap = false;
  bool speed_at_bound = false;
  bool noise_at_floor = false;  // at noise_cv: the rows agree better than it
  // Rows whose note says stability=gate-fail, with the spread
  // (row_spread()) they were weighted by.
  std::vector<std::pair<std::string, double>> gate_failed;
  // Per row (the order of the rows fitted): that spread, 0 for a row
  // that passed its gate.
  std::vector<double> spread;
  // The credibility test's two halves (fit_problems()), judged apart so
  // that wide spreads of the failed rows cannot hide a misfit of the
  // others: the rows that passed their gate (or had none), and the
  // gate-failed rows. Each half's residuals are whitened by their own
  // covariance under the fitted error model (row noise, the inadequacy
  // that rows of one configuration share, the one that rows of one
  // workload shape share, a failed row's own spread): white_passed and
  // rms_sd_failed are sqrt(r^T Sigma^-1 r / n), in sds, chi-square on n
  // degrees of freedom when the model holds, however the rows are
  // correlated. rms_passed is the plain rms relative residual of the
  // rows that passed, for the report.
  size_t passed = 0;
  double rms_passed = 0, white_passed = 0, rms_sd_failed = 0;
  // Twin pairs (FitSettings::twin_params): per row, its pair's anchor
  // (SIZE_MAX: none; an anchor names itself), and how many twins the fit
  // read as ratios to their anchors. levels_free: beside rows scaled by a
  // reference, each pair's level was left free and it fitted its ratio only.
  std::vector<size_t> pair;
  size_t twins = 0;
  bool levels_free = false;
  // Per row: the figure the fit used (a twin's is its anchor's times the
  // ratio), the row's relative residual against it (with levels_free, a
  // twin's is its ratio's against the measured ratio), what the fitted
  // error model expects of that residual, and whether it counts in the
  // rms (not an anchor whose level was left free).
  std::vector<double> fitted_ns, resid, resid_sd;
  std::vector<bool> counted;
  // The credibility test's halves in residuals: a pair goes whole to its
  // anchor's half (passed counts a free anchor not at all), passed_twins
  // of the passed half are twins; rms_rows residuals make rms_rel.
  size_t failed_rows = 0, passed_twins = 0, failed_twins = 0, rms_rows = 0;
  // Some twin's ratio was measured round by round (not two figures over
  // each other): its fitted figure is not its own measurement.
  bool ratio_round_by_round = false;
};

// A row of a twin pair: a twin (its ratio to its anchor) or the anchor
// it was measured beside.
bool twin_member(const MappedRow& r);
// Twins beside rows scaled by a reference: a fit leaves each pair's
// level free and takes its ratio alone (fit_profile()), and validate
// --leave-out keeps the pairs in every fit.
bool twin_levels_free(const std::vector<MappedRow>& rows);

// One half of the credibility test in words: "N rows" + `what` (the
// passed half) or "N gate-failed rows", with the twins in it: "and K
// twins' ratios" (free pairs) or "(K of them twins, each judged with its
// anchor)".
std::string half_rows(const FitReport& r, bool failed, const std::string& what);

// What the fit expects of row i's relative residual: expected_rms(), with
// a gate-failed row's own spread added in quadrature.
double row_sd(const FitReport& r, size_t i);

// A row that failed its stability gate: its own relative spread, the
// larger of the note's standard error (kit rows; else the round CV) and
// half its drift between repeats, at most 1. 0 for any other row.
double row_spread(const std::string& note);

// The error of any row's measured mean, gate passed or failed: the
// note's standard error, else its round CV over sqrt(rounds) (row_spread()
// passes 1: a round's CV), or half the drift between its repeats if
// larger; at most 1, 0 when the note states no spread. validate's
// coverage with each row's own measurement error added.
double measurement_spread(const std::string& note, double rounds);
// The rounds behind a row's mean: "N measured rounds" (or "N groups") in
// its shape, else the scenario's rounds parameter, else 15.
double measured_rounds(const MappedRow& r);

// The fit's own estimate of its rms relative residual:
// sqrt(s^2 + sv^2 + su^2).
double expected_rms(const FitReport& r);

// What the rms, in sds, of n rows may reach before the fit is refused:
// each row judged against the fit's estimate (a gate-failed row with its
// own spread added), their sum of squares is at most chi-square on n
// degrees of freedom if the model holds (fitting the prices to them only
// shrinks it), so the limit is that sum's 99th percentile: 2.57 for 1
// row, 1.39 for 18, 1.26 for 40, towards 1.
double rms_sd_limit(size_t n);

// Why the fit is not to be trusted, one line per cause (empty: none):
// the residuals above what the fit expects (the rows that passed their
// gate: rms residual above expected_rms(); the gate-failed rows: rms of
// residual / row_sd() above 1), an error-model term at its cap
// or the speed factor at the end of its search, a parameter the rows
// count sitting at 0, NNLS not converged. docs/calibration.md, "A fit
// that refuses to lie".
std::vector<std::string> fit_problems(const FitReport& r);

// The `n` rows whose residual is largest against row_sd(): "SF-103
// +2.92% (1.0 sd)", comma-separated.
std::string worst_rows(const FitReport& r, const std::vector<MappedRow>& rows, size_t n);

// Which fitter. `current`: the one described above (speed factors on the
// priors, the error model searched on log row times, the noise prior).
// `unscaled`: the fitter as issue 20 found it (before af6820c), kept so
// that validate can print its coverage beside today's: the priors at the
// priors' machine's scale (no speed factor), the error model searched on
// the relative residuals 1 - a_i mu / y_i by a golden-section search over
// each coordinate in turn (six sweeps), no noise prior, no model_drift,
// configurations as rows of identical counts, and gate-failed rows
// weighted like the others. docs/validation.md, "Today's fitter beside
// the one before it".
enum class FitMethod : uint8_t { current, unscaled };
// "today's" or "before the speed factors", for the reports.
const char* fit_method_label(FitMethod m);

// Fits the parameters of `structure` (names, events, priors) to `rows`.
// The model's name is `name`; its noise model is derived from the rows.
FitReport fit_profile(const CostModel& structure, const FitSettings& fit,
                      const std::vector<MappedRow>& rows, const std::vector<PerOpCounts>& per_op,
                      const std::string& name, FitMethod method = FitMethod::current);

// Per-round CV and drift per workload shape, from the rows' notes ("max
// group CV x%", "max role drift y%") and repeated base rows (A/B/A).
NoiseModel derive_noise(const std::vector<MappedRow>& rows, const FitSettings& fit);

// The calibrate command's report: residual per row, then every parameter
// with its status.
std::string format_fit(const FitReport& r, const std::vector<MappedRow>& rows,
                       const std::string& measurements, const Mapping& m);

// Short description of a row's simulation: "sparse-fill slots=4096 ...".
std::string describe_sim(const MappedRow& r, const FitSettings& fit);

}  // namespace simcache::sim
