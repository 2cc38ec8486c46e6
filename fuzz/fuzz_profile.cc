// libFuzzer target: cost profile TOML (sim/cost/cost_profile.cc).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_util.h"
#include "sim/cost/cost.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  simcache::sim::CostModel m;
  std::string error;
  const bool ok = simcache::sim::parse_profile(text, "fuzz.toml", &m, &error);
  simcache::fuzz::check_error(ok, error);
  if (ok) {  // what was read must write back and read again
    simcache::sim::CostModel again;
    const std::string out = simcache::sim::profile_toml(m, "round trip");
    if (!simcache::sim::parse_profile(out, "again.toml", &again, &error)) std::abort();
  }
  return 0;
}
