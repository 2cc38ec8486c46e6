#include "model/mm/state_sig.h"

#include <algorithm>

namespace simcache {

void StateSig::stream_to(Sink sink, void* ctx) {
  sink_ = sink;
  ctx_ = ctx;
  // A buffer grown past a chunk while kept: a full chunk must fill it.
  if (words_.size() > kChunk && n_ <= kChunk) words_.resize(kChunk);
}

void StateSig::flush() {
  if (!sink_) return;
  for (size_t i = 0; i < n_; i += kChunk) sink_(ctx_, words_.data() + i, std::min(kChunk, n_ - i));
  n_ = 0;
}

std::span<const uint16_t> StateSig::objects_by_label(uint64_t slab_label, uint16_t n) {
  if (slab_label >= objects_.size()) objects_.resize(slab_label + 1);
  for (uint16_t i = 0; i < n; ++i) object(slab_label, i);
  const Objects& o = objects_[slab_label];
  // A pointer past the slab's objects (a stale one, into a slot since
  // reused by another cache) took a label: no order of the n is whole.
  if (o.met != n) return {};
  by_label_.assign(n, 0);
  for (uint16_t i = 0; i < n; ++i) by_label_[o.label[i] - 1u] = i;
  return by_label_;
}

void StateSig::make_room() {
  if (sink_ && n_ >= kChunk) return flush();
  const size_t want = std::max<size_t>(64, 2 * words_.size());
  words_.resize(sink_ ? std::min(want, kChunk) : want);
}

}  // namespace simcache
