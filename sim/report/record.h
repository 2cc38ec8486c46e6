// The run record's checkable parts: SHA-256 of the inputs (OpenSSL
// libcrypto; `sha256sum FILE` prints the same digest) and the resolved,
// typed configuration of a policy column (docs/output.md "Run record").
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/run/result.h"

namespace simcache::sim {

class InputSource;

// SHA-256 of `bytes`, 64 lower-case hex digits.
std::string sha256_hex(std::string_view bytes);
// SHA-256 taken piece by piece, as an input is read (replay hashes its
// trace on the pass that replays it).
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void add(std::string_view bytes);
  std::string hex();  // once, after the last add()

 private:
  struct Impl;
  std::unique_ptr<Impl> d_;
};
// SHA-256 of every byte of an opened input, from its start (a pipe opened
// to be re-read is hashed from its spool). "" and `error` on a read error.
std::string sha256_source(InputSource& src, std::string* error);
// SHA-256 of a file's bytes, read through the input door; "" and `error`
// when it cannot be read. A pipe is not opened (reading it would consume
// it): "" with `error` saying so.
std::string sha256_file(const std::string& path, std::string_view what, std::string* error);

// Adds an input to the record: its role ("op file", "trace", ...), its
// path as given and the SHA-256 of its bytes (sha256_file()).
// With no hash, `note` says why (a pipe read once).
// `shown`: the path as the record shows it, if not `path` (a shipped
// file: "data/..." rather than this machine's directory). `sha256`: the
// digest when the caller knows it for the bytes it read (a shipped file's
// compiled-in copy, sim/cost/shipped.h): the file is not read again.
void record_input(RunRecord* r, std::string role, const std::string& path,
                  const std::string& shown = "", std::string_view sha256 = "");

// The record's command line: "simcache" and the arguments, each quoted
// for a POSIX shell where it needs it.
std::string shell_command(const std::vector<std::string>& args);

// A column's configuration with its types (bools, numbers, names) and
// every `kernel` / `profile` default replaced by what the run used: the
// kernel profile's value, or per cache (caches that saw traffic) for
// slab geometry the allocator computes per cache.
nlohmann::ordered_json typed_config(const RunRecord& rec, const PolicyResult& p);
// The kernel profile's fields with their types.
nlohmann::ordered_json typed_kernel_profile(const RunRecord& rec);
nlohmann::ordered_json typed_kernel_profile(
    const std::vector<std::pair<std::string, std::string>>& profile);
// The same resolution as text (the CSV's config lines).
std::vector<std::pair<std::string, std::string>> resolved_config(const RunRecord& rec,
                                                                  const PolicyResult& p);

}  // namespace simcache::sim
