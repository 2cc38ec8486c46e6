// trace-cmd's binary trace.dat (`trace-cmd record`, docs/ops.md, "Trace
// replay"): recognised by its magic, read through libtracecmd, and its
// records rendered one line each as `trace-cmd report -t` prints them
//   COMM-PID [CPU] SECS.NSECS: EVENT: FIELDS
// in time order across CPUs and buffer instances, so the one text parser
// (trace.h) reads both formats and both give the same events.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/io/input.h"

namespace simcache::sim {

// "\x17\x08\x44tracing" at the start (a pipe: read into its spool).
bool is_trace_dat(InputSource& src);

// The records of a trace.dat as a temporary text input named as `src`,
// each line one record (line N is record N). The file is read through
// `src` (a pipe to its end first), at most the input limit
// (SIMCACHE_INPUT_LIMIT), and at most `max_records` records are rendered.
// A file libtracecmd cannot read is one error line naming the file.
std::shared_ptr<InputSource> trace_dat_as_text(InputSource& src, uint64_t max_records,
                                               std::string* error);

}  // namespace simcache::sim
