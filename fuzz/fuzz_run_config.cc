// libFuzzer target: run configurations (--config) and sweep grids read
// from arbitrary bytes. Neither may crash; errors are one line.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "sim/cli/cli.h"
#include "sim/sweep/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  const std::string path = "/tmp/simcache-fuzz-config-" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data),
                                              static_cast<std::streamsize>(size));
  ParsedFlags f;
  std::string err;
  const bool ok = load_config(path, &f, &err);
  simcache::fuzz::check_error(ok, err);
  SweepGrid g;
  std::vector<SweepPoint> pts;
  err.clear();
  if (load_grid(path, &g, &err)) {
    // Cap the cross product: a fuzzed grid may name millions of points.
    size_t n = g.scenarios.size() * g.kernels.size() * g.policies.size() * g.seeds.size();
    for (const auto& [k, v] : g.params) n *= v.size();
    for (const auto& [k, v] : g.knobs) n *= v.size();
    if (n <= 4096) simcache::fuzz::check_error(expand_grid(g, &pts, &err), err);
  } else {
    simcache::fuzz::check_error(false, err);
  }
  ::unlink(path.c_str());
  return 0;
}
