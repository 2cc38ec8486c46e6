// The io_uring layer instantiated over the real mm model (header-only
// templates; see model/io_uring/ring.h).
#include "model/io_uring/io_uring_mm.h"

namespace simcache::iou {

template class IoUring<Mm>;

}  // namespace simcache::iou
