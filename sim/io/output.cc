#include "sim/io/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "model/kernel/policy.h"

namespace simcache::sim {
namespace {

std::string esc(std::string_view s) { return iou::escape_controls(s, 200); }

// ---- the cleanup table: temporaries a signal must remove --------------
// Fixed storage, read by the handler without locks: a slot's path is
// written before its state is published, and the handler calls only
// async-signal-safe functions (unlink, openat, getdents64, unlinkat).
enum SlotState : int { kFree = 0, kFile = 1, kDir = 2, kBusy = 3 };
// Every member initialised, so the table is constant-initialised: it
// stays in untouched zero pages until a slot is used, instead of 64 page
// faults in a static constructor at every start (docs/performance.md).
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX] = {};
};
constexpr int kSlots = 64;
constinit Slot g_slots[kSlots];
std::mutex g_slot_mu;

void remove_tree_at(int parent, const char* name, int depth) {
  if (::unlinkat(parent, name, 0) == 0 || errno == ENOENT) return;  // a file or a link
  if (depth > 16) return;
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buf[4096];
  for (bool removed = true; removed;) {  // entries move as others go: scan until none left
    removed = false;
    ::lseek(fd, 0, SEEK_SET);
    for (;;) {
      const ssize_t n = ::getdents64(fd, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        remove_tree_at(fd, d->d_name, depth + 1);
        removed = true;
      }
    }
  }
  ::close(fd);
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

void remove_temp(const char* path, int state) {
  if (state == kFile) ::unlink(path);
  if (state == kDir) remove_tree_at(AT_FDCWD, path, 0);
}

extern "C" void on_fatal_signal(int sig) {
  for (Slot& s : g_slots) {
    const int st = s.state.load(std::memory_order_acquire);
    if (st == kFile || st == kDir) remove_temp(s.path, st);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (old.sa_handler == SIG_IGN) continue;  // nohup: keep ignoring
      struct sigaction sa {};
      sa.sa_handler = on_fatal_signal;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// -1 when the table is full (64 temporaries at once: refused).
int track(const std::string& path, bool dir) {
  if (path.size() >= PATH_MAX) return -1;
  install_handlers();
  std::lock_guard<std::mutex> g(g_slot_mu);
  for (int i = 0; i < kSlots; ++i) {
    int expect = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expect, kBusy)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(dir ? kDir : kFile, std::memory_order_release);
    return i;
  }
  return -1;
}

void untrack(int slot) {
  if (slot >= 0) g_slots[slot].state.store(kFree, std::memory_order_release);
}

// Removes a temporary now and forgets it.
void discard(int slot, const std::string& path, bool dir) {
  if (slot >= 0) g_slots[slot].state.store(kBusy, std::memory_order_release);
  remove_temp(path.c_str(), dir ? kDir : kFile);
  untrack(slot);
}

// ---- targets ----------------------------------------------------------
bool is_own_stream(const std::string& p) {
  return p == "-" || p == "/dev/stdout" || p == "/dev/stderr";
}

// Whether `path` is written through as a stream (FIFO, device, stdout).
bool is_stream_target(const std::string& path) {
  if (is_own_stream(path)) return true;
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode));
}

std::string parent_of(const std::string& path) {
  const std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

bool parent_ok(const std::string& path, std::string* error) {
  const std::string dir = parent_of(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return *error = fmt::format("{}: no such directory '{}'", esc(path), esc(dir)), false;
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return *error = fmt::format("{}: cannot write in '{}': {}", esc(path), esc(dir),
                                std::strerror(errno)),
           false;
  return true;
}

bool write_all(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool write_stream(const std::string& path, std::string_view data, std::string* error) {
  const int fd = path == "-" || path == "/dev/stdout" ? ::dup(STDOUT_FILENO)
                 : path == "/dev/stderr"            ? ::dup(STDERR_FILENO)
                                                    : ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return *error = fmt::format("{}: cannot open for writing: {}", esc(path), std::strerror(errno)),
           false;
  const bool ok = write_all(fd, data);
  const int e = errno;
  ::close(fd);
  if (!ok) return *error = fmt::format("{}: write failed: {}", esc(path), std::strerror(e)), false;
  return true;
}

mode_t new_file_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Puts a finished temp file in place, re-checking the target first.
bool place_file(const std::string& tmp, const std::string& path, std::string* error) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return *error = fmt::format("{}: changed into a non-regular file while writing; refusing",
                                esc(path)),
           false;
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return *error = fmt::format("{}: cannot replace: {}", esc(path), std::strerror(errno)), false;
  const int dfd = ::open(parent_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) ::fsync(dfd), ::close(dfd);
  return true;
}

bool place_dir(const std::string& tmp, const std::string& path, std::string* error) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0)
    return *error = fmt::format("{}: cannot create: {}", esc(path), std::strerror(errno)), false;
  return true;
}

// ---- the batch --------------------------------------------------------
struct Staged {
  enum Kind { file, dir, stream } kind;
  std::string tmp, path, data;
  int slot = -1;
};
struct StagedBatch {
  std::vector<Staged> items;
};
StagedBatch* g_batch = nullptr;

bool stage_or_place(Staged s, std::string* error) {
  if (g_batch) {
    g_batch->items.push_back(std::move(s));
    return true;
  }
  bool ok = true;
  if (s.kind == Staged::stream) ok = write_stream(s.path, s.data, error);
  if (s.kind == Staged::file) ok = place_file(s.tmp, s.path, error);
  if (s.kind == Staged::dir) ok = place_dir(s.tmp, s.path, error);
  if (!ok && s.kind != Staged::stream) discard(s.slot, s.tmp, s.kind == Staged::dir);
  else untrack(s.slot);
  return ok;
}

// A temp file beside `path` (mkostemp: O_CREAT|O_EXCL, a fresh name).
int make_temp(const std::string& path, std::string* tmp, int* slot, std::string* error) {
  const std::filesystem::path p(path);
  std::string tmpl = (p.has_parent_path() ? p.parent_path().string() + "/" : std::string()) +
                     "." + p.filename().string() + ".XXXXXX";
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = fmt::format("{}: cannot create a temporary file beside it: {}", esc(path),
                         std::strerror(errno));
    return -1;
  }
  *tmp = tmpl;
  if ((*slot = track(tmpl, false)) < 0) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    *error = fmt::format("{}: too many outputs open at once", esc(path));
    return -1;
  }
  return fd;
}

// check_output() without the flag: "PATH: why".
bool check_target(const std::string& path, std::string* error) {
  if (is_own_stream(path)) return true;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return *error = fmt::format("{}: {}", esc(path), std::strerror(errno)), false;
    return parent_ok(path, error);
  }
  if (S_ISLNK(st.st_mode)) {
    // /dev/stdout, /dev/fd/N: links to a stream are followed, no other.
    struct stat t {};
    if (::stat(path.c_str(), &t) == 0 && (S_ISFIFO(t.st_mode) || S_ISCHR(t.st_mode))) return true;
    return *error = fmt::format("{}: is a symbolic link; refusing to replace it (name the "
                                "target file)",
                                esc(path)),
           false;
  }
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return true;
  if (S_ISDIR(st.st_mode))
    return *error = fmt::format("{}: is a directory", esc(path)), false;
  if (!S_ISREG(st.st_mode))
    return *error = fmt::format("{}: not a regular file, FIFO or device; refusing", esc(path)),
           false;
  return parent_ok(path, error);
}

}  // namespace

bool check_output(const std::string& path, std::string_view flag, std::string* error) {
  if (path.empty()) return *error = fmt::format("{}: empty file name", flag), false;
  if (!check_target(path, error)) return *error = fmt::format("{}: {}", flag, *error), false;
  return true;
}


bool check_output_dir(const std::string& path, std::string_view flag, std::string* error) {
  if (path.empty()) return *error = fmt::format("{}: empty directory name", flag), false;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0)
    return *error = fmt::format("{}: '{}' exists; give a new directory", flag, esc(path)), false;
  if (errno != ENOENT)
    return *error = fmt::format("{}: {}: {}", flag, esc(path), std::strerror(errno)), false;
  if (!parent_ok(path, error)) return *error = fmt::format("{}: {}", flag, *error), false;
  return true;
}

OutputBatch::OutputBatch() {
  if (!g_batch) g_batch = new StagedBatch, owner_ = true;
}

OutputBatch::~OutputBatch() {
  if (!owner_ || !g_batch) return;
  for (const Staged& s : g_batch->items)
    if (s.kind != Staged::stream) discard(s.slot, s.tmp, s.kind == Staged::dir);
  delete g_batch;
  g_batch = nullptr;
}

bool OutputBatch::commit(std::string* error) {
  if (!owner_ || !g_batch) return true;
  StagedBatch* b = g_batch;
  g_batch = nullptr;  // stage_or_place() now places
  bool ok = true;
  for (Staged& s : b->items) {
    if (ok) ok = stage_or_place(std::move(s), error);
    else if (s.kind != Staged::stream) discard(s.slot, s.tmp, s.kind == Staged::dir);
  }
  delete b;
  return ok;
}

bool write_file_atomic(const std::string& path, const std::string& data, std::string* error) {
  if (path.empty()) return *error = "output file name is empty", false;
  if (!check_target(path, error)) return false;
  if (is_stream_target(path)) return stage_or_place({Staged::stream, "", path, data, -1}, error);
  struct stat st {};
  const mode_t mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : new_file_mode();
  Staged s{Staged::file, "", path, "", -1};
  const int fd = make_temp(path, &s.tmp, &s.slot, error);
  if (fd < 0) return false;
  const bool ok = write_all(fd, data) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  const int e = errno;
  if (::close(fd) != 0 || !ok) {
    discard(s.slot, s.tmp, false);
    return *error = fmt::format("{}: write failed: {}", esc(path), std::strerror(ok ? errno : e)),
           false;
  }
  return stage_or_place(std::move(s), error);
}

OutputStream::~OutputStream() {
  if (f_) std::fclose(f_);
  if (!stream_ && slot_ >= 0) {
    g_slots[slot_].state.store(kBusy, std::memory_order_release);
    ::unlink(g_slots[slot_].path);
    untrack(slot_);
  }
}

bool OutputStream::open(const std::string& path, std::string* error) {
  if (path.empty()) return *error = "output file name is empty", false;
  if (!check_target(path, error)) return false;
  path_ = path;
  stream_ = is_stream_target(path);
  if (stream_) {
    f_ = std::tmpfile();  // unlinked; copied to the stream on finish()
    if (!f_) return *error = fmt::format("{}: no temporary file: {}", esc(path), std::strerror(errno)), false;
    return true;
  }
  std::string tmp;
  const int fd = make_temp(path, &tmp, &slot_, error);
  if (fd < 0) return false;
  ::fchmod(fd, new_file_mode());
  if (!(f_ = ::fdopen(fd, "wb"))) {
    ::close(fd);
    return *error = fmt::format("{}: cannot write: {}", esc(path), std::strerror(errno)), false;
  }
  return true;
}

bool OutputStream::finish(std::string* error) {
  if (!f_) return *error = fmt::format("{}: not open", esc(path_)), false;
  bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
  if (stream_) {
    std::string data;
    if (ok) {
      std::rewind(f_);
      char buf[65536];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) data.append(buf, n);
      ok = !std::ferror(f_);
    }
    std::fclose(f_);
    f_ = nullptr;
    if (!ok) return *error = fmt::format("{}: write failed", esc(path_)), false;
    return stage_or_place({Staged::stream, "", path_, std::move(data), -1}, error);
  }
  ok = ok && ::fsync(::fileno(f_)) == 0;
  ok = std::fclose(f_) == 0 && ok;
  f_ = nullptr;
  if (!ok) return *error = fmt::format("{}: write failed: {}", esc(path_), std::strerror(errno)), false;
  const int slot = slot_;
  slot_ = -1;
  return stage_or_place({Staged::file, g_slots[slot].path, path_, "", slot}, error);
}

bool begin_output_dir(const std::string& path, std::string* tmp, std::string* error) {
  if (!check_output_dir(path, "--sysfs", error)) return false;
  const std::filesystem::path p(path);
  std::string base = p.filename().string();
  if (base.empty()) base = p.parent_path().filename().string();  // "dir/"
  std::string tmpl = parent_of(p.has_filename() ? path : p.parent_path().string()) + "/." + base +
                     ".XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    return *error = fmt::format("{}: cannot create a temporary directory beside it: {}", esc(path),
                                std::strerror(errno)),
           false;
  if (track(tmpl, true) < 0) {
    ::rmdir(tmpl.c_str());
    return *error = fmt::format("{}: too many outputs open at once", esc(path)), false;
  }
  *tmp = tmpl;
  return true;
}

namespace {
int slot_of(const std::string& tmp) {
  for (int i = 0; i < kSlots; ++i)
    if (g_slots[i].state.load() == kDir && tmp == g_slots[i].path) return i;
  return -1;
}
}  // namespace

bool finish_output_dir(const std::string& path, const std::string& tmp, std::string* error) {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tmp.c_str(), 0777 & ~mask);  // mkdtemp made it 0700
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return stage_or_place({Staged::dir, tmp, p, "", slot_of(tmp)}, error);
}

void abort_output_dir(const std::string& tmp) { discard(slot_of(tmp), tmp, true); }

bool write_new_file(const std::string& path, std::string_view data, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        new_file_mode());
  if (fd < 0)
    return *error = fmt::format("{}: cannot create: {}", esc(path), std::strerror(errno)), false;
  const bool ok = write_all(fd, data);
  const int e = errno;
  if (::close(fd) != 0 || !ok)
    return *error = fmt::format("{}: write failed: {}", esc(path), std::strerror(ok ? errno : e)),
           false;
  return true;
}

}  // namespace simcache::sim
