// A fake of the seam below SLUB (model/mm/backend.h) for the direct SLUB
// tests: pages are numbered and counted by order, any page allocation can
// be refused (by call number or by order), and memcg charges are recorded
// per memcg without stocks, so a test sees exactly what SLUB asked for.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "model/mm/backend.h"

namespace simcache::testing {

class FakeSlabBackend final : public SlabBackend {
 public:
  // --- knobs ---------------------------------------------------------------
  bool online = false;            // memcg_kmem_online()
  bool refuse_charges = false;    // every charge_obj/charge_pages fails
  uint32_t refuse_order_above = 99;  // orders above this one fail
  uint64_t fail_from_call = 0;    // refuse the alloc_pages call with this
                                  // 1-based number and every later one (0: none)

  // --- what SLUB asked for -------------------------------------------------
  uint64_t page_calls = 0;        // alloc_pages() calls, refused ones too
  uint64_t refused = 0;
  std::map<uint32_t, uint64_t> allocs_by_order, frees_by_order;
  std::map<MemcgId, int64_t> charged_bytes;  // charge_obj - uncharge_obj
  uint64_t charge_calls = 0, uncharge_calls = 0;

  uint64_t live_pages() const { return live_.size(); }

  uint32_t alloc_pages(uint32_t order, NodeId, gfp_t, CpuId, bool* cold = nullptr) override {
    ++page_calls;
    if (cold) *cold = false;
    if ((fail_from_call && page_calls >= fail_from_call) || order > refuse_order_above) {
      ++refused;
      return 0;
    }
    ++allocs_by_order[order];
    live_.insert(next_);
    return next_++;
  }
  void free_pages(uint32_t page, uint32_t order, CpuId) override {
    ++frees_by_order[order];
    live_.erase(page);
  }
  bool kmem_online() const override { return online; }
  bool charge_obj(CpuId, MemcgId memcg, NodeId, uint32_t bytes, gfp_t) override {
    ++charge_calls;
    if (refuse_charges) return false;
    charged_bytes[memcg] += bytes;
    return true;
  }
  void uncharge_obj(CpuId, MemcgId memcg, NodeId, uint32_t bytes, NodeId) override {
    ++uncharge_calls;
    charged_bytes[memcg] -= bytes;
  }
  NodeId objcg_node(CpuId) const override { return 0; }
  bool charge_pages(CpuId, MemcgId, uint32_t, gfp_t) override { return !refuse_charges; }
  void uncharge_pages(CpuId, MemcgId, uint32_t) override {}
  void uncharge_pages_batch(MemcgId, uint32_t) override {}
  void mod_large_slab_stat(MemcgId, int64_t) override {}

 private:
  uint32_t next_ = 1;
  std::set<uint32_t> live_;
};

}  // namespace simcache::testing
