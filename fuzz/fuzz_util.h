// Shared by the libFuzzer targets: every parser error must be one line.
#pragma once

#include <cstdlib>
#include <string>

namespace simcache::fuzz {

// A multi-line or empty error is a bug as much as a crash is.
inline void check_error(bool ok, const std::string& error) {
  if (ok) return;
  if (error.empty() || error.find('\n') != std::string::npos ||
      error.find('\r') != std::string::npos)
    std::abort();
}

}  // namespace simcache::fuzz
