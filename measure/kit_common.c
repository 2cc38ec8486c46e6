/* The host record, clocks, statistics and the row writer. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "measure/kit.h"
#include "measure/kit_match.h"

_Noreturn void kit_die(const char* what, int err) {
  fprintf(stderr, "simcache-measure: %s: %s\n", what, err ? strerror(err < 0 ? -err : err) : "failed");
  exit(1);
}

static int read_line(const char* path, char* out, size_t n) {
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  if (!fgets(out, (int)n, f)) out[0] = 0;
  fclose(f);
  out[strcspn(out, "\n")] = 0;
  return 0;
}

/* The NUMA node of `cpu` (its /sys/devices/system/cpu/cpuN/nodeM link), 0
 * where none is shown. */
static int kit_cpu_node(int cpu) {
  char dir[96];
  snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu%d", cpu);
  DIR* d = opendir(dir);
  int node = 0;
  for (struct dirent* e; d && (e = readdir(d));)
    if (!strncmp(e->d_name, "node", 4) && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
      node = atoi(e->d_name + 4);
      break;
    }
  if (d) closedir(d);
  return node;
}

/* The high marks of the task CPU's per-CPU page lists, from
 * /proc/zoneinfo (kit_zoneinfo_pcp(), measure/kit_match.h), on the CPU's
 * node. Recorded as read (simcache refuses marks below its floor of 4
 * batches of 63, naming the row); left at 0 where the file or the lines
 * are missing. SIMCACHE_MEASURE_ZONEINFO names another file to read (the
 * kit's tests). */
static void kit_pcp_high(struct kit_host* h) {
  const char* path = getenv("SIMCACHE_MEASURE_ZONEINFO");
  FILE* f = fopen(path && *path ? path : "/proc/zoneinfo", "r");
  if (!f) return;
  kit_zoneinfo_pcp(f, kit_cpu_node(h->cpu), h->cpu, &h->pcp_high_min, &h->pcp_high_max);
  fclose(f);
}

void kit_cpu_vulns(char* digest, size_t n, FILE* print) {
  const char* dir = "/sys/devices/system/cpu/vulnerabilities";
  struct dirent** names = NULL;
  const int count = scandir(dir, &names, NULL, alphasort);
  uint64_t h = 14695981039346656037ull; /* FNV-1a, 64 bits */
  int files = 0;
  for (int i = 0; i < count; ++i) {
    const char* name = names[i]->d_name;
    char path[512], text[512], line[1100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (name[0] != '.' && read_line(path, text, sizeof text) == 0) {
      snprintf(line, sizeof line, "%s=%s\n", name, text);
      for (const char* c = line; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ull;
      if (print) fprintf(print, "vulnerability %s: %s\n", name, text);
      ++files;
    }
    free(names[i]);
  }
  free(names);
  if (!digest) return;
  if (files) snprintf(digest, n, "%016llx", (unsigned long long)h);
  else snprintf(digest, n, "n/a");
}

/* "0-1,4" -> 3 */
static int count_cpu_list(const char* s) {
  int n = 0;
  while (*s) {
    char* end;
    long a = strtol(s, &end, 10), b = a;
    if (end == s) break;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    n += (int)(b - a + 1);
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

/* The simcache kernel profile nearest to major.minor. */
static const char* closest_profile(const char* release) {
  static const struct { const char* name; int v; } p[] = {
      {"v6.12", 612}, {"v6.13", 613}, {"v6.18", 618}, {"v7.1", 701}, {"v7.2", 702}};
  int major = 0, minor = 0;
  sscanf(release, "%d.%d", &major, &minor);
  const int v = major * 100 + minor;
  size_t best = 0;
  for (size_t i = 1; i < sizeof p / sizeof p[0]; ++i)
    if (abs(p[i].v - v) < abs(p[best].v - v)) best = i;
  return p[best].name;
}

/* 1 if the comma-separated controller list `list` names `want`. */
static int has_controller(const char* list, const char* want) {
  const size_t n = strlen(want);
  for (const char* p = list; *p;) {
    const char* end = strchr(p, ',');
    const size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, want, n)) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

void kit_host_memcg(struct kit_host* h) {
  /* Lines "ID:CONTROLLERS:PATH": a cgroup v1 hierarchy lists its
   * controllers (memory alone, or co-mounted with others); v2's line is
   * "0::PATH". A v1 memory line wins wherever it comes, root or not. */
  static char line[4096], v1[4096], v2[4096];
  int has_v1 = 0;
  v1[0] = v2[0] = 0;
  FILE* f = fopen("/proc/self/cgroup", "r");
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    char* c1 = strchr(line, ':');
    char* c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) continue;
    *c2 = 0;
    if (has_controller(c1 + 1, "memory")) {
      has_v1 = 1;
      snprintf(v1, sizeof v1, "%s", c2 + 1);
    } else if (c1 == line + 1 && line[0] == '0' && c1[1] == 0) {
      snprintf(v2, sizeof v2, "%s", c2 + 1);
    }
  }
  if (f) fclose(f);
  const char* path = has_v1 ? v1 : v2[0] ? v2 : "/";
  h->memcg_truncated = strlen(path) >= sizeof h->memcg;
  /* At most the record's room (the flag above says when a path was cut). */
  snprintf(h->memcg, sizeof h->memcg, "%.*s", (int)(sizeof h->memcg - 1), path);
  h->child_memcg = strcmp(h->memcg, "/") != 0;
}

int kit_enter_memcg(const char* memcg, int cpu, char* path, size_t n) {
  /* cgroup v1 mounts the memory controller's hierarchy on its own; v2
   * has one hierarchy, whose root lists the controllers it has. */
  struct stat st;
  char controllers[512] = "";
  const char* top;
  if (stat("/sys/fs/cgroup/memory/cgroup.procs", &st) == 0)
    top = "/sys/fs/cgroup/memory";
  else if (!read_line("/sys/fs/cgroup/cgroup.controllers", controllers, sizeof controllers) &&
           strstr(controllers, "memory"))
    top = "/sys/fs/cgroup";
  else
    return snprintf(path, n, "/sys/fs/cgroup/memory"), ENOENT;
  const int len = snprintf(path, n, "%s%s%scgroup.procs", top, memcg,
                           memcg[0] && memcg[strlen(memcg) - 1] == '/' ? "" : "/");
  if (len < 0 || (size_t)len >= n) return ENAMETOOLONG;
  FILE* f = fopen(path, "w");
  if (!f) return errno;
  const int bad = fprintf(f, "%d\n", (int)getpid()) < 0;
  const int err = bad ? errno : 0;
  if (fclose(f) && !bad) return errno ? errno : EIO;
  if (bad) return err ? err : EIO;
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) return errno;
  }
  return 0;
}

int kit_host_init(struct kit_host* h, int want_cpu) {
  memset(h, 0, sizeof *h);
  /* Fixed: this process runs without randomisation, or the system has it
   * off (/proc/sys/kernel/randomize_va_space 0). */
  const int persona = personality(0xffffffff);
  char va[16] = "";
  h->fixed_layout = (persona != -1 && (persona & ADDR_NO_RANDOMIZE)) ||
                    (!read_line("/proc/sys/kernel/randomize_va_space", va, sizeof va) &&
                     !strcmp(va, "0"));
  struct utsname u;
  uname(&u);
  snprintf(h->release, sizeof h->release, "%s", u.release);
  snprintf(h->cpu_model, sizeof h->cpu_model, "unknown");
  FILE* f = fopen("/proc/cpuinfo", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10)) continue;
    char* c = strchr(line, ':');
    if (c) snprintf(h->cpu_model, sizeof h->cpu_model, "%s", c + 2);
    h->cpu_model[strcspn(h->cpu_model, "\n")] = 0;
    break;
  }
  if (f) fclose(f);
  char present[256] = "";
  h->cpus = read_line("/sys/devices/system/cpu/present", present, sizeof present) == 0
                ? count_cpu_list(present) : 1;
  if (h->cpus < 1) h->cpus = 1;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set)) kit_die("sched_getaffinity", errno);
  int cpu = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set) && (want_cpu < 0 || c == want_cpu)) cpu = c; /* highest allowed */
  if (cpu < 0) kit_die("the requested CPU is not in this process's affinity mask", EINVAL);
  h->cpu = cpu;
  h->kworker_cpu = cpu;
  for (int c = 0; c < h->cpus; ++c)
    if (c != cpu) { h->kworker_cpu = c; break; }
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set)) kit_die("sched_setaffinity", errno);
  char path[128];
  snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
  if (read_line(path, h->governor, sizeof h->governor) || !h->governor[0])
    snprintf(h->governor, sizeof h->governor, "n/a");
  if (read_line("/sys/devices/system/cpu/vulnerabilities/meltdown", h->meltdown,
                sizeof h->meltdown) || !h->meltdown[0])
    snprintf(h->meltdown, sizeof h->meltdown, "n/a");
  kit_cpu_vulns(h->vulns, sizeof h->vulns, NULL);
  kit_host_memcg(h);
  kit_pcp_high(h);
  /* io_uring caps a fixed-file table at RLIMIT_NOFILE: allow the hard limit */
  struct rlimit nofile;
  if (!getrlimit(RLIMIT_NOFILE, &nofile) && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  snprintf(h->profile, sizeof h->profile, "%s", closest_profile(h->release));
  return 0;
}

void kit_host_shape(const struct kit_host* h, char* out, size_t n) {
  const int len = snprintf(out, n, "host: %d CPUs, task on CPU %d, kworker CPU %d, %s memcg",
                           h->cpus, h->cpu, h->kworker_cpu, h->child_memcg ? "child" : "root");
  if (h->pcp_high_min > 0 && len > 0 && (size_t)len < n)
    snprintf(out + len, n - (size_t)len, ", pcp high %ld..%ld", h->pcp_high_min, h->pcp_high_max);
}

double kit_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

void kit_point_init(struct kit_point* p, int repeats, int rounds) {
  memset(p, 0, sizeof *p);
  p->repeats = repeats;
  p->rounds = rounds;
  for (int r = 0; r < repeats; ++r) {
    snprintf(p->stop[r], sizeof p->stop[r], "fixed");
    p->v[r] = calloc((size_t)rounds, sizeof(double));
    if (!p->v[r]) kit_die("calloc", ENOMEM);
    p->n[r] = rounds;
  }
}

void kit_point_init_opts(struct kit_point* p, const struct kit_opts* o) {
  const int adaptive = o->target_se > 0 && o->max_rounds > o->rounds;
  kit_point_init(p, o->repeats, adaptive ? o->max_rounds : o->rounds);
  p->adaptive = adaptive;
  for (int r = 0; r < p->repeats; ++r) p->n[r] = 0;
}

/* Relative standard error of the mean of x[0..n). */
static double rel_se(const double* x, int n) {
  if (n < 2) return INFINITY;
  double m = 0, ss = 0;
  for (int i = 0; i < n; ++i) m += x[i];
  m /= n;
  for (int i = 0; i < n; ++i) ss += (x[i] - m) * (x[i] - m);
  return m > 0 ? sqrt(ss / (n - 1) / n) / m : INFINITY;
}

/* This point's own rule after n rounds of repeat r: NULL to go on, else
 * why it would stop. */
static const char* own_rule(const struct kit_point* p, const struct kit_opts* o, int r) {
  const int n = p->n[r];
  if (n < o->rounds) return NULL;
  if (!p->adaptive) return "fixed";
  /* The standard error is judged from 10 rounds on (fewer estimate it
   * too loosely to stop on). */
  if (n >= 10 && rel_se(p->v[r], n) <= o->target_se) return "se";
  if ((kit_now_ns() - p->t0[r]) * 1e-9 >= o->budget_s / p->repeats) return "budget";
  if (n >= p->rounds) return "max-rounds";
  return NULL;
}

int kit_point_add(struct kit_point* p, const struct kit_opts* o, int r, double v) {
  const int paired = kit_pair_active() && !p->follows;
  if (p->n[r] < p->rounds) {
    p->v[r][p->n[r]++] = v;
    if (p->n[r] == 1) p->t0[r] = kit_now_ns();
  } else if (!paired) {
    return 1;
  }
  const char* why = own_rule(p, o, r);
  if (paired) {
    /* A full point always ends its repeat (the row at its capacity; the
     * anchor, which measures the same rounds, never gets there first). */
    int anchor_own = 1;
    const int full = p->n[r] >= p->rounds;
    int done = kit_pair_exchange(why != NULL || full, v, r, p->n[r] - 1, r == p->repeats - 1,
                                 &anchor_own);
    if (full) done = 1;
    if (!done) return 0;
    if (!why) why = "max-rounds"; /* full: a decision needs both rules otherwise */
  }
  if (!why) return 0;
  snprintf(p->stop[r], sizeof p->stop[r], "%s", why);
  return 1;
}

int kit_point_rounds(const struct kit_point* p) {
  int m = 0;
  for (int r = 0; r < p->repeats; ++r)
    if (p->n[r] > m) m = p->n[r];
  return m;
}

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

void kit_point_free(struct kit_point* p) {
  for (int r = 0; r < p->repeats; ++r) free(p->v[r]);
}

void kit_point_stats(const struct kit_point* p, double* mean, double* max_cv, double* drift) {
  double sum = 0, first = 0, worst = 0;
  *max_cv = 0;
  for (int r = 0; r < p->repeats; ++r) {
    double m = 0, ss = 0;
    for (int i = 0; i < p->n[r]; ++i) m += p->v[r][i];
    m /= p->n[r];
    for (int i = 0; i < p->n[r]; ++i) ss += (p->v[r][i] - m) * (p->v[r][i] - m);
    const double cv = p->n[r] > 1 && m > 0 ? sqrt(ss / (p->n[r] - 1)) / m : 0;
    if (cv > *max_cv) *max_cv = cv;
    if (r == 0) first = m;
    else if (fabs(m / first - 1) > fabs(worst)) worst = m / first - 1;
    sum += m;
  }
  *mean = sum / p->repeats;
  *drift = worst;
}

void kit_point_order_stats(const struct kit_point* p, double* median, double* fastest, double* se) {
  int total = 0;
  for (int r = 0; r < p->repeats; ++r) total += p->n[r];
  double* all = malloc((size_t)(total > 0 ? total : 1) * sizeof(double));
  if (!all) kit_die("malloc", ENOMEM);
  for (int r = 0, k = 0; r < p->repeats; ++r)
    for (int i = 0; i < p->n[r]; ++i) all[k++] = p->v[r][i];
  qsort(all, (size_t)total, sizeof(double), cmp_double);
  *median = total % 2 ? all[total / 2] : (total ? (all[total / 2 - 1] + all[total / 2]) / 2 : 0);
  *fastest = total ? all[0] : 0;
  *se = rel_se(all, total);
  free(all);
}

/* Tabs and newlines would break the TSV. */
static void clean(char* s) {
  for (; *s; ++s)
    if (*s == '\t' || *s == '\n' || *s == '\r') *s = ' ';
}

void kit_row(const struct kit_opts* o, const struct kit_host* h, const char* id,
             const char* workload, const char* shape, const char* metric,
             const struct kit_point* p, double scale, const char* unit, const char* extra_note) {
  double mean, cv, drift;
  kit_point_stats(p, &mean, &cv, &drift);
  const int pass = cv <= o->max_cv && fabs(drift) <= o->max_drift;
  char hs[160], sh[1024], variant[256], source[1024], note[2048];
  kit_host_shape(h, hs, sizeof hs);
  snprintf(sh, sizeof sh, "%s; %s", shape, hs);
  snprintf(variant, sizeof variant, "host unpatched %s (profile %s)", h->release, h->profile);
  snprintf(source, sizeof source,
           "simcache-measure on %s; kernel %s; %d CPUs; pinned to CPU %d; memcg %s; governor %s; "
           "meltdown %s; cpu vulnerabilities %s; address layout %s",
           h->cpu_model, h->release, h->cpus, h->cpu, h->memcg, h->governor, h->meltdown, h->vulns,
           h->fixed_layout ? "fixed" : "randomised");
  /* Every measured round of every repeat: the median and the fastest,
   * and the relative standard error of the mean over all rounds. */
  char per[64] = "", stop[64] = "";
  for (int r = 0; r < p->repeats; ++r) {
    snprintf(per + strlen(per), sizeof per - strlen(per), "%s%d", r ? "+" : "", p->n[r]);
    snprintf(stop + strlen(stop), sizeof stop - strlen(stop), "%s%s", r ? "+" : "", p->stop[r]);
  }
  double median, fastest, se;
  kit_point_order_stats(p, &median, &fastest, &se);
  char paired[384];
  kit_pair_note(p, scale, paired, sizeof paired);
  snprintf(note, sizeof note,
           "mean of %d repeat means; stability=%s; max group CV %.6f%%; max role drift %.6f%%; "
           "drift %+.6f%%; %d warmup + %s measured rounds per repeat; median %.6f; fastest %.6f; "
           "se %.4f%%; stop=%s%s%s%s%s",
           p->repeats, pass ? "pass" : "gate-fail", cv * 100, fabs(drift) * 100, drift * 100,
           o->warmup, per, median * scale, fastest * scale, isfinite(se) ? se * 100 : 0.0,
           stop, *paired ? "; " : "", paired, extra_note && *extra_note ? "; " : "",
           extra_note ? extra_note : "");
  /* Progress: one line a row on stderr. */
  fprintf(stderr, "simcache-measure: %s: %s rounds, se %.2f%% (stop: %s), stability %s\n", id,
          per, isfinite(se) ? se * 100 : 0.0, stop, pass ? "pass" : "gate-fail");
  clean(sh), clean(variant), clean(source), clean(note);
  const double v = mean * scale;
  if (!(v > 0) || !isfinite(v)) {
    fprintf(stderr, "simcache-measure: %s: measured %g %s, not a positive finite time\n", id, v,
            unit);
    exit(1);
  }
  kit_pair_before_rows();
  printf("%s\t%s\t%s\t%s\t%s\t%.6f\t%s\ttiming\t%s\t%s\n", id, workload, sh, variant, metric, v,
         unit, source, note);
  fflush(stdout);
}

const char* kit_flag_prefix = "";

int kit_int_arg(int argc, char** argv, const char* key, int def, int min, int max) {
  const size_t k = strlen(key);
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    const char* val = NULL;
    if (strncmp(a, "--", 2) || strncmp(a + 2, key, k)) continue;
    if (a[2 + k] == '=') val = a + 3 + k;
    else if (a[2 + k] == 0 && i + 1 < argc) val = argv[i + 1];
    else continue;
    char* end;
    errno = 0;
    const long v = strtol(val, &end, 10);
    if (errno || *end || end == val || v < min || v > max) {
      fprintf(stderr, "simcache-measure: %s--%s: '%s' is not an integer in [%d, %d]\n",
              kit_flag_prefix, key, val, min, max);
      exit(2);
    }
    def = (int)v;
  }
  return def;
}

const char* kit_str_arg(int argc, char** argv, const char* key, const char* def) {
  const size_t k = strlen(key);
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    if (strncmp(a, "--", 2) || strncmp(a + 2, key, k)) continue;
    if (a[2 + k] == '=') def = a + 3 + k;
    else if (a[2 + k] == 0 && i + 1 < argc) def = argv[i + 1];
  }
  return def;
}
