// Tiny measurements on the build machine (Linux 6.18) that give priors to
// the cost parameters no calibration row determines (docs/calibration.md,
// "Priors"). Build: cc -O2 -o /tmp/measure_priors scripts/measure_priors.c -luring
// Prints name, ns per unit, and the spread over 7 repeats (min..max).
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

typedef double (*bench_fn)(long n);
static volatile long sink;

static double b_syscall(long n) {  // getppid: syscall entry/exit floor
  double t = now();
  for (long i = 0; i < n; i++) sink += syscall(SYS_getppid);
  return (now() - t) / n;
}
static int efd;
static double b_fget(long n) {  // fcntl(F_GETFL): syscall + fdget/fdput
  double t = now();
  for (long i = 0; i < n; i++) sink += fcntl(efd, F_GETFL);
  return (now() - t) / n;
}
static char buf[1 << 15];
static double b_memset(long n) {  // ns per byte zeroed, 32 KiB in cache
  double t = now();
  for (long i = 0; i < n; i++) {
    memset(buf, 0, sizeof buf);
    __asm__ volatile("" ::"r"(buf) : "memory");
  }
  return (now() - t) / n / sizeof buf;
}
// ns per byte zeroed of 16 KiB blocks not in the caches: each memset takes
// the next block of a 256 MiB arena (far beyond the last-level cache), as
// __GFP_ZERO clears a block a per-CPU page list refill brought; against
// memset_32k it gives zero_bytes_cold's prior (the extra per byte).
static char* arena;
enum { kArena = 256 << 20, kBlock = 16 << 10 };
static long arena_at;
static double b_memset_cold(long n) {
  double t = now();
  for (long i = 0; i < n; i++) {
    memset(arena + arena_at, 0, kBlock);
    __asm__ volatile("" ::"r"(arena) : "memory");
    arena_at = (arena_at + kBlock) % kArena;
  }
  return (now() - t) / n / kBlock;
}
// ns per memset() call of 32 bytes (a kzalloc'd io_rsrc_node's size),
// through a pointer so the compiler cannot inline it into stores: the
// fixed part of a zeroing call, beside memset_32k's per-byte part.
static void* (*volatile memset_fn)(void*, int, size_t) = memset;
static double b_memset_small(long n) {
  double t = now();
  for (long i = 0; i < n; i++) {
    memset_fn(buf + (i & 63) * 64, 0, 32);
    __asm__ volatile("" ::"r"(buf) : "memory");
  }
  return (now() - t) / n;
}
static double b_page(long n) {  // mmap + first touch + munmap of one page
  double t = now();
  for (long i = 0; i < n; i++) {
    char* p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    munmap(p, 4096);
  }
  return (now() - t) / n;
}
static struct io_uring ring;
static double nop_batch(long n, unsigned qd) {  // NOP SQE+CQE at queue depth qd
  double t = now();
  for (long i = 0; i < n; i += qd) {
    for (unsigned j = 0; j < qd; j++) io_uring_prep_nop(io_uring_get_sqe(&ring));
    io_uring_submit_and_wait(&ring, qd);
    io_uring_cq_advance(&ring, qd);
  }
  return (now() - t) / n;
}
static double b_nop1(long n) { return nop_batch(n, 1); }
static double b_nop64(long n) { return nop_batch(n, 64); }

// A ring's pages, whole life: io_uring_queue_init() (the regions'
// allocation, zeroing, charge and mmap), every SQE written once (the
// program's first touches), io_uring_queue_exit() (unmap and teardown).
// Returns ns per ring of `entries` SQ entries and stores its mapped pages.
static double ring_life(long n, unsigned entries, long* pages) {
  double t = now();
  for (long i = 0; i < n; i++) {
    struct io_uring r;
    if (io_uring_queue_init(entries, &r, 0) < 0) exit(1);
    for (unsigned k = 0; k < entries; k++) io_uring_prep_nop(io_uring_get_sqe(&r));
    // The rings region (one mmap: IORING_FEAT_SINGLE_MMAP) and the SQEs.
    *pages = (long)((r.sq.ring_sz + 4095) / 4096 + (entries * 64ul + 4095) / 4096);
    io_uring_queue_exit(&r);
  }
  return (now() - t) / n;
}
// ns per mapped ring page: a ring of 4,096 entries against one of 256.
static double b_ring_page(long n) {
  long big = 0, small = 0;
  const double tb = ring_life(n, 4096, &big), ts = ring_life(n, 256, &small);
  return (tb - ts) / (double)(big - small);
}

static void run(const char* name, const char* unit, bench_fn f, long n) {
  double lo = 1e18, hi = 0, v[7];
  f(n / 10);
  for (int r = 0; r < 7; r++) {
    v[r] = f(n);
    if (v[r] < lo) lo = v[r];
    if (v[r] > hi) hi = v[r];
  }
  double s = 0;
  for (int r = 0; r < 7; r++) s += v[r];
  printf("%-22s %10.4f %-10s (min %.4f, max %.4f)\n", name, s / 7, unit, lo, hi);
}

int main(void) {
  efd = eventfd(0, 0);
  if (io_uring_queue_init(128, &ring, 0) < 0) return 1;
  run("syscall_getppid", "ns/call", b_syscall, 1000000);
  run("fcntl_getfl", "ns/call", b_fget, 1000000);
  run("memset_32k", "ns/byte", b_memset, 20000);
  run("memset_32", "ns/call", b_memset_small, 10000000);
  arena = mmap(NULL, kArena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (arena == MAP_FAILED) return 1;
  run("memset_16k_cold", "ns/byte", b_memset_cold, 20000);
  run("page_mmap_touch_unmap", "ns/page", b_page, 50000);
  run("io_uring_nop_qd1", "ns/sqe", b_nop1, 200000);
  run("io_uring_nop_qd64", "ns/sqe", b_nop64, 2000000);
  run("io_uring_ring_page", "ns/page", b_ring_page, 200);
  return 0;
}
