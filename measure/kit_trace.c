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

/* ---- the matcher ---- */

enum { kAlloc, kFree };
struct row {
  char kind;      /* 'a' alloc by site, 'f' free by the freeing call site, 'g' free by the
                     allocating call site, 'u' io_uring event */
  char site[64];  /* call site function (compiler suffixes dropped) or event */
  char cache[40]; /* the allocation's cache; the io_uring opcode for 'u' */
  long count;
};
struct obj {
  unsigned long long ptr; /* 0: empty slot */
  int row;                /* the 'a' row of its allocation; -1 when freed */
  int uring;              /* allocated at an io_uring call site */
};
struct matcher {
  struct row* rows;
  int nrows, caprows;
  struct obj* objs; /* open addressing, power of two */
  size_t capobjs, nobjs;
  long live_uring, other_task_frees, lines_kept;
};

static int row_of(struct matcher* m, char kind, const char* site, const char* cache) {
  for (int i = 0; i < m->nrows; ++i)
    if (m->rows[i].kind == kind && !strcmp(m->rows[i].site, site) && !strcmp(m->rows[i].cache, cache))
      return i;
  if (m->nrows == m->caprows) {
    m->caprows = m->caprows ? 2 * m->caprows : 64;
    m->rows = realloc(m->rows, sizeof *m->rows * (size_t)m->caprows);
    if (!m->rows) kit_die("realloc", ENOMEM);
  }
  struct row* r = &m->rows[m->nrows];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  snprintf(r->site, sizeof r->site, "%s", site);
  snprintf(r->cache, sizeof r->cache, "%s", cache);
  return m->nrows++;
}

static struct obj* obj_slot(struct matcher* m, unsigned long long p) {
  size_t i = (size_t)(p * 0x9e3779b97f4a7c15ull) & (m->capobjs - 1);
  while (m->objs[i].ptr && m->objs[i].ptr != p) i = (i + 1) & (m->capobjs - 1);
  return &m->objs[i];
}

static void obj_grow(struct matcher* m) {
  struct obj* old = m->objs;
  const size_t oc = m->capobjs;
  m->capobjs = oc ? 2 * oc : 4096;
  m->objs = calloc(m->capobjs, sizeof *m->objs);
  if (!m->objs) kit_die("calloc", ENOMEM);
  for (size_t i = 0; i < oc; ++i)
    if (old[i].ptr) *obj_slot(m, old[i].ptr) = old[i];
  free(old);
}

/* "key=value" in the event text, copied up to the next blank. */
static int field(const char* s, const char* key, char* out, size_t n) {
  const size_t k = strlen(key);
  for (const char* p = s; (p = strstr(p, key)); p += k)
    if ((p == s || p[-1] == ' ') && p[k] == '=') {
      const char* v = p + k + 1;
      size_t l = strcspn(v, " \n");
      if (l >= n) l = n - 1;
      memcpy(out, v, l), out[l] = 0;
      return 1;
    }
  return 0;
}

/* "io_uring_setup.cold+0xa7/0x9d8" -> "io_uring_setup" */
static void site_name(const char* call_site, char* out, size_t n) {
  size_t l = strcspn(call_site, "+.");
  if (l >= n) l = n - 1;
  memcpy(out, call_site, l), out[l] = 0;
}

/* The kernel's kmalloc cache for bytes_alloc (kmalloc-cg-* when accounted). */
static void kmalloc_cache(long bytes, int accounted, char* out, size_t n) {
  char sz[24];
  if (bytes >= 1024 && bytes % 1024 == 0) snprintf(sz, sizeof sz, "%ldk", bytes / 1024);
  else snprintf(sz, sizeof sz, "%ld", bytes);
  snprintf(out, n, "kmalloc-%s%s", accounted ? "cg-" : "", sz);
}

static int uring_site(const char* s) {
  return !strncmp(s, "io_", 3) || !strncmp(s, "__io_", 5) || !strncmp(s, "create_io_", 10);
}

/* Parses the instance's text; keeps the relevant lines in `keep` when
 * non-NULL. Returns the number of event lines. */
static long match_trace(struct matcher* m, char* text, int child, FILE* keep) {
  long events = 0;
  for (char* line = text; line && *line;) {
    char* nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (line[0] == '#') {
      if (keep) fprintf(keep, "%s\n", line);
    } else {
      /* TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: TEXT, or TASK-PID (TGID) [CPU]
       * ... where the global options/record-tgid is on (an unknown TGID
       * prints as dashes): TASK-PID ends before " (" then. */
      char* br = strstr(line, " [");
      char* end = br;
      int tgid = 0;
      if (br && br > line && br[-1] == ')') {
        char* op = br - 1;
        while (op > line && *op != '(') --op;
        if (*op == '(' && op > line && op[-1] == ' ') end = op - 1, tgid = atoi(op + 1);
      }
      char* dash = NULL;
      for (char* p = line; end && p < end; ++p)
        if (*p == '-') dash = p;
      char* ev = br ? strstr(br, ": ") : NULL;
      if (dash && ev) {
        ++events;
        const int pid = atoi(dash + 1);
        /* The allocation and io_uring events are the program's and its
         * io-wq workers' by the kernel's filter (on the task's comm when
         * the event fired). The text's TASK is the comm cache's at read
         * time, which may have lost a short-lived worker ("<...>"): it
         * only tells, for the unfiltered frees, which ran elsewhere. */
        const char* task = line;
        while (*task == ' ') ++task;
        char wrk[32];
        const int wl = snprintf(wrk, sizeof wrk, "iou-wrk-%d", child);
        const int mine = pid == child || tgid == child ||
                         (dash - task == wl && !strncmp(task, wrk, (size_t)wl));
        ev += 2;
        char* colon = strchr(ev, ':');
        const size_t elen = colon ? (size_t)(colon - ev) : 0;
        const char* txt = colon ? colon + 2 : "";
        char cs[128] = "", site[64], ptrs[40] = "", cache[40] = "", b[32] = "", acc[8] = "";
        const int is_kmalloc = elen == 7 && !strncmp(ev, "kmalloc", 7);
        const int is_kca = elen == 16 && !strncmp(ev, "kmem_cache_alloc", 16);
        const int is_free = (elen == 5 && !strncmp(ev, "kfree", 5)) ||
                            (elen == 15 && !strncmp(ev, "kmem_cache_free", 15));
        int kept = 0;
        if ((is_kmalloc || is_kca) && field(txt, "call_site", cs, sizeof cs) &&
            field(txt, "ptr", ptrs, sizeof ptrs)) {
          site_name(cs, site, sizeof site);
          if (is_kca) field(txt, "name", cache, sizeof cache);
          else {
            field(txt, "bytes_alloc", b, sizeof b);
            field(txt, "accounted", acc, sizeof acc);
            kmalloc_cache(atol(b), !strcmp(acc, "true"), cache, sizeof cache);
          }
          const unsigned long long p = strtoull(ptrs, NULL, 16);
          if (p) {
            if (2 * (m->nobjs + 1) > m->capobjs) obj_grow(m);
            struct obj* o = obj_slot(m, p);
            if (!o->ptr) ++m->nobjs;
            else if (o->row >= 0 && o->uring) --m->live_uring; /* its free was not seen */
            const int r = row_of(m, 'a', site, cache);
            m->rows[r].count++;
            o->ptr = p, o->row = r, o->uring = uring_site(site);
            if (o->uring) ++m->live_uring;
            kept = 1;
          }
        } else if (is_free && field(txt, "ptr", ptrs, sizeof ptrs)) {
          const unsigned long long p = strtoull(ptrs, NULL, 16);
          struct obj* o = p && m->capobjs ? obj_slot(m, p) : NULL;
          if (o && o->ptr && o->row >= 0) {
            field(txt, "call_site", cs, sizeof cs);
            site_name(cs, site, sizeof site);
            /* row_of() may move m->rows: copy the allocation's names first */
            char asite[sizeof m->rows[0].site], acache[sizeof m->rows[0].cache];
            memcpy(asite, m->rows[o->row].site, sizeof asite);
            memcpy(acache, m->rows[o->row].cache, sizeof acache);
            const int f = row_of(m, 'f', site, acache);  /* before m->rows is read */
            m->rows[f].count++;
            const int g = row_of(m, 'g', asite, acache);
            m->rows[g].count++;
            if (!mine) ++m->other_task_frees;
            if (o->uring) --m->live_uring;
            o->row = -1;
            kept = 1;
          }
        } else if (elen > 9 && !strncmp(ev, "io_uring_", 9)) {
          char name[64], op[40] = "-";
          snprintf(name, sizeof name, "%.*s", (int)elen, ev);
          const char* o = strstr(txt, "opcode ");
          if (o && !strcmp(name, "io_uring_submit_req")) {
            size_t l = strcspn(o + 7, ", ");
            snprintf(op, sizeof op, "%.*s", (int)(l < 39 ? l : 39), o + 7);
          }
          const int u = row_of(m, 'u', name, op);  /* before m->rows is read */
          m->rows[u].count++;
          kept = 1;
        }
        if (kept && keep) fprintf(keep, "%s\n", line), ++m->lines_kept;
      }
    }
    if (nl) *nl = '\n';
    line = nl ? nl + 1 : NULL;
  }
  return events;
}

static void matcher_reset(struct matcher* m) {
  m->nrows = 0;
  free(m->objs);
  m->objs = NULL, m->capobjs = m->nobjs = 0;
  m->live_uring = m->other_task_frees = m->lines_kept = 0;
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
  const struct row *x = a, *y = b;
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
  struct matcher m;
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
    matcher_reset(&m);
    match_trace(&m, text, child, NULL);
    still = m.live_uring == last ? still + 1 : 0;
    last = m.live_uring;
    if (m.live_uring == 0 || still >= 5 || waited >= 3000) break;
  }
  put("tracing_on", "0");
  free(text);
  text = slurp(tpath, &len);
  check_lost();
  inst_remove();
  matcher_reset(&m);
  char* kept = NULL;
  size_t kept_len = 0;
  FILE* keep = open_memstream(&kept, &kept_len);
  if (!keep) kit_die("open_memstream", errno);
  const long events = match_trace(&m, text, child, keep);
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
    const struct row* r = &m.rows[i];
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
