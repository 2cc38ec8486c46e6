// What was built: the git commit of the checkout at build time (the run
// record's git_commit) and the tables of record compiled into the binary
// with the SHA-256 of each source file (the record's compiled-in inputs),
// written by cmake/git_commit.cmake at every build.
#pragma once

#include <span>

namespace simcache {

// 40 hex digits, or "unknown" outside a git checkout.
const char* build_git_commit();

// A compiled-in table: its source file (relative to the source tree) and
// the SHA-256 of that file's bytes when the binary was built (`sha256sum
// FILE` in a checkout of the commit prints the same digest).
struct BuiltTable {
  const char* file;
  const char* sha256;
};
std::span<const BuiltTable> build_tables();

}  // namespace simcache
