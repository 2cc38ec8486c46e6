// The fixed-file table: allocation of its arrays, the slot bitmap and the
// install path (io_uring/filetable.[ch]).
#pragma once

#include <cstdint>

#include "model/io_uring/ctx.h"
#include "model/io_uring/io_kernel.h"

namespace simcache::iou {

// Defined in rsrc.h.
template <IoAllocator A>
Ptr io_rsrc_node_alloc(IoKernel<A>& k, IoRingCtx& ctx, const Task& t);
template <IoAllocator A>
bool io_reset_rsrc_node(IoKernel<A>& k, IoRingCtx& ctx, uint32_t idx, const Task& t);

// Mirrors io_file_bitmap_set(): the next search starts after this slot.
inline void io_file_bitmap_set(IoFileTable& ft, uint32_t bit) {
  ft.bitmap[bit >> 6] |= uint64_t{1} << (bit & 63);
  ft.alloc_hint = bit + 1;
}

// Mirrors io_file_bitmap_clear(): the freed slot is the next candidate.
inline void io_file_bitmap_clear(IoFileTable& ft, uint32_t bit) {
  ft.bitmap[bit >> 6] &= ~(uint64_t{1} << (bit & 63));
  ft.alloc_hint = bit;
}

// find_next_zero_bit(bitmap, end, from).
inline uint32_t io_find_next_zero_bit(const IoFileTable& ft, uint32_t from, uint32_t end) {
  for (uint32_t i = from; i < end;) {
    const uint64_t free_bits = ~ft.bitmap[i >> 6] >> (i & 63);
    if (free_bits != 0) {
      const uint32_t bit = i + static_cast<uint32_t>(__builtin_ctzll(free_bits));
      return bit < end ? bit : end;
    }
    i = (i | 63) + 1;
  }
  return end;
}

// Mirrors io_file_bitmap_get(), 6.1+: first free slot in [alloc_hint,
// alloc_end), then once more in [alloc_start, old hint); -ENFILE if full.
inline int io_file_bitmap_get(IoFileTable& ft) {
  if (!ft.registered) return kENFILE;
  uint32_t end = ft.alloc_end;
  while (true) {
    const uint32_t bit = io_find_next_zero_bit(ft, ft.alloc_hint, end);
    if (bit < end) return static_cast<int>(bit);
    if (ft.alloc_hint == ft.alloc_start) break;
    end = ft.alloc_hint;
    ft.alloc_hint = ft.alloc_start;
  }
  return kENFILE;
}

// Mirrors io_file_table_set_alloc_range().
inline void io_file_table_set_alloc_range(IoFileTable& ft, uint32_t off, uint32_t len) {
  ft.alloc_start = off;
  ft.alloc_end = off + len;
  ft.alloc_hint = off;
}

// Mirrors io_alloc_file_tables(), 6.16+: the nodes array
// (kvmalloc_array(nr, 8, GFP_KERNEL_ACCOUNT | __GFP_ZERO) from 6.16;
// GFP_KERNEL | __GFP_ZERO in 6.13) and the bitmap (bitmap_zalloc,
// GFP_KERNEL_ACCOUNT: kmalloc of BITS_TO_LONGS(nr) longs, zeroed).
template <IoAllocator A>
bool io_alloc_file_tables(IoKernel<A>& k, IoRingCtx& ctx, uint32_t nr, const Task& t) {
  IoFileTable& ft = ctx.files;
  const uint32_t words = (nr + 63) / 64;
  ft.nodes_mem = k.mm.kvmalloc(uint64_t{nr} * 8, k.profile.file_table_gfp,
                               at_site(t, kSiteRsrcNodes));
  if (ft.nodes_mem == kNull) return false;
  ft.bitmap_mem = k.mm.kmalloc(words * 8, GFP_KERNEL_ACCOUNT | __GFP_ZERO,
                               at_site(t, kSiteFileBitmap));
  if (ft.bitmap_mem == kNull) {
    k.mm.kvfree(ft.nodes_mem, t);
    ft.nodes_mem = kNull;
    return false;
  }
  ft.nodes.assign(nr, kNull);
  ft.bitmap.assign(words, 0);
  ft.nr = nr;
  ft.alloc_hint = 0;
  ft.registered = true;
  return true;
}

// Mirrors io_free_file_tables(): kvfree the nodes array, bitmap_free().
template <IoAllocator A>
void io_free_file_tables(IoKernel<A>& k, IoRingCtx& ctx, const Task& t) {
  IoFileTable& ft = ctx.files;
  k.mm.kvfree(ft.nodes_mem, t);
  k.mm.kfree(ft.bitmap_mem, t);
  ft.nodes_mem = ft.bitmap_mem = kNull;
  ft.nodes.clear();
  ft.bitmap.clear();
  ft.nr = 0;
  ft.registered = false;
}

// Mirrors io_install_fixed_file(), 6.13+: allocate the new node FIRST,
// then reset the slot (which may put the old node into node_cache), then
// store. Before 6.13 (profile v6.12) no node is allocated: the slot just
// takes the file. The caller's file reference moves into the slot.
template <IoAllocator A>
int io_install_fixed_file(IoKernel<A>& k, IoRingCtx& ctx, uint32_t idx, const Task& t) {
  SiteScope scope(k.mm, CallSite::io_install_fixed_file);
  IoFileTable& ft = ctx.files;
  if (!ft.registered) return kENXIO;
  if (idx >= ft.nr) return kEINVAL;
  Ptr node = kNull;
  if (k.profile.install_allocates_node) {
    node = io_rsrc_node_alloc(k, ctx, t);
    if (node == kNull) return kENOMEM;
  }
  if (!io_reset_rsrc_node(k, ctx, idx, t)) io_file_bitmap_set(ft, idx);
  ft.nodes[idx] = node;
  return 0;
}

// Mirrors __io_fixed_fd_install(): `slot` is 0-based, or
// IORING_FILE_INDEX_ALLOC to take a free slot from the bitmap. Returns the
// slot allocated (ALLOC), 0 (explicit slot) or a negative errno.
template <IoAllocator A>
int io_fixed_fd_install_locked(IoKernel<A>& k, IoRingCtx& ctx, uint32_t slot,
                               const Task& t) {
  ev(k.mm, Event::fixed_file_install);
  const bool alloc_slot = slot == IORING_FILE_INDEX_ALLOC;
  if (alloc_slot) {
    const int got = io_file_bitmap_get(ctx.files);
    if (got < 0) {
      ev(k.mm, Event::file_alloc_enfile);
      return got;
    }
    slot = static_cast<uint32_t>(got);
  }
  const int ret = io_install_fixed_file(k, ctx, slot, t);
  if (ret == 0 && alloc_slot) return static_cast<int>(slot);
  return ret;
}

}  // namespace simcache::iou
