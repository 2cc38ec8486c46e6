// run-ops and replay as workloads of the engine (sim/run/engine.h): an op
// file or a trace runs once per policy column on a fresh simulated
// kernel, so reports look like scenario reports. Also the two emitters
// the round-trip tests use: a run's ops as an op file, and as a trace.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "sim/io/input.h"

#include "sim/replay/ops.h"
#include "sim/replay/trace.h"
#include "sim/run/engine.h"

namespace simcache::sim {

// run-ops FILE: the file is read and checked once (load_op_file); every
// column streams it again.
bool ops_workload(const std::string& path, CustomWorkload* w, std::string* error);
// The workload of a program already parsed (from text, or loaded): what
// run-ops runs for it.
CustomWorkload ops_program_workload(std::shared_ptr<const OpProgram> prog);

// Work budget of a replay (docs/ops.md, "Budgets"): the lines a trace may
// have (every line is parsed, event or not); replay --max-events raises it.
inline constexpr uint64_t kDefaultMaxEvents = 1'000'000'000;

struct ReplayOptions {
  bool strict = false;  // stop at the first malformed line
  uint64_t max_events = kDefaultMaxEvents;
};

// What the first pass over a trace found (every column replays the same).
struct TraceSummary {
  std::string file;
  // The opened trace: later passes read it again from here (a pipe from
  // its spool, so it is read once; sim/io/input.h).
  std::shared_ptr<InputSource> src;
  // The lines replay parses: `src` itself, or a trace.dat's records
  // rendered as text (trace_dat.h), line N being record N.
  std::shared_ptr<InputSource> text;
  bool dat = false;
  uint64_t lines = 0, events = 0, skipped = 0;
  std::string first_skipped;  // "FILE:LINE:COL: why" of the first skipped line
  uint32_t max_cpu = 0;
  bool io_uring = false;      // io_uring-level events drive the io_uring model
  bool markers = false;       // simcache round/timed markers
};

// Opens a trace (a trace.dat is rendered as text, trace_dat.h) without
// reading its lines: `s` gets file, src, text and dat.
bool open_trace(const std::string& path, const ReplayOptions& o, TraceSummary* s,
                std::string* error);
// Pass 1: opens the trace and parses every line. strict: fails at the
// first malformed one with "FILE:LINE:COL: why".
bool scan_trace(const std::string& path, const ReplayOptions& o, TraceSummary* s,
                std::string* error);
// Without --set cpus, a trace's machine has max(this, highest traced CPU
// + 1) CPUs.
inline constexpr uint32_t kReplayMinCpus = 20;

// One pass instead of two (docs/ops.md, "Trace replay"): each column
// checks, counts and replays every line as it reads it, on the guess the
// first pass would confirm for most traces: no round markers, no CPU at
// or above kReplayMinCpus (unless cpus was set), and no io_uring-level
// event after a kmem event of an io_* call site. A line that breaks the
// guess stops every column and marks the pass `invalid`: the caller then
// scans and replays as two passes, which gives what the guess would have.
// Only the io_uring guess is retried instead: a real capture's ring
// set-up allocates (io_* call sites) before io_uring_create is traced, so
// the second attempt assumes io_uring events from the start.
struct SinglePass {
  TraceSummary opened;  // from open_trace()
  ReplayOptions options;
  bool cpus_set = false;
  // The guess about io_uring-level events: none (false), or some, known
  // from an earlier attempt that met one after an io_* kmem event.
  bool assume_io_uring = false;
  // Sees every byte of the trace, in order, on one column's read (the
  // record's hash). Only for a source read here to its end.
  std::function<void(std::string_view)> tap;
  // Written by the columns.
  std::mutex mu;
  bool done = false;    // `result` holds a finished column's summary
  TraceSummary result;  // as scan_trace() would have found it
  std::atomic<bool> invalid{false}, tap_taken{false};
  // The guess failed only on io_uring: one pass with assume_io_uring holds.
  std::atomic<bool> retry_io_uring{false};
};
CustomWorkload trace_workload_single(std::shared_ptr<SinglePass> sp);
// The replay workload for a scanned trace. Params: the machine's (cpus
// defaults to max(20, highest traced CPU + 1)) and waitv_width (FUTEX_WAITV
// entries: traces do not record sqe->len).
// `hook` runs on each column's executor before replay starts (emitters).
CustomWorkload trace_workload(const TraceSummary& s, std::function<void(OpExec&)> hook = {});

// Writes ops as trace text (docs/ops.md, "Ops as a trace"): kernel events
// where the kernel has a tracepoint, simcache trace markers elsewhere.
class TraceWriter {
 public:
  TraceWriter(std::FILE* out, const OpNames& names) : out_(out), names_(names) {}
  void write(const Op& op);

 private:
  void line(const Op& op, std::string_view event, const std::string& payload);
  bool emit(const Op& op, std::string_view event, const std::string& payload) {
    return line(op, event, payload), true;
  }
  bool write_mem(const Op& op);
  void marker(const Op& op);
  std::FILE* out_;
  const OpNames& names_;
  uint64_t usec_ = 1000000, req_ = 0;
  std::vector<bool> declared_;  // tasks announced with a `task` marker
};

// Runs an op file under one policy, writing its expanded ops as a trace
// (--emit-trace) or as a flat op file (--emit-ops).
bool emit_ops_run(const std::string& ops_path, const std::string& out_path, bool as_trace,
                  const RunRequest& req, std::string* error);
// Replays a scanned trace (scan_trace(), under the replay's own budget
// and options; a pipe is not read again), writing the ops it compiled to
// (replay --emit-ops).
bool emit_trace_ops(const TraceSummary& s, const std::string& out_path, const RunRequest& req,
                    std::string* error);

}  // namespace simcache::sim
