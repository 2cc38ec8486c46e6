// Presets: fixed sets of workloads that answer one RFC's questions.
#include <fmt/format.h>

#include "sim/run/scenarios/common.h"

namespace simcache::sim {

namespace {
// seed 001's "is this a common case?": the futex patch's effect across
// the workload mix (failing share x background kmalloc-192 users per
// CPU), on !RT and PREEMPT_RT, 8 CPUs.
// seed 001's tail argument: the event loop's arm latency under !RT and
// PREEMPT_RT, first beside light background kmalloc-192 users, then
// beside bursty ones with threaded-irq load on their CPUs (8 CPUs).
PresetInfo rt_arm() {
  PresetInfo p;
  p.name = "rt-arm";
  p.summary = "seed 001: FUTEX_WAIT arm latency tails, unpatched vs futex-return-to-cache, !RT and RT";
  p.policies = {"unpatched", "futex-return-to-cache"};
  for (int64_t heavy : {0, 1})
    for (int64_t rt : {0, 1}) {
      Params set{{"rt", rt}};
      if (heavy)
        set.insert({{"cpus", 8}, {"bg_per_cpu", 4}, {"bg_burst", 128},
                    {"irq_period_ns", 20000}, {"irq_dur_ns", 3000}, {"messages", 2000}});
      p.items.push_back({fmt::format("{}, {}", rt ? "PREEMPT_RT" : "!RT",
                                     heavy ? "bursty kmalloc-192 users + 3 us irq per 20 us"
                                           : "light kmalloc-192 users"),
                         "rt-arm-loop", set, {}, ""});
    }
  return p;
}

PresetInfo arm_mix() {
  PresetInfo p;
  p.name = "arm-mix";
  p.summary = "seed 001: futex-return-to-cache across fail share x background users, !RT and RT";
  p.policies = {"unpatched", "futex-return-to-cache"};
  for (int64_t rt : {0, 1})
    for (int64_t fail : {100, 390, 1000})
      for (int64_t bg : {0, 2}) {
        p.items.push_back({fmt::format("{} fail {}/1000, {} bg/CPU", rt ? "RT" : "!RT", fail, bg),
                           "rt-arm-loop",
                           {{"rt", rt}, {"fail_permille", fail}, {"bg_per_cpu", bg}, {"cpus", 8},
                            {"cpu", 2}, {"kworker_cpu", 3}, {"messages", 2000}},
                           {},
                           ""});
      }
  return p;
}

// The same question on arm-fail's back-to-back loop (e0): failing share
// x background kmalloc-192 users per CPU, 8 CPUs, 20,000 waits a column.
PresetInfo arm_fail_mix() {
  PresetInfo p;
  p.name = "arm-fail-mix";
  p.summary = "seed 001: futex-return-to-cache on the e0 loop across fail share x background users";
  p.policies = {"unpatched", "futex-return-to-cache"};
  for (int64_t fail : {0, 390, 1000})
    for (int64_t bg : {0, 2}) {
      p.items.push_back({fmt::format("fail {}/1000, {} bg/CPU", fail, bg),
                         "arm-fail",
                         {{"fail_permille", fail}, {"bg_per_cpu", bg}, {"cpus", 8}, {"cpu", 2},
                          {"kworker_cpu", 3}, {"cycles", 625}},
                         {},
                         ""});
    }
  return p;
}

// Seed 003: schedule() against io_schedule() in the cqring wait, at sleeps
// either side of the C6 target residency (600 us) and of 11 x C6's exit
// latency (2420 us, where menu's iowait multiplier lets C6 back in). The
// governor rule is the profile's: run it on an era kernel (--kernel
// v6.4.4); on v6.13+ both columns pick the same state (38f83090f515).
void register_cqwait_preset(ScenarioRegistry& r) {
  PresetInfo p;
  p.name = "cqwait";
  p.summary = "seed 003: cqring wait in schedule() vs io_schedule(), idle state and wake cost";
  p.policies = {"wait-schedule", "wait-io-schedule"};
  const auto item = [](const char* label, int64_t delay, int64_t predict, const char* note) {
    return PresetItem{label, "wait-wake",
                      {{"vectors", 1}, {"cycles", 64}, {"rounds", 3}, {"warmup", 1},
                       {"wake_delay_us", delay}, {"predict_us", predict}},
                      {}, note};
  };
  p.items = {
      item("sleep 50 us", 50, 0, "both C1E: C6 needs 600 us of predicted sleep"),
      item("sleep 1000 us", 1000, 0, "schedule: C8; io_schedule: C1E (limit 1000/11 = 90 us)"),
      item("sleep 2000 us", 2000, 0, "schedule: C10; io_schedule: C1E (limit 181 us < C6's 220)"),
      item("sleep 5000 us", 5000, 0, "schedule: C10; io_schedule: C8 (limit 454 us)"),
      item("sleep 50 us, predicted 2000 us", 50, 2000,
           "a mispredicted short sleep: C10 against C1E"),
  };
  r.add_preset(std::move(p));
}

}  // namespace

void register_presets(ScenarioRegistry& r) {
  PresetInfo p;
  p.name = "sparse4096";
  p.summary = "seed 004 RFC: node kmem_cache + bulk refill + prefill on 4096-slot tables";
  p.policies = {"unpatched", "node-slab+bulk-refill", "node-slab+bulk-refill+prefill"};
  // The RFC's four workloads (its results table), 3 warm-up operations
  // then 2 groups of 32 for the lifecycle rows (the real runs use 15).
  // After warm-up every operation does the same slab work; only the memcg
  // stocks' page charges fall on a cycle longer than one operation, so
  // `memcg_charge` per op shifts slightly (1.2 here, 1.15 at 15 groups).
  p.items = {
      {"first fill, 4096 slots", "sparse-fill", {{"slots", 4096}, {"installs", 4096}}, {}, ""},
      {"same-ring remove+refill, 4096 files", "lifecycle",
       {{"mode", 2}, {"slots", 4096}, {"installs", 4096}, {"groups", 2}}, {}, ""},
      {"one-shot register through fill, 4096", "lifecycle",
       {{"mode", 1}, {"slots", 4096}, {"installs", 4096}, {"groups", 2}}, {}, ""},
      {"register 4096 / install 64", "lifecycle",
       {{"mode", 1}, {"slots", 4096}, {"installs", 64}, {"groups", 2}}, {}, ""},
  };
  // The RFC's hypothesis table, each a base/variant pair on the first fill.
  const Params f0 = {{"slots", 4096}, {"installs", 4096}};
  p.items.push_back({"hypothesis: slab merging defeats locality", "sparse-fill", f0,
                     {"node-slab", "node-slab+slab-nomerge"},
                     "RFC measured: slab_nomerge, no change"});
  p.items.push_back({"hypothesis: SLAB_ACCOUNT on the new cache", "sparse-fill", f0,
                     {"node-slab", "node-slab-account"},
                     "RFC measured: +8.5%"});
  p.items.push_back({"hypothesis: allocator call overhead", "sparse-fill", f0,
                     {"node-slab", "node-slab+bulk-refill"},
                     "RFC measured: bulk refill, 32x fewer calls, +0.007%"});
  p.items.push_back({"hypothesis: fresh slab page creation", "sparse-fill", f0,
                     {"unpatched", "slab-prime"},
                     "RFC measured: slab primed, 0 new pages, +0.9%"});
  p.items.push_back({"hypothesis: per-object SLUB allocation path", "sparse-fill", f0,
                     {"node-slab+bulk-refill", "node-slab+bulk-refill+prefill"},
                     "RFC measured: prefill removes it, -9.5%"});
  r.add_preset(std::move(p));
  r.add_preset(rt_arm());
  r.add_preset(arm_mix());
  r.add_preset(arm_fail_mix());
  register_cqwait_preset(r);
}

}  // namespace simcache::sim
