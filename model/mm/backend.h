// The seam below SLUB and large kmalloc: what the slab layer asks of the
// page allocator (alloc_pages_node() / __free_pages()) and of memcg (the
// slab charge hooks of mm/memcontrol.c). Mm wires the model's own
// PageAllocator and Memcg through KernelBackend; tests plug in a fake
// (tests/fake_slab_backend.h) to drive page failures and charges directly.
// Only slow paths cross it: a new or discarded slab, a charged object.
#pragma once

#include <cstdint>

#include "model/mm/memcg.h"
#include "model/mm/page_alloc.h"
#include "model/types.h"

namespace simcache {

class SlabBackend {
 public:
  virtual ~SlabBackend() = default;
  // 2^order pages on `node` for a task on `cpu`: a page id > 0, or 0 on
  // failure; *cold, when given, whether the block came cache-cold
  // (model/mm/page_alloc.h). A free goes to `cpu`'s per-CPU list.
  virtual uint32_t alloc_pages(uint32_t order, NodeId node, gfp_t gfp, CpuId cpu,
                               bool* cold = nullptr) = 0;
  virtual void free_pages(uint32_t page, uint32_t order, CpuId cpu) = 0;
  // memcg_kmem_online(): whether the charge hooks run at all.
  virtual bool kmem_online() const = 0;
  // obj_cgroup_charge_account() / the free hook's refill_obj_stock().
  virtual bool charge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat,
                          uint32_t bytes, gfp_t gfp) = 0;
  virtual void uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat,
                            uint32_t bytes, NodeId objcg_nid) = 0;
  // The node whose objcg a charge on `cpu` uses (7.1+ per-node objcg).
  virtual NodeId objcg_node(CpuId cpu) const = 0;
  // __memcg_kmem_charge_page() / __memcg_kmem_uncharge_page().
  virtual bool charge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages,
                            gfp_t gfp) = 0;
  virtual void uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages) = 0;
  // release_pages()' uncharge (mem_cgroup_uncharge_folios()): straight to
  // the page_counter, no stock.
  virtual void uncharge_pages_batch(MemcgId memcg, uint32_t nr_pages) = 0;
  // lruvec_stat_mod_folio(NR_SLAB_UNRECLAIMABLE_B) of a large kmalloc's
  // compound charged to `memcg`: + its bytes at allocation, - at free.
  virtual void mod_large_slab_stat(MemcgId memcg, int64_t bytes) = 0;
};

// The model's own page allocator and memcg behind the seam.
class KernelBackend final : public SlabBackend {
 public:
  KernelBackend(PageAllocator* pages, Memcg* memcg) : pages_(pages), memcg_(memcg) {}
  uint32_t alloc_pages(uint32_t order, NodeId node, gfp_t gfp, CpuId cpu,
                       bool* cold = nullptr) override {
    return pages_->alloc_pages(order, node, gfp, cpu, cold);
  }
  void free_pages(uint32_t page, uint32_t order, CpuId cpu) override {
    pages_->free_pages(page, order, cpu);
  }
  bool kmem_online() const override { return memcg_->kmem_online(); }
  bool charge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes,
                  gfp_t gfp) override {
    return memcg_->charge_obj(cpu, memcg, pgdat, bytes, gfp);
  }
  void uncharge_obj(CpuId cpu, MemcgId memcg, NodeId pgdat, uint32_t bytes,
                    NodeId objcg_nid) override {
    memcg_->uncharge_obj(cpu, memcg, pgdat, bytes, objcg_nid);
  }
  NodeId objcg_node(CpuId cpu) const override { return memcg_->objcg_node(cpu); }
  bool charge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages, gfp_t gfp) override {
    return memcg_->charge_pages(cpu, memcg, nr_pages, gfp);
  }
  void uncharge_pages(CpuId cpu, MemcgId memcg, uint32_t nr_pages) override {
    memcg_->uncharge_pages(cpu, memcg, nr_pages);
  }
  void uncharge_pages_batch(MemcgId memcg, uint32_t nr_pages) override {
    memcg_->uncharge_pages_batch(memcg, nr_pages);
  }
  void mod_large_slab_stat(MemcgId memcg, int64_t bytes) override {
    memcg_->mod_lruvec_slab(memcg, bytes);
  }

 private:
  PageAllocator* pages_;
  Memcg* memcg_;
};

}  // namespace simcache
