// Machines (machine.def): the hardware a run models, as the defaults of
// the machine parameters every scenario takes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace simcache::iou {

struct MachineField {
  std::string_view name;
  int64_t min, max;
  std::string_view unit, help;
};
// The machine parameters, in table order.
std::span<const MachineField> machine_fields();

inline constexpr size_t kNumMachineFields = 0
#define MACHINE_FIELD(...) +1
#include "model/kernel/machine.def"
    ;

struct MachineInfo {
  std::string_view name, summary;
  std::string_view idle_table;            // "" = no cpuidle states modelled
  int64_t values[kNumMachineFields];      // machine_fields() order
  std::string_view source;
  // The default of the parameter `field`, or -1 if there is none.
  int64_t value(std::string_view field) const;
};

std::span<const MachineInfo> machines();
inline constexpr std::string_view kDefaultMachine = "i7-12700KF";
// nullptr and, if `error` is given, a message listing the valid names.
const MachineInfo* machine_by_name(std::string_view name, std::string* error);
std::string machine_names();

}  // namespace simcache::iou
