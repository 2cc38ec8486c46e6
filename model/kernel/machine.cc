#include "model/kernel/machine.h"

#include "model/kernel/policy.h"

namespace simcache::iou {
namespace {

constexpr MachineField kMachineFields[] = {
#define MACHINE_FIELD(NAME, MIN, MAX, UNIT, HELP) {#NAME, MIN, MAX, UNIT, HELP},
#include "model/kernel/machine.def"
};

// Exactly one value per field: a row with too few or too many fails here.
template <class... V>
constexpr MachineInfo row(std::string_view name, std::string_view summary, std::string_view idle,
                          std::string_view source, V... v) {
  static_assert(sizeof...(V) == kNumMachineFields,
                "machine.def: a MACHINE row needs one value per MACHINE_FIELD");
  return MachineInfo{name, summary, idle, {static_cast<int64_t>(v)...}, source};
}

constexpr MachineInfo kMachines[] = {
#define MACHINE(NAME, SUMMARY, IDLE, ...) row(NAME, SUMMARY, IDLE, __VA_ARGS__),
#include "model/kernel/machine.def"
};

constexpr bool check() {
  for (const MachineInfo& m : kMachines)
    for (size_t f = 0; f < kNumMachineFields; ++f)
      if (m.values[f] < kMachineFields[f].min || m.values[f] > kMachineFields[f].max) return false;
  return true;
}
static_assert(check(), "machine.def: a machine's value is outside its field's range");

}  // namespace

std::span<const MachineField> machine_fields() { return kMachineFields; }
std::span<const MachineInfo> machines() { return kMachines; }

int64_t MachineInfo::value(std::string_view field) const {
  for (size_t f = 0; f < kNumMachineFields; ++f)
    if (kMachineFields[f].name == field) return values[f];
  return -1;
}

std::string machine_names() {
  std::string s;
  for (const MachineInfo& m : kMachines) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

const MachineInfo* machine_by_name(std::string_view name, std::string* error) {
  for (const MachineInfo& m : kMachines)
    if (m.name == name) return &m;
  if (error)
    *error = "unknown machine '" + escape_controls(name, 80) + "'; valid machines: " +
             machine_names();
  return nullptr;
}

}  // namespace simcache::iou
