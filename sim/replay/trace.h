// ftrace / trace-cmd report text, one event per line (docs/ops.md,
// "Trace replay"). The prefix is "[TASK-PID] [CPU] [FLAGS] TIME: EVENT:"
// with the task column optional and task names free to contain ':', '-'
// and spaces; fields are read as optional key=value pairs (kmem) or
// "key value" pairs (io_uring), so other kernel versions' formats load.
// Parsing never allocates: every string_view points into the line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace simcache::sim {

enum class TraceKind : uint8_t {
  none,             // a comment, a header line, or an event replay ignores
  kmalloc,          // kmem:kmalloc, kmalloc_node
  kmem_cache_alloc, // kmem:kmem_cache_alloc, kmem_cache_alloc_node
  kfree,
  kmem_cache_free,
  page_alloc,       // kmem:mm_page_alloc
  page_free,        // kmem:mm_page_free, mm_page_free_batched
  uring_create,     // io_uring:io_uring_create
  uring_register,
  uring_submit,     // io_uring_submit_req (5.19+) / io_uring_submit_sqe
  uring_complete,
  enter,            // syscalls:sys_enter_io_uring_enter
  enter_exit,       // syscalls:sys_exit_io_uring_enter
  close,            // syscalls:sys_enter_close
  marker,           // ftrace:print (trace_marker): "simcache OP ..." lines
};

// Unset numeric fields are -1 (or 0 for pointers, which replay treats as
// "absent" only where the kernel never prints NULL). Only the fields of
// the parsed kind are set: the others keep an earlier line's values.
struct TraceEvent {
  TraceKind kind = TraceKind::none;
  std::string_view task;      // "" when the trace has no task-pid column
  int64_t pid = -1;
  uint32_t cpu = 0;
  int64_t ts_ns = -1;         // the timestamp in ns (-1: more than 9 digits of seconds)
  std::string_view event;     // the event name as printed
  // kmem
  std::string_view call_site;  // the symbol ("putname+0x47/0x50") or the hex text
  uint64_t ptr = 0;
  int64_t bytes_req = -1, bytes_alloc = -1, node = -1, accounted = -1;
  std::string_view gfp, name;  // gfp_flags=..., name= (kmem_cache_free 5.12+)
  uint64_t pfn = 0;
  int64_t order = -1;
  // io_uring and syscalls
  uint64_t ring = 0, req = 0;
  int64_t fd = -1, sq = -1, cq = -1, flags = -1, opcode = -1, nr_files = -1, result = -1;
  std::string_view opcode_name;  // 5.19+: "FUTEX_WAIT"; older: the number
  std::string_view text;         // marker payload
};

// Parses one line. Returns false for a malformed line with the 1-based
// column and a reason; a line replay has no use for (another event, a
// comment) parses as TraceKind::none.
bool parse_trace_line(std::string_view line, TraceEvent* ev, size_t* col, std::string* why);


}  // namespace simcache::sim
