// --init: mrun's own tiny PID 1. It forwards signals to the command, reaps every
// orphan the kernel reparents to it, and exits with the command's status.
#pragma once

#include <sys/types.h>

#include "base/unique_fd.hpp"
#include "runtime/sync_channel.hpp"

namespace mrun::runtime {

// die_with_parent false: a sibling of the monitor (LaunchSpec::sibling_of_monitor),
// whose parent `mrun create` exits once it is created.
[[noreturn]] void run_reaper(pid_t command, const ContainerEnd& sync, const UniqueFd& parent_pidfd,
                             bool die_with_parent);

}  // namespace mrun::runtime
