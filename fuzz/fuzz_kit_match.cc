// libFuzzer target: the measurement kit's text parsers
// (measure/kit_match.c) on arbitrary text: the --trace matcher on it as a
// tracing instance's, and the per-CPU page lists' marks on it as
// /proc/zoneinfo (below). It must not
// crash, must give the text back as it found it (it cuts lines in place),
// and what it counts must hold together: every row counted at least
// once, frees by freeing site and by allocating site the same number,
// io_uring objects live never below 0, the same counts a second time.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "measure/kit_match.h"

// The kit's kit_die() exits; here an allocation failure is a finding.
extern "C" [[noreturn]] void kit_die(const char*, int) { std::abort(); }

namespace {

struct Counts {
  std::vector<std::string> rows;  // kind, site, cache, count
  long events = 0, live_uring = 0, other_task_frees = 0;
  bool operator==(const Counts&) const = default;
};

Counts match(std::string* text, int child, FILE* keep) {
  kit_matcher m;
  std::memset(&m, 0, sizeof m);
  Counts c;
  c.events = kit_match_trace(&m, text->data(), child, keep);
  long f = 0, g = 0;
  for (int i = 0; i < m.nrows; ++i) {
    const kit_row& r = m.rows[i];
    if (std::memchr(r.site, 0, sizeof r.site) == nullptr ||
        std::memchr(r.cache, 0, sizeof r.cache) == nullptr)
      std::abort();  // a name ran past its field
    if (r.count <= 0 || !std::strchr("afgu", r.kind)) std::abort();
    if (r.kind == 'f') f += r.count;
    if (r.kind == 'g') g += r.count;
    c.rows.push_back(std::string(1, r.kind) + "|" + r.site + "|" + r.cache + "|" +
                     std::to_string(r.count));
  }
  if (f != g || m.live_uring < 0 || c.events < 0) std::abort();
  if (m.capobjs && 2 * m.nobjs > m.capobjs) std::abort();
  c.live_uring = m.live_uring;
  c.other_task_frees = m.other_task_frees;
  kit_matcher_reset(&m);
  std::free(m.rows);
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The matcher reads NUL-terminated text: the input up to its first NUL.
  const std::string input(reinterpret_cast<const char*>(data), strnlen(reinterpret_cast<const char*>(data), size));
  std::string text = input;
  FILE* keep = std::fopen("/dev/null", "w");
  if (!keep) std::abort();
  const Counts a = match(&text, 4242, keep);
  std::fclose(keep);
  if (text != input) std::abort();  // every cut line was restored
  const Counts b = match(&text, 4242, nullptr);
  if (!(a == b)) std::abort();
  // The same text as /proc/zoneinfo (kit_zoneinfo_pcp()): whatever it
  // reads, for any node and CPU, it reads again the same, and a mark it
  // returns is one a line gave (non-zero).
  for (int node = 0; node < 2; ++node)
    for (int cpu = 0; cpu < 3; ++cpu) {
      long lo[2] = {-7, -7}, hi[2] = {-7, -7};
      int found[2];
      for (int k = 0; k < 2; ++k) {
        FILE* f = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
        if (!f) {
          if (input.empty()) continue;  // glibc refuses a 0-byte buffer
          std::abort();
        }
        found[k] = kit_zoneinfo_pcp(f, node, cpu, &lo[k], &hi[k]);
        std::fclose(f);
      }
      if (input.empty()) continue;
      if (found[0] != found[1] || lo[0] != lo[1] || hi[0] != hi[1]) std::abort();
      if (found[0] ? lo[0] == 0 : (lo[0] != -7 || hi[0] != -7)) std::abort();
    }
  return 0;
}
