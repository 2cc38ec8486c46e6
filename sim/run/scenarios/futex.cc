// Futex programs: WAITV -> WAKE "v0" and its scalar control "s0"
// (docs/workloads.md §4), and the arm-fail loop "e0" (§5).
#include "sim/run/scenarios/common.h"

namespace simcache::sim {
namespace {

// v0: per cycle, one io_uring_enter submits `vectors` FUTEX_WAITV of
// `width` words without waiting (each prepared: one allocation, armed);
// a second submits `vectors` FUTEX_WAKE on word 3 of each vector and
// waits for all CQEs. Untimed: one WAKE on word 0 per vector finds no
// waiter. s0 (width 0): `vectors` FUTEX_WAIT then as many FUTEX_WAKE.
// wake_delay_us > 0 (seed 003): the first enter waits for its CQEs
// (min_complete = vectors) and sleeps that long in io_cqring_wait; the
// second enter is another task's, whose wakes end the sleep. Nothing else
// changes, so 0 is the program above exactly.
void run_waitv(Env& e, const Params& p, Recorder& rec) {
  const int64_t vectors = p.at("vectors"), width = p.at("width");
  const auto delay = static_cast<uint64_t>(p.at("wake_delay_us"));
  const auto predict = p.at("predict_us") ? static_cast<uint64_t>(p.at("predict_us")) : delay;
  const RingId r = e.io.ring_create(e.submitter, {64, 128, false});
  if (r < 0) return;
  auto round = [&](bool measured, bool) {
    rec.begin_round(measured);
    for (int64_t c = 0; c < p.at("cycles"); ++c) {
      rec.timed_begin();
      e.io.enter_begin(r);
      for (int64_t v = 0; v < vectors; ++v) {
        if (width) e.io.futex_waitv(r, static_cast<uint32_t>(width));
        else e.io.futex_wait(r, true);
      }
      e.io.cqring_wait(r, delay, predict);
      e.io.enter_end(r);
      e.io.enter_begin(r);
      for (int64_t v = 0; v < vectors; ++v) e.io.futex_wake(r, 1);
      e.io.enter_end(r);
      rec.timed_end();
      if (width) {  // the residual-waiter check
        e.io.enter_begin(r);
        for (int64_t v = 0; v < vectors; ++v) e.io.futex_wake(r, 1);
        e.io.enter_end(r);
      }
    }
    rec.metric("bytes_retained", ring_cache_bytes(e, r));  // futex_cache, waitv-cache
    rec.end_round(static_cast<uint64_t>(p.at("cycles") * vectors));
  };
  run_rounds(p, round);
  e.io.ring_exit(r, e.kworker);
}

// e0: `waits` FUTEX_WAIT per cycle, a share `fail_permille` of which find
// the word changed and fail to arm (-EAGAIN); the armed ones are woken by
// one FUTEX_WAKE each, as an event loop re-arming per message does. The
// failing share is spread evenly (error diffusion), so the counts are exact.
void run_arm_fail(Env& e, const Params& p, Recorder& rec) {
  const int64_t waits = p.at("waits"), permille = p.at("fail_permille");
  const RingId r = e.io.ring_create(e.submitter, {256, 0, false});
  if (r < 0) return;
  int64_t seq = 0;
  auto round = [&](bool measured, bool) {
    rec.begin_round(measured);
    rec.timed_begin();
    for (int64_t c = 0; c < p.at("cycles"); ++c) {
      e.io.enter_begin(r);
      int64_t armed = 0;
      for (int64_t i = 0; i < waits; ++i, ++seq) {
        const bool fail = (seq + 1) * permille / 1000 > seq * permille / 1000;
        armed += e.io.futex_wait(r, !fail) == 0;
      }
      e.io.enter_end(r);
      if (armed) {
        e.io.enter_begin(r);
        for (int64_t i = 0; i < armed; ++i) e.io.futex_wake(r, 1);
        e.io.enter_end(r);
      }
    }
    rec.timed_end();
    rec.end_round(static_cast<uint64_t>(p.at("cycles") * waits));
  };
  run_rounds(p, round);
  e.io.ring_exit(r, e.kworker);
}

}  // namespace

void register_waitv(ScenarioRegistry& r) {
  const std::vector<ParamSpec> common = {
      {"cycles", 512, 1, 1 << 20, "cycles per round"},
      {"rounds", 15, 1, 10000, "measured rounds"},
      {"warmup", 3, 0, 10000, "untimed warm-up rounds"},
      {"smoke", 0, 0, 1, "untimed smoke round"},
      {"wake_delay_us", 0, 0, 1000000,
       "seed 003: the waiter sleeps this long in io_cqring_wait before the wake (0 = no sleep)"},
      {"predict_us", 0, 0, 10000000,
       "seed 003: the idle governor's predicted sleep (0 = wake_delay_us, a converged predictor)"},
  };
  ScenarioInfo v{"waitv", "v0: FUTEX_WAITV -> FUTEX_WAKE, 8 vectors of 8 words",
                 "pair", "ns",
                 {{"vectors", 8, 1, 64, "WAITV requests per cycle"},
                  {"width", 8, 1, 128, "futex words per vector (FUTEX_WAITV_MAX 128)"}},
                 run_waitv};
  v.params.insert(v.params.end(), common.begin(), common.end());
  r.add(v);
  ScenarioInfo s{"wait-wake", "s0: scalar control, 32 FUTEX_WAIT then 32 FUTEX_WAKE",
                 "pair", "ns",
                 {{"vectors", 32, 1, 4096, "FUTEX_WAIT requests per cycle"},
                  {"width", 0, 0, 0, "0: scalar FUTEX_WAIT"}},
                 run_waitv};
  s.params.insert(s.params.end(), common.begin(), common.end());
  r.add(s);
}

void register_arm_fail(ScenarioRegistry& r) {
  r.add({"arm-fail",
         "e0: FUTEX_WAIT re-arms, a share of which fail with -EAGAIN",
         "wait",
         "ns",
         {
             {"fail_permille", 1000, 0, 1000, "arms that fail, per 1000 (390: seed 001's 0.39)"},
             {"waits", 32, 1, 4096, "FUTEX_WAIT per cycle"},
             {"cycles", 3125, 1, 1 << 20, "cycles per round (3125 x 32 = 100,000 waits)"},
             {"rounds", 1, 1, 10000, "measured rounds"},
             {"warmup", 0, 0, 10000, "untimed warm-up rounds"},
             {"smoke", 0, 0, 1, "untimed smoke round"},
         },
         run_arm_fail});
}

}  // namespace simcache::sim
