// How a slab object's pointer is laid out: the object's index in its
// slab, the slab's slot in SLUB's slab table and the slot's epoch (a
// reused slot gets a new one, so a stale pointer decodes to nothing).
// Large kmalloc and vmalloc pointers carry kLargeBit / kVmallocBit and an
// id instead (model/types.h).
#pragma once

#include <cstdint>

#include "model/types.h"

namespace simcache {

namespace slub_ptr {
inline constexpr int kIdxBits = 15;
inline constexpr int kSlotBits = 32;
// The epoch fills bits 47..61: bit 62 is kVmallocBit and bit 63 kLargeBit,
// so an epoch of 16 bits would turn a slab pointer into a vmalloc one after
// 32,768 reuses of its slot. It counts 1..kEpochMask and wraps to 1 (0 is
// never used, so slab 0's first object is never kNull).
inline constexpr int kEpochBits = 15;
inline constexpr Ptr kIdxMask = (1ull << kIdxBits) - 1;
inline constexpr Ptr kSlotMask = (1ull << kSlotBits) - 1;
inline constexpr uint16_t kEpochMask = (1u << kEpochBits) - 1;
static_assert(kIdxBits + kSlotBits + kEpochBits == 62, "slab pointers stay below kVmallocBit");
inline uint16_t next_epoch(uint16_t e) {
  const uint16_t n = static_cast<uint16_t>((e + 1u) & kEpochMask);
  return n ? n : 1;
}
}  // namespace slub_ptr

}  // namespace simcache
