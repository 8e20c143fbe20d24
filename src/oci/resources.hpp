// linux.resources (config.json, and `mrun update --resources`'s document, which is the
// same object) as cgroup::Resources and device cgroup rules, field by field.
//
// What cgroup v2 cannot do is refused here, naming the field (exit 125), as crun does:
// memory.useHierarchy false,
// cpu.realtimeRuntime/realtimePeriod, blockIO.leafWeight, network (net_cls/net_prio).
// memory.kernel and memory.kernelTCP (deprecated by the spec) are accepted and ignored
// with a warning, as runc does. memory.swappiness and memory.disableOOMKiller are kept:
// a cgroup v1 group carries them, and the v2 plan refuses them (cgroup/resources.hpp). A property
// the spec does not define is ignored (the spec's rule for unknown properties), with a debug line.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/device_rules.hpp"
#include "cgroup/resources.hpp"

namespace mrun::oci {

struct ParsedResources {
  cgroup::Resources resources;
  // linux.resources.devices: the allow rules beyond mrun's defaults; nullopt when absent.
  std::optional<std::vector<cgroup::DeviceRule>> device_rules;
  std::vector<std::string> unknown;  // properties the spec does not define, ignored
};

// `source` starts every message: "config.json" ("config.json:
// linux.resources.memory.limit: must be ..."), or "update --resources".
ParsedResources parse_resources(const nlohmann::json& j, const std::string& source);

// A unified key mrun writes: one file name of the leaf, CONTROLLER.PARAMETER, not one of
// the files mrun itself manages the container through (cgroup.procs, cgroup.kill, ...).
// Returns why not, empty when it is fine.
std::string unified_key_problem(const std::string& key);

}  // namespace mrun::oci
