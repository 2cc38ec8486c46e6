// Name lookups over the tables of record.
#include "model/counters.h"

namespace simcache {

bool event_by_name(std::string_view name, Event* out) {
  for (size_t i = 0; i < kNumEvents; ++i) {
    if (kEventInfo[i].name == name) {
      *out = static_cast<Event>(i);
      return true;
    }
  }
  return false;
}

}  // namespace simcache
