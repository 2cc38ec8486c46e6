/* simcache measurement kit: the programs of docs/workloads.md replayed
 * on the running kernel, printing rows in the columns of calibration.tsv.
 * Shared pieces: the host record, clocks and statistics, the row writer,
 * and the raw SQE fills liburing 2.3 has no helper for. */
#ifndef SIMCACHE_MEASURE_KIT_H
#define SIMCACHE_MEASURE_KIT_H

#include <liburing.h>
#include <stddef.h>
#include <stdint.h>

/* Opcodes newer than liburing 2.3's header (include/uapi/linux/io_uring.h:
 * IORING_OP_FUTEX_WAIT/WAKE/WAITV follow IORING_OP_WAITID = 50, v6.7+). */
#define KIT_OP_FUTEX_WAIT 51
#define KIT_OP_FUTEX_WAKE 52
#define KIT_OP_FUTEX_WAITV 53
/* include/uapi/linux/futex.h: FUTEX2_SIZE_U32 and FUTEX2_PRIVATE. */
#define KIT_FUTEX2_SIZE_U32 0x02u
#define KIT_FUTEX2_PRIVATE 128u
#define KIT_FUTEX_BITSET_MATCH_ANY 0xffffffffu

/* struct futex_waitv (include/uapi/linux/futex.h). */
struct kit_futex_waitv {
  uint64_t val;
  uint64_t uaddr;
  uint32_t flags;
  uint32_t reserved;
};

/* What a row says about the machine it was measured on. */
struct kit_host {
  char release[128];  /* uname -r */
  char cpu_model[128];
  int cpus;           /* present CPUs (/sys/devices/system/cpu/present) */
  int cpu;            /* the CPU this process pinned itself to */
  int kworker_cpu;    /* another CPU (where ring teardown may run) */
  int child_memcg;    /* 1: the process is in a non-root memory cgroup */
  /* The per-CPU page lists' high marks of `cpu` in its node's Normal
   * zone, else DMA32 (/proc/zoneinfo high_min and high_max, or a pre-6.7
   * kernel's fixed high as both; 0 when unread). */
  long pcp_high_min, pcp_high_max;
  char memcg[256];    /* its memory cgroup path */
  int memcg_truncated; /* 1: that path was longer than memcg[] holds */
  char governor[64];  /* cpufreq governor of `cpu`, or "n/a" */
  /* /sys/devices/system/cpu/vulnerabilities/meltdown ("Mitigation: PTI",
   * "Not affected"; an AMD CPU always reads "Not affected"), or "n/a" */
  char meltdown[128];
  /* Every file of /sys/devices/system/cpu/vulnerabilities as "name=text"
   * lines in name order, hashed (FNV-1a, 64 bits, 16 hex digits), or
   * "n/a": two sittings with the same digest ran with the same CPU bugs
   * and mitigations, which set what every kernel entry and exit costs
   * (docs/measure.md; `simcache-measure host` prints the lines) */
  char vulns[20];
  char profile[16];   /* closest simcache kernel profile, "v6.18" */
  int fixed_layout;   /* 1: address-space randomisation off (ADDR_NO_RANDOMIZE) */
};

/* Run-wide settings (command-line flags). */
struct kit_opts {
  int warmup;     /* untimed warm-up rounds (operations for lifecycle) */
  int rounds;     /* measured rounds (groups of 32 operations for lifecycle) */
  int repeats;    /* repeats of the whole point: drift = (B - A) / A */
  double max_cv;  /* stability gate on the largest per-round CV */
  double max_drift;
  const char* id; /* row id (prefix when a program writes several rows) */
  /* Adaptive rounds: after `rounds` measured rounds a repeat continues
   * until its standard error is at most target_se of its mean, or it has
   * spent budget_s / repeats seconds, or max_rounds rounds. target_se 0:
   * exactly `rounds` (the fixed design). */
  double target_se;
  double budget_s;
  int max_rounds;
};

/* One measured point: the per-op value of every measured round, per repeat. */
#define KIT_MAX_REPEATS 4
struct kit_point {
  int repeats, rounds;        /* rounds: the capacity of each repeat */
  double* v[KIT_MAX_REPEATS]; /* [repeat][round], per operation */
  int n[KIT_MAX_REPEATS];     /* rounds measured in each repeat */
  double t0[KIT_MAX_REPEATS]; /* when the repeat's first measured round ended */
  int adaptive;
  char stop[KIT_MAX_REPEATS][12]; /* why each repeat stopped: fixed, se, budget, max-rounds */
  int follows; /* 1: another point of the program decides its rounds (no --anchor exchange) */
};

int kit_host_init(struct kit_host* h, int want_cpu);
/* Moves this process into the memory cgroup `memcg` ("/": the root, where
 * the kernel charges no kernel memory), writing its pid to that cgroup's
 * cgroup.procs under the memory controller's mount (cgroup v1 or v2), and
 * pins it to `cpu` again (a cgroup v2 move may reset its affinity).
 * 0, or an errno with the file it tried in `path` (n bytes). */
int kit_enter_memcg(const char* memcg, int cpu, char* path, size_t n);
/* Reads this process's memory cgroup into h->memcg and h->child_memcg. */
void kit_host_memcg(struct kit_host* h);
/* "host: 2 CPUs, task on CPU 1, kworker CPU 0, child memcg", then
 * ", pcp high 6367..73728" where /proc/zoneinfo gave the marks */
void kit_host_shape(const struct kit_host* h, char* out, size_t n);
/* Hashes /sys/devices/system/cpu/vulnerabilities into `digest` when set
 * (at least 17 bytes; "n/a" when the directory is absent or empty) and,
 * when `print` is set, writes each file there as "vulnerability NAME:
 * TEXT". */
void kit_cpu_vulns(char* digest, size_t n, FILE* print);

double kit_now_ns(void);
/* A fixed point: every repeat has exactly `rounds` rounds, written to v. */
void kit_point_init(struct kit_point* p, int repeats, int rounds);
/* An adaptive point (o->target_se > 0), or a fixed one of o->rounds. */
void kit_point_init_opts(struct kit_point* p, const struct kit_opts* o);
/* Appends measured round `v` to repeat `r`; 1 when the repeat is done. */
int kit_point_add(struct kit_point* p, const struct kit_opts* o, int r, double v);
/* The most rounds any repeat measured. */
int kit_point_rounds(const struct kit_point* p);
void kit_point_free(struct kit_point* p);
/* Mean of the repeat means, the largest per-repeat CV, drift B/A - 1. */
void kit_point_stats(const struct kit_point* p, double* mean, double* max_cv, double* drift);
/* Over every round of every repeat: the median, the fastest and the
 * relative standard error of the mean (INFINITY under two rounds). */
void kit_point_order_stats(const struct kit_point* p, double* median, double* fastest, double* se);

/* Prints one row. `value` is per operation in `unit`; the note gets the
 * point's statistics, the stability verdict and the host record. */
void kit_row(const struct kit_opts* o, const struct kit_host* h, const char* id,
             const char* workload, const char* shape, const char* metric,
             const struct kit_point* p, double scale, const char* unit, const char* extra_note);

_Noreturn void kit_die(const char* what, int err);

/* ---- io_uring helpers ---- */
void kit_ring_init(struct io_uring* r, unsigned entries, unsigned cq_entries);
/* Queue one IORING_OP_MSG_RING IORING_MSG_SEND_FD of the source ring's fixed
 * slot `src_slot` into ring `target_fd`, slot "any free". */
void kit_prep_send_fd(struct io_uring_sqe* sqe, int target_fd, unsigned src_slot, uint64_t data);
void kit_prep_futex_wait(struct io_uring_sqe* sqe, uint32_t* word, uint32_t expect, uint64_t data);
void kit_prep_futex_wake(struct io_uring_sqe* sqe, uint32_t* word, uint32_t nr, uint64_t data);
void kit_prep_futex_waitv(struct io_uring_sqe* sqe, struct kit_futex_waitv* v, unsigned nr,
                          uint64_t data);
/* Submits what is queued and waits for `want` CQEs on `r`, then reaps
 * exactly `want` into res[] (NULL: only checks res >= 0). */
void kit_submit_wait(struct io_uring* r, unsigned want);
void kit_reap(struct io_uring* r, unsigned n, int* res, uint64_t* data);

/* The sparse-fill fixture: a source ring whose fixed slot 0 is a 4 KiB memfd. */
struct kit_source {
  struct io_uring ring;
  int memfd;
};
void kit_source_init(struct kit_source* s);
void kit_source_exit(struct kit_source* s);
/* N SEND_FD installs into `dst` in batches of `qd`: each batch is one
 * io_uring_enter submitting and waiting for the batch, then the source
 * and target CQEs are drained. slots[i] gets the slot of install i. */
void kit_send_fd_fill(struct kit_source* s, struct io_uring* dst, int n, int qd, int* slots);
/* Untimed check: one fixed-file read per installed slot reads the memfd. */
void kit_verify_slots(struct io_uring* dst, const int* slots, int n);

/* A program: its flags, the run-wide settings and the host; the exit status. */
typedef int (*kit_program)(int argc, char** argv, const struct kit_opts* o,
                           const struct kit_host* h);

/* --anchor (kit_pair.c): runs `anchor` in a child, round by round beside
 * `row`, and prints the anchor's rows (id `anchor_id`) before the row's.
 * `anchor_memcg`: the memory cgroup the child moves back into first (the
 * one the row left for --root-memcg), or NULL. */
int kit_pair_run(struct kit_opts* o, const struct kit_host* h, kit_program row, int argc,
                 char** argv, kit_program anchor, int aargc, char** aargv, const char* anchor_id,
                 const char* anchor_memcg);
int kit_pair_active(void);
/* At the end of a measured round of a deciding point: hands the token to
 * the other program and returns whether the repeat is over (the row's
 * decision). `own`: this program's own rule; final_repeat: the row's last
 * repeat. On the row's side *anchor_own gets the anchor's latest verdict. */
int kit_pair_exchange(int own, double value, int repeat, int round, int final_repeat,
                      int* anchor_own);
/* The rows' note: which program ran beside this one, and on the row's
 * side the ratio of each of p's rounds to the anchor's round before it. */
void kit_pair_note(const struct kit_point* p, double scale, char* out, size_t n);
/* Before the row's first row is printed: the anchor's rows. */
void kit_pair_before_rows(void);

/* Subcommands (each returns the exit status). */
int kit_cmd_f0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_coldwarm(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_lifecycle(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_waitv(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_s0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_e0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_poll(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_cmd_llc(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);
int kit_llc_share_kib(void);
int kit_cmd_slabcount(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h);

/* --trace DIR (kit_trace.c): runs `fn` in a forked child with a tracing
 * instance on and writes DIR/<id>.trace and DIR/<id>.counts.tsv; returns
 * the exit status (the program's, or 1 with one line naming the cause). */
int kit_trace_program(const char* dir, int buffer_kb, const struct kit_opts* o,
                      const struct kit_host* h,
                      int (*fn)(int, char**, const struct kit_opts*, const struct kit_host*),
                      int argc, char** argv);

/* Put before a program flag's name in its error ("--anchor: " in the
 * anchor's process). */
extern const char* kit_flag_prefix;
/* "--key=value" or "--key value" integer parameters of a subcommand. */
int kit_int_arg(int argc, char** argv, const char* key, int def, int min, int max);
const char* kit_str_arg(int argc, char** argv, const char* key, const char* def);

#endif
