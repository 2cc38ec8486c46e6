// What the model reports about itself: the sysfs view of a cache and the
// end-of-run leak check.
#include <algorithm>

#include <fmt/format.h>
#include "model/mm/mm.h"
#include "model/mm/slub.h"

namespace simcache {

// The /sys/kernel/slab/<cache>/ files that are not stat items, computed
// the way slabinfo does (objects = total - free on node partial slabs).
CacheInfo Mm::info(CacheId s) const {
  const KmemCache& c = slub_->cache(s);
  CacheInfo ci;
  ci.name = c.name;
  ci.aliases = c.aliases;
  ci.object_size = c.g.object_size;
  ci.slab_size = c.g.size;
  ci.align = c.g.align;
  ci.order = c.g.order;
  ci.objs_per_slab = c.g.objects;
  ci.min_partial = c.g.min_partial;
  ci.cpu_partial = c.g.cpu_partial;
  ci.cpu_partial_slabs = c.g.cpu_partial_slabs;
  ci.sheaf_capacity = c.g.sheaf_capacity;
  ci.flags = c.flags;
  ci.live_objects = c.live;
  for (const KmemCache::Node& n : c.node) {
    ci.slabs += n.nr_slabs;
    ci.partial += n.nr_partial;
    ci.total_objects += n.total_objects;
    for (int32_t id = n.partial_head; id >= 0; id = slub_->slab(id).next)
      ci.objects_partial += slub_->slab(id).freelist.size();
  }
  ci.objects = ci.total_objects - ci.objects_partial;
  for (size_t i = 0; i < slub_->nr_slab_slots(); ++i) {
    const Slab& sl = slub_->slab(static_cast<int32_t>(i));
    if (sl.where == SlabWhere::kUnused || sl.cache != s) continue;
    ci.bytes += uint64_t(PAGE_SIZE) << sl.order;
  }
  ci.cached_objects = slub_->cached_objects(s);
  ci.has_cpu_slabs = cfg_.gen == SlubGen::v6_18;
  for (const KmemCache::Cpu& cpu : c.cpu)
    ci.cpu_slabs += (cpu.slab >= 0) + uint64_t{cpu.partial_slabs};
  return ci;
}

// kmemleak-style end-of-run check: every object still allocated (or
// parked in a caller's cache) and every live large allocation is a leak;
// memcg charges must come back to zero once stocks are drained.
// Objects the allocator itself holds (obj_exts vectors of live slabs,
// sheaves still in use) are not leaks.
size_t Mm::check_leaks() {
  const size_t before = slub_->reports.size();
  // Empty slabs go first, with their obj_exts vectors.
  shrink_all();
  std::vector<Ptr> vectors = slub_->internal_objects();
  std::sort(vectors.begin(), vectors.end());
  for (Ptr p : slub_->live_objects()) {
    if (std::binary_search(vectors.begin(), vectors.end(), p)) continue;
    slub_->report("leak", p, cache_of(p), slub_->history(p));
  }
  for (size_t i = 0; i < large_.size(); ++i) {
    if (!large_[i].live) continue;
    const Ptr p = (large_[i].vmalloc ? kVmallocBit : kLargeBit) | i;
    slub_->report("leak", p, kNoCache,
                  fmt::format("{} of {} bytes from site {:#x}",
                              large_[i].region    ? "page region"
                              : large_[i].vmalloc ? "vmalloc area"
                                                  : "large kmalloc",
                              large_[i].bytes, large_[i].site));
  }
  memcg_->drain_all();
  // page_counter usage is hierarchical, so only judge when nothing at all
  // is charged any more.
  const int64_t live_bytes = memcg_->live_obj_bytes(kRootMemcg);  // hierarchical
  for (MemcgId m = 1; m < memcg_->nr_memcgs() && live_bytes == 0; ++m) {
    if (memcg_->usage_pages(m) == 0 && memcg_->kmem_pages(m) == 0) continue;
    slub_->report("memcg-imbalance", kNull, kNoCache,
                  fmt::format("memcg {} still charged {} pages with no live "
                              "charged object after draining every stock",
                              m, memcg_->usage_pages(m)));
  }
  return slub_->reports.size() - before;
}

}  // namespace simcache
