// push_back() for the fast paths: the vector's growth (rare: a freelist,
// a sheaf or a ring's completion list reaches a new high) out of line, so
// the inlined fast path keeps no reallocation code and the registers it
// needs, and a caller's size does not decide whether GCC inlines it.
#pragma once

#include <vector>

namespace simcache {

template <class T>
[[gnu::noinline]] void push_grow(std::vector<T>& v, T x) {
  v.push_back(x);
}
template <class T>
[[gnu::always_inline]] inline void push_fast(std::vector<T>& v, T x) {
  if (v.size() == v.capacity()) [[unlikely]]
    return push_grow(v, x);
  v.push_back(x);
}

}  // namespace simcache
