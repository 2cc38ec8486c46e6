// Flat tables with recycled integer ids (slabs, sheaves, pages): a freed
// id is reused before the table grows, so no heap allocation happens per
// operation once the table has reached its working size.
#pragma once

#include <vector>

namespace simcache {

// Returns a free id of `items`: the last one released, or a new element.
template <class Id, class T>
Id take_id(std::vector<T>& items, std::vector<Id>& free_ids) {
  if (!free_ids.empty()) {
    const Id id = free_ids.back();
    free_ids.pop_back();
    return id;
  }
  items.emplace_back();
  return static_cast<Id>(items.size() - 1);
}

}  // namespace simcache
