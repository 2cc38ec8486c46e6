// libFuzzer target: command-line arguments (sim/cli). The input is argv
// split at NUL bytes. Report command lines are checked without running
// (parse_report_args); subcommands run only when no argument names a path,
// so the fuzzer never reads or writes the file system.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "sim/cli/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size && args.size() <= 64; ++i) {
    if (data[i] == 0)
      args.emplace_back();
    else
      args.back() += static_cast<char>(data[i]);
  }
  bool paths = false;
  for (const std::string& a : args) paths |= a.find('/') != std::string::npos;
  if (args[0] == "calibrate" || args[0] == "validate" || args[0] == "--list" ||
      args[0] == "--help") {
    if (paths) return 0;
    const simcache::sim::CliOutcome r = simcache::sim::run_cli(args);
    if (r.status == 2 && (r.err.empty() || r.err.find('\n') != r.err.size() - 1)) std::abort();
    return 0;
  }
  simcache::sim::RunRequest req;
  std::string error;
  if (!simcache::sim::parse_report_args(args, &req, &error)) {
    // The raw error may hold the user's bytes; cli_fail() must make it
    // exactly one line.
    const std::string line = simcache::sim::cli_fail(error).err;
    if (error.empty() || line.find('\n') != line.size() - 1 || line.find('\r') != std::string::npos)
      std::abort();
  }
  return 0;
}
