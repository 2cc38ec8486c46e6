// The one door for every file simcache writes: --output, --emit-ops,
// --emit-trace, --sysfs, --slabinfo, plots and HTML pages, sweep and merge
// outputs, calibrate's profile (docs/reliability.md, "Outputs").
//
// Every output is built in a temporary made with mkstemp (a file) or
// mkdtemp (a directory) beside its target, never through a planted
// symbolic link, and renamed into place; a device, FIFO or the process's
// own stdout/stderr is written through as a stream. A symbolic link (other
// than one to a stream, like /dev/stdout), a directory given for a file,
// a socket or an existing --sysfs directory are refused. Temporaries are
// removed on failure and on SIGINT and SIGTERM.
//
// Inside an OutputBatch (one per command) nothing reaches a target until
// commit(): a command that fails on its second output leaves the first
// unwritten too. check_output()/check_output_dir() let a command refuse a
// bad path before it computes or writes anything.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace simcache::sim {

// Whether `path` can take a file output (`flag` names it in the message).
bool check_output(const std::string& path, std::string_view flag, std::string* error);
// Whether `path` can take a new directory tree (it must not exist).
bool check_output_dir(const std::string& path, std::string_view flag, std::string* error);

// The outputs of one command. While one is alive, every write below is
// staged in it; commit() puts them all in place, in the order written.
// Destroyed uncommitted (an error, an exception), it removes them all. A
// batch opened inside another is part of it: its commit() and destructor
// leave everything to the outer one.
class OutputBatch {
 public:
  OutputBatch();
  ~OutputBatch();
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;
  bool commit(std::string* error);

 private:
  bool owner_ = false;  // the outermost batch; an inner one adds to it
};

// Writes `data` to `path` (staged if a batch is open, else at once).
bool write_file_atomic(const std::string& path, const std::string& data, std::string* error);

// An output written as it is produced (the emitters): file() is a temp
// (for a stream target, an unlinked spool copied out on finish()).
class OutputStream {
 public:
  OutputStream() = default;
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;
  bool open(const std::string& path, std::string* error);
  std::FILE* file() { return f_; }
  // Flushes and stages (or, without a batch, puts in place). After a
  // failed fill, call nothing: the destructor removes the temp.
  bool finish(std::string* error);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  int slot_ = -1;       // the temp's entry in the cleanup table
  bool stream_ = false;
};

// A new directory tree at `path`: *tmp is a fresh directory (mkdtemp)
// beside it to fill; finish_output_dir() renames it into place (staged if
// a batch is open). On an error before that, abort_output_dir() removes it.
bool begin_output_dir(const std::string& path, std::string* tmp, std::string* error);
bool finish_output_dir(const std::string& path, const std::string& tmp, std::string* error);
void abort_output_dir(const std::string& tmp);
// A file inside such a tree: created new (O_EXCL, never through a link).
bool write_new_file(const std::string& path, std::string_view data, std::string* error);

}  // namespace simcache::sim
