// /proc/slabinfo, the /sys/kernel/slab tree and slabinfo -r (see
// kernel_formats.h). Layouts follow mm/slab_common.c slabinfo_show(),
// mm/slub.c's attribute show functions and tools/mm/slabinfo.c report().
#include "sim/report/kernel_formats.h"

#include <absl/strings/numbers.h>
#include <absl/strings/str_split.h>

#include <filesystem>
#include <system_error>

#include <fmt/format.h>
#include "model/types.h"
#include "sim/io/output.h"

namespace simcache::sim {
namespace fs = std::filesystem;

std::string format_slabinfo(const std::vector<CacheInfo>& caches) {
  std::string out =
      "slabinfo - version: 2.1\n"
      "# name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab>"
      " : tunables <limit> <batchcount> <sharedfactor>"
      " : slabdata <active_slabs> <num_slabs> <sharedavail>\n";
  for (auto it = caches.rbegin(); it != caches.rend(); ++it) {
    const CacheInfo& c = *it;
    // get_slabinfo(): active = total - free objects on node partial slabs.
    out += fmt::format("{:<17} {:>6} {:>6} {:>6} {:>4} {:>4}", c.name, c.objects,
                       c.total_objects, c.slab_size, c.objs_per_slab, 1u << c.order);
    out += fmt::format(" : tunables {:>4} {:>4} {:>4}", 0, 0, 0);
    out += fmt::format(" : slabdata {:>6} {:>6} {:>6}\n", c.slabs, c.slabs, 0);
  }
  return out;
}

namespace {
bool parse_row(std::string_view line, SlabinfoRow* r) {
  // "name n n n n n : tunables n n n : slabdata n n n"
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(line.data(), line.size()), ' ', absl::SkipEmpty());
  if (f.size() != 16 || f[6] != ":" || f[7] != "tunables" || f[11] != ":" ||
      f[12] != "slabdata")
    return false;
  r->name = std::string(f[0].data(), f[0].size());
  return absl::SimpleAtoi(f[1], &r->active_objs) && absl::SimpleAtoi(f[2], &r->num_objs) &&
         absl::SimpleAtoi(f[3], &r->objsize) && absl::SimpleAtoi(f[4], &r->objperslab) &&
         absl::SimpleAtoi(f[5], &r->pagesperslab) && absl::SimpleAtoi(f[8], &r->limit) &&
         absl::SimpleAtoi(f[9], &r->batchcount) && absl::SimpleAtoi(f[10], &r->sharedfactor) &&
         absl::SimpleAtoi(f[13], &r->active_slabs) && absl::SimpleAtoi(f[14], &r->num_slabs) &&
         absl::SimpleAtoi(f[15], &r->sharedavail);
}
}  // namespace

bool parse_slabinfo(std::string_view text, const std::string& file,
                    std::vector<SlabinfoRow>* rows, std::string* error) {
  rows->clear();
  size_t lineno = 0;
  for (absl::string_view l : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    const std::string_view line(l.data(), l.size());
    ++lineno;
    if (lineno == 1) {
      if (line.rfind("slabinfo - version: 2.1", 0) != 0)
        return *error = fmt::format("{}:1: not /proc/slabinfo version 2.1", file), false;
      continue;
    }
    // A comment is a line whose first non-blank (space, tab) is '#' (the header line),
    // so a cache name never starts with '#' and the writer's output reads
    // back row for row.
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    SlabinfoRow r;
    if (!parse_row(line, &r))
      return *error = fmt::format("{}:{}: malformed slabinfo line", file, lineno), false;
    rows->push_back(std::move(r));
  }
  if (lineno == 0 || text.empty())
    return *error = fmt::format("{}:1: empty file", file), false;
  return true;
}

// create_unique_id(): ':' + flag letters + '-' (if any letter) + size.
std::string sysfs_unique_id(const CacheInfo& c) {
  if (c.aliases.empty()) return c.name;
  std::string id = ":";
  if (c.flags & SLAB_CACHE_DMA) id += 'd';
  if (c.flags & SLAB_CACHE_DMA32) id += 'D';
  if (c.flags & SLAB_RECLAIM_ACCOUNT) id += 'a';
  if (c.flags & SLAB_CONSISTENCY_CHECKS) id += 'F';
  if (c.flags & SLAB_ACCOUNT) id += 'A';
  if (id.size() > 1) id += '-';
  return id + fmt::format("{:07}", c.slab_size);
}

namespace {
bool put(const fs::path& p, const std::string& text, std::string* error) {
  if (write_new_file(p.string(), text, error)) return true;
  *error = "--sysfs: " + *error;
  return false;
}

// The per-node suffix show_slab_objects() adds under CONFIG_NUMA; the
// model keeps node sums only, so it is written for one node.
std::string nodes(uint64_t v, uint16_t nr_nodes) {
  return nr_nodes == 1 && v ? fmt::format("{} N0={}\n", v, v) : fmt::format("{}\n", v);
}

// show_stat(): the sum, then " C<cpu>=<n>" for each CPU with a non-zero count.
std::string stat_file(const CacheStats& cs, size_t item) {
  std::string s = fmt::format("{}", cs.stat[item]);
  const size_t ncpu = cs.per_cpu.size() / kNumSlubStats;
  for (size_t c = 0; c < ncpu; ++c)
    if (uint64_t v = cs.per_cpu[c * kNumSlubStats + item]) s += fmt::format(" C{}={}", c, v);
  return s + "\n";
}

bool cache_dir(const fs::path& d, const CacheInfo& c, const CacheStats* cs, uint16_t nr_nodes,
               std::string* error) {
  std::error_code ec;
  fs::create_directory(d, ec);
  if (ec) return *error = fmt::format("--sysfs: cannot create '{}'", d.string()), false;
  const std::pair<const char*, std::string> files[] = {
      {"object_size", fmt::format("{}\n", c.object_size)},
      {"slab_size", fmt::format("{}\n", c.slab_size)},
      {"align", fmt::format("{}\n", c.align)},
      {"order", fmt::format("{}\n", c.order)},
      {"objs_per_slab", fmt::format("{}\n", c.objs_per_slab)},
      {"min_partial", fmt::format("{}\n", c.min_partial)},
      {"cpu_partial", fmt::format("{}\n", c.cpu_partial)},
      {"sheaf_capacity", fmt::format("{}\n", c.sheaf_capacity)},
      {"aliases", fmt::format("{}\n", c.aliases.size())},
      {"slabs", nodes(c.slabs, nr_nodes)},
      {"partial", nodes(c.partial, nr_nodes)},
      {"objects", nodes(c.objects, nr_nodes)},
      {"objects_partial", nodes(c.objects_partial, nr_nodes)},
      {"total_objects", nodes(c.total_objects, nr_nodes)},
      {"reclaim_account", fmt::format("{}\n", (c.flags & SLAB_RECLAIM_ACCOUNT) ? 1 : 0)},
      {"hwcache_align", fmt::format("{}\n", (c.flags & SLAB_HWCACHE_ALIGN) ? 1 : 0)},
      {"cache_dma", fmt::format("{}\n", (c.flags & SLAB_CACHE_DMA) ? 1 : 0)},
      {"destroy_by_rcu", fmt::format("{}\n", (c.flags & SLAB_TYPESAFE_BY_RCU) ? 1 : 0)},
  };
  for (const auto& [name, text] : files)
    if (!put(d / name, text, error)) return false;
  if (c.has_cpu_slabs && !put(d / "cpu_slabs", nodes(c.cpu_slabs, nr_nodes), error)) return false;
  for (size_t i = 0; cs && i < kNumSlubStats; ++i)
    if (!put(d / std::string(kSlubStatInfo[i].sysfs), stat_file(*cs, i), error)) return false;
  return true;
}
}  // namespace

bool write_sysfs(const std::string& dir, const PolicyResult& p, uint16_t nr_nodes,
                 const std::string& record, std::string* error) {
  // Built in a fresh directory beside the target (mkdtemp) and renamed
  // into place: never half a tree, never someone else's directory.
  std::string tmp_dir;
  if (!begin_output_dir(dir, &tmp_dir, error)) return false;
  const fs::path tmp = tmp_dir;
  std::error_code ec;
  for (const CacheInfo& c : p.slab_state) {
    const CacheStats* cs = nullptr;
    for (const CacheStats& s : p.caches)
      if (s.name == c.name) cs = &s;
    CacheStats zero;
    zero.stat.assign(kNumSlubStats, 0);
    const std::string id = sysfs_unique_id(c);
    if (!cache_dir(tmp / id, c, cs ? cs : &zero, nr_nodes, error)) {
      abort_output_dir(tmp_dir);
      return false;
    }
    if (id == c.name) continue;
    std::vector<std::string> names = c.aliases;
    names.insert(names.begin(), c.name);
    for (const std::string& n : names) {
      fs::create_directory_symlink(id, tmp / n, ec);
      if (ec) {
        abort_output_dir(tmp_dir);
        return *error = fmt::format("--sysfs: cannot link '{}' in '{}'", n, dir), false;
      }
    }
  }
  if (!put(tmp / ".simcache-record.json", record, error)) {
    abort_output_dir(tmp_dir);
    return false;
  }
  if (!finish_output_dir(dir, tmp_dir, error)) return *error = "--sysfs: " + *error, false;
  return true;
}

namespace {
uint64_t st(const CacheStats& cs, SlubStat s) { return cs.stat[static_cast<size_t>(s)]; }
const char* onoff(bool b) { return b ? "On " : "Off"; }

// slab_stats(): the allocation/free path split, as percentages of all
// allocations and frees.
std::string perf_counters(const CacheStats& cs) {
  const uint64_t ta = st(cs, SlubStat::ALLOC_FASTPATH) + st(cs, SlubStat::ALLOC_SLOWPATH);
  const uint64_t tf = st(cs, SlubStat::FREE_FASTPATH) + st(cs, SlubStat::FREE_SLOWPATH);
  if (!ta) return "";
  auto pct = [](uint64_t v, uint64_t t) { return t ? v * 100 / t : 0; };
  auto line = [&](const char* what, uint64_t a, uint64_t f) {
    return fmt::format("{:<20} {:>8} {:>8} {:>3} {:>3}\n", what, a, f, pct(a, ta), pct(f, tf));
  };
  std::string out = "\nSlab Perf Counter       Alloc     Free %Al %Fr\n";
  out += std::string(50, '-') + "\n";
  out += line("Fastpath", st(cs, SlubStat::ALLOC_FASTPATH), st(cs, SlubStat::FREE_FASTPATH));
  out += line("Slowpath", ta - st(cs, SlubStat::ALLOC_FASTPATH), st(cs, SlubStat::FREE_SLOWPATH));
  out += line("Page Alloc", st(cs, SlubStat::ALLOC_SLAB), st(cs, SlubStat::FREE_SLAB));
  out += line("Add partial",
              st(cs, SlubStat::DEACTIVATE_TO_HEAD) + st(cs, SlubStat::DEACTIVATE_TO_TAIL),
              st(cs, SlubStat::FREE_ADD_PARTIAL));
  out += line("Remove partial", st(cs, SlubStat::ALLOC_FROM_PARTIAL),
              st(cs, SlubStat::FREE_REMOVE_PARTIAL));
  out += line("Cpu partial list", st(cs, SlubStat::CPU_PARTIAL_ALLOC),
              st(cs, SlubStat::CPU_PARTIAL_FREE));
  out += line("RemoteObj/SlabFrozen", st(cs, SlubStat::DEACTIVATE_REMOTE_FREES),
              st(cs, SlubStat::FREE_FROZEN));
  out += fmt::format("{:<20} {:>8} {:>8}\n", "Total", ta, tf);
  if (uint64_t f = st(cs, SlubStat::CPUSLAB_FLUSH)) out += fmt::format("\nFlushes {:>8}\n", f);
  return out;
}

// slab_stats()'s deactivation table: how a CPU slab was given up, each
// line as a share of full + empty + to head + to tail + bypass (the remote
// frees found at deactivation are RemoteObj above). None when that sum is
// 0, as slabinfo prints none: so never on 7.x, which has no CPU slab and
// none of these files. The model's allocations name no node (no
// kmalloc_node() caller), so it never counts alloc_node_mismatch: that
// line says so instead of showing a 0.
std::string deactivation(const CacheStats& cs) {
  const uint64_t total = st(cs, SlubStat::DEACTIVATE_FULL) + st(cs, SlubStat::DEACTIVATE_EMPTY) +
                         st(cs, SlubStat::DEACTIVATE_TO_HEAD) +
                         st(cs, SlubStat::DEACTIVATE_TO_TAIL) + st(cs, SlubStat::DEACTIVATE_BYPASS);
  if (!total) return "";
  auto line = [&](const char* what, SlubStat s) {
    return fmt::format("{:<29} {:>7}  {:>3}%\n", what, st(cs, s), st(cs, s) * 100 / total);
  };
  std::string out = "\nSlab Deactivation             Occurrences %\n";
  out += std::string(49, '-') + "\n";
  out += line("Slab full", SlubStat::DEACTIVATE_FULL);
  out += line("Slab empty", SlubStat::DEACTIVATE_EMPTY);
  out += line("Moved to head of partial list", SlubStat::DEACTIVATE_TO_HEAD);
  out += line("Moved to tail of partial list", SlubStat::DEACTIVATE_TO_TAIL);
  out += line("Deactivation bypass", SlubStat::DEACTIVATE_BYPASS);
  out += line("Refilled from foreign frees", SlubStat::ALLOC_REFILL);
  out += fmt::format("{:<29} not counted (allocations name no node)\n",
                     "Node mismatch");
  return out;
}
}  // namespace

std::string format_slabinfo_report(const CacheStats& cs) {
  const CacheInfo& c = cs.info;
  const uint64_t slab_bytes = uint64_t{PAGE_SIZE} << c.order;
  const uint64_t total = c.slabs * slab_bytes, used = c.objects * c.object_size;
  std::string out = fmt::format("\nSlabcache: {:<15}  Aliases: {:>2} Order : {:>2} Objects: {}\n",
                                c.name, c.aliases.size(), c.order, c.objects);
  if (c.flags & SLAB_HWCACHE_ALIGN) out += "** Hardware cacheline aligned\n";
  if (c.flags & SLAB_CACHE_DMA) out += "** Memory is allocated in a special DMA zone\n";
  if (c.flags & SLAB_TYPESAFE_BY_RCU) out += "** Slabs are destroyed via RCU\n";
  if (c.flags & SLAB_RECLAIM_ACCOUNT) out += "** Reclaim accounting active\n";
  out += "\nSizes (bytes)     Slabs              Debug                Memory\n";
  out += std::string(72, '-') + "\n";
  // report(): Full = slabs - partial - cpu_slabs. On 7.x the cpu_slabs
  // file is gone and slabinfo reads a missing file as 0.
  out += fmt::format("Object : {:>7}  Total  : {:>7}   Sanity Checks : {}  Total: {:>7}\n",
                     c.object_size, c.slabs, onoff(c.flags & SLAB_CONSISTENCY_CHECKS), total);
  out += fmt::format("SlabObj: {:>7}  Full   : {:>7}   Redzoning     : {}  Used : {:>7}\n",
                     c.slab_size, c.slabs - c.partial - c.cpu_slabs, onoff(c.flags & SLAB_RED_ZONE),
                     used);
  out += fmt::format("SlabSiz: {:>7}  Partial: {:>7}   Poisoning     : {}  Loss : {:>7}\n",
                     slab_bytes, c.partial, onoff(c.flags & SLAB_POISON), total - used);
  out += fmt::format("Loss   : {:>7}  CpuSlab: {:>7}   Tracking      : {}  Lalig: {:>7}\n",
                     c.slab_size - c.object_size, c.cpu_slabs, onoff(c.flags & SLAB_STORE_USER),
                     uint64_t{c.slab_size - c.object_size} * c.objects);
  out += fmt::format("Align  : {:>7}  Objects: {:>7}   Tracing       : {}  Lpadd: {:>7}\n",
                     c.align, c.objs_per_slab, onoff(c.flags & SLAB_TRACE),
                     (slab_bytes - uint64_t{c.objs_per_slab} * c.slab_size) * c.slabs);
  if (!c.aliases.empty()) {
    out += "\nAliases: ";
    for (const std::string& a : c.aliases) out += a + " ";
    out.back() = '\n';
  }
  return out + perf_counters(cs) + deactivation(cs);
}

}  // namespace simcache::sim
