// simcache: the command-line entry point (see sim/cli/cli.h).
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

#ifdef SIMCACHE_WITH_JEMALLOC
// jemalloc reads its options from this symbol at its first allocation
// (MALLOC_CONF in the environment overrides the keys it names).
// Transparent huge pages for the heap and jemalloc's own metadata: a run
// touches its model tables once and soon, and on a virtual machine each
// first touch of a 4 KiB page is a dear fault; a 2 MiB page takes one
// fault for 512 of them. Where the system's THP setting is `madvise`
// jemalloc asks for them with madvise(); where it is `always` the kernel
// gives them anyway, and where it is `never` jemalloc asks for nothing.
// About 4 MiB more resident a worker thread (its arena); the output is
// the same either way (docs/performance.md, "Start-up").
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "thp:always,metadata_thp:always";
}
#endif

int main(int argc, char** argv) {
  // A FIFO or pipe reader that goes away is a write error with a message
  // (EPIPE), not a silent death by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  const simcache::sim::CliOutcome r = simcache::sim::run_cli(args);
  std::fwrite(r.out.data(), 1, r.out.size(), stdout);
  std::fwrite(r.err.data(), 1, r.err.size(), stderr);
  return r.status;
}
