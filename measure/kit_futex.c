/* Futex programs (workloads.md §4-5): WAITV -> WAKE "v0", the scalar
 * control "s0" and the arm-fail loop "e0". */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/kit.h"

/* Each futex word on its own 64-byte line. */
struct kit_word {
  uint32_t w;
  char pad[60];
} __attribute__((aligned(64)));

static struct kit_word* words_alloc(int n) {
  struct kit_word* w = aligned_alloc(64, sizeof(struct kit_word) * (size_t)n);
  if (!w) kit_die("aligned_alloc", ENOMEM);
  memset(w, 0, sizeof(struct kit_word) * (size_t)n);
  return w;
}

/* Reaps n CQEs and checks each against the result its user_data expects. */
static void reap_check(struct io_uring* r, unsigned n, const int* expect, const char* what) {
  int res[256];
  uint64_t data[256];
  kit_reap(r, n, res, data);
  for (unsigned i = 0; i < n; ++i)
    if (res[i] != expect[data[i]]) {
      fprintf(stderr, "simcache-measure: %s: completion %llu returned %d, expected %d\n", what,
              (unsigned long long)data[i], res[i], expect[data[i]]);
      exit(1);
    }
}

/* One v0 cycle; returns its timed ns. WAITV g waits on words g*width..;
 * WAKE g wakes word `hit` of vector g, so WAITV g returns `hit`. */
static double waitv_cycle(struct io_uring* r, struct kit_word* w, struct kit_futex_waitv* v,
                          int vectors, int width, int hit, const int* expect) {
  for (int i = 0; i < vectors * width; ++i) w[i].w = 0;
  const double t0 = kit_now_ns();
  for (int g = 0; g < vectors; ++g)
    kit_prep_futex_waitv(io_uring_get_sqe(r), &v[g * width], (unsigned)width, (uint64_t)g);
  int ret = io_uring_submit(r);
  if (ret != vectors) kit_die("submit FUTEX_WAITV", ret < 0 ? ret : EIO);
  for (int g = 0; g < vectors; ++g)
    kit_prep_futex_wake(io_uring_get_sqe(r), &w[g * width + hit].w, 1, (uint64_t)(vectors + g));
  kit_submit_wait(r, (unsigned)(2 * vectors));
  reap_check(r, (unsigned)(2 * vectors), expect, "FUTEX_WAITV/WAKE");
  const double t1 = kit_now_ns();
  /* untimed: the other waiters of each vector were removed */
  for (int g = 0; g < vectors; ++g)
    kit_prep_futex_wake(io_uring_get_sqe(r), &w[g * width + (hit ? 0 : width - 1)].w, 1,
                        (uint64_t)(2 * vectors + g));
  kit_submit_wait(r, (unsigned)vectors);
  reap_check(r, (unsigned)vectors, expect, "residual FUTEX_WAKE");
  return t1 - t0;
}

int kit_cmd_waitv(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int vectors = kit_int_arg(argc, argv, "vectors", 8, 1, 64);
  const int width = kit_int_arg(argc, argv, "width", 8, 1, 128);
  const int cycles = kit_int_arg(argc, argv, "cycles", 512, 1, 1 << 20);
  const int hit = width > 3 ? 3 : width - 1;
  struct io_uring r;
  kit_ring_init(&r, 64, 128);
  struct kit_word* w = words_alloc(vectors * width);
  struct kit_futex_waitv* v = calloc((size_t)(vectors * width), sizeof *v);
  int expect[3 * 64];
  if (!v) kit_die("calloc", ENOMEM);
  for (int i = 0; i < vectors * width; ++i) {
    v[i].uaddr = (uint64_t)(uintptr_t)&w[i].w;
    v[i].flags = KIT_FUTEX2_SIZE_U32 | KIT_FUTEX2_PRIVATE;
  }
  for (int g = 0; g < vectors; ++g) expect[g] = hit, expect[vectors + g] = 1,
                                   expect[2 * vectors + g] = 0;
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int rep = 0; rep < o->repeats; ++rep)
    for (int i = 0;; ++i) {
      double ns = 0;
      for (int c = 0; c < cycles; ++c) ns += waitv_cycle(&r, w, v, vectors, width, hit, expect);
      if (i >= o->warmup && kit_point_add(&p, o, rep, ns / ((double)cycles * vectors))) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "1 ring (SQ 64, CQ 128); %d FUTEX_WAITV x %d private u32 futex words (64-byte "
           "separated); %d WAKE on word %d of each vector; %d cycles = %d pairs/round; %d warmup + "
           "%d measured rounds",
           vectors, width, vectors, hit, cycles, cycles * vectors, o->warmup, kit_point_rounds(&p));
  kit_row(o, h, o->id, "WAITV", shape, "mean ns/pair", &p, 1, "ns/pair", "");
  kit_point_free(&p);
  free(v), free(w);
  io_uring_queue_exit(&r);
  return 0;
}

/* s0: `n` FUTEX_WAIT (one enter, no wait), then `n` FUTEX_WAKE, one per word. */
int kit_cmd_s0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int n = kit_int_arg(argc, argv, "waits", 32, 1, 64);
  const int cycles = kit_int_arg(argc, argv, "cycles", 512, 1, 1 << 20);
  struct io_uring r;
  kit_ring_init(&r, 64, 128);
  struct kit_word* w = words_alloc(n);
  int expect[128];
  for (int i = 0; i < n; ++i) expect[i] = 0, expect[n + i] = 1;
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int rep = 0; rep < o->repeats; ++rep)
    for (int i = 0;; ++i) {
      double ns = 0;
      for (int c = 0; c < cycles; ++c) {
        const double t0 = kit_now_ns();
        for (int k = 0; k < n; ++k) kit_prep_futex_wait(io_uring_get_sqe(&r), &w[k].w, 0, (uint64_t)k);
        int ret = io_uring_submit(&r);
        if (ret != n) kit_die("submit FUTEX_WAIT", ret < 0 ? ret : EIO);
        for (int k = 0; k < n; ++k)
          kit_prep_futex_wake(io_uring_get_sqe(&r), &w[k].w, 1, (uint64_t)(n + k));
        kit_submit_wait(&r, (unsigned)(2 * n));
        reap_check(&r, (unsigned)(2 * n), expect, "FUTEX_WAIT/WAKE");
        ns += kit_now_ns() - t0;
      }
      if (i >= o->warmup && kit_point_add(&p, o, rep, ns / ((double)cycles * n))) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "scalar control s0: %d FUTEX_WAIT then %d FUTEX_WAKE per cycle on %d words; %d cycles "
           "= %d pairs/round; %d warmup + %d measured rounds",
           n, n, n, cycles, cycles * n, o->warmup, kit_point_rounds(&p));
  kit_row(o, h, o->id, "WAIT-WAKE control", shape, "mean ns/pair", &p, 1, "ns/pair", "");
  kit_point_free(&p);
  free(w);
  io_uring_queue_exit(&r);
  return 0;
}

/* e0: per cycle `waits` FUTEX_WAIT expecting 0; a share `permille` find
 * their word at 1 and complete at once with -EAGAIN (spread evenly by
 * error diffusion, as the simulator's driver does); the armed ones are
 * woken by one FUTEX_WAKE each. The whole round is timed. */
static double e0_round(struct io_uring* r, struct kit_word* w, int waits, int permille,
                       int cycles, long long* seq) {
  int expect[512];
  const double t0 = kit_now_ns();
  for (int c = 0; c < cycles; ++c) {
    int armed = 0;
    for (int i = 0; i < waits; ++i, ++*seq) {
      const int fail = (*seq + 1) * permille / 1000 > *seq * permille / 1000;
      w[i].w = (uint32_t)fail;
      expect[i] = fail ? -EAGAIN : 0;
      armed += !fail;
      kit_prep_futex_wait(io_uring_get_sqe(r), &w[i].w, 0, (uint64_t)i);
    }
    if (!armed) {
      kit_submit_wait(r, (unsigned)waits);
      reap_check(r, (unsigned)waits, expect, "failing FUTEX_WAIT");
      continue;
    }
    const int ret = io_uring_submit(r);
    if (ret != waits) kit_die("submit FUTEX_WAIT", ret < 0 ? ret : EIO);
    int k = 0;
    for (int i = 0; i < waits; ++i)
      if (!w[i].w) {
        expect[waits + k] = 1;
        kit_prep_futex_wake(io_uring_get_sqe(r), &w[i].w, 1, (uint64_t)(waits + k++));
      }
    kit_submit_wait(r, (unsigned)(waits + armed));
    reap_check(r, (unsigned)(waits + armed), expect, "FUTEX_WAIT/WAKE");
  }
  return kit_now_ns() - t0;
}

int kit_cmd_e0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int waits = kit_int_arg(argc, argv, "waits", 32, 1, 128);
  const int permille = kit_int_arg(argc, argv, "fail-permille", 1000, 0, 1000);
  const int cycles = kit_int_arg(argc, argv, "cycles", 3125, 1, 1 << 20);
  struct io_uring r;
  kit_ring_init(&r, 256, 0);
  struct kit_word* w = words_alloc(waits);
  long long seq = 0;
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int rep = 0; rep < o->repeats; ++rep)
    for (int i = 0;; ++i) {
      const double ns = e0_round(&r, w, waits, permille, cycles, &seq);
      if (i >= o->warmup && kit_point_add(&p, o, rep, ns / ((double)cycles * waits))) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "e0: %d FUTEX_WAIT per cycle, %d per mille fail to arm (-EAGAIN), the armed woken by "
           "one FUTEX_WAKE each; %d cycles/round; %d warmup + %d measured rounds",
           waits, permille, cycles, o->warmup, kit_point_rounds(&p));
  kit_row(o, h, o->id, "arm-fail", shape, "mean ns/wait", &p, 1, "ns/wait", "");
  kit_point_free(&p);
  free(w);
  io_uring_queue_exit(&r);
  return 0;
}
