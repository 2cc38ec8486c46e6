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
 * pointer chase: one pointer per 64-byte line of a buffer, linked in a
 * random cyclic order (no prefetcher follows it), the nanoseconds per
 * dependent load timed at 256 KiB, 512 KiB, ... 128 MiB. The share is
 * the largest buffer whose loads stay under the geometric mean of the
 * smallest buffer's (a cache hit) and the largest's (memory): on a
 * virtual machine that is the part of the host's L3 its neighbours
 * leave, which no cpuid or sysfs file tells. The model reads it as
 * machine.def llc_kib (docs/measure.md). */
static int llc_share_kib(void) {
  enum { kMinKib = 256, kMaxKib = 128 * 1024, kLoads = 2000000 };
  const size_t lines = (size_t)kMaxKib * 1024 / 64;
  char* buf = aligned_alloc(4096, lines * 64);
  size_t* order = malloc(lines * sizeof *order);
  if (!buf || !order) kit_die("pointer chase buffer", ENOMEM);
  double ns[20];
  int sizes = 0;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int kib = kMinKib; kib <= kMaxKib; kib *= 2, ++sizes) {
    const size_t n = (size_t)kib * 1024 / 64;
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
    const double t0 = kit_now_ns();
    for (int i = 0; i < kLoads; ++i) p = (void* volatile*)*p;
    ns[sizes] = (kit_now_ns() - t0) / kLoads;
  }
  free(order), free(buf);
  const double mid = sqrt(ns[0] * ns[sizes - 1]);
  int share = kMinKib;
  for (int i = 1; i < sizes && ns[i] < mid; ++i) share = kMinKib << i;
  return share;
}

int kit_cmd_poll(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int qd = kit_int_arg(argc, argv, "qd", 4096, 1, 32768);
  const int burst = kit_int_arg(argc, argv, "burst", 2048, 1, qd);
  const int recycle = kit_int_arg(argc, argv, "recycle", 32, 1, 100000);
  const int total = kit_int_arg(argc, argv, "total", 65536, 1, 1 << 26);
  const int llc_kib = llc_share_kib();
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
