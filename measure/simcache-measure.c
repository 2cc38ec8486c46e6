/* simcache-measure: replays one program of docs/workloads.md on the
 * running kernel and prints its rows (the columns of calibration.tsv).
 *
 *   simcache-measure [common flags] PROGRAM [program flags]
 *
 * docs/measure.md has every program, its flags and the suites that
 * scripts/measure runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

#include "measure/kit.h"

static const char kUsage[] =
    "usage: simcache-measure [--warmup N] [--rounds N] [--repeats N] [--cpu C] [--id ID]\n"
    "                        [--max-cv PCT] [--max-drift PCT] [--header] [--aslr] [--root-memcg]\n"
    "                        [--target-se PCT] [--budget SECONDS] [--max-rounds N]\n"
    "                        [--trace DIR [--trace-buffer-kb KB]]\n"
    "                        [--anchor 'PROGRAM [flags]' [--anchor-id ID]] PROGRAM [flags]\n"
    "programs:\n"
    "  f0        --slots S --installs N --qd Q      first fill of a sparse table\n"
    "  coldwarm  --mode cold|warm|primed --slots S --qd Q\n"
    "                                               node cache cold, warm or primed fill\n"
    "  lifecycle --mode serial|paced|reuse --slots S --installs N --qd Q --ops K\n"
    "  waitv     --vectors V --width W --cycles C   FUTEX_WAITV -> WAKE (v0)\n"
    "  s0        --waits N --cycles C               scalar FUTEX_WAIT -> WAKE control\n"
    "  e0        --waits N --fail-permille P --cycles C   arm-fail\n"
    "  poll      --qd Q --burst B --recycle R --total T [--llc-kib K]   POLL_ADD request refill\n"
    "  llc                                          the cache share (pointer chase), KiB\n"
    "  slabcount --slots S --installs N --caches a,b,...  slab deltas across fills\n"
    "  host                                         print the host record\n"
    "  probe                                        exit 0 if io_uring works, 77 if not\n"
    "--target-se PCT (default 1): after --rounds, a repeat goes on until the standard error of\n"
    "its mean is at most PCT % (judged from 10 rounds on), or it has spent its share of\n"
    "--budget SECONDS (default 2 per point), or --max-rounds N (default 1000); 0: exactly --rounds\n"
    "--trace DIR: run PROGRAM with a tracing instance of its own (root: tracefs in a private\n"
    "mount namespace) and write DIR/ID.trace and DIR/ID.counts.tsv (docs/measure.md)\n"
    "--anchor 'PROGRAM [flags]': measure that program round by round beside PROGRAM (one\n"
    "at a time, their rounds alternating) and print its rows first, as --anchor-id (default\n"
    "ID-anchor); the row's note gives its ratio to the anchor round by round, by which\n"
    "calibrate and validate scale it (docs/measure.md, \"The reference\")\n"
    "--root-memcg: run in the root memory cgroup, where no kernel memory is charged (root;\n"
    "exit 77 where it cannot): beside the same row in a child memcg it measures what charging\n"
    "costs (docs/measure.md, \"Charged and uncharged\")\n"
    "--aslr: keep the address layout randomised; by default the kit runs with a fixed one\n"
    "(ADDR_NO_RANDOMIZE), the same for every row (docs/measure.md, \"A new ring's first use\")\n";

/* A fixed address layout: on a VM of this project's kind a fresh ring's
 * pages cost microseconds to read first in some layouts and next to
 * nothing in others, and randomisation draws one for each process, so
 * each row of a suite would sample its own (docs/measure.md). The kit
 * re-executes itself once without randomisation; where it cannot, it
 * runs on and its rows say so (kit_host_init() reads the personality). */
static void fixed_layout(char** argv) {
  /* Once only: where the exec drops the setting (a setuid binary, a
   * sandbox that takes personality() without applying it) the kit runs on
   * as it is rather than execute itself again and again. */
  if (getenv("SIMCACHE_MEASURE_REEXEC")) return;
  const int p = personality(0xffffffff);
  if (p == -1 || (p & ADDR_NO_RANDOMIZE)) return;
  if (personality((unsigned long)p | ADDR_NO_RANDOMIZE) == -1) return;
  if (setenv("SIMCACHE_MEASURE_REEXEC", "1", 1) == 0) execv("/proc/self/exe", argv);
  personality((unsigned long)p); /* exec failed: as it was */
}

/* --root-memcg: this process leaves its memory cgroup (kept in `left`
 * for an anchor, which returns to it in kit_pair_run(), so that a suite's
 * reference runs in one place) for the root's, pinned again to its CPU.
 * 0; 77 where the kit may not move (no right to, or no memory
 * controller: the row cannot be measured here); 1 for anything else. */
static int enter_root_memcg(struct kit_host* h, char* left, size_t n) {
  if (h->memcg_truncated) {
    fprintf(stderr, "simcache-measure: --root-memcg: this process's memory cgroup path is "
            "longer than %zu characters\n", sizeof h->memcg - 1);
    return 1;
  }
  snprintf(left, n, "%s", h->memcg);
  char where[512];
  const int err = kit_enter_memcg("/", h->cpu, where, sizeof where);
  if (err) {
    fprintf(stderr, "simcache-measure: --root-memcg: cannot enter the root memory cgroup: %s: %s\n",
            where, strerror(err));
    return err == EACCES || err == EPERM || err == EROFS || err == ENOENT ? 77 : 1;
  }
  kit_host_memcg(h);
  return 0;
}

static const char kHeader[] = "id\tworkload\tshape\tvariant\tmetric\tvalue\tunit\tkind\tsource\tnote\n";

int main(int argc, char** argv) {
  struct kit_opts o = {3, 15, 2, 0.02, 0.02, "HOST", 0.01, 2, 1000};
  int cpu = -1, header = 0, aslr = 0, root_memcg = 0, i = 1, trace_kb = 16384;
  const char* trace_dir = NULL;
  const char* anchor = NULL;
  const char* anchor_id = NULL;
  /* Each common flag with its range; an unknown flag, a missing value or
   * one out of range is one line naming the flag, and exit 2. */
  static const struct {
    const char* name;
    double lo, hi;
    int integer;
  } flags[] = {{"warmup", 0, 10000, 1}, {"rounds", 2, 10000, 1},  {"repeats", 1, KIT_MAX_REPEATS, 1},
               {"cpu", 0, 4095, 1},     {"max-cv", 0.001, 100, 0}, {"max-drift", 0.001, 100, 0},
               {"trace-buffer-kb", 64, 1048576, 1}, {"target-se", 0, 100, 0},
               {"budget", 0.01, 86400, 0},    {"max-rounds", 2, 100000, 1}};
  for (; i < argc && !strncmp(argv[i], "--", 2); ++i) {
    const char* a = argv[i] + 2;
    if (!strcmp(a, "help")) return fputs(kUsage, stdout), 0;
    if (!strcmp(a, "header")) { header = 1; continue; }
    if (!strcmp(a, "aslr")) { aslr = 1; continue; }
    if (!strcmp(a, "root-memcg")) { root_memcg = 1; continue; }
    size_t f = 0;
    while (f < sizeof flags / sizeof flags[0] && strcmp(a, flags[f].name)) ++f;
    if (strcmp(a, "id") && strcmp(a, "trace") && strcmp(a, "anchor") && strcmp(a, "anchor-id") &&
        f == sizeof flags / sizeof flags[0]) {
      fprintf(stderr, "simcache-measure: unknown flag '%s'\n%s", argv[i], kUsage);
      return 2;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "simcache-measure: %s: missing value\n", argv[i]);
      return 2;
    }
    const char* v = argv[++i];
    if (!strcmp(a, "id")) { o.id = v; continue; } /* any text */
    if (!strcmp(a, "trace")) { trace_dir = v; continue; } /* checked when used */
    if (!strcmp(a, "anchor") || !strcmp(a, "anchor-id")) { /* checked below */
      const char** to = !strcmp(a, "anchor") ? &anchor : &anchor_id;
      if (*to) {
        fprintf(stderr, "simcache-measure: --%s: given twice\n", a);
        return 2;
      }
      *to = v;
      continue;
    }
    char* end;
    const double d = strtod(v, &end);
    if (*end || end == v || !(d >= flags[f].lo && d <= flags[f].hi) ||
        (flags[f].integer && d != (double)(long)d)) {
      fprintf(stderr, "simcache-measure: --%s: '%s' is not %s in [%g, %g]\n", a, v,
              flags[f].integer ? "a whole number" : "a number", flags[f].lo, flags[f].hi);
      return 2;
    }
    if (!strcmp(a, "warmup")) o.warmup = (int)d;
    else if (!strcmp(a, "rounds")) o.rounds = (int)d;
    else if (!strcmp(a, "repeats")) o.repeats = (int)d;
    else if (!strcmp(a, "cpu")) cpu = (int)d;
    else if (!strcmp(a, "max-cv")) o.max_cv = d / 100;
    else if (!strcmp(a, "trace-buffer-kb")) trace_kb = (int)d;
    else if (!strcmp(a, "target-se")) o.target_se = d / 100;
    else if (!strcmp(a, "budget")) o.budget_s = d;
    else if (!strcmp(a, "max-rounds")) o.max_rounds = (int)d;
    else o.max_drift = d / 100;
  }
  if (i >= argc) {
    fprintf(stderr, "simcache-measure: no program given\n%s", kUsage);
    return 2;
  }
  if (!aslr) fixed_layout(argv);
  struct kit_host h;
  kit_host_init(&h, cpu);
  static char left_memcg[sizeof h.memcg];
  const char* prog = argv[i];
  const int pargc = argc - i - 1;
  char** pargv = argv + i + 1;
  static const struct {
    const char* name;
    kit_program fn;
  } cmds[] = {{"f0", kit_cmd_f0},     {"coldwarm", kit_cmd_coldwarm},
              {"lifecycle", kit_cmd_lifecycle}, {"waitv", kit_cmd_waitv},
              {"s0", kit_cmd_s0},     {"e0", kit_cmd_e0},
              {"poll", kit_cmd_poll}, {"llc", kit_cmd_llc},
              {"slabcount", kit_cmd_slabcount}};
  if (anchor && (!strcmp(prog, "probe") || !strcmp(prog, "host"))) {
    fprintf(stderr, "simcache-measure: --anchor: only beside a measured program, not %s\n", prog);
    return 2;
  }
  if (!anchor && anchor_id) {
    fprintf(stderr, "simcache-measure: --anchor-id: only with --anchor\n");
    return 2;
  }
  if (!strcmp(prog, "probe")) { /* exit 77 (a ctest skip) without io_uring */
    struct io_uring r;
    const int ret = io_uring_queue_init(8, &r, 0);
    if (ret < 0) return fprintf(stderr, "simcache-measure: no io_uring here: %s\n", strerror(-ret)), 77;
    const int sp = io_uring_register_files_sparse(&r, 8);
    io_uring_queue_exit(&r);
    if (sp < 0) return fprintf(stderr, "simcache-measure: no sparse file tables: %s\n", strerror(-sp)), 77;
    return 0;
  }
  if (!strcmp(prog, "host")) {
    if (root_memcg) {
      const int status = enter_root_memcg(&h, left_memcg, sizeof left_memcg);
      if (status) return status;
    }
    char s[160];
    kit_host_shape(&h, s, sizeof s);
    printf("kernel %s\ncpu %s\n%s\nmemcg %s\ngovernor %s\nmeltdown %s\ncpu vulnerabilities %s\n"
           "profile %s\naddress layout %s\n",
           h.release, h.cpu_model, s, h.memcg, h.governor, h.meltdown, h.vulns, h.profile,
           h.fixed_layout ? "fixed" : "randomised");
    kit_cpu_vulns(NULL, 0, stdout);
    return 0;
  }
  /* The measured programs: an anchor is one of them (not llc or slabcount). */
  const size_t measured = 7;
  for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; ++k)
    if (!strcmp(prog, cmds[k].name)) {
      if (anchor && (k >= measured || trace_dir)) {
        fprintf(stderr, "simcache-measure: --anchor: %s\n",
                trace_dir ? "not with --trace" : "only beside a measured program, not llc or slabcount");
        return 2;
      }
      if (root_memcg) { /* every common flag and the anchor checked: now, before any fork */
        const int status = enter_root_memcg(&h, left_memcg, sizeof left_memcg);
        if (status) return status;
      }
      if (header && strcmp(prog, "slabcount") && strcmp(prog, "llc")) fputs(kHeader, stdout);
      if (trace_dir) return kit_trace_program(trace_dir, trace_kb, &o, &h, cmds[k].fn, pargc, pargv);
      if (!anchor) return cmds[k].fn(pargc, pargv, &o, &h);
      /* The anchor's words, split at spaces (no quoting: flags and numbers). */
      static char abuf[1024];
      static char* aargv[64];
      int aargc = 0;
      if (strlen(anchor) >= sizeof abuf) {
        fprintf(stderr, "simcache-measure: --anchor: longer than %zu characters\n", sizeof abuf - 1);
        return 2;
      }
      snprintf(abuf, sizeof abuf, "%s", anchor);
      for (char* t = strtok(abuf, " "); t; t = strtok(NULL, " ")) {
        if (aargc == 63) {
          fprintf(stderr, "simcache-measure: --anchor: more than 62 flags and values\n");
          return 2;
        }
        aargv[aargc++] = t;
      }
      aargv[aargc] = NULL;
      size_t a = 0;
      while (aargc && a < measured && strcmp(aargv[0], cmds[a].name)) ++a;
      if (!aargc || a == measured) {
        fprintf(stderr, "simcache-measure: --anchor: '%s' is not a measured program (f0, coldwarm, "
                "lifecycle, waitv, s0, e0, poll)\n", aargc ? aargv[0] : "");
        return 2;
      }
      static char default_id[160];
      if (strlen(o.id) > 100 || (anchor_id && strlen(anchor_id) > 100)) {
        fprintf(stderr, "simcache-measure: --%s: longer than 100 characters (a paired row's note "
                "names its anchor whole)\n", strlen(o.id) > 100 ? "id" : "anchor-id");
        return 2;
      }
      if (!anchor_id) snprintf(default_id, sizeof default_id, "%s-anchor", o.id), anchor_id = default_id;
      /* The two programs' rows (a lifecycle's ID, ID-reg, ID-fill) never share an id. */
      static const char* phases[] = {"", "-reg", "-fill"};
      for (int x = 0; x < 3; ++x)
        for (int y = 0; y < 3; ++y) {
          char a[128], b[128];
          snprintf(a, sizeof a, "%s%s", anchor_id, phases[x]);
          snprintf(b, sizeof b, "%s%s", o.id, phases[y]);
          if (!strcmp(a, b)) {
            if (x == y)
              fprintf(stderr, "simcache-measure: --anchor-id: '%s' is the row's --id too\n",
                      anchor_id);
            else
              fprintf(stderr, "simcache-measure: --anchor-id: '%s' and --id '%s' would give two "
                      "rows one id (a lifecycle writes ID, ID-reg and ID-fill)\n", anchor_id, o.id);
            return 2;
          }
        }
      return kit_pair_run(&o, &h, cmds[k].fn, pargc, pargv, cmds[a].fn, aargc - 1, aargv + 1,
                          anchor_id, root_memcg ? left_memcg : NULL);
    }
  fprintf(stderr, "simcache-measure: unknown program '%s'\n%s", prog, kUsage);
  return 2;
}
