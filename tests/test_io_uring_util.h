// Shared set-up for the io_uring layer tests: one simulated kernel over
// the counting fake allocator.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "fake_mm.h"
#include "model/io_uring/ring.h"
#include "model/mm/mm.h"

namespace simcache::testing {

// Tasks: the seeds pin the benchmark to one CPU; teardown runs on an
// unbound kworker elsewhere.
inline constexpr Task kApp{2, 1, 0};
inline constexpr Task kOtherCpu{5, 1, 0};
inline constexpr Task kKworker{7, kRootMemcg, 0};

using iou::IORING_FILE_INDEX_ALLOC;

struct Sim {
  FakeMm mm;
  iou::KernelProfile profile;
  iou::PolicySet policy;
  MmConfig mmcfg;
  std::unique_ptr<iou::IoUring<FakeMm>> io;

  explicit Sim(std::string_view prof = "v6.18", std::string_view spec = "unpatched",
               iou::DebugBug bug = iou::DebugBug::none) {
    std::string err;
    const iou::KernelProfile* p = iou::profile_by_name(prof, &err);
    if (p == nullptr) throw std::runtime_error(err);
    profile = *p;
    iou::apply_profile(profile, mmcfg);
    if (!iou::parse_policies(spec, &profile, &policy, &mmcfg, &err))
      throw std::runtime_error(err);
    policy.debug_bug = bug;
    io = std::make_unique<iou::IoUring<FakeMm>>(mm, profile, policy);
  }

  uint64_t ev(Event e) const { return mm.events()[e]; }
  // Objects still live once the program's tasks have exited too (their
  // io_uring contexts outlive the rings, as in the kernel).
  uint64_t live_after_task_exit() {
    io->task_exit_all();
    return mm.live_objects();
  }
  Counters snap() { return mm.events(); }
  uint64_t since(const Counters& before, Event e) { return mm.events()[e] - before[e]; }

  // Bulk calls / objects on one cache.
  uint64_t bulk_calls(CacheId c) const {
    return mm.count_if([c](const Call& x) { return x.op == Op::kmem_cache_alloc_bulk && x.cache == c; });
  }
  uint64_t bulk_objs(CacheId c) const {
    uint64_t n = 0;
    for (const Call& x : mm.calls())
      if (x.op == Op::kmem_cache_alloc_bulk && x.cache == c) n += static_cast<uint64_t>(x.got);
    return n;
  }
  uint64_t cache_calls(Op op, CacheId c) const {
    return mm.count_if([op, c](const Call& x) { return x.op == op && x.cache == c; });
  }
};

// Source ring with one real file in slot 0 (workload F0 set-up).
inline int make_source(Sim& s, const Task& t = kApp) {
  const int src = s.io->ring_create(t);
  if (src >= 0) s.io->files_register(src, 1);
  return src;
}

// `n` SEND_FD installs of src slot 0 into dst (ALLOC), as batches of 64
// SQEs per io_uring_enter, each batch's target CQEs reaped (workload F0:
// a target ring left unreaped would overflow its CQ ring). Returns how
// many succeeded.
inline uint32_t send_fill(Sim& s, int src, int dst, uint32_t n, bool defer = false) {
  uint32_t ok = 0;
  for (uint32_t done = 0; done < n;) {
    s.io->enter_begin(src);
    for (uint32_t i = 0; i < 64 && done < n; i++, done++)
      ok += s.io->msg_ring_send_fd(src, dst, 0, IORING_FILE_INDEX_ALLOC, defer) >= 0;
    s.io->enter_end(src);
    s.io->reap_cq(dst);
  }
  return ok;
}

}  // namespace simcache::testing
