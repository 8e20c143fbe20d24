// `mrun run`, the parent side: claim the name, plan, clone the container into its new
// namespaces, map its ids, start fuse-overlayfs if needed, supervise it, record its
// exit, clean up. The steps read in order in launcher.cpp.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "runtime/config.hpp"
#include "runtime/context.hpp"

namespace mrun::runtime {

struct LaunchHooks {
  // Called once the name is claimed (detach: redirect output to the container log).
  std::function<void(const std::string& state_dir)> on_claimed;
  // Called once the command was exec'd (detach: release the waiting caller).
  std::function<void()> on_started;
  // OCI create: when set, the container is held before exec on <state dir>/exec.fifo
  // (see LaunchSpec::exec_fifo); called with its pid once it is held (state: created).
  std::function<void(pid_t)> on_created;
  // OCI create: clone the container as the monitor's sibling (CLONE_PARENT), so that
  // once `mrun create` exits it is reparented to the caller's subreaper (conmon) or
  // init, as runc's init is: the engine waits for the pid it was given and gets the
  // exit status. The monitor keeps only a pidfd: it relays signals, sees the exit and
  // cleans up, but records no exit code (ContainerState::reaped_by_caller).
  // Not for `mrun run`: there mrun itself reports the container's exit status.
  bool container_to_callers_reaper = false;
};

// Runs the container to completion and returns its exit status. Errors before the
// command starts throw mrun::Error and leave nothing behind.
int run_container(const ContainerConfig& config, const Context& ctx, const LaunchHooks& hooks = {});

}  // namespace mrun::runtime
