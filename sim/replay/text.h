// Small text helpers shared by the op-format and trace parsers: integers
// in decimal or 0x hex, gfp and slab flag names.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "model/gfp.h"
#include "model/types.h"

namespace simcache::sim {

// Decimal, or hex with a 0x prefix; a leading '-' for signed values.
bool parse_i64(std::string_view s, int64_t* out);
bool parse_u64(std::string_view s, uint64_t* out);
// Hex digits with or without 0x (trace pointers, pfns in hex).
bool parse_hex(std::string_view s, uint64_t* out);

// A numeric field of a table of record (the op format's key table in
// ops.cc, the trace fields in trace.cc): `v` in decimal or 0x hex, checked
// against [lo, hi] as it is read. On failure *why is one of
//   field 'NAME': V is outside [LO, HI]    (also for a number past 64 bits)
//   field 'NAME': 'V' is not an integer
// The common case, 1 to 18 plain decimal digits within range, is read in
// line (the calls cost run-ops a tenth of its parse); the rest, with its
// errors, by parse_field_text() and parse_field_u64_text().
bool parse_field_text(std::string_view name, std::string_view v, int64_t lo, int64_t hi,
                      int64_t* out, std::string* why);
// The same for an unsigned 64-bit field (handles, page frame numbers).
bool parse_field_u64_text(std::string_view name, std::string_view v, uint64_t lo, uint64_t hi,
                          uint64_t* out, std::string* why);
// `v` as 1 to 18 decimal digits (below 10^18: no overflow), else false.
inline bool short_decimal(std::string_view v, uint64_t* out) {
  if (v.empty() || v.size() > 18) return false;
  uint64_t x = 0;
  for (const char c : v) {
    const unsigned d = static_cast<unsigned char>(c) - unsigned{'0'};
    if (d > 9) return false;
    x = x * 10 + d;
  }
  *out = x;
  return true;
}
inline bool parse_field(std::string_view name, std::string_view v, int64_t lo, int64_t hi,
                        int64_t* out, std::string* why) {
  uint64_t x = 0;
  if (short_decimal(v, &x) && static_cast<int64_t>(x) >= lo && static_cast<int64_t>(x) <= hi)
    return *out = static_cast<int64_t>(x), true;
  return parse_field_text(name, v, lo, hi, out, why);
}
inline bool parse_field_u64(std::string_view name, std::string_view v, uint64_t lo,
                            uint64_t hi, uint64_t* out, std::string* why) {
  uint64_t x = 0;
  if (short_decimal(v, &x) && x >= lo && x <= hi) return *out = x, true;
  return parse_field_u64_text(name, v, lo, hi, out, why);
}
// The end of the token at `i`: the first ' ' or '\t' at or after it, or
// s.size(). Eight bytes a step (a word's bytes compared with both blanks at
// once); a token is a few to forty characters, so this beats a loop of
// compares, and two memchr() calls (one a blank) cost more in call and
// set-up than a token takes to scan. The trace and op-file parsers share it.
inline size_t token_end(std::string_view s, size_t i) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const char* d = s.data();
  const size_t n = s.size();
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, d + i, 8);
    // The first byte in memory the least significant, on any host: a
    // borrow only flags bytes above a zero, so the lowest flagged byte is
    // exact and is the first blank.
    if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
    const uint64_t sp = w ^ (kOnes * ' '), tab = w ^ (kOnes * '\t');
    const uint64_t hit = (((sp - kOnes) & ~sp) | ((tab - kOnes) & ~tab)) & kHigh;
    if (hit != 0) return i + static_cast<size_t>(std::countr_zero(hit) >> 3);
  }
  while (i < n && d[i] != ' ' && d[i] != '\t') ++i;
  return i;
}
// "field 'NAME': V is outside [LO, HI]".
std::string outside(std::string_view name, std::string_view v, int64_t lo, int64_t hi);

// "GFP_KERNEL|__GFP_ZERO" as show_gfp_flags() prints it, or a raw value
// ("0x400dc0", as trace-cmd report -R and the fields option print it),
// decoded by kernel_gfp_bits(). strict: unknown names are errors (op
// files); otherwise they are ignored, as kernels add flags over versions
// (traces).
bool parse_gfp(std::string_view s, bool strict, gfp_t* out, std::string* why);
// The model's bits of a kernel gfp mask. Only bits 0 to 22 are read: their
// values are the same in every kernel the profiles model (gfp_types.h,
// from 6.0; gfp.h before), up to ___GFP_ACCOUNT (0x400000). The bits above
// depend on the build's configuration (KASAN_HW_TAGS, LOCKDEP,
// SLAB_OBJ_EXT) and are ignored.
gfp_t kernel_gfp_bits(uint64_t raw);
// "HWCACHE_ALIGN|ACCOUNT" (SLAB_ prefix optional) or "0".
bool parse_slab_flags(std::string_view s, slab_flags_t* out, std::string* why);
std::string format_slab_flags(slab_flags_t f);

}  // namespace simcache::sim
