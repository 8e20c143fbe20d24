// --device and --gpu beyond the mounts: the container's cgroup v2 device filter, and,
// rootless, a usable node for a device the host keeps from the caller. For each step
// this decides who does it (mrun through libbpf, or the setuid mrun-gpu-helper(8) when
// the kernel refuses mrun) and what happens when nobody can (--device-filter: a
// warning, a 125, or nothing). The privilege differences come from PrivilegeModel.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/device_rules.hpp"
#include "cgroup/devices_v1.hpp"
#include "mount/devices.hpp"
#include "runtime/config.hpp"
#include "runtime/privilege.hpp"

namespace mrun::runtime {

// Where mrun-gpu-helper is: $MRUN_GPU_HELPER (an absolute path; for tests), else the
// installed <libexecdir>/mrun/mrun-gpu-helper. `path` is empty when it is missing or
// not setuid root; `why_not` then says so.
struct GpuHelper {
  std::string path;
  std::string why_not;
};
GpuHelper find_gpu_helper();

// The filter's rules for CONFIG with its --device/--gpu nodes (pure).
std::vector<cgroup::DeviceRule> plan_filter_rules(const ContainerConfig& config,
                                                  const std::vector<mount::HostDevice>& devices);
// The nodes mrun-gpu-helper --filter must be told about: those the default set does not
// already allow with their access ("/dev/fakegpu0:rw").
std::vector<std::string> helper_filter_devices(const std::vector<mount::HostDevice>& devices);

class DeviceAccess {
 public:
  DeviceAccess(const ContainerConfig& config, const PrivilegeModel& privilege,
               std::vector<mount::HostDevice> devices, const Logger& log);

  // Before anything is made: --device-filter=required without a cgroup leaf fails
  // here (125), naming the first step that cannot be done. Rootful with neither a v2
  // leaf nor the v1 devices controller, nothing can restrict devices: --device,
  // --gpu, CAP_MKNOD and --privileged are refused unless --device-filter=off (a
  // warning either way).
  void check_before_start(const cgroup::Plan& plan) const;
  // Rootful without a v2 leaf (a v1 or hybrid host): the v1 devices controller's group
  // for the container, with the filter's rule list, at the path of its v1 group
  // (V1_RELATIVE; empty: none, then UNIQUE below mrun's own); nullopt where it does not
  // apply.
  std::optional<cgroup::DevicesV1Group> devices_v1_group(bool have_leaf,
                                                         const std::string& v1_relative,
                                                         const std::string& unique) const;
  // Attaches the filter to LEAF (empty: none, for the reason NO_LEAF) for the
  // container process CHILD, which has not run anything yet. Returns the state's
  // `device_filter` ("bpf", "helper", "none: <reason>"); throws (125) when required
  // and not attached.
  std::string attach_filter(const std::string& leaf, const std::string& no_leaf, pid_t child) const;
  // Rootless: whether the child must stop after pivot_root so that the helper can put
  // usable nodes over the bound ones (grant_nodes).
  bool wants_node_grants() const { return !grants_.empty(); }
  // Runs `mrun-gpu-helper PID DEVICE TARGET` for each such node; a missing helper or
  // a refusal is a warning (the command's open then fails with EACCES).
  void grant_nodes(pid_t child) const;

 private:
  std::string not_attached(const std::string& reason, bool warn) const;

  const ContainerConfig& config_;
  const PrivilegeModel& privilege_;
  std::vector<mount::HostDevice> devices_;
  std::vector<mount::HostDevice> grants_;
  GpuHelper helper_;
  const Logger& log_;
};

}  // namespace mrun::runtime
