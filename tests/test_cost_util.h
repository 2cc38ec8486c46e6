// Helpers shared by the cost, calibration, validation and golden tests.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/cost/cost.h"

namespace simcache::testing {

// The header line of a measurements TSV (data/measurements/calibration.tsv's
// columns), for tests that write rows of their own.
inline constexpr char kHeader[] =
    "id\tworkload\tshape\tvariant\tmetric\tvalue\tunit\tkind\tsource\tnote\n";

// A file of the source tree, by its path from the top directory.
inline std::string repo_file(const std::string& rel) {
  return (std::filesystem::path(SIMCACHE_SOURCE_DIR) / rel).lexically_normal().string();
}

// The whole file; a missing or unreadable file throws, so the test using
// it fails (Catch reports the exception) instead of checking an empty text.
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw std::runtime_error("error reading " + path);
  return ss.str();
}

// Runs the rest of a scope from the top directory (as a user's command
// finds data/ and docs/) with a fresh directory of its own under the temp
// directory; both are put back, and the directory removed, however the
// scope ends.
class InSourceDir {
 public:
  explicit InSourceDir(const std::string& name)
      : was_(std::filesystem::current_path()),
        tmp_(std::filesystem::temp_directory_path() /
             ("simcache_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(tmp_);
    std::filesystem::current_path(SIMCACHE_SOURCE_DIR);
  }
  ~InSourceDir() {
    std::error_code ec;
    std::filesystem::current_path(was_, ec);
    std::filesystem::remove_all(tmp_, ec);
  }
  InSourceDir(const InSourceDir&) = delete;
  InSourceDir& operator=(const InSourceDir&) = delete;
  std::string tmp() const { return tmp_.string(); }

 private:
  std::filesystem::path was_, tmp_;
};

// A file under the temp directory, removed when the object goes away.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) {
    path_ = (std::filesystem::temp_directory_path() /
             ("simcache_test_" + std::to_string(getpid()) + "_" + name))
                .string();
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The shipped default profile (data/profiles/i7-12700KF.toml), loaded
// once: only for the tests about that profile and its fit; tests of model
// behaviour use test_profile().
inline const sim::CostModel& default_profile() {
  static const sim::CostModel m = [] {
    sim::CostModel p;
    std::string err;
    if (!sim::resolve_profile(std::string(sim::kDefaultCostProfile), &p, &err)) throw err;
    return p;
  }();
  return m;
}

// The frozen test profile, by its path from the top directory: round
// numbers, kept with the tests, never refitted (its header says why). The
// goldens and the tests of model behaviour price with it, so a refit of the
// shipped profile changes only the tests about that profile.
inline constexpr const char* kTestProfile = "tests/data/test-profile.toml";

// The test profile, loaded once; a missing or malformed file throws.
inline const sim::CostModel& test_profile() {
  static const sim::CostModel m = [] {
    sim::CostModel p;
    std::string err;
    if (!sim::load_profile(repo_file(kTestProfile), &p, &err)) throw std::runtime_error(err);
    return p;
  }();
  return m;
}

// Counts lines of `s` ("one-line error" checks).
inline size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A fresh directory under the temp directory, removed with everything in
// it afterwards.
struct TempDir {
  std::filesystem::path p;
  explicit TempDir(const std::string& name) {
    p = std::filesystem::temp_directory_path() /
        ("simcache_test_" + std::to_string(getpid()) + "_" + name);
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& f) const { return (p / f).string(); }
  // The names in it, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(p))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  size_t entries() const { return names().size(); }
};

}  // namespace simcache::testing
