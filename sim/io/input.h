// The one door for every file a user names as input: run configurations,
// op files, traces and background traces, sweep grids and shards, cost
// profiles, mappings and measurement TSVs (docs/reliability.md, "Inputs").
//
// What it takes: a regular file, or a pipe or FIFO (`<(zcat t.gz)`,
// /dev/stdin from a pipe), read exactly once. What it refuses, in one
// line naming the file: a missing or unreadable file, a directory, a
// device (/dev/zero, a terminal), a socket. Every line is capped
// (SIMCACHE_LINE_LIMIT, default 1 MiB); an input held in memory is capped
// as a whole (SIMCACHE_INPUT_LIMIT, default 64 MiB). A UTF-8 byte-order
// mark at the start is skipped, in every format. Streamed inputs (trace
// replay) are bounded by the work budget, not by their size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace simcache::sim {

// The process's input limits, from the environment (read once). A bad
// value is reported by input_limits_error() (the CLI exits 2 on it).
struct InputLimits {
  size_t max_bytes = size_t{64} << 20;  // one in-memory input
  size_t max_line = size_t{1} << 20;    // one line of any input
};
const InputLimits& input_limits();
// "" when SIMCACHE_INPUT_LIMIT and SIMCACHE_LINE_LIMIT are absent or valid.
std::string input_limits_error();

// An opened input: a file descriptor that can be read from the start any
// number of times (a pipe is spooled to an unlinked temporary file as it
// is first read, so later passes read the spool, never the pipe again).
// Binary inputs are handed on by descriptor (fd()).
class InputSource {
 public:
  ~InputSource();
  InputSource(const InputSource&) = delete;
  InputSource& operator=(const InputSource&) = delete;

  // `what` names the input in messages ("the sweep grid"). `reread`:
  // later passes will read it again, so a pipe is spooled; false for an
  // input read once, whose pipe is then read straight through.
  static std::shared_ptr<InputSource> open(const std::string& path, std::string_view what,
                                           std::string* error, bool reread = true);
  // An unlinked temporary file the program writes (append()) and then
  // reads as an input named `path`: a binary trace rendered as text
  // (sim/replay/trace_dat.h). Removed with the last reference.
  static std::shared_ptr<InputSource> temp(const std::string& path, std::string_view what,
                                           std::string* error);
  // Appends to a temp() input; false on a write error (errno).
  bool append(std::string_view data);
  // A temp() input another process wrote (a forked child): its size from
  // the file. False on an error (errno).
  bool refresh_size();
  // Whether `path` names a pipe or FIFO, looked at without opening it
  // (opening would take data a later reader needs).
  static bool is_pipe_path(const std::string& path);
  const std::string& path() const { return path_; }
  const std::string& what() const { return what_; }
  // The path made safe for a one-line message.
  std::string name() const;
  int fd() const { return fd_; }
  // The descriptor holding the bytes read so far: the file, or a pipe's
  // spool (read a pipe to its end with read_at() first). For a library
  // that reads by descriptor: dup() it and seek, never read it in place.
  int data_fd() const { return pipe_ ? spool_ : fd_; }
  bool is_pipe() const { return pipe_; }
  // Bytes read from a pipe so far (its spool's size), or the file's size.
  uint64_t size() const { return size_; }
  // Reads up to n bytes at `off`: from the file (pread), or for a pipe
  // from the spool when `off` is behind what was read, else from the pipe
  // (appending to the spool). 0 at the end; -1 on error (errno).
  long read_at(uint64_t off, char* buf, size_t n);

 private:
  InputSource() = default;

  std::string path_, what_;
  int fd_ = -1;        // the file, or the pipe
  int spool_ = -1;     // a pipe's copy
  bool pipe_ = false;
  bool pipe_done_ = false;
  uint64_t size_ = 0;
};

// Reads a whole input into memory: at most `max` bytes (0: the process
// limit), every line at most the line limit, a leading BOM dropped
// (`had_bom`, if given, says whether there was one: the bytes of the file
// are then the BOM and `out`).
bool read_input(const std::string& path, std::string_view what, std::string* out,
                std::string* error, size_t max = 0, bool* had_bom = nullptr);

// Lines of an input, streamed: the buffer holds one line at a time, so
// memory is flat in the input's length. A second LineInput on the same
// source reads it again from the start (a pipe: from its spool).
class LineInput {
 public:
  LineInput(std::shared_ptr<InputSource> src);
  // Next line without its '\n'; false at
  // the end or on an error (error() then says what, in one line naming
  // the file and line).
  bool next(std::string_view* line);
  uint64_t line_no() const { return line_no_; }
  // `tap` sees every byte read from the source, in order, as it is read
  // (a hash of the input taken on the same pass: replay).
  void set_tap(std::function<void(std::string_view)> tap) { tap_ = std::move(tap); }
  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }

 private:
  bool fill();
  std::shared_ptr<InputSource> src_;
  std::function<void(std::string_view)> tap_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  uint64_t off_ = 0;
  bool eof_ = false;
  uint64_t line_no_ = 0;
  std::string error_;
};

// How to raise a limit, for messages: "(SIMCACHE_LINE_LIMIT raises it)".
std::string line_limit_hint();
std::string input_limit_hint();

}  // namespace simcache::sim
