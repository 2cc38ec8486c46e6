// What was built: the git commit of the checkout at build time (the run
// record's git_commit), written by cmake/git_commit.cmake at every build.
#pragma once

namespace simcache {

// 40 hex digits, or "unknown" outside a git checkout.
const char* build_git_commit();

}  // namespace simcache
