// Event counters: the exact counts everything else is derived from.
// The enum is expanded from the tables of record (events_*.def).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace simcache {

enum class Event : uint16_t {
#define SC_EVENT(name, unit, meaning) name,
#include "model/events_mm.def"
#include "model/events_io_uring.def"
#undef SC_EVENT
  kCount
};
inline constexpr size_t kNumEvents = static_cast<size_t>(Event::kCount);

struct EventInfo {
  std::string_view name;
  std::string_view unit;
  std::string_view meaning;
};

inline constexpr std::array<EventInfo, kNumEvents> kEventInfo = {{
#define SC_EVENT(name, unit, meaning) {#name, #unit, meaning},
#include "model/events_mm.def"
#include "model/events_io_uring.def"
#undef SC_EVENT
}};

// Looks an event up by name; returns false if there is none.
bool event_by_name(std::string_view name, Event* out);

// A flat array of event counts. Cheap to copy and subtract, so timed
// regions are measured as the difference of two snapshots.
struct Counters {
  std::array<uint64_t, kNumEvents> v{};

  void add(Event e, uint64_t n = 1) { v[static_cast<size_t>(e)] += n; }
  uint64_t operator[](Event e) const { return v[static_cast<size_t>(e)]; }
  Counters& operator+=(const Counters& o) {
    for (size_t i = 0; i < kNumEvents; ++i) v[i] += o.v[i];
    return *this;
  }
  friend Counters operator-(const Counters& a, const Counters& b) {
    Counters r;
    for (size_t i = 0; i < kNumEvents; ++i) r.v[i] = a.v[i] - b.v[i];
    return r;
  }
  friend bool operator==(const Counters&, const Counters&) = default;
};

enum class SlubStat : uint8_t {
#define SLUB_STAT(e, name, gens) e,
#include "model/slub_stats.def"
#undef SLUB_STAT
  kCount
};
inline constexpr size_t kNumSlubStats = static_cast<size_t>(SlubStat::kCount);

enum class StatGens : uint8_t { G6, G7, GB };
struct SlubStatInfo {
  std::string_view sysfs;
  StatGens gens;
};
inline constexpr std::array<SlubStatInfo, kNumSlubStats> kSlubStatInfo = {{
#define SLUB_STAT(e, name, gens) {name, StatGens::gens},
#include "model/slub_stats.def"
#undef SLUB_STAT
}};

}  // namespace simcache
