// Command-line front end shared by the simcache binary and the tests:
// parses arguments, runs, writes the report. Errors are one line naming
// the bad flag, value or name, and the exit status is 2.
#pragma once

#include <string>
#include <vector>

namespace simcache::sim {

struct CliOutcome {
  int status = 0;
  std::string out;  // what goes to stdout (unless --output)
  std::string err;  // what goes to stderr
};

// argv without the program name.
CliOutcome run_cli(const std::vector<std::string>& args);

// Writes `data` to `path` atomically (temp file + rename): never a
// half-written file. Returns false with a message on failure.
bool write_file_atomic(const std::string& path, const std::string& data,
                       std::string* error);

}  // namespace simcache::sim
