// libFuzzer target: the policy/knob spec parser (NAME, NAME(k=v,...),
// NAME=VALUE joined with '+') on every kernel profile. It must never
// crash; an accepted spec must round-trip through knob_spec().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz/fuzz_util.h"
#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simcache;
  const std::string spec(reinterpret_cast<const char*>(data), size);
  for (const iou::KernelProfile& k : iou::kernel_profiles()) {
    iou::PolicySet p;
    MmConfig mm;
    std::string err;
    const bool ok = iou::parse_policies(spec, &k, &p, &mm, &err);
    fuzz::check_error(ok, err);
    if (!ok) continue;
    iou::PolicySet q;
    MmConfig mm2;
    if (!iou::parse_policies(iou::knob_spec(p), &k, &q, &mm2, &err)) std::abort();
    if (iou::knob_spec(q) != iou::knob_spec(p)) std::abort();
  }
  return 0;
}
