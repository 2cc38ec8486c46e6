// trace.dat through libtracecmd (trace_dat.h).
#include "sim/replay/trace_dat.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include <event-parse.h>  // libtraceevent: records, events, trace_seq

// The libtracecmd calls used, as trace-cmd.h declares them (that header
// pulls in tracefs.h, whose inline functions are not valid C++).
extern "C" {
struct tracecmd_input;
enum { TRACECMD_FL_LOAD_NO_PLUGINS = 1 << 0, TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS = 1 << 1 };
tracecmd_input* tracecmd_open_fd(int fd, int flags);
void tracecmd_close(tracecmd_input* handle);
tep_handle* tracecmd_get_tep(tracecmd_input* handle);
int tracecmd_buffer_instances(tracecmd_input* handle);
tracecmd_input* tracecmd_buffer_instance_handle(tracecmd_input* handle, int indx);
int tracecmd_iterate_events_multi(tracecmd_input** handles, int nr_handles,
                                  int (*callback)(tracecmd_input* handle, tep_record*, int,
                                                  void*),
                                  void* callback_data);
void tracecmd_set_loglevel(enum tep_loglevel level);
}

// LeakSanitizer (the ASan tree, the fuzzers): libtraceevent keeps a few
// bytes of every event format it parses past tep_free() (4 bytes on the
// fixture's formats); the leak is the library's, not a trace's.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libtraceevent.so\nleak:libtracecmd.so\n";
}

namespace simcache::sim {
namespace {

constexpr char kMagic[] = "\x17\x08\x44tracing";  // 10 bytes
constexpr size_t kMagicLen = sizeof kMagic - 1;

// The handles of one file: the top buffer and every instance's.
struct Dat {
  std::vector<tracecmd_input*> h;  // [0]: the top buffer
  ~Dat() {
    for (size_t i = h.size(); i-- > 0;) tracecmd_close(h[i]);
  }
};

// Control characters (a comm or a string field may hold any byte) become
// blanks: a record stays one line.
void one_line(std::string* s) {
  for (char& ch : *s)
    if (static_cast<unsigned char>(ch) < ' ' || ch == 0x7f) ch = ' ';
}

}  // namespace

bool is_trace_dat(InputSource& src) {
  char buf[kMagicLen];
  size_t got = 0;
  while (got < kMagicLen) {
    const long n = src.read_at(got, buf + got, kMagicLen - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return std::memcmp(buf, kMagic, kMagicLen) == 0;
}

namespace {

// Renders the records into `out` (trace_dat_as_text() runs it in a child).
bool render(InputSource& src, InputSource* out, uint64_t max_records, std::string* error) {
  const std::string name = src.name();
  // libtracecmd reads its own descriptor from the start: it gets a
  // duplicate (closed by it, or at the child's exit).
  tracecmd_set_loglevel(TEP_LOG_NONE);  // its messages would break the one-line errors
  const int fd = ::fcntl(src.data_fd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
    if (fd >= 0) ::close(fd);
    return *error = fmt::format("{}: cannot read {}: {}", name, src.what(), std::strerror(errno)),
           false;
  }
  Dat d;
  // No plugins: the events print as their formats say, whatever is installed.
  tracecmd_input* top = tracecmd_open_fd(fd, TRACECMD_FL_LOAD_NO_PLUGINS | TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
  if (!top) {
    return *error = fmt::format("{}: not a trace.dat libtracecmd can read (damaged, cut short or "
                                "of an unknown version)",
                                name),
           false;
  }
  d.h.push_back(top);
  const int ninst = tracecmd_buffer_instances(d.h[0]);
  for (int i = 0; i < ninst; ++i) {
    tracecmd_input* h = tracecmd_buffer_instance_handle(d.h[0], i);
    if (!h)
      return *error = fmt::format("{}: buffer instance {} of the trace.dat cannot be read", name,
                                  i + 1),
             false;
    d.h.push_back(h);
  }
  // Every buffer's every CPU, earliest record first (as trace-cmd report).
  struct Render {
    InputSource* out;
    uint64_t max, records = 0;
    bool over = false, write_failed = false;
    std::string text, line;
    trace_seq seq;
  } st{out, max_records, 0, false, false, {}, {}, {}};
  trace_seq_init(&st.seq);
  auto each = [](tracecmd_input* h, tep_record* r, int, void* data) -> int {
    Render& s = *static_cast<Render*>(data);
    if (s.records == s.max) return s.over = true, 1;
    ++s.records;
    tep_handle* tep = tracecmd_get_tep(h);
    tep_event* ev = tep_find_event_by_record(tep, r);
    const int pid = tep_data_pid(tep, r);
    const char* comm = tep_data_comm_from_pid(tep, pid);
    trace_seq_reset(&s.seq);
    if (ev) tep_print_event(tep, &s.seq, r, "%s", TEP_PRINT_INFO);
    trace_seq_terminate(&s.seq);
    s.line = fmt::format("{}-{} [{:03}] {}.{:09}: {}: ", comm ? comm : "<...>", pid, r->cpu,
                         r->ts / 1000000000, r->ts % 1000000000,
                         ev && ev->name ? ev->name : "unknown_event");
    if (s.seq.buffer) s.line.append(s.seq.buffer, s.seq.len);
    one_line(&s.line);
    s.line += '\n';
    s.text += s.line;
    if (s.text.size() >= 65536) {
      if (!s.out->append(s.text)) return s.write_failed = true, 1;
      s.text.clear();
    }
    return 0;
  };
  tracecmd_iterate_events_multi(d.h.data(), static_cast<int>(d.h.size()), each, &st);
  trace_seq_destroy(&st.seq);
  if (st.over)
    return *error = fmt::format("{}: the trace has more than {} records, the replay budget "
                                "(--max-events N raises it)",
                                name, max_records),
           false;
  if (st.write_failed || (!st.text.empty() && !out->append(st.text)))
    return *error = fmt::format("{}: cannot write the rendered trace.dat: {}", name,
                                std::strerror(errno)),
           false;
  return true;
}

}  // namespace

std::shared_ptr<InputSource> trace_dat_as_text(InputSource& src, uint64_t max_records,
                                               std::string* error) {
  const std::string name = src.name();
  const size_t cap = input_limits().max_bytes;
  if (!input_limits_error().empty()) return *error = input_limits_error(), nullptr;
  // The whole file is the input: a pipe is read into its spool first.
  if (src.is_pipe()) {
    std::vector<char> buf(65536);
    for (;;) {
      const long n = src.read_at(src.size(), buf.data(), buf.size());
      if (n < 0)
        return *error = fmt::format("{}: cannot read {}: {}", name, src.what(),
                                    std::strerror(errno)),
               nullptr;
      if (n == 0) break;
      if (src.size() > cap) break;
    }
  }
  if (src.size() > cap)
    return *error = fmt::format("{}: {} (a trace.dat) is larger than {}", name, src.what(),
                                input_limit_hint()),
           nullptr;

  auto out = InputSource::temp(src.path(), src.what(), error);
  if (!out) return nullptr;
  // libtraceevent and libtracecmd trust what the file says (a damaged
  // format crashes the parser, a size is malloc'd as read): they run in a
  // child process, and a crash there is the file's error line. Called
  // before the run starts its worker threads (the CLI's scan).
  int msg[2];
  if (::pipe2(msg, O_CLOEXEC) != 0)
    return *error = fmt::format("{}: cannot read {}: {}", name, src.what(), std::strerror(errno)),
           nullptr;
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(msg[0]), ::close(msg[1]);
    return *error = fmt::format("{}: cannot read {}: {}", name, src.what(), std::strerror(errno)),
           nullptr;
  }
  if (child == 0) {
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
    ::close(msg[0]);
    std::string why;
    const bool ok = render(src, out.get(), max_records, &why);
    for (size_t done = 0; done < why.size();) {
      const ssize_t w = ::write(msg[1], why.data() + done, why.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ::_exit(ok ? 0 : 1);
  }
  ::close(msg[1]);
  std::string why;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(msg[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (why.size() < 65536) why.append(buf, static_cast<size_t>(n));
  }
  ::close(msg[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return *error = fmt::format("{}: not a trace.dat libtracecmd can read (it stopped on signal "
                                "{} reading it: damaged)",
                                name, WTERMSIG(status)),
           nullptr;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return *error = why.empty() ? fmt::format("{}: not a trace.dat libtracecmd can read", name)
                                : why,
           nullptr;
  if (!out->refresh_size())
    return *error = fmt::format("{}: cannot read the rendered trace.dat: {}", name,
                                std::strerror(errno)),
           nullptr;
  return out;
}

}  // namespace simcache::sim
