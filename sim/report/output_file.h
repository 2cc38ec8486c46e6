// Writing a report or profile to a user-named file without ever leaving a
// half-written, mixed or misplaced file (docs/reliability.md).
#pragma once

#include <string>

namespace simcache::sim {

// Writes `data` to `path`:
//  - a regular file (or a new name): written to a temp file created with
//    O_CREAT|O_EXCL and a unique name (mkstemp) beside it, fsync'd, then
//    renamed over `path`; concurrent writers each rename a complete file,
//    so the result is one of them, never a mix. The old file's mode is kept.
//  - a FIFO, a character device (/dev/stdout, /dev/null, a tty) or "-":
//    written through, as a stream.
//  - a symbolic link: refused (the link would be replaced, or followed to
//    a file the user did not name); pass the target itself.
//  - a directory or other file type: refused.
// On failure returns false with a one-line message; no temp file is left.
bool write_file_atomic(const std::string& path, const std::string& data, std::string* error);

}  // namespace simcache::sim
