// Output in the formats kernel developers already read: /proc/slabinfo
// version 2.1, the /sys/kernel/slab/<cache>/ tree, tools/mm/slabinfo's
// `-r` report, bpftrace-style log2 histograms and KASAN reports. The
// slabinfo reader parses the running kernel's /proc/slabinfo and ours
// with the same code (tests hold one against the other).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/run/result.h"

namespace simcache::sim {

// /proc/slabinfo as slabinfo_show() prints it under SLUB: the header of
// print_slabinfo_header(), then one line per cache, newest first (the
// kernel adds caches at the head of slab_caches). Merged names are not
// lines of their own, as in the kernel.
std::string format_slabinfo(const std::vector<CacheInfo>& caches);

// One line of /proc/slabinfo 2.1.
struct SlabinfoRow {
  std::string name;
  uint64_t active_objs = 0, num_objs = 0;
  uint32_t objsize = 0, objperslab = 0, pagesperslab = 0;
  uint32_t limit = 0, batchcount = 0, sharedfactor = 0;
  uint64_t active_slabs = 0, num_slabs = 0, sharedavail = 0;
};
// Parses /proc/slabinfo text. `file` names it in the one-line error
// ("FILE:LINE: ...").
bool parse_slabinfo(std::string_view text, const std::string& file,
                    std::vector<SlabinfoRow>* rows, std::string* error);

// The /sys/kernel/slab/<cache>/ name of a cache: its own name if unmerged,
// else the unique id create_unique_id() builds (":A-0000032") with every
// name a symlink to it.
std::string sysfs_unique_id(const CacheInfo& c);
// Writes the tree for one policy column under `dir` (created; must not
// exist yet, so nothing is overwritten): every cache's geometry and
// object-count files, its stat files ("<sum> C<cpu>=<n>") and alias links,
// and `record` as .simcache-record.json (a dot file: the kernel's
// tools/mm/slabinfo skips names that start with a dot).
bool write_sysfs(const std::string& dir, const PolicyResult& p, uint16_t nr_nodes,
                 const std::string& record, std::string* error);

// tools/mm/slabinfo -r for one cache: the report() block and slab_stats()
// (the Slab Perf Counter and Slab Deactivation tables).
std::string format_slabinfo_report(const CacheStats& cs);

// A bpftrace log2 histogram (print of @x = hist(...)): one line per
// bucket from the lowest to the highest non-empty one, "[lo, hi)" with
// K/M suffixes, the count and a bar of up to 52 '@'. Buckets as in
// BatchHists: 0 holds the value 0, k holds [2^(k-1), 2^k).
std::string format_log2_hist(const std::array<uint64_t, kLog2Buckets>& buckets);
// The buckets of a list of values (per-round counts).
std::array<uint64_t, kLog2Buckets> log2_buckets(const std::vector<uint64_t>& values);

// One KASAN report as the kernel prints it: the BUG line with the
// function, the access, the object's allocation and free history by
// call-site name, and the cache it belongs to.
std::string format_kasan(const KasanReport& k);

}  // namespace simcache::sim
