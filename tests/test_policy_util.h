// Policy specs generated from the policy table (model/kernel/policies.def)
// for the tests that run "every policy": a new table entry joins them
// without editing any test.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "model/kernel/policy.h"
#include "model/kernel/profile.h"
#include "model/mm/mm.h"

namespace simcache::testing {

// Parses and validates `spec` on `profile`.
inline bool policy_ok(const std::string& spec, const iou::KernelProfile& profile) {
  iou::PolicySet ps;
  MmConfig mm;
  return iou::parse_policies(spec, &profile, &ps, &mm, nullptr);
}

// Every table entry made runnable on `profile`: the entry alone if it
// validates, else the entry plus the first other entry (table order) that
// makes it validate ("bulk-refill+node-slab"). Entries nothing rescues
// (node-slab on v6.13) are left out.
inline std::vector<std::string> runnable_policies(const iou::KernelProfile& profile) {
  std::vector<std::string> out;
  const auto table = iou::PolicyRegistry::get().all();
  for (const iou::PolicyInfo& p : table) {
    const std::string alone(p.name);
    if (policy_ok(alone, profile)) {
      out.push_back(alone);
      continue;
    }
    for (const iou::PolicyInfo& q : table) {
      const std::string pair = alone + "+" + std::string(q.name);
      if (&q != &p && q.group != p.group && policy_ok(pair, profile)) {
        out.push_back(pair);
        break;
      }
    }
  }
  return out;
}

// A maximal combination on `profile`: walk the table (forward or
// backward), adding every entry whose group is still free and with which
// the combination validates; repeat until nothing joins, so a
// prerequisite met later still counts.
inline std::string maximal_policy(const iou::KernelProfile& profile, bool backward) {
  const auto table = iou::PolicyRegistry::get().all();
  std::vector<const iou::PolicyInfo*> order;
  for (const iou::PolicyInfo& p : table.subspan(1)) order.push_back(&p);
  if (backward) std::reverse(order.begin(), order.end());
  std::string spec(iou::PolicyRegistry::get().baseline().name);
  std::vector<iou::PolicyFieldId> taken;
  for (bool grew = true; grew;) {
    grew = false;
    for (const iou::PolicyInfo* p : order) {
      bool free = true;
      for (iou::PolicyFieldId g : taken) free = free && g != p->group;
      const std::string next = spec + "+" + std::string(p->name);
      if (free && policy_ok(next, profile)) {
        spec = next;
        taken.push_back(p->group);
        grew = true;
      }
    }
  }
  return spec;
}

// runnable_policies() and both maximal combinations, without repeats.
inline std::vector<std::string> policy_specs(const iou::KernelProfile& profile) {
  std::vector<std::string> out = runnable_policies(profile);
  for (bool backward : {false, true}) {
    const std::string m = maximal_policy(profile, backward);
    bool seen = false;
    for (const std::string& s : out) seen = seen || s == m;
    if (!seen) out.push_back(m);
  }
  return out;
}

}  // namespace simcache::testing
