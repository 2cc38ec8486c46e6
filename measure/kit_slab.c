/* Slab deltas across a large first fill: what /sys/kernel/slab/<cache>/
 * shows before and after N SEND_FD installs, against the same reads over
 * idle intervals of the same length (background noise). Output: a TSV of
 * cache, field, mean/min/max delta per fill, largest idle |delta|. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "measure/kit.h"

enum { kMaxCaches = 16, kFields = 5 };
static const char* const kField[kFields] = {"objects", "total_objects", "slabs", "partial",
                                            "cpu_slabs"};

struct snap {
  long long v[kMaxCaches][kFields];
};

/* The first number of /sys/kernel/slab/<cache>/<field> ("2387 N0=2387"). */
static long long slab_read(const char* cache, const char* field) {
  char path[256];
  snprintf(path, sizeof path, "/sys/kernel/slab/%s/%s", cache, field);
  FILE* f = fopen(path, "r");
  long long v = -1;
  if (!f || fscanf(f, "%lld", &v) != 1) {
    fprintf(stderr, "simcache-measure: cannot read %s\n", path);
    exit(3);
  }
  fclose(f);
  return v;
}

static void take(struct snap* s, char** caches, int n) {
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < kFields; ++k) s->v[c][k] = slab_read(caches[c], kField[k]);
}

static void busy_wait(double ns) {
  const double end = kit_now_ns() + ns;
  while (kit_now_ns() < end) {
  }
}

int kit_cmd_slabcount(int argc, char** argv, const struct kit_opts* o, const struct kit_host* h) {
  (void)h;
  const int slots = kit_int_arg(argc, argv, "slots", 16384, 1, 1 << 20);
  const int installs = kit_int_arg(argc, argv, "installs", slots, 1, slots);
  char list[512];
  snprintf(list, sizeof list, "%s", kit_str_arg(argc, argv, "caches", "kmalloc-32"));
  char* caches[kMaxCaches];
  int n = 0;
  for (char* t = strtok(list, ","); t && n < kMaxCaches; t = strtok(NULL, ",")) caches[n++] = t;
  struct kit_source src;
  kit_source_init(&src);
  int* slot = calloc((size_t)installs, sizeof(int));
  double* d = calloc((size_t)(o->rounds * n * kFields), sizeof(double));
  double idle[kMaxCaches][kFields] = {{0}};
  if (!slot || !d) kit_die("calloc", ENOMEM);
  double fill_ns = 0;
  struct snap a, b;
  for (int i = 0; i < o->warmup + o->rounds; ++i) {
    struct io_uring dst;
    kit_ring_init(&dst, 256, 0);
    int ret = io_uring_register_files_sparse(&dst, (unsigned)slots);
    if (ret < 0) kit_die("io_uring_register_files_sparse", ret);
    take(&a, caches, n);
    const double t0 = kit_now_ns();
    kit_send_fd_fill(&src, &dst, installs, 64, slot);
    fill_ns = kit_now_ns() - t0;
    take(&b, caches, n);
    if (i >= o->warmup)
      for (int c = 0; c < n; ++c)
        for (int k = 0; k < kFields; ++k)
          d[((i - o->warmup) * n + c) * kFields + k] = (double)(b.v[c][k] - a.v[c][k]);
    io_uring_unregister_files(&dst);
    io_uring_queue_exit(&dst);
    /* an idle interval as long as the fill, after the teardown settled */
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    take(&a, caches, n);
    busy_wait(fill_ns);
    take(&b, caches, n);
    for (int c = 0; c < n; ++c)
      for (int k = 0; k < kFields; ++k)
        idle[c][k] = fmax(idle[c][k], fabs((double)(b.v[c][k] - a.v[c][k])));
  }
  printf("cache\tfield\tfill_mean\tfill_min\tfill_max\tidle_max\tfills\tinstalls\n");
  for (int c = 0; c < n; ++c)
    for (int k = 0; k < kFields; ++k) {
      double sum = 0, lo = INFINITY, hi = -INFINITY;
      for (int r = 0; r < o->rounds; ++r) {
        const double v = d[(r * n + c) * kFields + k];
        sum += v, lo = fmin(lo, v), hi = fmax(hi, v);
      }
      printf("%s\t%s\t%.2f\t%.0f\t%.0f\t%.0f\t%d\t%d\n", caches[c], kField[k], sum / o->rounds, lo,
             hi, idle[c][k], o->rounds, installs);
    }
  free(slot), free(d);
  kit_source_exit(&src);
  return 0;
}
