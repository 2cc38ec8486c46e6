/* Sparse-table programs (workloads.md §1-3): the F0 first fill, node-cache
 * cold/warm and the lifecycle family (serial, paced, reuse). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "measure/kit.h"

enum { kMaxSlots = 1 << 20 };

static int* slot_array(int n) {
  int* s = calloc((size_t)(n ? n : 1), sizeof(int));
  if (!s) kit_die("calloc", ENOMEM);
  return s;
}

/* One F0 round: untimed new ring + sparse registration; timed fill;
 * untimed verify, unregister, close. Returns the timed ns. */
static double f0_round(struct kit_source* src, int slots, int installs, int qd, int* slot) {
  struct io_uring dst;
  kit_ring_init(&dst, 256, 0);
  int ret = io_uring_register_files_sparse(&dst, (unsigned)slots);
  if (ret < 0) kit_die("io_uring_register_files_sparse", ret);
  const double t0 = kit_now_ns();
  kit_send_fd_fill(src, &dst, installs, qd, slot);
  const double t1 = kit_now_ns();
  kit_verify_slots(&dst, slot, installs);
  if ((ret = io_uring_unregister_files(&dst)) < 0) kit_die("io_uring_unregister_files", ret);
  io_uring_queue_exit(&dst);
  return t1 - t0;
}

int kit_cmd_f0(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const int slots = kit_int_arg(argc, argv, "slots", 4096, 1, kMaxSlots);
  const int installs = kit_int_arg(argc, argv, "installs", slots, 1, slots);
  const int qd = kit_int_arg(argc, argv, "qd", 64, 1, 256);
  struct kit_source src;
  kit_source_init(&src);
  int* slot = slot_array(installs > 256 ? installs : 256);
  f0_round(&src, 256, 256, qd, slot); /* the untimed smoke round */
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int r = 0; r < o->repeats; ++r)
    for (int i = 0;; ++i) {
      const double ns = f0_round(&src, slots, installs, qd, slot);
      if (i >= o->warmup && kit_point_add(&p, o, r, ns / installs)) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "F0: slots=%d sparse, %d MSG_RING SEND_FD installs/round as %d batches of QD=%d, new "
           "target ring per round, %d warmup + %d measured rounds",
           slots, installs, (installs + qd - 1) / qd, qd, o->warmup, kit_point_rounds(&p));
  kit_row(o, h, o->id, "sparse-fill", shape, "mean ns/install", &p, 1, "ns/install", "");
  kit_point_free(&p);
  free(slot);
  kit_source_exit(&src);
  return 0;
}

/* cold: time the first fill of a new table on a new ring. warm: fill,
 * unregister (nodes go to the ring's node cache), register a fresh table
 * on the same ring and time the second fill. primed: the same with one
 * install before the unregister, so the timed fill is not the ring's
 * first MSG_RING and finds one node cached: what separates the new
 * ring's first-use cost from the node cache's hits. */
enum { kCold, kWarm, kPrimed };
static double coldwarm_round(struct kit_source* src, int warm, int slots, int qd, int* slot) {
  struct io_uring dst;
  kit_ring_init(&dst, 256, 0);
  int ret = io_uring_register_files_sparse(&dst, (unsigned)slots);
  if (ret < 0) kit_die("io_uring_register_files_sparse", ret);
  if (warm != kCold) {
    kit_send_fd_fill(src, &dst, warm == kWarm ? slots : 1, qd, slot);
    if ((ret = io_uring_unregister_files(&dst)) < 0) kit_die("io_uring_unregister_files", ret);
    if ((ret = io_uring_register_files_sparse(&dst, (unsigned)slots)) < 0)
      kit_die("io_uring_register_files_sparse (warm)", ret);
  }
  const double t0 = kit_now_ns();
  kit_send_fd_fill(src, &dst, slots, qd, slot);
  const double t1 = kit_now_ns();
  if ((ret = io_uring_unregister_files(&dst)) < 0) kit_die("io_uring_unregister_files", ret);
  io_uring_queue_exit(&dst);
  return t1 - t0;
}

int kit_cmd_coldwarm(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  const char* mode = kit_str_arg(argc, argv, "mode", "cold");
  const int warm = !strcmp(mode, "warm") ? kWarm : !strcmp(mode, "primed") ? kPrimed : kCold;
  if (warm == kCold && strcmp(mode, "cold")) {
    fprintf(stderr, "simcache-measure: %scoldwarm --mode: '%s' is not cold, warm or primed\n",
            kit_flag_prefix, mode);
    return 2;
  }
  const int slots = kit_int_arg(argc, argv, "slots", 128, 1, kMaxSlots);
  const int qd = kit_int_arg(argc, argv, "qd", 64, 1, 256);
  struct kit_source src;
  kit_source_init(&src);
  int* slot = slot_array(slots);
  struct kit_point p;
  kit_point_init_opts(&p, o);
  for (int r = 0; r < o->repeats; ++r)
    for (int i = 0;; ++i) {
      const double ns = coldwarm_round(&src, warm, slots, qd, slot);
      if (i >= o->warmup && kit_point_add(&p, o, r, ns / slots)) break;
    }
  char shape[512];
  snprintf(shape, sizeof shape,
           "%s: new ring, %d-slot sparse table, fill of %d timed as %d batches of QD=%d%s, %d "
           "warmup + %d measured rounds",
           mode, slots, slots, (slots + qd - 1) / qd, qd,
           warm == kWarm     ? " after fill + unregister + re-register on the same ring"
           : warm == kPrimed ? " after one install + unregister + re-register on the same ring"
                             : "",
           o->warmup,
           kit_point_rounds(&p));
  kit_row(o, h, o->id, "node-cache", shape, "mean ns/install", &p, 1, "ns/install", "");
  kit_point_free(&p);
  free(slot);
  kit_source_exit(&src);
  return 0;
}

/* ---- lifecycle ---- */

enum { kSerial, kPaced, kReuse };
struct phases {
  double first, second; /* registration + fill, or removal + refill (ns) */
};

/* FILES_UPDATE to -1 over the contiguous spans of the installed slots. */
static void remove_installed(struct io_uring* r, int* slot, int n, int* minus1) {
  int sorted_ok = 1;
  for (int i = 1; i < n; ++i) sorted_ok &= slot[i] > slot[i - 1];
  if (!sorted_ok) {
    for (int i = 1; i < n; ++i) /* insertion sort: installs arrive nearly in order */
      for (int j = i; j > 0 && slot[j] < slot[j - 1]; --j) {
        const int t = slot[j];
        slot[j] = slot[j - 1], slot[j - 1] = t;
      }
  }
  for (int i = 0; i < n;) {
    int j = i + 1;
    while (j < n && slot[j] == slot[j - 1] + 1) ++j;
    const int ret = io_uring_register_files_update(r, (unsigned)slot[i], minus1, (unsigned)(j - i));
    if (ret != j - i) kit_die("io_uring_register_files_update(-1)", ret < 0 ? ret : 5);
    i = j;
  }
}

static struct phases lifecycle_op(struct kit_source* src, int mode, int slots, int installs,
                                  int qd, int* slot, struct io_uring* reuse, int* minus1) {
  struct phases ph;
  if (mode == kReuse) {
    const double t0 = kit_now_ns();
    remove_installed(reuse, slot, installs, minus1);
    const double t1 = kit_now_ns();
    kit_send_fd_fill(src, reuse, installs, qd, slot);
    ph.first = t1 - t0, ph.second = kit_now_ns() - t1;
    return ph;
  }
  struct io_uring dst;
  kit_ring_init(&dst, 256, 0);
  const double t0 = kit_now_ns();
  int ret = io_uring_register_files_sparse(&dst, (unsigned)slots);
  const double t1 = kit_now_ns();
  if (ret < 0) kit_die("io_uring_register_files_sparse", ret);
  kit_send_fd_fill(src, &dst, installs, qd, slot);
  ph.first = t1 - t0, ph.second = kit_now_ns() - t1;
  if ((ret = io_uring_unregister_files(&dst)) < 0) kit_die("io_uring_unregister_files", ret);
  io_uring_queue_exit(&dst);
  if (mode == kPaced) usleep(50 * 1000); /* the previous ring's teardown finishes */
  return ph;
}

static void lifecycle_rows(const struct kit_opts* o, const struct kit_host* h, int mode,
                           const char* name, int slots, int installs, int qd, int ops,
                           struct kit_point* pt) {
  static const char* what[] = {"new ring per op, no pause",
                               "new ring per op, 50 ms untimed gap after close",
                               "same ring: FILES_UPDATE(-1) removal of all installed files then "
                               "SEND_FD refill"};
  char common[512], shape[768], id[128], note[256];
  snprintf(common, sizeof common,
           "%d sparse slots, %d installs as batches of QD=%d; %s; %d warmup + %d groups x %d "
           "ops; per-op mean",
           slots, installs, qd, what[mode], o->warmup, kit_point_rounds(&pt[2]), ops);
  double m1, m2, cv, dr;
  kit_point_stats(&pt[0], &m1, &cv, &dr);
  kit_point_stats(&pt[1], &m2, &cv, &dr);
  snprintf(note, sizeof note, "phases per op: %s %.3f us, %s %.3f us",
           mode == kReuse ? "removal" : "registration", m1 / 1e3,
           mode == kReuse ? "refill" : "fill", m2 / 1e3);
  snprintf(shape, sizeof shape, "lifecycle %s-%d-%d: %s", name, slots, installs, common);
  kit_row(o, h, o->id, "sparse-fill", shape,
          "interval time per op (registration or removal start to fill end)", &pt[2], 1e-3, "us",
          note);
  if (mode == kReuse) return;
  snprintf(shape, sizeof shape, "lifecycle %s-%d-%d registration phase: %s", name, slots,
           installs, common);
  snprintf(id, sizeof id, "%s-reg", o->id);
  kit_row(o, h, id, "sparse-fill", shape, "registration time per op", &pt[0], 1e-3, "us", "");
  if (!installs) return;
  snprintf(shape, sizeof shape, "lifecycle %s-%d-%d fill phase: %s", name, slots, installs,
           common);
  snprintf(id, sizeof id, "%s-fill", o->id);
  kit_row(o, h, id, "sparse-fill", shape, "fill time per install", &pt[1], 1.0 / installs,
          "ns/install", "");
}

int kit_cmd_lifecycle(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  static const char* names[] = {"serial", "paced", "reuse"};
  const char* m = kit_str_arg(argc, argv, "mode", "serial");
  int mode = -1;
  for (int i = 0; i < 3; ++i)
    if (!strcmp(m, names[i])) mode = i;
  if (mode < 0) {
    fprintf(stderr, "simcache-measure: %slifecycle --mode: '%s' is not serial, paced or reuse\n",
            kit_flag_prefix, m);
    return 2;
  }
  const int slots = kit_int_arg(argc, argv, "slots", 4096, 1, kMaxSlots);
  const int installs = kit_int_arg(argc, argv, "installs", slots, mode == kReuse, slots);
  const int qd = kit_int_arg(argc, argv, "qd", 64, 1, 256);
  const int ops = kit_int_arg(argc, argv, "ops", 32, 1, 100000);
  struct kit_source src;
  kit_source_init(&src);
  int* slot = slot_array(installs);
  int* minus1 = slot_array(installs);
  for (int i = 0; i < installs; ++i) minus1[i] = -1;
  struct io_uring reuse;
  if (mode == kReuse) { /* the untimed first registration and fill */
    kit_ring_init(&reuse, 256, 0);
    const int ret = io_uring_register_files_sparse(&reuse, (unsigned)slots);
    if (ret < 0) kit_die("io_uring_register_files_sparse", ret);
    kit_send_fd_fill(&src, &reuse, installs, qd, slot);
  }
  struct kit_point pt[3]; /* first phase, second phase, interval */
  for (int k = 0; k < 3; ++k) kit_point_init_opts(&pt[k], o);
  pt[0].follows = pt[1].follows = 1; /* the whole interval decides */
  for (int r = 0; r < o->repeats; ++r) {
    for (int i = 0; i < o->warmup; ++i)
      lifecycle_op(&src, mode, slots, installs, qd, slot, &reuse, minus1);
    for (;;) {  /* groups of `ops`; the whole interval decides when to stop */
      double a = 0, b = 0;
      for (int i = 0; i < ops; ++i) {
        const struct phases ph = lifecycle_op(&src, mode, slots, installs, qd, slot, &reuse, minus1);
        a += ph.first, b += ph.second;
      }
      kit_point_add(&pt[0], o, r, a / ops);
      kit_point_add(&pt[1], o, r, b / ops);
      if (kit_point_add(&pt[2], o, r, (a + b) / ops)) break;
    }
  }
  for (int k = 0; k < 2; ++k) memcpy(pt[k].stop, pt[2].stop, sizeof pt[k].stop);  /* one decision */
  lifecycle_rows(o, h, mode, names[mode], slots, installs, qd, ops, pt);
  for (int k = 0; k < 3; ++k) kit_point_free(&pt[k]);
  if (mode == kReuse) io_uring_queue_exit(&reuse);
  free(slot), free(minus1);
  kit_source_exit(&src);
  return 0;
}
