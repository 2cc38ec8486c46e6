// The calibration fit end to end: it recovers known parameters from
// measurements the simulator generates itself, and the shipped default
// profile is what a fresh fit of the calibration rows gives.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "sim/calibrate/calibrate.h"
#include "sim/calibrate/measure.h"
#include "test_cost_util.h"

using namespace simcache;
using namespace simcache::sim;
using simcache::testing::repo_file;

namespace {

struct Calib {
  Mapping map;
  std::vector<MappedRow> rows;
  std::vector<PerOpCounts> per_op;
};

// The shipped calibration rows, mapped and simulated once.
const Calib& calib() {
  static const Calib c = [] {
    Calib k;
    std::string err;
    std::vector<MeasuredRow> rows;
    if (!load_mapping(repo_file("data/profiles/mapping.toml"), &k.map, &err) ||
        !read_measurements(repo_file("data/measurements/calibration.tsv"), &rows, &err) ||
        !map_rows(k.map, rows, &k.rows, nullptr, &err) ||
        !simulate_rows(k.rows, 2, &k.per_op, &err))
      throw std::runtime_error(err);
    return k;
  }();
  return c;
}

// A machine unlike the default one: a value for each parameter the
// calibration rows pin, every other parameter at its prior.
CostModel machine_b() {
  CostModel m = prior_model();
  const std::map<std::string, double> v = {
      {"msg_ring_send_fd", 80},        {"futexv_entry", 90},       {"futex_wait", 150},
      {"io_sqe_files_register", 8000}, {"files_update_entry", 20}, {"slab_alloc_fast", 5},
      {"slab_free_slow", 15},          {"bulk_object", 6},         {"io_rsrc_node_alloc", 3},
      {"io_cache_alloc_new", 9},       {"memcg_hook", 25}};
  for (CostParam& p : m.params) {
    auto it = v.find(p.name);
    p.pinned = it != v.end();
    if (p.pinned) p.value = it->second;
  }
  return m;
}

std::vector<MappedRow> synthetic(const CostModel& truth, double wobble) {
  std::vector<MappedRow> rows = calib().rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double w = wobble == 0 ? 1 : 1 + wobble * ((i % 3) == 0 ? 1 : (i % 3) == 1 ? -1 : 0.5);
    rows[i].value_ns = predict_ns(truth, calib().per_op[i]) * w;
  }
  return rows;
}

}  // namespace

TEST_CASE("the fit recovers known parameters from simulated measurements", "[calib][fit]") {
  const CostModel truth = machine_b();
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, synthetic(truth, 0), calib().per_op, "machine-b");
  for (size_t j = 0; j < truth.params.size(); ++j) {
    const CostParam& t = truth.params[j];
    const CostParam& got = r.model.params[j];
    INFO(t.name << ": truth " << t.value << ", fit " << got.value << " (" << r.params[j].reason
                << ")");
    CHECK(got.pinned == t.pinned);
    CHECK(got.value == Approx(t.value).epsilon(1e-6).margin(1e-9));
  }
  CHECK(r.rms_rel < 1e-9);
}

TEST_CASE("the fit stays within its standard errors when measurements are noisy", "[calib][fit]") {
  const CostModel truth = machine_b();
  const FitReport r = fit_profile(prior_model(), calib().map.fit, synthetic(truth, 0.003),
                                  calib().per_op, "machine-b");
  for (size_t j = 0; j < truth.params.size(); ++j) {
    if (!r.model.params[j].pinned) continue;
    INFO(truth.params[j].name << ": truth " << truth.params[j].value << ", fit "
                              << r.model.params[j].value << " +- " << r.model.params[j].stderr_ns);
    // The fit assumes 1% noise per row; 0.3% wobble stays well inside.
    CHECK(std::fabs(r.model.params[j].value - truth.params[j].value) <=
          r.model.params[j].stderr_ns + 1e-9);
  }
}

TEST_CASE("calibrate reports what the rows cannot pin down", "[calib][fit]") {
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "x");
  auto status = [&](const std::string& name) {
    for (size_t j = 0; j < r.model.params.size(); ++j)
      if (r.model.params[j].name == name) return r.params[j];
    FAIL("no parameter " << name);
    return ParamFit{};
  };
  // No calibration row runs a 7.x kernel: no sheaf traffic at all.
  CHECK(status("sheaf_refill_object").status == PinStatus::no_data);
  // Every row has one SQE per MSG_RING or two per futex pair: the generic
  // path is a fixed combination of the request types.
  const ParamFit sqe = status("sqe_submit");
  CHECK(sqe.status == PinStatus::collinear);
  CHECK(sqe.reason.find("msg_ring_send_fd") != std::string::npos);
  CHECK(status("fget").reason.find("equals 1 x msg_ring_send_fd") != std::string::npos);
  CHECK(status("msg_ring_send_fd").status == PinStatus::pinned);
  CHECK(status("memcg_hook").status == PinStatus::pinned);
  for (size_t j = 0; j < r.params.size(); ++j) {
    if (r.params[j].status == PinStatus::pinned) continue;
    INFO(r.model.params[j].name);
    CHECK_FALSE(r.params[j].reason.empty());
    CHECK(r.model.params[j].value == prior_model().params[j].value);
  }
}

TEST_CASE("the shipped default profile is a fresh fit of the calibration rows", "[calib][fit]") {
  const FitReport r =
      fit_profile(prior_model(), calib().map.fit, calib().rows, calib().per_op, "i7-12700KF");
  const CostModel& shipped = simcache::testing::default_profile();
  INFO(
      "stale data/profiles/i7-12700KF.toml? regenerate: simcache calibrate "
      "--measurements data/measurements/calibration.tsv --out data/profiles/i7-12700KF.toml");
  REQUIRE(shipped.params.size() == r.model.params.size());
  for (size_t j = 0; j < shipped.params.size(); ++j) {
    INFO(shipped.params[j].name);
    CHECK(shipped.params[j].name == r.model.params[j].name);
    CHECK(shipped.params[j].pinned == r.model.params[j].pinned);
    CHECK(shipped.params[j].value == Approx(r.model.params[j].value).epsilon(1e-5).margin(1e-9));
    CHECK(shipped.params[j].events == r.model.params[j].events);
  }
  REQUIRE(shipped.noise.has_value());
  CHECK(shipped.noise->entries.size() == r.model.noise->entries.size());
  // The residuals docs/validation.md states.
  CHECK(r.rms_rel < 0.02);
  CHECK(r.max_rel < 0.05);
}

TEST_CASE("id ranges compress consecutive ids", "[calib]") {
  CHECK(id_ranges({"SF-001", "SF-002", "SF-003", "SF-197", "WV-001", "WV-003"}) ==
        "SF-001..SF-003, SF-197, WV-001, WV-003");
  CHECK(id_ranges({"A", "B"}) == "A, B");
  CHECK(id_ranges({}).empty());
}
