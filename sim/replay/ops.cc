// The op format's parser and printer (docs/ops.md).
#include "sim/replay/ops.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/io_uring/ctx.h"
#include "sim/replay/text.h"

namespace simcache::sim {
namespace {

constexpr std::string_view kOpNames[] = {
#define SIMCACHE_OP(id, text) text,
#include "sim/replay/ops.def"
#undef SIMCACHE_OP
};

enum Field : uint8_t { kRing, kRing2, kN, kOff, kSlot, kFlag, kFlag2, kObj, kGfp, kCache, kSite,
                       kAlign, kSlabFlags };
// One key of an op: its field, whether it is required, its default and,
// for numbers, the range checked when it is read (docs/ops.md lists them).
struct Key {
  std::string_view name;
  Field field;
  bool required;
  int64_t def;
  int64_t lo = 0, hi = 0;
};
struct OpSpec {
  std::vector<Key> keys;
};

// The ranges of the table of record below.
constexpr int64_t kU32 = UINT32_MAX;
constexpr int64_t kHandle = int64_t{1} << 48;  // ring handles (replay uses fd or 2^40 + n)
constexpr int64_t kMaxI64 = INT64_MAX;
constexpr int64_t kSq = iou::IORING_MAX_ENTRIES, kCq = iou::IORING_MAX_CQ_ENTRIES;
constexpr int64_t kCacheMax = static_cast<int64_t>(KMALLOC_MAX_SIZE);

// Which keys each op takes, in OpKind order: the op format's table of
// record. Every number is read through its range (parse_field), so no
// value past this door needs a cast that could wrap.
const std::vector<OpSpec>& specs() {
  static const std::vector<OpSpec> s = {
      {{{"ring", kRing, true, -1, 0, kHandle}, {"sq", kN, false, 256, 1, kSq},
        {"cq", kOff, false, 0, 0, kCq}, {"defer_taskrun", kFlag, false, 0, 0, 1},
        {"reaped", kFlag2, false, 0, 0, 1}}},  // ring_create
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // ring_exit
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // enter_begin
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // enter_end
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // reap
      {{{"ring", kRing, true, -1, 0, kHandle}, {"nr", kN, true, 0, 0, kU32}}},  // register_files
      {{{"ring", kRing, true, -1, 0, kHandle}, {"nr", kN, true, 0, 0, kU32},
        {"prefill_flag", kFlag, false, 0, 0, 1}}},                          // register_sparse
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // unregister_files
      {{{"ring", kRing, true, -1, 0, kHandle}, {"off", kOff, false, 0, 0, kU32},
        {"count", kN, true, 0, 0, kU32}, {"set", kFlag, false, 0, 0, 1}}},  // files_update
      {{{"src", kRing, true, -1, 0, kHandle}, {"dst", kRing2, true, -1, 0, kHandle},
        {"src_slot", kOff, false, 0, 0, kU32}, {"dst_slot", kSlot, false, -1, 0, kU32 - 1},
        {"defer_taskrun", kFlag, false, 0, 0, 1}}},                         // send_fd
      {{{"ring", kRing, true, -1, 0, kHandle}, {"match", kFlag, false, 1, 0, 1}}},  // futex_wait
      {{{"ring", kRing, true, -1, 0, kHandle}, {"nr", kN, false, 8, 0, kU32},
        {"match", kFlag, false, 1, 0, 1}}},                                 // futex_waitv
      {{{"ring", kRing, true, -1, 0, kHandle}, {"nr", kN, false, 1, 0, kU32}}},  // futex_wake
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // poll_add
      {{{"ring", kRing, true, -1, 0, kHandle},
        {"slot", kSlot, false, -1, 0, kU32 - 1}}},                          // read_fixed
      {{{"ring", kRing, true, -1, 0, kHandle}, {"nr", kN, false, 1, 0, kU32}}},  // nop
      {{{"obj", kObj, true, 0}, {"size", kN, true, 0, 0, kMaxI64}, {"gfp", kGfp, false, 0},
        {"site", kSite, false, 0}}},                                        // kmalloc
      {{{"obj", kObj, true, 0}}},                                           // kfree
      {{{"cache", kCache, true, 0}, {"size", kN, true, 0, 1, kCacheMax},
        {"align", kAlign, false, 0, 0, kCacheMax},
        {"flags", kSlabFlags, false, 0}}},                                  // kmem_cache_create
      {{{"obj", kObj, true, 0}, {"cache", kCache, true, 0}, {"gfp", kGfp, false, 0},
        {"site", kSite, false, 0}}},                                        // kmem_cache_alloc
      {{{"obj", kObj, true, 0}, {"cache", kCache, false, 0}}},              // kmem_cache_free
      {{{"page", kObj, true, 0}, {"order", kN, false, 0, 0, MAX_PAGE_ORDER},
        {"gfp", kGfp, false, 0}}},                                          // alloc_pages
      {{{"page", kObj, true, 0}}},                                          // free_pages
      {{{"measured", kFlag, false, 1, 0, 1}}},                              // round_begin
      {{{"ops", kN, false, 0, 0, kMaxI64}}},                                // round_end
      {{}},                                                                 // timed_begin
      {{}},                                                                 // timed_end
      {{{"ring", kRing, true, -1, 0, kHandle}}},                            // snapshot
  };
  return s;
}

bool set_field(const Key& k, std::string_view v, OpNames& names, Op* op, uint32_t* align,
               slab_flags_t* sflags, std::string* why) {
  int64_t x = 0;
  switch (k.field) {
    case kCache: op->cache = names.cache(v); return true;
    case kSite: op->site = names.site(v); return true;
    case kGfp: {
      // Files repeat a handful of flag sets: the last one parsed is kept.
      thread_local std::string last;
      thread_local gfp_t last_gfp = 0;
      if (!last.empty() && v == last) return op->gfp = last_gfp, true;
      if (!parse_gfp(v, /*strict=*/true, &op->gfp, why)) return false;
      last.assign(v), last_gfp = op->gfp;
      return true;
    }
    case kSlabFlags: return parse_slab_flags(v, sflags, why);
    case kSlot:
      if (v == "alloc") return op->slot = -1, true;
      break;
    case kObj: return parse_field_u64(k.name, v, 0, UINT64_MAX, &op->obj, why);
    default: break;
  }
  if (!parse_field(k.name, v, k.lo, k.hi, &x, why)) {
    // A number outside the range names the field; anything else is a typo.
    if (why->find("is outside") == std::string::npos) *why = "expected an integer";
    return false;
  }
  switch (k.field) {
    case kRing: op->ring = x; break;
    case kRing2: op->ring2 = x; break;
    case kN: op->n = x; break;
    case kOff: op->off = x; break;
    case kSlot: op->slot = x; break;
    case kFlag: op->flag = x; break;
    case kFlag2: op->flag2 = x; break;
    case kAlign: *align = static_cast<uint32_t>(x); break;  // in [0, KMALLOC_MAX_SIZE]
    default: break;
  }
  return true;
}

// The default of a numeric key (no text to parse: the table's value).
void set_default(const Key& k, Op* op) {
  switch (k.field) {
    case kRing: op->ring = k.def; break;
    case kRing2: op->ring2 = k.def; break;
    case kN: op->n = k.def; break;
    case kOff: op->off = k.def; break;
    case kSlot: op->slot = k.def; break;
    case kFlag: op->flag = k.def; break;
    case kFlag2: op->flag2 = k.def; break;
    default: break;
  }
}

}  // namespace

std::string_view op_name(OpKind k) { return kOpNames[static_cast<size_t>(k)]; }

// The op names by length and first letter: a lookup compares the one to
// three names that share both (a scan of every name cost 170
// instructions a line, a tenth of run-ops' parse).
namespace {
constexpr size_t kOpNameMax = 24;
constexpr bool op_names_indexable() {
  for (std::string_view n : kOpNames)
    if (n.empty() || n.size() > kOpNameMax || n[0] < 'a' || n[0] > 'z') return false;
  return true;
}
static_assert(op_names_indexable());
static_assert(kNumOpKinds < 255);
struct OpNameIndex {
  // [length][letter - 'a'] -> the first name's index + 1, 0 for none; names
  // sharing a slot follow in kOpNames' order, found by `next`.
  uint8_t first[kOpNameMax + 1][26] = {};
  uint8_t next[kNumOpKinds] = {};
  constexpr OpNameIndex() {
    for (size_t i = kNumOpKinds; i-- > 0;) {
      const std::string_view n = kOpNames[i];
      uint8_t& slot = first[n.size()][n[0] - 'a'];
      next[i] = slot;
      slot = static_cast<uint8_t>(i + 1);
    }
  }
};
constexpr OpNameIndex kOpNameIndex;
}  // namespace

bool op_kind_by_name(std::string_view name, OpKind* out) {
  if (name.empty() || name.size() > kOpNameMax || name[0] < 'a' || name[0] > 'z') return false;
  for (uint8_t i = kOpNameIndex.first[name.size()][name[0] - 'a']; i != 0;
       i = kOpNameIndex.next[i - 1])
    if (kOpNames[i - 1] == name) return *out = static_cast<OpKind>(i - 1), true;
  return false;
}

uint16_t OpNames::task(std::string_view name) {
  auto it = task_ix.find(absl::string_view(name.data(), name.size()));
  if (it != task_ix.end()) return static_cast<uint16_t>(it->second);  // < kMaxTasks
  return task(name, default_user_task(name));
}

uint16_t OpNames::task(std::string_view name, bool user_default) {
  auto it = task_ix.find(absl::string_view(name.data(), name.size()));
  if (it != task_ix.end()) return static_cast<uint16_t>(it->second);  // < kMaxTasks
  // Op::task is 16 bits: names past the table share its last entry.
  if (tasks.size() >= kMaxTasks - 1) {
    if (tasks.size() == kMaxTasks - 1) tasks.push_back({"(more-tasks)", true});
    return static_cast<uint16_t>(kMaxTasks - 1);
  }
  tasks.push_back({std::string(name), user_default});
  task_ix.emplace(std::string(name), static_cast<uint32_t>(tasks.size() - 1));
  return static_cast<uint16_t>(tasks.size() - 1);
}

uint32_t OpNames::cache(std::string_view name) {
  auto it = cache_ix.find(absl::string_view(name.data(), name.size()));
  if (it != cache_ix.end()) return it->second;
  caches.push_back({std::string(name), 0, 0, 0});
  cache_ix.emplace(std::string(name), static_cast<uint32_t>(caches.size() - 1));
  return static_cast<uint32_t>(caches.size() - 1);
}

uint32_t OpNames::site(std::string_view name) {
  if (name.empty()) return 0;
  auto it = site_ix.find(absl::string_view(name.data(), name.size()));
  if (it != site_ix.end()) return it->second;
  sites.emplace_back(name);
  site_ix.emplace(std::string(name), static_cast<uint32_t>(sites.size() - 1));
  return static_cast<uint32_t>(sites.size() - 1);
}

bool parse_op_args(OpKind kind, std::string_view args, size_t col0, OpNames& names, Op* op,
                   std::string* error) {
  const OpSpec& spec = specs()[static_cast<size_t>(kind)];
  op->kind = kind;
  uint32_t seen = 0, align = 0;
  slab_flags_t sflags = 0;
  for (const Key& k : spec.keys) set_default(k, op);  // defaults of the numeric keys
  op->gfp = GFP_KERNEL;
  if (kind == OpKind::cache_free) op->cache = UINT32_MAX;  // not named: the object's own
  size_t pos = 0;
  while (pos < args.size()) {
    if (args[pos] == ' ' || args[pos] == '\t') { ++pos; continue; }
    const size_t end = token_end(args, pos);  // not find_first_of: memchr per character
    const std::string_view tok = args.substr(pos, end - pos);
    const size_t col = col0 + pos;
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return *error = fmt::format("{}: '{}': expected key=value", col, tok), false;
    const std::string_view key = tok.substr(0, eq), val = tok.substr(eq + 1);
    size_t k = 0;
    while (k < spec.keys.size() && spec.keys[k].name != key) ++k;
    if (k == spec.keys.size()) {
      std::string valid;
      for (const Key& x : spec.keys) valid += (valid.empty() ? "" : ", ") + std::string(x.name);
      return *error = fmt::format("{}: {} takes no key '{}' (valid: {})", col, op_name(kind),
                                  key, valid.empty() ? "none" : valid),
             false;
    }
    std::string why;
    if (!set_field(spec.keys[k], val, names, op, &align, &sflags, &why)) {
      // Range and integer errors name the field; the others quote key=value.
      if (why.rfind("field '", 0) == 0) return *error = fmt::format("{}: {}", col + eq + 1, why), false;
      return *error = fmt::format("{}: {}='{}': {}", col + eq + 1, key, val, why), false;
    }
    seen |= 1u << k;
    pos = end;
  }
  for (size_t k = 0; k < spec.keys.size(); ++k)
    if (spec.keys[k].required && !(seen & (1u << k)))
      return *error = fmt::format("{}: {} needs {}=", col0, op_name(kind), spec.keys[k].name),
             false;
  if (kind == OpKind::cache_create) {
    OpCache& c = names.caches[op->cache];
    c.size = static_cast<uint32_t>(op->n), c.align = align, c.flags = sflags;  // n in [1, 4 MiB]
  }
  return true;
}

bool op_in_range(const Op& op, std::string* why) {
  for (const Key& k : specs()[static_cast<size_t>(op.kind)].keys) {
    int64_t v = 0;
    switch (k.field) {
      case kRing: v = op.ring; break;
      case kRing2: v = op.ring2; break;
      case kN: v = op.n; break;
      case kOff: v = op.off; break;
      case kSlot:
        if (op.slot == -1) continue;  // alloc
        v = op.slot;
        break;
      case kFlag: v = op.flag; break;
      case kFlag2: v = op.flag2; break;
      default: continue;  // handles, names and flags: nothing to range
    }
    if (v < k.lo || v > k.hi) return *why = outside(k.name, std::to_string(v), k.lo, k.hi), false;
  }
  return true;
}

std::string op_task_token(std::string_view name) {
  std::string t(name);  // one token: traced task names may have blanks
  for (char& c : t)
    if (c == ' ' || c == '\t' || c == '#' || c == '=' || c == '\r') c = '_';
  return t.empty() ? "_" : t;
}

std::string format_op(const Op& op, const OpNames& names) {
  std::string out = fmt::format("{} {} {}", op.cpu, op_task_token(names.tasks.at(op.task).name),
                                op_name(op.kind));
  const OpSpec& spec = specs()[static_cast<size_t>(op.kind)];
  for (const Key& k : spec.keys) {
    std::string v;
    switch (k.field) {
      case kRing: v = std::to_string(op.ring); break;
      case kRing2: v = std::to_string(op.ring2); break;
      case kN: v = std::to_string(op.n); break;
      case kOff: v = std::to_string(op.off); break;
      case kSlot: v = op.slot < 0 ? "alloc" : std::to_string(op.slot); break;
      case kFlag: v = std::to_string(op.flag); break;
      case kFlag2: v = std::to_string(op.flag2); break;
      case kObj: v = std::to_string(op.obj); break;
      case kGfp: v = format_gfp(op.gfp); break;
      case kCache:
        if (op.cache == UINT32_MAX) continue;
        v = names.caches.at(op.cache).name;
        break;
      case kSite:
        if (op.site == 0) continue;
        v = names.sites.at(op.site);
        break;
      case kAlign: v = std::to_string(names.caches.at(op.cache).align); break;
      case kSlabFlags: v = format_slab_flags(names.caches.at(op.cache).flags); break;
    }
    out += fmt::format(" {}={}", k.name, v);
  }
  return out;
}

}  // namespace simcache::sim
