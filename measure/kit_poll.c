/* poll-refill (workloads.md §6, seed 002's io_uring test): POLL_ADD on a
 * pipe that never becomes readable, so every request stays in flight and
 * the request cache refills from the io_kiocb slab in batches. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <poll.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "measure/kit.h"

/* One round: `total` SQEs in bursts of `burst` (one io_uring_enter each),
 * each SQE's user_data its index in the burst (as seed 002's program: the
 * ring's cancel table hashes polls by user_data),
 * a new ring every `recycle` bursts, closed with io_uring_queue_exit()
 * (its teardown cancels the polls on a kworker). All of it is timed, as
 * the simulator's driver times it. */
static double poll_round(int pipe_rd, int qd, int burst, int recycle, int total) {
  const double t0 = kit_now_ns();
  for (int submitted = 0; submitted < total;) {
    struct io_uring r;
    kit_ring_init(&r, (unsigned)qd, 0);
    for (int b = 0; b < recycle && submitted < total; ++b) {
      const int n = total - submitted < burst ? total - submitted : burst;
      for (int i = 0; i < n; ++i) {
        struct io_uring_sqe* sqe = io_uring_get_sqe(&r);
        if (!sqe) kit_die("SQ ring full", EBUSY);
        io_uring_prep_poll_add(sqe, pipe_rd, POLLIN);
        sqe->user_data = (unsigned long long)i; /* as seed 002's program */
      }
      const int ret = io_uring_submit(&r);
      if (ret != n) kit_die("submit POLL_ADD", ret < 0 ? ret : EIO);
      submitted += n;
    }
    io_uring_queue_exit(&r);
  }
  return kit_now_ns() - t0;
}

/* The last-level cache share this task's data keeps, in KiB, read off a
 * pointer chase: one pointer per 64-byte line of a buffer (on huge pages
 * where the kernel gives them, as the slab memory the model prices sits
 * in the kernel's huge-page direct map), linked in a random cyclic order
 * that no prefetcher follows; nanoseconds per dependent load at 256 KiB
 * and then sqrt(2) times larger buffers up to 128 MiB, each the median of
 * three timings of 500,000 loads. The share is the largest buffer whose
 * loads stay under the geometric mean of the smallest buffer's (an L2 or
 * cache hit) and the largest's (memory): on a virtual machine, the part
 * of the host's L3 the neighbours leave, which no cpuid leaf or sysfs
 * file tells. The model reads it as machine.def llc_kib (docs/measure.md). */
int kit_llc_share_kib(void) {
  enum { kSizes = 19, kLoads = 500000, kTimings = 3 };
  static const double kMinKib = 256;
  const size_t max_lines = (size_t)(kMinKib * 1024 / 64 * pow(2, (kSizes - 1) / 2.0) + 0.5);
  char* buf = aligned_alloc(1 << 21, (max_lines * 64 + (1 << 21) - 1) / (1 << 21) * (1 << 21));
  size_t* order = malloc(max_lines * sizeof *order);
  if (!buf || !order) kit_die("pointer chase buffer", ENOMEM);
  (void)madvise(buf, max_lines * 64, MADV_HUGEPAGE); /* advice only */
  double ns[kSizes];
  int kib[kSizes];
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < kSizes; ++k) {
    kib[k] = (int)(kMinKib * pow(2, k / 2.0) / 4 + 0.5) * 4; /* whole 4 KiB */
    const size_t n = (size_t)kib[k] * 1024 / 64;
    for (size_t i = 0; i < n; ++i) order[i] = i;
    for (size_t i = n - 1; i > 0; --i) { /* Fisher-Yates, xorshift64 */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      const size_t j = (size_t)(x % (i + 1)), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    for (size_t i = 0; i < n; ++i)
      *(void**)(buf + order[i] * 64) = buf + order[(i + 1) % n] * 64;
    void* volatile* p = (void* volatile*)(buf + order[0] * 64);
    for (size_t i = 0; i < n; ++i) p = (void* volatile*)*p; /* warm */
    double t[kTimings];
    for (int r = 0; r < kTimings; ++r) {
      const double t0 = kit_now_ns();
      for (int i = 0; i < kLoads; ++i) p = (void* volatile*)*p;
      t[r] = (kit_now_ns() - t0) / kLoads;
    }
    for (int a = 0; a < kTimings; ++a) /* sort the three: the median is t[1] */
      for (int b = a + 1; b < kTimings; ++b)
        if (t[b] < t[a]) { const double m = t[a]; t[a] = t[b], t[b] = m; }
    ns[k] = t[kTimings / 2];
  }
  free(order), free(buf);
  const double mid = sqrt(ns[0] * ns[kSizes - 1]);
  int share = kib[0];
  for (int k = 1; k < kSizes && ns[k] < mid; ++k) share = kib[k];
  return share;
}

/* llc: print the share (what scripts/measure passes to every poll row of
 * a run as --llc-kib, so that the run's rows share one reading). */
int kit_cmd_llc(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  (void)argc, (void)argv, (void)o, (void)h;
  printf("%d\n", kit_llc_share_kib());
  return 0;
}

int kit_cmd_poll(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int qd = kit_int_arg(argc, argv, "qd", 4096, 1, 32768);
  const int burst = kit_int_arg(argc, argv, "burst", 2048, 1, qd);
  const int recycle = kit_int_arg(argc, argv, "recycle", 32, 1, 100000);
  const int total = kit_int_arg(argc, argv, "total", 65536, 1, 1 << 26);
  /* The run's reading (scripts/measure takes one per run and can pass
   * one run's to another), or this row's own. */
  int llc_kib = kit_int_arg(argc, argv, "llc-kib", 0, 0, 1048576);
  if (llc_kib > 0 && llc_kib < 64) kit_die("--llc-kib: under 64 KiB (machine.def llc_kib)", EINVAL);
  if (llc_kib == 0) llc_kib = kit_llc_share_kib();
  int fds[2];
  if (pipe(fds)) kit_die("pipe", errno);
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int rep = 0; rep < o->repeats; ++rep)
    for (int i = 0;; ++i) {
      const double ns = poll_round(fds[0], qd, burst, recycle, total);
      if (i >= o->warmup && kit_point_add(&p, o, rep, ns / total)) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "POLL_ADD on a never-readable pipe: QD=%d, bursts of %d SQEs, ring recycled every %d "
           "bursts, %d SQEs/round, user_data its index in the burst; %d warmup + %d measured "
           "rounds; LLC share %d KiB (pointer chase)",
           qd, burst, recycle, total, o->warmup, kit_point_rounds(&p), llc_kib);
  kit_row(o, h, o->id, "poll-refill", shape, "mean ns/sqe", &p, 1, "ns/sqe", "");
  kit_point_free(&p);
  close(fds[0]), close(fds[1]);
  return 0;
}
