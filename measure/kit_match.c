/* The --trace matcher: see kit_match.h. */
#include "measure/kit_match.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int row_of(struct kit_matcher* m, char kind, const char* site, const char* cache) {
  for (int i = 0; i < m->nrows; ++i)
    if (m->rows[i].kind == kind && !strcmp(m->rows[i].site, site) && !strcmp(m->rows[i].cache, cache))
      return i;
  if (m->nrows == m->caprows) {
    m->caprows = m->caprows ? 2 * m->caprows : 64;
    m->rows = realloc(m->rows, sizeof *m->rows * (size_t)m->caprows);
    if (!m->rows) kit_die("realloc", ENOMEM);
  }
  struct kit_row* r = &m->rows[m->nrows];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  snprintf(r->site, sizeof r->site, "%s", site);
  snprintf(r->cache, sizeof r->cache, "%s", cache);
  return m->nrows++;
}

static struct kit_obj* obj_slot(struct kit_matcher* m, unsigned long long p) {
  size_t i = (size_t)(p * 0x9e3779b97f4a7c15ull) & (m->capobjs - 1);
  while (m->objs[i].ptr && m->objs[i].ptr != p) i = (i + 1) & (m->capobjs - 1);
  return &m->objs[i];
}

static void obj_grow(struct kit_matcher* m) {
  struct kit_obj* old = m->objs;
  const size_t oc = m->capobjs;
  m->capobjs = oc ? 2 * oc : 4096;
  m->objs = calloc(m->capobjs, sizeof *m->objs);
  if (!m->objs) kit_die("calloc", ENOMEM);
  for (size_t i = 0; i < oc; ++i)
    if (old[i].ptr) *obj_slot(m, old[i].ptr) = old[i];
  free(old);
}

/* "key=value" in the event text, copied up to the next blank. */
static int field(const char* s, const char* key, char* out, size_t n) {
  const size_t k = strlen(key);
  for (const char* p = s; (p = strstr(p, key)); p += k)
    if ((p == s || p[-1] == ' ') && p[k] == '=') {
      const char* v = p + k + 1;
      size_t l = strcspn(v, " \n");
      if (l >= n) l = n - 1;
      memcpy(out, v, l), out[l] = 0;
      return 1;
    }
  return 0;
}

/* "io_uring_setup.cold+0xa7/0x9d8" -> "io_uring_setup" */
static void site_name(const char* call_site, char* out, size_t n) {
  size_t l = strcspn(call_site, "+.");
  if (l >= n) l = n - 1;
  memcpy(out, call_site, l), out[l] = 0;
}

/* The kernel's kmalloc cache for bytes_alloc (kmalloc-cg-* when accounted). */
static void kmalloc_cache(long bytes, int accounted, char* out, size_t n) {
  char sz[24];
  if (bytes >= 1024 && bytes % 1024 == 0) snprintf(sz, sizeof sz, "%ldk", bytes / 1024);
  else snprintf(sz, sizeof sz, "%ld", bytes);
  snprintf(out, n, "kmalloc-%s%s", accounted ? "cg-" : "", sz);
}

static int uring_site(const char* s) {
  return !strncmp(s, "io_", 3) || !strncmp(s, "__io_", 5) || !strncmp(s, "create_io_", 10);
}

/* Parses the instance's text; keeps the relevant lines in `keep` when
 * non-NULL. Returns the number of event lines. */
long kit_match_trace(struct kit_matcher* m, char* text, int child, FILE* keep) {
  long events = 0;
  for (char* line = text; line && *line;) {
    char* nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (line[0] == '#') {
      if (keep) fprintf(keep, "%s\n", line);
    } else {
      /* TASK-PID [CPU] FLAGS TIMESTAMP: EVENT: TEXT, or TASK-PID (TGID) [CPU]
       * ... where the global options/record-tgid is on (an unknown TGID
       * prints as dashes): TASK-PID ends before " (" then. */
      char* br = strstr(line, " [");
      char* end = br;
      int tgid = 0;
      if (br && br > line && br[-1] == ')') {
        char* op = br - 1;
        while (op > line && *op != '(') --op;
        if (*op == '(' && op > line && op[-1] == ' ') end = op - 1, tgid = atoi(op + 1);
      }
      char* dash = NULL;
      for (char* p = line; end && p < end; ++p)
        if (*p == '-') dash = p;
      char* ev = br ? strstr(br, ": ") : NULL;
      if (dash && ev) {
        ++events;
        const int pid = atoi(dash + 1);
        /* The allocation and io_uring events are the program's and its
         * io-wq workers' by the kernel's filter (on the task's comm when
         * the event fired). The text's TASK is the comm cache's at read
         * time, which may have lost a short-lived worker ("<...>"): it
         * only tells, for the unfiltered frees, which ran elsewhere. */
        const char* task = line;
        while (*task == ' ') ++task;
        char wrk[32];
        const int wl = snprintf(wrk, sizeof wrk, "iou-wrk-%d", child);
        const int mine = pid == child || tgid == child ||
                         (dash - task == wl && !strncmp(task, wrk, (size_t)wl));
        ev += 2;
        char* colon = strchr(ev, ':');
        const size_t elen = colon ? (size_t)(colon - ev) : 0;
        /* the event's text after ": ", or nothing: a line may end at the
         * colon (colon + 2 would read past it; found by fuzz_kit_match) */
        const char* txt = !colon ? "" : colon[1] == ' ' ? colon + 2 : colon + 1;
        char cs[128] = "", site[64], ptrs[40] = "", cache[40] = "", b[32] = "", acc[8] = "";
        const int is_kmalloc = elen == 7 && !strncmp(ev, "kmalloc", 7);
        const int is_kca = elen == 16 && !strncmp(ev, "kmem_cache_alloc", 16);
        const int is_free = (elen == 5 && !strncmp(ev, "kfree", 5)) ||
                            (elen == 15 && !strncmp(ev, "kmem_cache_free", 15));
        int kept = 0;
        if ((is_kmalloc || is_kca) && field(txt, "call_site", cs, sizeof cs) &&
            field(txt, "ptr", ptrs, sizeof ptrs)) {
          site_name(cs, site, sizeof site);
          if (is_kca) field(txt, "name", cache, sizeof cache);
          else {
            field(txt, "bytes_alloc", b, sizeof b);
            field(txt, "accounted", acc, sizeof acc);
            kmalloc_cache(atol(b), !strcmp(acc, "true"), cache, sizeof cache);
          }
          const unsigned long long p = strtoull(ptrs, NULL, 16);
          if (p) {
            if (2 * (m->nobjs + 1) > m->capobjs) obj_grow(m);
            struct kit_obj* o = obj_slot(m, p);
            if (!o->ptr) ++m->nobjs;
            else if (o->row >= 0 && o->uring) --m->live_uring; /* its free was not seen */
            const int r = row_of(m, 'a', site, cache);
            m->rows[r].count++;
            o->ptr = p, o->row = r, o->uring = uring_site(site);
            if (o->uring) ++m->live_uring;
            kept = 1;
          }
        } else if (is_free && field(txt, "ptr", ptrs, sizeof ptrs)) {
          const unsigned long long p = strtoull(ptrs, NULL, 16);
          struct kit_obj* o = p && m->capobjs ? obj_slot(m, p) : NULL;
          if (o && o->ptr && o->row >= 0) {
            field(txt, "call_site", cs, sizeof cs);
            site_name(cs, site, sizeof site);
            /* row_of() may move m->rows: copy the allocation's names first */
            char asite[sizeof m->rows[0].site], acache[sizeof m->rows[0].cache];
            memcpy(asite, m->rows[o->row].site, sizeof asite);
            memcpy(acache, m->rows[o->row].cache, sizeof acache);
            const int f = row_of(m, 'f', site, acache);  /* before m->rows is read */
            m->rows[f].count++;
            const int g = row_of(m, 'g', asite, acache);
            m->rows[g].count++;
            if (!mine) ++m->other_task_frees;
            if (o->uring) --m->live_uring;
            o->row = -1;
            kept = 1;
          }
        } else if (elen > 9 && !strncmp(ev, "io_uring_", 9)) {
          char name[64], op[40] = "-";
          snprintf(name, sizeof name, "%.*s", (int)elen, ev);
          const char* o = strstr(txt, "opcode ");
          if (o && !strcmp(name, "io_uring_submit_req")) {
            size_t l = strcspn(o + 7, ", ");
            snprintf(op, sizeof op, "%.*s", (int)(l < 39 ? l : 39), o + 7);
          }
          const int u = row_of(m, 'u', name, op);  /* before m->rows is read */
          m->rows[u].count++;
          kept = 1;
        }
        if (kept && keep) fprintf(keep, "%s\n", line), ++m->lines_kept;
      }
    }
    if (nl) *nl = '\n';
    line = nl ? nl + 1 : NULL;
  }
  return events;
}

void kit_matcher_reset(struct kit_matcher* m) {
  m->nrows = 0;
  free(m->objs);
  m->objs = NULL, m->capobjs = m->nobjs = 0;
  m->live_uring = m->other_task_frees = m->lines_kept = 0;
}

int kit_zoneinfo_pcp(FILE* f, int want_node, int want_cpu, long* high_min, long* high_max) {
  char line[256];
  int zone_kind = 0, in_cpu = 0; /* zone_kind: 1 DMA32, 2 Normal, of `want_node` */
  long lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, fixed[3] = {0, 0, 0};
  while (fgets(line, sizeof line, f)) {
    int node, cpu;
    char zone[32];
    long v;
    if (sscanf(line, "Node %d, zone %31s", &node, zone) == 2) {
      zone_kind = node != want_node ? 0 : !strcmp(zone, "Normal") ? 2 : !strcmp(zone, "DMA32") ? 1 : 0;
      in_cpu = 0;
    } else if (zone_kind && sscanf(line, " cpu: %d", &cpu) == 1) {
      in_cpu = cpu == want_cpu;
    } else if (in_cpu && sscanf(line, " high_min: %ld", &v) == 1) {
      lo[zone_kind] = v;
    } else if (in_cpu && sscanf(line, " high_max: %ld", &v) == 1) {
      hi[zone_kind] = v;
    } else if (in_cpu && sscanf(line, " high: %ld", &v) == 1) {
      fixed[zone_kind] = v;
    }
  }
  for (int z = 2; z >= 1; --z) {
    const long a = lo[z] ? lo[z] : fixed[z], b = hi[z] ? hi[z] : fixed[z];
    if (!a) continue; /* no such zone on the node, or no pageset lines */
    *high_min = a, *high_max = b;
    return 1;
  }
  return 0;
}
