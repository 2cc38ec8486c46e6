// Shared by the libFuzzer targets: every parser error must be one line,
// and what the op-file and trace targets load runs through the model.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "sim/replay/ops.h"
#include "sim/run/engine.h"

namespace simcache::fuzz {

// A multi-line or empty error is a bug as much as a crash is.
inline void check_error(bool ok, const std::string& error) {
  if (ok) return;
  if (error.empty() || error.find('\n') != std::string::npos ||
      error.find('\r') != std::string::npos)
    std::abort();
}

// The model work one input may ask for (operations executed plus the
// objects, slots and pages they touch): inputs above it are not run, so
// each run stays within a few milliseconds (docs/reliability.md).
inline constexpr uint64_t kMaxWork = 4096;
// Adds `w` to `*total`, saturating at kMaxWork + 1 (so a product of
// repeat counts cannot overflow).
inline void add_work(uint64_t* total, uint64_t w) {
  *total = (w > kMaxWork || *total + w > kMaxWork) ? kMaxWork + 1 : *total + w;
}

// What one op costs the model beyond itself: the slots, entries, waiters,
// objects or pages its count names.
inline uint64_t op_weight(const sim::Op& op) {
  using sim::OpKind;
  const auto n = static_cast<uint64_t>(op.n);
  switch (op.kind) {
    case OpKind::ring_create:  // sq and cq entries
      return op.off < 0 || static_cast<uint64_t>(op.off) > kMaxWork ? kMaxWork + 1
                                                                    : n + static_cast<uint64_t>(op.off);
    case OpKind::register_files:
    case OpKind::register_sparse:
    case OpKind::files_update:
    case OpKind::futex_waitv:
    case OpKind::futex_wake:
    case OpKind::nop:
      return n;
    case OpKind::kmalloc:       // a large kmalloc's pages
    case OpKind::cache_create:  // a huge object's slab order
      return n / 4096;
    case OpKind::page_alloc: return n > 12 ? kMaxWork + 1 : uint64_t{1} << n;
    default: return 0;
  }
}

// Runs a loaded op file or trace as run-ops and replay do (sim::run_custom:
// a fresh simulated kernel per column, KASAN histories on, the end-of-run
// leak and invariant checks). The column and kernel are picked by `pick`
// (a hash of the input), so the corpus covers several policies and both
// SLUB generations. A KASAN report is the model's verdict on the input
// (a trace may free what it never allocated), not a crash; a crash, UB,
// a leak or a hang is. A refusal must say why (the CLI escapes it to one
// line: a macro body's parse error at its call may quote raw bytes).
inline bool run_model(const sim::CustomWorkload& w,
                      std::vector<std::pair<std::string, std::string>> sets, size_t pick,
                      sim::RunResult* out = nullptr) {
  static const char* const kColumns[] = {
      "unpatched", "node-slab+bulk-refill+prefill", "futex-return-to-cache+waitv-cache",
      "node-slab-account+prefill-grow+memcg-batch-charge+memcg-batch-free",
      "slab-nomerge+kmalloc-prefill"};
  static const char* const kKernels[] = {"v6.18", "v7.1"};
  sim::RunRequest req;
  req.kernel = kKernels[pick % 2];
  req.policies = {kColumns[(pick / 2) % 5]};
  req.sets = std::move(sets);
  req.call_sites = (pick & 8) != 0;  // both the scoped and the unscoped paths
  sim::RunResult r;
  std::string err;
  const bool ok = sim::run_custom(req, w, &r, &err);
  if (!ok && err.empty()) std::abort();
  if (out) *out = std::move(r);
  return ok;
}

}  // namespace simcache::fuzz
