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

void StateSig::make_room() {
  if (sink_ && n_ >= kChunk) return flush();
  const size_t want = std::max<size_t>(64, 2 * words_.size());
  words_.resize(sink_ ? std::min(want, kChunk) : want);
}

}  // namespace simcache
