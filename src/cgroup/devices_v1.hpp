// The cgroup v1 devices controller: the device restriction of a rootful container on a
// host whose cgroups are v1 or hybrid (no cgroup v2 leaf to attach the BPF filter to),
// as runc does there. The same rule list as the filter (device_rules.hpp), written as
// devices.deny "a" then each rule in its order, an allow to devices.allow and a deny to
// devices.deny, in a group of the container's own under the caller's devices cgroup.
// The kernel takes a deny there out of the allows of the very same type and numbers
// only: a deny of c 10:229 after an allow of c *:* m leaves mknod of 10:229 allowed on
// v1, where the BPF filter denies it (runc writes the same sequence, with the same
// result).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cgroup/device_rules.hpp"

namespace mrun::cgroup {

// Where the v1 devices hierarchy is mounted, from /proc/self/mountinfo text; "" when it
// is not (a pure cgroup v2 host, or a container without it).
std::string find_devices_v1_mount(const std::string& mountinfo);
// The caller's group in that hierarchy, from /proc/self/cgroup text ("5:devices:/x").
std::string own_devices_v1_group(const std::string& proc_self_cgroup);
// What to write for RULES, in order: {"devices.allow", "c 1:3 rwm"},
// {"devices.deny", "c 10:229 rwm"}, ...
std::vector<std::pair<std::string, std::string>> devices_v1_writes(
    const std::vector<DeviceRule>& rules);

void remove_devices_v1_group(const std::string& path) noexcept;

class DevicesV1Group {
 public:
  DevicesV1Group(const DevicesV1Group&) = delete;
  DevicesV1Group& operator=(const DevicesV1Group&) = delete;
  DevicesV1Group(DevicesV1Group&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  DevicesV1Group& operator=(DevicesV1Group&& other) noexcept {
    if (this != &other) {
      if (!path_.empty()) remove_devices_v1_group(path_);
      path_ = std::move(other.path_);
      other.path_.clear();
    }
    return *this;
  }
  ~DevicesV1Group();

  // The group at RELATIVE below the devices hierarchy's root: the container's v1 group's
  // path where it has one (an engine's cgroupsPath, as runc puts it there; its parents
  // made as needed, an empty group an engine made taken), else a directory NAME
  // ("mrun-<monitor pid>-<container>") below the caller's own devices group. nullopt
  // when the host has no v1 devices hierarchy. Throws, leaving nothing, when the group
  // cannot be made or the rules written.
  static std::optional<DevicesV1Group> create(const std::string& relative, const std::string& name,
                                              const std::vector<DeviceRule>& rules);
  const std::string& path() const noexcept { return path_; }
  void add_process(pid_t pid) const;

 private:
  explicit DevicesV1Group(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Whether the host has a v1 devices hierarchy to restrict a rootful container with.
bool devices_v1_available();
// remove_devices_v1_group (above): removes a group left by a killed mrun; quiet when it
// is gone or still in use.

}  // namespace mrun::cgroup
