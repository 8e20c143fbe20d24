// Everything the container's setup process needs, computed by the parent before clone:
// the child only carries out decisions, it makes none.
#pragma once

#include <string>
#include <vector>

#include "base/log.hpp"
#include "mount/mount_plan.hpp"
#include "mount/overlay.hpp"
#include "runtime/config.hpp"
#include "runtime/privilege.hpp"
#include "security/security_plan.hpp"

namespace mrun::runtime {

struct LaunchSpec {
  ContainerConfig config;
  PrivilegeModel privilege;
  mount::OverlayLayers layers;  // lower = config.rootfs
  OverlayMode overlay = OverlayMode::automatic;
  std::vector<mount::MountStep> mounts;
  // --rm: the upper is removed at exit, so overlayfs need not sync it (overlay.hpp).
  bool volatile_upper = false;
  bool may_setgroups = true;  // false when setgroups is denied (single-ID map)
  // linux.namespaces (user) by path: its maps and setgroups are its own.
  bool joined_user_namespace = false;
  // The parent moves the child into its cgroup leaf before ids_mapped; the child then
  // unshares its cgroup namespace, so that namespace is rooted at the leaf (one made at
  // clone time would be rooted at mrun's own cgroup).
  bool own_cgroup = false;
  // Capabilities, no_new_privs and the compiled seccomp program (see security_plan.hpp).
  security::SecurityPlan security;
  // OCI create: a FIFO in the state dir. The child sends `created`, then blocks opening
  // it for writing right before exec until `mrun start` opens it for reading (runc's
  // exec.fifo). Empty: exec at once.
  std::string exec_fifo;
  // linux.namespaces (mount, time) joined by path: descriptors the container's process
  // setns's into (inherited across clone; -1: none). A joined mount namespace is where
  // its rootfs is then set up, as runc does.
  int join_mount_fd = -1;
  int join_time_fd = -1;
  // linux.namespaces without a mount entry: the caller's mount namespace, which the
  // container enters once its root is set up in a namespace of its own (-1: it keeps that).
  int callers_mount_fd = -1;
  // Rootless: stop after pivot_root and send need_device_grant (the nodes are there to
  // be mounted over, the command not yet run); see launch/device_access.hpp.
  bool device_grants = false;
  // OCI create: cloned with CLONE_PARENT (LaunchHooks::container_to_callers_reaper), so
  // the parent is `mrun create`, which exits once the container is created: a parent
  // death signal would kill it then. Like runc's init, it outlives its creator.
  bool sibling_of_monitor = false;
  Logger log;
};

}  // namespace mrun::runtime
