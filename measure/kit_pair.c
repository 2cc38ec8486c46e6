/* --anchor: another program measured round by round beside the row.
 *
 * On a virtual machine of the kind the kit runs on, the speed moves in
 * spells of seconds to minutes. Nothing measured between rows can remove
 * a spell that starts during a row. With --anchor the kit forks: the
 * child runs the anchor program, the parent the row's, and the two hand
 * a token back and forth through two pipes at each measured round, so
 * that exactly one runs at a time and their rounds alternate: anchor
 * round 1, row round 1, anchor round 2, ... (each program's warm-up
 * rounds of a repeat run, token held, before its first measured round).
 * The row decides when a repeat ends (its own rule and the anchor's both
 * satisfied, or the row's capacity reached); the anchor follows, so both
 * measure the same number of rounds in each repeat. --budget is wall
 * time, the other program's rounds included. The anchor's rows are
 * printed first; calibrate and validate scale each row by its ratio to
 * them (sim/calibrate/reference.h, docs/measure.md "The reference").
 *
 * After each round the anchor sends its own rule's verdict (0 or 1) and
 * the round's figure; the row sends its decision (one byte, 0: go on, 1:
 * the repeat is over). The row keeps the anchor's figure of each of its
 * rounds, so that its note can give the ratio round by round (a spell
 * that starts between two rounds moves both). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/kit.h"

static struct {
  int on;        /* 1 in both processes once paired */
  int is_anchor; /* 1 in the child */
  int rd, wr;
  int anchor_own; /* the anchor's latest verdict (row side) */
  int flushed;    /* the anchor's rows are out (row side) */
  pid_t child;
  FILE* anchor_out; /* the child's stdout (row side reads it back) */
  char partner[128];
  double anchor_last;                 /* the anchor's figure of its latest round (row side) */
  double* anchor_v[KIT_MAX_REPEATS];  /* [repeat][round]: the anchor's figure before each row round */
  int anchor_cap;
} pair;

struct anchor_msg {
  unsigned char own;
  double value;
};

/* Reads exactly n bytes: 1, or 0 when the other side exited first. */
static int read_all(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t k = read(fd, (char*)buf + got, n - got);
    if (k > 0) got += (size_t)k;
    else if (k == 0) return 0;
    else if (errno != EINTR) return 0;
  }
  return 1;
}

/* Messages are shorter than PIPE_BUF: one write is whole. */
static void write_all(int fd, const void* buf, size_t n) {
  for (;;) {
    if (write(fd, buf, n) == (ssize_t)n) return;
    if (errno != EINTR) {
      if (pair.is_anchor) _exit(1); /* the row is gone: nothing to report to */
      kit_die("--anchor: the anchor program exited early", errno);
    }
  }
}

/* The anchor's process ended: its exit status (1 if a signal ended it). */
static int reap_anchor(void) {
  int status = 0;
  if (pair.child > 0 && waitpid(pair.child, &status, 0) == pair.child) pair.child = 0;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int kit_pair_exchange(int own, double value, int repeat, int round, int final_repeat,
                      int* anchor_own) {
  unsigned char b;
  if (pair.is_anchor) {
    const struct anchor_msg m = {(unsigned char)(own != 0), value};
    write_all(pair.wr, &m, sizeof m);
    if (!read_all(pair.rd, &b, 1)) _exit(1); /* the row ended or failed */
    return b != 0;
  }
  if (round >= 0 && round < pair.anchor_cap) pair.anchor_v[repeat][round] = pair.anchor_last;
  *anchor_own = pair.anchor_own;
  const int done = own && pair.anchor_own;
  b = (unsigned char)done;
  write_all(pair.wr, &b, 1);
  struct anchor_msg m;
  if (read_all(pair.rd, &m, sizeof m)) {
    pair.anchor_own = m.own != 0;
    pair.anchor_last = m.value;
    return done;
  }
  /* The anchor exits only after the row's last decision. */
  if (!(done && final_repeat) || reap_anchor()) {
    fprintf(stderr, "simcache-measure: --anchor: the anchor program (%s) failed\n", pair.partner);
    exit(1);
  }
  return done;
}

int kit_pair_active(void) { return pair.on; }

void kit_pair_note(const struct kit_point* p, double scale, char* out, size_t n) {
  if (!pair.on) {
    if (n) out[0] = 0;
    return;
  }
  if (pair.is_anchor) {
    snprintf(out, n, "anchor of %s, round by round", pair.partner);
    return;
  }
  /* The point's rounds (in the row's unit: times `scale`) divided by the
   * anchor's round before each (ns per its operation, as timed): the same
   * statistics as the row's own (kit_point_stats, kit_row). */
  struct kit_point q;
  kit_point_init(&q, p->repeats, p->rounds > 0 ? p->rounds : 1);
  for (int r = 0; r < p->repeats; ++r) {
    q.n[r] = 0;
    for (int i = 0; i < p->n[r] && i < pair.anchor_cap; ++i)
      if (pair.anchor_v[r][i] > 0) q.v[r][q.n[r]++] = p->v[r][i] * scale / pair.anchor_v[r][i];
  }
  double mean, cv, drift, median, fastest, se;
  kit_point_stats(&q, &mean, &cv, &drift);
  kit_point_order_stats(&q, &median, &fastest, &se);
  kit_point_free(&q);
  snprintf(out, n,
           "paired round by round with anchor %s; ratio to anchor ns round by round: mean %.9g, "
           "median %.9g, se %.4f%%, max group CV %.6f%%, max role drift %.6f%%",
           pair.partner, mean, median, isfinite(se) ? se * 100 : 0.0, cv * 100, fabs(drift) * 100);
}

/* The row's end of the pipes: closed once, so that an anchor still
 * waiting for a decision reads end of file and exits. */
static void close_row_pipes(void) {
  if (pair.wr >= 0) close(pair.wr), pair.wr = -1;
  if (pair.rd >= 0) close(pair.rd), pair.rd = -1;
}

void kit_pair_before_rows(void) {
  if (!pair.on || pair.is_anchor || pair.flushed) return;
  pair.flushed = 1;
  close_row_pipes();
  if (reap_anchor()) {
    fprintf(stderr, "simcache-measure: --anchor: the anchor program (%s) failed\n", pair.partner);
    exit(1);
  }
  fflush(stdout);
  rewind(pair.anchor_out);
  char buf[4096];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, pair.anchor_out)) > 0)
    if (fwrite(buf, 1, k, stdout) != k) kit_die("--anchor: copying the anchor's rows", errno);
  fclose(pair.anchor_out);
  pair.anchor_out = NULL;
}

int kit_pair_run(struct kit_opts* o, const struct kit_host* h, kit_program row, int argc,
                 char** argv, kit_program anchor, int aargc, char** aargv, const char* anchor_id,
                 const char* anchor_memcg) {
  int to_anchor[2], to_row[2];
  if (pipe(to_anchor) || pipe(to_row)) kit_die("--anchor: pipe", errno);
  pair.anchor_out = tmpfile();
  if (!pair.anchor_out) kit_die("--anchor: a temporary file for the anchor's rows", errno);
  signal(SIGPIPE, SIG_IGN); /* a write to a gone partner is an error, not a signal */
  fflush(stdout), fflush(stderr);
  pair.on = 1;
  const pid_t child = fork();
  if (child < 0) kit_die("--anchor: fork", errno);
  if (child == 0) {
    pair.is_anchor = 1;
    kit_flag_prefix = "--anchor: "; /* its flags' errors name the flag they came with */
    snprintf(pair.partner, sizeof pair.partner, "%s", o->id);
    close(to_anchor[1]), close(to_row[0]);
    pair.rd = to_anchor[0], pair.wr = to_row[1];
    if (dup2(fileno(pair.anchor_out), STDOUT_FILENO) < 0) _exit(1);
    o->id = anchor_id;
    struct kit_host ah = *h;
    if (anchor_memcg) { /* the reference runs where the rows of the suite run */
      char where[512];
      const int err = kit_enter_memcg(anchor_memcg, h->cpu, where, sizeof where);
      if (err) {
        fprintf(stderr, "simcache-measure: --anchor: cannot return to memory cgroup %s: %s: %s\n",
                anchor_memcg, where, strerror(err));
        _exit(1);
      }
      kit_host_memcg(&ah);
    }
    const int status = anchor(aargc, aargv, o, &ah);
    fflush(stdout);
    _exit(status);
  }
  pair.child = child;
  snprintf(pair.partner, sizeof pair.partner, "%s", anchor_id);
  pair.anchor_cap = o->target_se > 0 && o->max_rounds > o->rounds ? o->max_rounds : o->rounds;
  for (int r = 0; r < o->repeats; ++r) {
    pair.anchor_v[r] = calloc((size_t)pair.anchor_cap, sizeof(double));
    if (!pair.anchor_v[r]) kit_die("calloc", ENOMEM);
  }
  close(to_anchor[0]), close(to_row[1]);
  pair.rd = to_row[0], pair.wr = to_anchor[1];
  /* The anchor goes first: wait for its first round's verdict. */
  struct anchor_msg m;
  if (!read_all(pair.rd, &m, sizeof m)) { /* its flags were refused (2), or it failed (1) */
    const int status = reap_anchor();
    if (status == 2) return 2; /* it named the flag it refused */
    fprintf(stderr, "simcache-measure: --anchor: the anchor program (%s) failed before its first round\n",
            anchor_id);
    return status ? status : 1;
  }
  pair.anchor_own = m.own != 0;
  pair.anchor_last = m.value;
  const int status = row(argc, argv, o, h);
  if (status != 0) { /* the row's flags were refused, or it failed: the anchor goes with it */
    pair.flushed = 1;
    close_row_pipes();
    reap_anchor();
  }
  kit_pair_before_rows(); /* a program that printed no row still reaps its anchor */
  for (int r = 0; r < o->repeats; ++r) free(pair.anchor_v[r]);
  return status;
}
