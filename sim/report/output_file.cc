#include "sim/report/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>
#include "sim/cost/toml_reader.h"

namespace simcache::sim {
namespace {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// FIFOs and devices are streams: no temp file, no rename.
bool write_stream(const std::string& path, const std::string& data, std::string* error) {
  const int fd = path == "-" || path == "/dev/stdout" ? ::dup(STDOUT_FILENO)
                 : path == "/dev/stderr"            ? ::dup(STDERR_FILENO)
                                                    : ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const std::string name = escape_line(path);
  if (fd < 0)
    return *error = fmt::format("{}: cannot open for writing: {}", name, std::strerror(errno)),
           false;
  const bool ok = write_all(fd, data);
  const int e = errno;
  ::close(fd);
  if (!ok) return *error = fmt::format("{}: write failed: {}", name, std::strerror(e)), false;
  return true;
}

bool fail_errno(std::string* error, const std::string& what, const std::string& path) {
  *error = fmt::format("{}: {}: {}", escape_line(path), what, std::strerror(errno));
  return false;
}

}  // namespace

bool write_file_atomic(const std::string& path, const std::string& data, std::string* error) {
  const std::string name = escape_line(path);
  if (path.empty()) return *error = "output file name is empty", false;
  // The process's own streams, whatever they are redirected to.
  if (path == "-" || path == "/dev/stdout" || path == "/dev/stderr")
    return write_stream(path, data, error);
  struct stat st {};
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return fail_errno(error, "cannot examine", path);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  mode_t mode = 0666 & ~mask;
  if (exists) {
    if (S_ISLNK(st.st_mode)) {
      // /dev/stdout and /dev/fd/N are links to a stream: follow those only.
      struct stat target {};
      if (::stat(path.c_str(), &target) == 0 && (S_ISFIFO(target.st_mode) || S_ISCHR(target.st_mode)))
        return write_stream(path, data, error);
      return *error = fmt::format(
                 "{}: is a symbolic link; refusing to replace it (name the target file)", name),
             false;
    }
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return write_stream(path, data, error);
    if (!S_ISREG(st.st_mode))
      return *error = fmt::format("{}: not a regular file, FIFO or device; refusing", name), false;
    mode = st.st_mode & 07777;
  }
  std::filesystem::path p(path);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string tmpl = (p.has_parent_path() ? dir + "/" : std::string()) + "." +
                     p.filename().string() + ".XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  // mkstemp opens with O_CREAT|O_EXCL: it never follows or reuses a
  // planted file, and two writers get two different names.
  const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) return fail_errno(error, "cannot create a temporary file beside it", path);
  const std::string tmp(buf.data());
  const bool ok = write_all(fd, data) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  const int e = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlink(tmp.c_str());
    errno = ok ? errno : e;
    return fail_errno(error, "write failed", path);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int re = errno;
    ::unlink(tmp.c_str());
    errno = re;
    return fail_errno(error, "cannot replace", path);
  }
  // The rename is durable once the directory is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) ::fsync(dfd), ::close(dfd);
  return true;
}

}  // namespace simcache::sim
