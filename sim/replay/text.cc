#include "sim/replay/text.h"

#include <array>
#include <utility>


#include <fmt/format.h>

namespace simcache::sim {
namespace {

struct Name {
  std::string_view name;
  uint32_t bits;
};

constexpr Name kSlab[] = {
    {"HWCACHE_ALIGN", SLAB_HWCACHE_ALIGN}, {"ACCOUNT", SLAB_ACCOUNT},
    {"RECLAIM_ACCOUNT", SLAB_RECLAIM_ACCOUNT}, {"CACHE_DMA", SLAB_CACHE_DMA},
    {"CACHE_DMA32", SLAB_CACHE_DMA32}, {"TYPESAFE_BY_RCU", SLAB_TYPESAFE_BY_RCU},
    {"PANIC", SLAB_PANIC}, {"NO_MERGE", SLAB_NO_MERGE}, {"RED_ZONE", SLAB_RED_ZONE},
    {"POISON", SLAB_POISON}, {"STORE_USER", SLAB_STORE_USER},
    {"NO_OBJ_EXT", SLAB_NO_OBJ_EXT},
};

template <class F>
void split_bar(std::string_view s, F&& f) {
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find('|', pos);
    if (e == std::string_view::npos) e = s.size();
    f(s.substr(pos, e - pos));
    pos = e + 1;
  }
}

}  // namespace

// Hand-rolled digit loops: replay parses several numbers per trace line,
// and std::from_chars with a base argument is the slowest part of a line.
namespace {
// Digit values by character; 0xff: not a digit.
constexpr std::array<uint8_t, 256> kDigit = [] {
  std::array<uint8_t, 256> t{};
  t.fill(0xff);
  for (int c = 0; c < 10; ++c) t['0' + c] = static_cast<uint8_t>(c);
  for (int c = 0; c < 6; ++c) t['a' + c] = t['A' + c] = static_cast<uint8_t>(10 + c);
  return t;
}();

bool digits(std::string_view s, int base, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  if (base == 16) {
    if (s.size() > 16) return false;
    for (char c : s) {
      const uint8_t d = kDigit[static_cast<unsigned char>(c)];
      if (d > 15) return false;
      v = (v << 4) | d;
    }
  } else {
    if (s.size() > 20) return false;  // 2^64 - 1 has 20 digits
    for (char c : s) {
      const uint8_t d = kDigit[static_cast<unsigned char>(c)];
      if (d > 9) return false;
      if (s.size() == 20 && (v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - d)) return false;
      v = v * 10 + d;
    }
  }
  *out = v;
  return true;
}
}  // namespace

bool parse_u64(std::string_view s, uint64_t* out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return s.size() <= 18 && digits(s.substr(2), 16, out);
  return digits(s, 10, out);
}

bool parse_i64(std::string_view s, int64_t* out) {
  const bool neg = !s.empty() && s[0] == '-';
  if (neg) s.remove_prefix(1);
  uint64_t u = 0;
  if (!parse_u64(s, &u) || u > (uint64_t{1} << 63) - (neg ? 0 : 1)) return false;
  *out = neg ? static_cast<int64_t>(0 - u) : static_cast<int64_t>(u);
  return true;
}

bool parse_hex(std::string_view s, uint64_t* out) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return false;
  return digits(s, 16, out);
}

namespace {
// Digits (decimal, or hex after 0x) with an optional '-': a number, even
// if too large for 64 bits (then a range error, not a syntax error).
bool numeric(std::string_view s) {
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) s.remove_prefix(2);
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (kDigit[static_cast<unsigned char>(c)] > (hex ? 15 : 9)) return false;
  return true;
}
}  // namespace

std::string outside(std::string_view name, std::string_view v, int64_t lo, int64_t hi) {
  return fmt::format("field '{}': {} is outside [{}, {}]", name, v, lo, hi);
}

bool parse_field_text(std::string_view name, std::string_view v, int64_t lo, int64_t hi,
                      int64_t* out, std::string* why) {
  int64_t x = 0;
  if (!parse_i64(v, &x)) {
    if (numeric(v)) return *why = outside(name, v, lo, hi), false;
    return *why = fmt::format("field '{}': '{}' is not an integer", name, v), false;
  }
  if (x < lo || x > hi) return *why = outside(name, v, lo, hi), false;
  *out = x;
  return true;
}

bool parse_field_u64_text(std::string_view name, std::string_view v, uint64_t lo, uint64_t hi,
                          uint64_t* out, std::string* why) {
  uint64_t x = 0;
  if (!parse_u64(v, &x) || x < lo || x > hi) {
    if (numeric(v))
      return *why = fmt::format("field '{}': {} is outside [{}, {}]", name, v, lo, hi), false;
    return *why = fmt::format("field '{}': '{}' is not an integer", name, v), false;
  }
  *out = x;
  return true;
}

gfp_t kernel_gfp_bits(uint64_t raw) {
  // (kernel bit, model bit): the kernel's values of ___GFP_* in bits 0-22.
  static constexpr std::pair<uint32_t, gfp_t> kBits[] = {
      {0x01u, __GFP_DMA},          {0x10u, __GFP_RECLAIMABLE},   {0x20u, __GFP_HIGH},
      {0x100u, __GFP_ZERO},        {0x400u, __GFP_DIRECT_RECLAIM}, {0x800u, __GFP_KSWAPD_RECLAIM},
      {0x2000u, __GFP_NOWARN},     {0x8000u, __GFP_NOFAIL},      {0x10000u, __GFP_NORETRY},
      {0x40000u, __GFP_COMP},      {0x80000u, __GFP_NOMEMALLOC}, {0x200000u, __GFP_THISNODE},
      {0x400000u, __GFP_ACCOUNT},
  };
  gfp_t g = 0;
  for (const auto& [k, m] : kBits)
    if (raw & k) g |= m;
  return g;
}

bool parse_gfp(std::string_view s, bool strict, gfp_t* out, std::string* why) {
  *out = 0;
  if (s.empty()) return *why = "empty gfp flags", false;
  uint64_t raw = 0;
  if (s == "0") return true;
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && parse_u64(s, &raw))
    return *out = kernel_gfp_bits(raw), true;
  bool ok = true;
  split_bar(s, [&](std::string_view n) {
    for (const GfpName& g : gfp_names())
      if (g.name == n) return void(*out |= g.bits);
    // Leftover bits show_gfp_flags() prints in hex: the ones it has no
    // name for.
    if (n.size() > 2 && n[0] == '0' && n[1] == 'x' && parse_u64(n, &raw))
      return void(*out |= kernel_gfp_bits(raw));
    if (n.rfind("0x", 0) == 0) return;
    if (strict && ok) *why = fmt::format("unknown gfp flag '{}'", n), ok = false;
  });
  return ok;
}

bool parse_slab_flags(std::string_view s, slab_flags_t* out, std::string* why) {
  *out = 0;
  if (s == "0") return true;
  bool ok = true;
  split_bar(s, [&](std::string_view n) {
    if (n.rfind("SLAB_", 0) == 0) n.remove_prefix(5);
    for (const Name& f : kSlab)
      if (f.name == n) return void(*out |= f.bits);
    if (ok) *why = fmt::format("unknown slab flag '{}'", n), ok = false;
  });
  return ok;
}

std::string format_slab_flags(slab_flags_t f) {
  std::string out;
  for (const Name& n : kSlab)
    if (f & n.bits) out += (out.empty() ? "" : "|") + std::string(n.name);
  return out.empty() ? "0" : out;
}

}  // namespace simcache::sim
