// libFuzzer target: run configurations (--config) and sweep grids read
// from arbitrary bytes. Neither may crash; errors are one line. Not yet
// built: add it to fuzz/CMakeLists.txt as the hardening branch's targets
// are, once that branch lands.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "sim/cli/cli.h"
#include "sim/sweep/sweep.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache::sim;
  const std::string path = "/tmp/simcache-fuzz-config-" + std::to_string(::getpid()) + ".toml";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data),
                                              static_cast<std::streamsize>(size));
  ParsedFlags f;
  std::string err;
  if (!load_config(path, &f, &err) && err.find('\n') != std::string::npos) std::abort();
  SweepGrid g;
  std::vector<SweepPoint> pts;
  err.clear();
  if (load_grid(path, &g, &err)) {
    if (!expand_grid(g, &pts, &err) && err.find('\n') != std::string::npos) std::abort();
  } else if (err.find('\n') != std::string::npos) {
    std::abort();
  }
  ::unlink(path.c_str());
  return 0;
}
