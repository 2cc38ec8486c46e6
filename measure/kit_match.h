/* The --trace matcher (kit_match.c): reads a tracing instance's text
 * (kmem:kmalloc, kmem:kmem_cache_alloc, kmem:kfree, kmem:kmem_cache_free,
 * io_uring:*) and counts the program's allocations by call site and cache,
 * the frees of its objects by freeing and by allocating call site, and its
 * io_uring events (kit_trace.c documents the filter and the layouts).
 * Apart from the tracing so that it can be fuzzed (fuzz/fuzz_kit_match.cc):
 * it needs only libc and kit_die(). */
#ifndef SIMCACHE_KIT_MATCH_H
#define SIMCACHE_KIT_MATCH_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct kit_row {
  char kind;      /* 'a' alloc by site, 'f' free by the freeing call site, 'g' free by the
                     allocating call site, 'u' io_uring event */
  char site[64];  /* call site function (compiler suffixes dropped) or event */
  char cache[40]; /* the allocation's cache; the io_uring opcode for 'u' */
  long count;
};
struct kit_obj {
  unsigned long long ptr; /* 0: empty slot */
  int row;                /* the 'a' row of its allocation; -1 when freed */
  int uring;              /* allocated at an io_uring call site */
};
struct kit_matcher {
  struct kit_row* rows;
  int nrows, caprows;
  struct kit_obj* objs; /* open addressing, power of two */
  size_t capobjs, nobjs;
  long live_uring, other_task_frees, lines_kept;
};

/* Parses `text` (NUL-terminated; lines are cut in place and restored)
 * for the program whose pid is `child`; keeps the relevant lines in
 * `keep` when non-NULL. Returns the number of event lines. */
long kit_match_trace(struct kit_matcher* m, char* text, int child, FILE* keep);
/* Forgets the rows' counts and the objects (keeps the rows' array). */
void kit_matcher_reset(struct kit_matcher* m);
/* /proc/zoneinfo's high marks of `want_cpu`'s per-CPU page lists in
 * `want_node`'s Normal zone, or DMA32 where the node's Normal zone shows
 * no per-CPU lists: "Node N, zone Z", then "cpu: C" and its "high_min:"
 * and "high_max:" lines (6.7 and later) or, before 6.7, its fixed
 * "high:" (least and most alike). Returns 1 and sets both when found, else
 * 0 and leaves them. Beside the matcher so that it is fuzzed with it. */
int kit_zoneinfo_pcp(FILE* f, int want_node, int want_cpu, long* high_min, long* high_max);

/* Out of memory, or another fatal error: the kit's (kit_common.c); the
 * fuzz target has its own. */
#ifdef __cplusplus
[[noreturn]] void kit_die(const char* what, int err);
#else
_Noreturn void kit_die(const char* what, int err);
#endif

#ifdef __cplusplus
}
#endif

#endif
