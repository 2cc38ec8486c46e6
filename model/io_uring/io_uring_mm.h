// IoUring over the real mm model. The instantiation lives in
// model/io_uring/instantiate.cc, so users of this header do not
// re-instantiate the whole layer.
#pragma once

#include "model/io_uring/ring.h"
#include "model/mm/mm.h"

namespace simcache::iou {

static_assert(IoAllocator<Mm>, "simcache::Mm must provide the io_uring allocator seam");
extern template class IoUring<Mm>;
using MmIoUring = IoUring<Mm>;

}  // namespace simcache::iou
