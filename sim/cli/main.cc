// simcache: the command-line entry point (see sim/cli/cli.h).
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/cli/cli.h"

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
