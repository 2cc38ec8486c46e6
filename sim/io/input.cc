#include "sim/io/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "model/kernel/policy.h"

namespace simcache::sim {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";
constexpr size_t kMinLimit = 4096, kMaxLimit = size_t{1} << 40;

// A limit from the environment: bytes, with an optional K, M or G suffix.
bool env_limit(const char* var, size_t* out, std::string* error) {
  const char* v = std::getenv(var);
  if (!v) return true;
  std::string_view s(v);
  uint64_t mult = 1;
  if (!s.empty()) {
    const char c = s.back();
    if (c == 'K' || c == 'k') mult = 1ull << 10;
    if (c == 'M' || c == 'm') mult = 1ull << 20;
    if (c == 'G' || c == 'g') mult = 1ull << 30;
    if (mult != 1) s.remove_suffix(1);
  }
  uint64_t n = 0;
  if (std::from_chars(s.data(), s.data() + s.size(), n).ptr != s.data() + s.size() || s.empty() || n > kMaxLimit / mult || n * mult < kMinLimit) {
    *error = fmt::format("{}='{}': expected bytes in [{}, 2^40] (K, M or G suffix allowed)", var,
                         iou::escape_controls(v, 60), kMinLimit);
    return false;
  }
  *out = static_cast<size_t>(n * mult);
  return true;
}

struct LimitsState {
  InputLimits limits;
  std::string error;
  LimitsState() {
    if (env_limit("SIMCACHE_INPUT_LIMIT", &limits.max_bytes, &error))
      env_limit("SIMCACHE_LINE_LIMIT", &limits.max_line, &error);
  }
};
const LimitsState& limits_state() {
  static const LimitsState s;
  return s;
}

// An unlinked temporary file for a pipe's spool.
int make_spool() {
  const char* dir = std::getenv("TMPDIR");
  std::string d = dir && *dir ? dir : "/tmp";
  int fd = ::open(d.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  std::string tmpl = d + "/simcache-spool.XXXXXX";
  fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd >= 0) ::unlink(tmpl.c_str());
  return fd;
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "is a directory";
  if (S_ISCHR(m) || S_ISBLK(m)) return "is a device, not a file or a pipe";
  if (S_ISSOCK(m)) return "is a socket, not a file or a pipe";
  if (S_ISREG(m) || S_ISFIFO(m)) return nullptr;
  return "is not a regular file or a pipe";
}

}  // namespace

const InputLimits& input_limits() { return limits_state().limits; }
std::string input_limits_error() { return limits_state().error; }

std::string line_limit_hint() {
  return fmt::format("the limit of {} bytes; SIMCACHE_LINE_LIMIT=BYTES raises it",
                     input_limits().max_line);
}
std::string input_limit_hint() {
  return fmt::format("the limit of {} bytes; SIMCACHE_INPUT_LIMIT=BYTES raises it",
                     input_limits().max_bytes);
}

InputSource::~InputSource() {
  if (fd_ >= 0) ::close(fd_);
  if (spool_ >= 0) ::close(spool_);
}

std::string InputSource::name() const { return iou::escape_controls(path_, 200); }

std::shared_ptr<InputSource> InputSource::open(const std::string& path, std::string_view what,
                                               std::string* error, bool reread) {
  const std::string name = iou::escape_controls(path, 200);
  if (path.empty()) return *error = fmt::format("{}: empty file name", what), nullptr;
  // The type is checked before opening: opening a device can act on it.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return *error = fmt::format("{}: cannot read {}: {}", name, what, std::strerror(errno)),
           nullptr;
  if (const char* bad = kind_of(st.st_mode))
    return *error = fmt::format("{}: cannot read {}: {}", name, what, bad), nullptr;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return *error = fmt::format("{}: cannot read {}: {}", name, what, std::strerror(errno)),
           nullptr;
  std::shared_ptr<InputSource> s(new InputSource);
  s->path_ = path;
  s->what_ = std::string(what);
  s->fd_ = fd;
  if (::fstat(fd, &st) != 0 || kind_of(st.st_mode))  // replaced between stat and open
    return *error = fmt::format("{}: cannot read {}: changed while opening", name, what), nullptr;
  s->pipe_ = S_ISFIFO(st.st_mode);
  s->size_ = s->pipe_ ? 0 : static_cast<uint64_t>(st.st_size);
  if (s->pipe_ && reread && (s->spool_ = make_spool()) < 0)
    return *error = fmt::format("{}: cannot read {}: no temporary file to hold the pipe's data: {}",
                                name, what, std::strerror(errno)),
           nullptr;
  return s;
}

std::shared_ptr<InputSource> InputSource::temp(const std::string& path, std::string_view what,
                                               std::string* error) {
  std::shared_ptr<InputSource> s(new InputSource);
  s->path_ = path;
  s->what_ = std::string(what);
  if ((s->fd_ = make_spool()) < 0)
    return *error = fmt::format("{}: cannot read {}: no temporary file: {}",
                                iou::escape_controls(path, 200), what, std::strerror(errno)),
           nullptr;
  return s;
}

bool InputSource::append(std::string_view data) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t w = ::pwrite(fd_, data.data() + done, data.size() - done,
                               static_cast<off_t>(size_ + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  size_ += data.size();
  return true;
}

bool InputSource::refresh_size() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return false;
  size_ = static_cast<uint64_t>(st.st_size);
  return true;
}

bool InputSource::is_pipe_path(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

long InputSource::read_at(uint64_t off, char* buf, size_t n) {
  for (;;) {
    ssize_t got;
    if (!pipe_) {
      got = ::pread(fd_, buf, n, static_cast<off_t>(off));
    } else if (off < size_ || pipe_done_) {
      if (off >= size_) return 0;
      got = ::pread(spool_, buf, std::min<uint64_t>(n, size_ - off), static_cast<off_t>(off));
    } else {
      got = ::read(fd_, buf, n);
      if (got == 0) pipe_done_ = true;
      for (ssize_t done = 0; spool_ >= 0 && done < got;) {  // a read-once pipe keeps no copy
        const ssize_t w = ::pwrite(spool_, buf + done, static_cast<size_t>(got - done),
                                   static_cast<off_t>(size_ + static_cast<uint64_t>(done)));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        done += w;
      }
      if (got > 0) size_ += static_cast<uint64_t>(got);
    }
    if (got < 0 && errno == EINTR) continue;
    return got;
  }
}

bool read_input(const std::string& path, std::string_view what, std::string* out,
                std::string* error, size_t max, bool* had_bom) {
  if (had_bom) *had_bom = false;
  if (!input_limits_error().empty()) return *error = input_limits_error(), false;
  const size_t cap = max ? max : input_limits().max_bytes;
  const size_t max_line = input_limits().max_line;
  const auto src = InputSource::open(path, what, error, /*reread=*/false);
  if (!src) return false;
  const std::string limit = max ? fmt::format("its limit of {} bytes", max) : input_limit_hint();
  if (!src->is_pipe() && src->size() > cap)
    return *error = fmt::format("{}: {} is larger than {}", src->name(), what, limit), false;
  out->clear();
  if (!src->is_pipe()) out->reserve(static_cast<size_t>(src->size()));
  char buf[65536];
  size_t line = 1, line_start = 0;
  for (;;) {
    const long n = src->read_at(out->size(), buf, sizeof buf);
    if (n < 0)
      return *error = fmt::format("{}: cannot read {}: {}", src->name(), what, std::strerror(errno)),
             false;
    if (n == 0) break;
    if (out->size() + static_cast<size_t>(n) > cap) {
      out->clear();
      return *error = fmt::format("{}: {} is larger than {}", src->name(), what, limit), false;
    }
    out->append(buf, static_cast<size_t>(n));
    // Every line, the one still open at the end of what was read
    // included, holds at most max_line bytes before its '\n'.
    const char* const data = out->data();
    for (size_t i = out->size() - static_cast<size_t>(n);;) {
      const void* nl = std::memchr(data + i, '\n', out->size() - i);
      const size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - data) : out->size();
      if (end - line_start > max_line) {
        out->clear();
        return *error = fmt::format("{}:{}: line longer than {}", src->name(), line,
                                    line_limit_hint()),
               false;
      }
      if (!nl) break;
      ++line, line_start = i = end + 1;
    }
  }
  if (std::string_view(*out).substr(0, kBom.size()) == kBom) {
    out->erase(0, kBom.size());
    if (had_bom) *had_bom = true;
  }
  return true;
}

LineInput::LineInput(std::shared_ptr<InputSource> src) : src_(std::move(src)) {
  if (!input_limits_error().empty()) error_ = input_limits_error();
}

bool LineInput::fill() {
  if (begin_ > 0) {
    if (end_ > begin_) std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const size_t cap = input_limits().max_line + 1;  // the line and its '\n'
  if (end_ == buf_.size()) {
    if (buf_.size() >= cap) return false;  // the caller reports the long line
    buf_.resize(std::min(cap, std::max<size_t>(buf_.size() * 2, 1 << 16)));
  }
  const long n = src_->read_at(off_, buf_.data() + end_, buf_.size() - end_);
  if (n < 0) {
    error_ = fmt::format("{}: cannot read {}: {}", src_->name(), src_->what(),
                         std::strerror(errno));
    return false;
  }
  if (n == 0) eof_ = true;
  if (tap_ && n > 0) tap_(std::string_view(buf_.data() + end_, static_cast<size_t>(n)));
  if (off_ == 0 && n >= 3 && std::string_view(buf_.data(), 3) == kBom) begin_ = 3;
  off_ += static_cast<uint64_t>(n);
  end_ += static_cast<size_t>(n);
  return true;
}

bool LineInput::next(std::string_view* line) {
  if (!error_.empty()) return false;
  for (;;) {
    const char* nl = end_ == begin_ ? nullptr  // the empty buffer has no data()
                                    : static_cast<const char*>(std::memchr(
                                          buf_.data() + begin_, '\n', end_ - begin_));
    const size_t avail = nl ? static_cast<size_t>(nl - (buf_.data() + begin_)) : end_ - begin_;
    if (avail > input_limits().max_line) {
      error_ = fmt::format("{}:{}: line longer than {}", src_->name(), line_no_ + 1,
                           line_limit_hint());
      return false;
    }
    if (nl) {
      *line = std::string_view(buf_.data() + begin_, avail);
      begin_ += avail + 1;
      ++line_no_;
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      *line = std::string_view(buf_.data() + begin_, end_ - begin_);
      begin_ = end_;
      ++line_no_;
      return true;
    }
    if (!fill()) {
      if (error_.empty())
        error_ = fmt::format("{}:{}: line longer than {}", src_->name(), line_no_ + 1,
                             line_limit_hint());
      return false;
    }
  }
}

}  // namespace simcache::sim
