/* --trace DIR: runs one kit program with a tracing instance of its own
 * recording kmem:kmalloc, kmem:kmem_cache_alloc, kmem:kfree,
 * kmem:kmem_cache_free and io_uring:*, and writes what the program
 * caused (docs/measure.md, "Counts from the live kernel").
 *
 * tracefs is mounted in a private mount namespace (unshare(CLONE_NEWNS)),
 * so the host's mounts are untouched; the instance
 * (instances/simcache-measure-PID) is removed on every exit path.
 * The program runs in a forked child; the allocation events and the
 * io_uring events are filtered in the kernel to the child's pid and its
 * io-wq workers (threads named iou-wrk-PID, where punted requests run and
 * complete), the free events are not (ring teardown runs on a kworker,
 * RCU callbacks on whatever task is current): a free counts when its
 * pointer is that of an object the child or a worker allocated and has
 * not been freed since. After the child
 * exits the instance keeps recording until every object allocated at an
 * io_uring call site is freed, or their number has not changed for 0.5 s
 * (an io-wq worker is freed by kfree_rcu()'s batch, which traces no kfree),
 * or 3 s pass; the rest is reported live.
 *
 * Outputs, each written to a temp file and renamed: DIR/ID.trace (the
 * instance's header, then the child's allocation and io_uring lines and the
 * matched free lines, verbatim, in the instance's order) and
 * DIR/ID.counts.tsv (event, site, cache, count): `alloc` by allocating call
 * site, `free` by freeing call site, `freed` by allocating call site, `uring`
 * io_uring events (submit_req by opcode), and a `summary`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "measure/kit.h"
#include "measure/kit_match.h"

#define TRACEFS "/sys/kernel/tracing"

static char g_inst[256]; /* the instance directory, "" when none */

static void inst_remove(void) {
  if (!g_inst[0]) return;
  char p[320];
  snprintf(p, sizeof p, "%s/tracing_on", g_inst);
  int fd = open(p, O_WRONLY);
  if (fd >= 0) (void)!write(fd, "0", 1), close(fd);
  if (rmdir(g_inst)) fprintf(stderr, "simcache-measure: --trace: cannot remove %s: %s\n", g_inst, strerror(errno));
  g_inst[0] = 0;
}

/* One line naming the cause, the instance removed, exit 1. */
static _Noreturn void trace_die(const char* what, const char* path, int err) {
  fprintf(stderr, "simcache-measure: --trace: %s%s%s%s%s\n", what, path ? " " : "", path ? path : "",
          err ? ": " : "", err ? strerror(err) : "");
  inst_remove();
  exit(1);
}

static void put(const char* rel, const char* val) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_inst, rel);
  const int fd = open(p, O_WRONLY | O_TRUNC);
  if (fd < 0) trace_die("cannot open", p, errno);
  const ssize_t n = write(fd, val, strlen(val));
  const int err = errno;
  close(fd);
  if (n != (ssize_t)strlen(val)) trace_die("cannot write", p, n < 0 ? err : EIO);
}

/* The whole of a tracefs file (its size is not known in advance). */
static char* slurp(const char* path, size_t* len) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) trace_die("cannot open", path, errno);
  size_t cap = 1 << 20, n = 0;
  char* b = malloc(cap);
  if (!b) kit_die("malloc", ENOMEM);
  for (;;) {
    if (n + 65536 + 1 > cap) {
      cap *= 2;
      char* nb = realloc(b, cap);
      if (!nb) kit_die("realloc", ENOMEM);
      b = nb;
    }
    const ssize_t r = read(fd, b + n, 65536);
    if (r < 0) trace_die("cannot read", path, errno);
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  b[n] = 0;
  *len = n;
  return b;
}

/* A lost event would make a count wrong: any overrun or drop ends the run. */
static void check_lost(void) {
  for (int cpu = 0; cpu < 4096; ++cpu) {
    char p[320];
    snprintf(p, sizeof p, "%s/per_cpu/cpu%d/stats", g_inst, cpu);
    if (access(p, R_OK)) {
      if (cpu > 0) break;
      continue;
    }
    size_t len;
    char* s = slurp(p, &len);
    const char* keys[] = {"overrun: ", "dropped events: "};
    for (int k = 0; k < 2; ++k) {
      const char* v = strstr(s, keys[k]);
      if (v && atol(v + strlen(keys[k])) > 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "CPU %d lost %ld events (%.*s) in", cpu, atol(v + strlen(keys[k])),
                 (int)strlen(keys[k]) - 2, keys[k]);
        free(s);
        trace_die(msg, "the tracing buffer; raise --trace-buffer-kb or quieten the machine", 0);
      }
    }
    free(s);
  }
}

static void write_atomic(const char* path, const char* data, size_t len) {
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  const int fd = mkstemp(tmp);
  if (fd < 0) trace_die("cannot create a temp file beside", path, errno);
  const mode_t um = umask(0);
  umask(um);
  fchmod(fd, 0666 & ~um);
  size_t off = 0;
  while (off < len) {
    const ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) {
      const int err = errno;
      close(fd), unlink(tmp);
      trace_die("cannot write", path, err);
    }
    off += (size_t)w;
  }
  if (close(fd) || rename(tmp, path)) {
    const int err = errno;
    unlink(tmp);
    trace_die("cannot write", path, err);
  }
}

static int cmp_rows(const void* a, const void* b) {
  const struct kit_row *x = a, *y = b;
  if (x->kind != y->kind) return x->kind - y->kind;
  const int s = strcmp(x->site, y->site);
  return s ? s : strcmp(x->cache, y->cache);
}

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) && errno == EINTR) {
  }
}

int kit_trace_program(const char* dir, int buffer_kb, const struct kit_opts* o,
                      const struct kit_host* h,
                      int (*fn)(int, char**, const struct kit_opts*, const struct kit_host*),
                      int argc, char** argv) {
  struct stat st;
  if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "simcache-measure: --trace: '%s' is not a directory\n", dir);
    return 2;
  }
  if (unshare(CLONE_NEWNS)) trace_die("cannot make a private mount namespace (unshare)", NULL, errno);
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
    trace_die("cannot make / private in the new mount namespace", NULL, errno);
  if (access(TRACEFS "/instances", F_OK) && mount("nodev", TRACEFS, "tracefs", 0, NULL))
    trace_die("cannot mount tracefs on", TRACEFS, errno);
  snprintf(g_inst, sizeof g_inst, TRACEFS "/instances/simcache-measure-%d", (int)getpid());
  if (mkdir(g_inst, 0700)) {
    const int err = errno;
    g_inst[0] = 0;
    trace_die("cannot create the tracing instance", TRACEFS "/instances/simcache-measure-PID", err);
  }
  put("tracing_on", "0");
  char kb[32];
  snprintf(kb, sizeof kb, "%d", buffer_kb);
  put("buffer_size_kb", kb);
  put("options/overwrite", "0"); /* a full buffer drops (and says so), never overwrites */
  int go[2];
  if (pipe(go)) trace_die("pipe", NULL, errno);
  fflush(stdout);
  const pid_t child = fork();
  if (child < 0) trace_die("fork", NULL, errno);
  if (child == 0) {
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    close(go[0]);
    const int rc = fn(argc, argv, o, h);
    fflush(stdout);
    _exit(rc);
  }
  close(go[0]);
  /* The program and its io-wq workers (threads named iou-wrk-PID). */
  char filt[96];
  snprintf(filt, sizeof filt, "common_pid == %d || comm == \"iou-wrk-%d\"", (int)child, (int)child);
  put("events/kmem/kmalloc/filter", filt);
  put("events/kmem/kmem_cache_alloc/filter", filt);
  put("events/io_uring/filter", filt);
  put("events/kmem/kmalloc/enable", "1");
  put("events/kmem/kmem_cache_alloc/enable", "1");
  put("events/kmem/kfree/enable", "1");
  put("events/kmem/kmem_cache_free/enable", "1");
  put("events/io_uring/enable", "1");
  put("tracing_on", "1");
  if (write(go[1], "g", 1) != 1) trace_die("cannot start the program", NULL, errno);
  close(go[1]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) trace_die("waitpid", NULL, errno);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc) {
    inst_remove();
    return rc;
  }
  /* Deferred frees: ring teardown (io_ring_exit_work on a kworker), the
   * task's io_uring context (__io_uring_free when the task is freed, after
   * an RCU grace period). */
  struct kit_matcher m;
  memset(&m, 0, sizeof m);
  char tpath[300];
  snprintf(tpath, sizeof tpath, "%s/trace", g_inst);
  size_t len;
  char* text = NULL;
  long last = -1;
  for (int waited = 0, still = 0;; waited += 100) {
    sleep_ms(100);
    free(text);
    text = slurp(tpath, &len);
    kit_matcher_reset(&m);
    kit_match_trace(&m, text, child, NULL);
    still = m.live_uring == last ? still + 1 : 0;
    last = m.live_uring;
    if (m.live_uring == 0 || still >= 5 || waited >= 3000) break;
  }
  put("tracing_on", "0");
  free(text);
  text = slurp(tpath, &len);
  check_lost();
  inst_remove();
  kit_matcher_reset(&m);
  char* kept = NULL;
  size_t kept_len = 0;
  FILE* keep = open_memstream(&kept, &kept_len);
  if (!keep) kit_die("open_memstream", errno);
  const long events = kit_match_trace(&m, text, child, keep);
  fclose(keep);
  char path[600];
  snprintf(path, sizeof path, "%s/%s.trace", dir, o->id);
  write_atomic(path, kept, kept_len);
  free(kept);
  qsort(m.rows, (size_t)m.nrows, sizeof *m.rows, cmp_rows);
  char* tsv = NULL;
  size_t tsv_len = 0;
  FILE* t = open_memstream(&tsv, &tsv_len);
  if (!t) kit_die("open_memstream", errno);
  static const char* kinds[] = {"alloc", "free", "freed", "uring"};
  fprintf(t, "event\tsite\tcache\tcount\n");
  for (int i = 0; i < m.nrows; ++i) {
    const struct kit_row* r = &m.rows[i];
    fprintf(t, "%s\t%s\t%s\t%ld\n", kinds[r->kind == 'a' ? 0 : r->kind == 'f' ? 1 : r->kind == 'g' ? 2 : 3], r->site,
            r->cache, r->count);
  }
  fprintf(t, "summary\tlive_io_uring_objects\t-\t%ld\n", m.live_uring);
  fprintf(t, "summary\tfrees_on_other_tasks\t-\t%ld\n", m.other_task_frees);
  fprintf(t, "summary\tlines_kept\t-\t%ld\n", m.lines_kept);
  fprintf(t, "summary\tinstance_events\t-\t%ld\n", events);
  fclose(t);
  snprintf(path, sizeof path, "%s/%s.counts.tsv", dir, o->id);
  write_atomic(path, tsv, tsv_len);
  free(tsv);
  free(text);
  free(m.rows), free(m.objs);
  fprintf(stderr, "simcache-measure: --trace: %s: %ld of %ld events kept, %ld frees on other tasks, %ld io_uring objects live\n",
          o->id, m.lines_kept, events, m.other_task_frees, m.live_uring);
  return 0;
}
