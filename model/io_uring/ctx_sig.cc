#include <algorithm>

#include "model/io_uring/ctx.h"
#include "model/io_uring/io_kernel.h"

namespace simcache::iou {

namespace {

void cache_signature(const IoAllocCache& ac, StateSig* s) {
  s->add(ac.nr_cached);
  for (uint32_t i = 0; i < ac.nr_cached && i < ac.entries.size(); ++i) s->ptr(ac.entries[i]);
  s->ptr(ac.entries_mem);
  for (uint64_t v : {uint64_t{ac.max_cached}, uint64_t{ac.elem_size}, uint64_t{ac.init_clear},
                     uint64_t{ac.slab}, uint64_t{ac.refill}, uint64_t{ac.lazy_fill}})
    s->add(v);
}

}  // namespace

void ring_signature(const IoRingCtx& c, StateSig* s) {
  s->add(c.live);
  s->add(c.submitter.cpu);
  s->add(c.submitter.memcg);
  s->add(c.params.sq_entries);
  s->add(c.params.cq_entries);
  s->add(c.params.defer_taskrun);
  s->add(c.params.reaped_in_time);
  for (Ptr p : {c.ctx_mem, c.ring_node, c.cancel_hbs, c.refs_data, c.ring_region, c.sq_region,
                c.ring_pages, c.sq_pages, c.hash_map, c.tctx_node})
    s->ptr(p);
  for (const IoAllocCache* ac : {&c.apoll_cache, &c.netmsg_cache, &c.rw_cache, &c.cmd_cache,
                                 &c.msg_cache, &c.futex_cache, &c.waitv_cache, &c.node_cache,
                                 &c.imu_cache})
    cache_signature(*ac, s);
  s->ptrs(c.req_free);
  s->ptrs(c.compl_reqs);
  s->ptrs(c.compl_async);
  s->add(c.nr_req_allocated);
  s->add(c.batch_depth);
  s->add(c.first_use_done);
  s->add(c.cq_pending);
  s->add(c.cq_capacity);
  // The CQ head past the array's first lap decides nothing more.
  s->add(std::min(c.cq_head, c.cq_capacity == UINT64_MAX ? uint64_t{0} : c.cq_capacity));
  s->add(c.cq_pages_read);
  s->ptrs(c.cq_overflow);
  const IoFileTable& f = c.files;
  s->add(f.registered);
  s->add(f.nr);
  s->ptr(f.nodes_mem);
  s->ptr(f.bitmap_mem);
  s->ptrs(f.nodes);
  s->all(f.bitmap);
  s->add(f.alloc_hint);
  s->add(f.alloc_start);
  s->add(f.alloc_end);
  s->ptrs(f.anchors);
  s->ptrs(f.prefilled);
  for (const std::vector<ArmedFutex>* list : {&c.futex_list, &c.futex_woken}) {
    s->add(list->size());
    for (const ArmedFutex& a : *list) {
      s->ptr(a.req);
      s->ptr(a.data);
      s->add(static_cast<uint64_t>(a.kind));
      s->add(a.nr);
      s->add(a.cached);
    }
  }
  s->ptrs(c.poll_list);
}

void tasks_signature(const std::vector<IoUringTask>& tasks,
                     const std::vector<std::pair<Ptr, uint32_t>>& wq_hash_refs,
                     const IowaitBoost& boost, StateSig* s) {
  for (const IoUringTask& t : tasks) {
    s->add(t.cpu);
    s->add(t.memcg);
    for (Ptr p : {t.tctx, t.io_wq, t.wq_hash, t.io_worker}) s->ptr(p);
  }
  s->add(tasks.size());
  for (const auto& [p, n] : wq_hash_refs) {
    s->ptr(p);
    s->add(n);
  }
  s->add(boost.boost);
}

}  // namespace simcache::iou
