// Loading the device filter (device_filter.bpf.c) and attaching it to a container's
// cgroup leaf, through libbpf: the only place mrun calls bpf(2). The rule list comes
// from device_rules.hpp (pure planning).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cgroup/device_rules.hpp"

namespace mrun::cgroup {

// The bpf(2) command that failed and its errno, for the one-line report
// ("BPF_PROG_LOAD: EPERM") that `mrun gpu matrix` parses.
struct FilterFailure {
  std::string step;  // BPF_PROG_LOAD (the map and the program), BPF_PROG_ATTACH, open
  int err = 0;
  std::string why;               // the likely cause, e.g. "unprivileged BPF is disabled: ..."
  std::string describe() const;  // "BPF_PROG_LOAD: EPERM (why)"
};

// Loads the program with RULES in its map and attaches it to the cgroup directory
// LEAF with BPF_F_ALLOW_MULTI (ancestors' programs keep running: the intersection
// applies). The attachment lives as long as the cgroup, not this process. Returns
// std::nullopt on success. An empty LEAF only loads it (does this kernel let us?).
std::optional<FilterFailure> attach_device_filter(const std::string& leaf,
                                                  const std::vector<DeviceRule>& rules);

}  // namespace mrun::cgroup
