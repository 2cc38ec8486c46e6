// Loads a kmem trace (ftrace / trace-cmd text, trace.h) as background
// load: BackgroundTrace (sim/run/scenarios/background.h), one op list per
// traced CPU, frees matched to allocs by pointer (docs/engine.md,
// "Background load from a trace"). The file is read once through a
// LineInput (sim/io/input.h); what is kept is 16 bytes a kmem event, at most
// BackgroundTrace::kMaxEvents of them.
#pragma once

#include <string>

#include "sim/run/engine.h"
#include "sim/run/scenarios/background.h"

namespace simcache::sim {

// Errors are one line: "FILE: cannot open the background trace",
// "FILE:LINE: field 'X': reason (column C)", or what the whole file lacks.
bool load_background_trace(const std::string& path, BackgroundTrace* out, std::string* error);
// Loads req->background_trace into req->bg_trace.
bool attach_background_trace(RunRequest* req, std::string* error);

}  // namespace simcache::sim
