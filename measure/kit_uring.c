/* io_uring plumbing: rings, raw SQE fills for the opcodes liburing 2.3
 * lacks, and the SEND_FD fill shared by the sparse-fill programs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "measure/kit.h"

void kit_ring_init(struct io_uring* r, unsigned entries, unsigned cq_entries) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  if (cq_entries) {
    p.flags |= IORING_SETUP_CQSIZE;
    p.cq_entries = cq_entries;
  }
  const int ret = io_uring_queue_init_params(entries, r, &p);
  if (ret < 0) kit_die("io_uring_queue_init_params", ret);
}

static struct io_uring_sqe* clear(struct io_uring_sqe* sqe, uint8_t op, uint64_t data) {
  memset(sqe, 0, sizeof *sqe);
  sqe->opcode = op;
  sqe->user_data = data;
  return sqe;
}

/* io_msg_ring_prep(): fd = target ring, addr = IORING_MSG_SEND_FD,
 * addr3 = the source's fixed slot, file_index = destination slot,
 * off = the target CQE's user_data. */
void kit_prep_send_fd(struct io_uring_sqe* sqe, int target_fd, unsigned src_slot, uint64_t data) {
  clear(sqe, IORING_OP_MSG_RING, data);
  sqe->fd = target_fd;
  sqe->addr = IORING_MSG_SEND_FD;
  sqe->addr3 = src_slot;
  sqe->file_index = IORING_FILE_INDEX_ALLOC;
  sqe->off = data;
}

/* io_futex_prep() as merged (v6.7+): addr = word, addr2 = expected value,
 * addr3 = mask, fd = the FUTEX2 flags; len and futex_flags (the op-flags
 * union) must be 0, or prep fails with -EINVAL. */
void kit_prep_futex_wait(struct io_uring_sqe* sqe, uint32_t* word, uint32_t expect, uint64_t data) {
  clear(sqe, KIT_OP_FUTEX_WAIT, data);
  sqe->addr = (uint64_t)(uintptr_t)word;
  sqe->addr2 = expect;
  sqe->addr3 = KIT_FUTEX_BITSET_MATCH_ANY;
  sqe->fd = (int)(KIT_FUTEX2_SIZE_U32 | KIT_FUTEX2_PRIVATE);
}

/* Same layout; addr2 is the number of waiters to wake. */
void kit_prep_futex_wake(struct io_uring_sqe* sqe, uint32_t* word, uint32_t nr, uint64_t data) {
  clear(sqe, KIT_OP_FUTEX_WAKE, data);
  sqe->addr = (uint64_t)(uintptr_t)word;
  sqe->addr2 = nr;
  sqe->addr3 = KIT_FUTEX_BITSET_MATCH_ANY;
  sqe->fd = (int)(KIT_FUTEX2_SIZE_U32 | KIT_FUTEX2_PRIVATE);
}

/* io_futexv_prep(): addr = struct futex_waitv array, len = its length;
 * every other field 0 (the flags live in each futex_waitv). */
void kit_prep_futex_waitv(struct io_uring_sqe* sqe, struct kit_futex_waitv* v, unsigned nr,
                          uint64_t data) {
  clear(sqe, KIT_OP_FUTEX_WAITV, data);
  sqe->addr = (uint64_t)(uintptr_t)v;
  sqe->len = nr;
}

void kit_submit_wait(struct io_uring* r, unsigned want) {
  const int ret = io_uring_submit_and_wait(r, want);
  if (ret < 0) kit_die("io_uring_submit_and_wait", ret);
}

void kit_reap(struct io_uring* r, unsigned n, int* res, uint64_t* data) {
  for (unsigned i = 0; i < n; ++i) {
    struct io_uring_cqe* cqe;
    /* every program's completions arrive within microseconds; a lost
     * one must end the run, not hang it */
    struct __kernel_timespec ts = {10, 0};
    const int ret = io_uring_wait_cqe_timeout(r, &cqe, &ts);
    if (ret < 0) kit_die("waiting for a completion", ret);
    if (res) res[i] = cqe->res;
    else if (cqe->res < 0) kit_die("a completion failed", cqe->res);
    if (data) data[i] = cqe->user_data;
    io_uring_cqe_seen(r, cqe);
  }
}

void kit_source_init(struct kit_source* s) {
  s->memfd = memfd_create("simcache-measure", 0);
  if (s->memfd < 0) kit_die("memfd_create", errno);
  char page[4096];
  memset(page, 'S', sizeof page);
  if (write(s->memfd, page, sizeof page) != (ssize_t)sizeof page) kit_die("write memfd", errno);
  kit_ring_init(&s->ring, 256, 0);
  const int ret = io_uring_register_files(&s->ring, &s->memfd, 1);
  if (ret < 0) kit_die("io_uring_register_files (source slot 0)", ret);
}

void kit_source_exit(struct kit_source* s) {
  io_uring_queue_exit(&s->ring);
  close(s->memfd);
}

void kit_send_fd_fill(struct kit_source* s, struct io_uring* dst, int n, int qd, int* slots) {
  int res[4096];
  uint64_t data[4096];
  if (qd > 4096) qd = 4096;
  for (int done = 0; done < n;) {
    const int b = n - done < qd ? n - done : qd;
    for (int i = 0; i < b; ++i) {
      struct io_uring_sqe* sqe = io_uring_get_sqe(&s->ring);
      if (!sqe) kit_die("source SQ ring full", EBUSY);
      kit_prep_send_fd(sqe, dst->ring_fd, 0, (uint64_t)(done + i));
    }
    kit_submit_wait(&s->ring, (unsigned)b);
    kit_reap(&s->ring, (unsigned)b, NULL, NULL);
    kit_reap(dst, (unsigned)b, res, data);
    for (int i = 0; i < b; ++i) {
      if (res[i] < 0) kit_die("SEND_FD install on the target", res[i]);
      if (slots && data[i] < (uint64_t)n) slots[data[i]] = res[i];
    }
    done += b;
  }
}

void kit_verify_slots(struct io_uring* dst, const int* slots, int n) {
  char buf[64][1];
  int res[64];
  for (int done = 0; done < n;) {
    const int b = n - done < 64 ? n - done : 64;
    for (int i = 0; i < b; ++i) {
      struct io_uring_sqe* sqe = io_uring_get_sqe(dst);
      if (!sqe) kit_die("target SQ ring full", EBUSY);
      io_uring_prep_read(sqe, slots[done + i], buf[i], 1, 0);
      sqe->flags |= IOSQE_FIXED_FILE;
    }
    kit_submit_wait(dst, (unsigned)b);
    kit_reap(dst, (unsigned)b, res, NULL);
    for (int i = 0; i < b; ++i)
      if (res[i] != 1) kit_die("fixed-file read of an installed slot", res[i] < 0 ? res[i] : EIO);
    done += b;
  }
}
