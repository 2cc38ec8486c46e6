// bpftrace log2 histograms and KASAN reports (see kernel_formats.h).
#include <algorithm>
#include <string>

#include <re2/re2.h>

#include <fmt/format.h>
#include "model/io_uring/allocator.h"
#include "sim/report/kernel_formats.h"

namespace simcache::sim {
namespace {

// bpftrace's bucket bound: powers of 1024 become K, M, G, T, P, E.
std::string bound(uint64_t v) {
  static const char kSuffix[] = " KMGTPE";
  int i = 0;
  while (v >= 1024 && v % 1024 == 0 && i < 6) v /= 1024, ++i;
  return i ? fmt::format("{}{}", v, kSuffix[i]) : fmt::format("{}", v);
}

std::string bucket_label(size_t k) {
  if (k == 0) return "[0]";
  if (k == 1) return "[1]";
  const uint64_t lo = uint64_t{1} << (k - 1);
  const std::string hi = k == 64 ? "..." : bound(lo << 1);
  return fmt::format("[{}, {})", bound(lo), hi);
}

}  // namespace

std::array<uint64_t, kLog2Buckets> log2_buckets(const std::vector<uint64_t>& values) {
  BatchHists h;
  for (uint64_t v : values) h.add(Batch::kmem_cache_alloc_bulk, v);
  return h.h[0];
}

std::string format_log2_hist(const std::array<uint64_t, kLog2Buckets>& b) {
  size_t lo = kLog2Buckets, hi = 0;
  uint64_t max = 0;
  for (size_t k = 0; k < kLog2Buckets; ++k) {
    if (!b[k]) continue;
    lo = std::min(lo, k);
    hi = k;
    max = std::max(max, b[k]);
  }
  if (!max) return "";
  constexpr size_t kWidth = 52;
  std::string out;
  for (size_t k = lo; k <= hi; ++k) {
    const size_t bar = static_cast<size_t>(b[k] * kWidth / max);
    out += fmt::format("{:<16}{:>8} |{}{}|\n", bucket_label(k), b[k], std::string(bar, '@'),
                       std::string(kWidth - bar, ' '));
  }
  return out;
}

namespace {
// "allocated by site 0x10001 on cpu 2 at op 5" -> the stack line and task.
std::string history_block(const std::string& detail, const char* verb, const char* title) {
  // RE2, the project's regular expressions (sim/calibrate/measure_regex.cc).
  const RE2 re(std::string(verb) + " by site (0x[0-9a-f]{1,8}|0) on cpu ([0-9]+) at op ([0-9]+)");
  std::string hex, cpu, op;
  if (!RE2::PartialMatch(detail, re, &hex, &cpu, &op)) return "";
  const auto site = static_cast<SiteId>(std::stoul(hex, nullptr, 16));
  std::string_view name = iou::site_name(site);
  const std::string fn = name.empty() ? fmt::format("site {:#x}", site) : std::string(name);
  return fmt::format("\n{} by task on cpu {} at op {}:\n {}\n", title, cpu, op, fn);
}

std::string kernel_kind(const std::string& kind) {
  if (kind == "use-after-free") return "slab-use-after-free";
  if (kind == "use-after-put") return "use-after-free (object parked in a mempool)";
  return kind;
}
}  // namespace

std::string format_kasan(const KasanReport& k) {
  const std::string bar(66, '=');
  const std::string where = k.where.empty() ? "(no io_uring scope)" : k.where;
  std::string out = bar + "\n";
  if (k.kind == "leak" || k.kind == "memcg-imbalance" || k.kind == "model-invariant") {
    out += fmt::format("BUG: simcache: {} at end of run\n{}\n", k.kind, k.detail);
    return out + bar + "\n";
  }
  out += fmt::format("BUG: KASAN: {} in {}\n", kernel_kind(k.kind), where);
  out += fmt::format("{} of addr {:#x}\n", k.kind == "double-free" || k.kind == "invalid-free"
                                               ? "Free" : "Access",
                     k.ptr);
  out += history_block(k.detail, "allocated", "Allocated");
  out += history_block(k.detail, "last freed", "Freed");
  out += fmt::format("\nThe buggy address belongs to the object at {:#x}\n", k.ptr);
  out += fmt::format(" which belongs to the cache {}\n", k.cache.empty() ? "?" : k.cache);
  out += fmt::format("simcache: {}\n", k.detail);
  return out + bar + "\n";
}

}  // namespace simcache::sim
