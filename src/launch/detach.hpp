// -d/--detach: the container is supervised by a background mrun (the monitor), which
// records its exit; the caller returns once the command has started.
#pragma once

#include <string>

#include "runtime/config.hpp"
#include "runtime/context.hpp"

namespace mrun::runtime {

int run_detached(const ContainerConfig& config, const Context& ctx);

// OCI `mrun create`: the same monitor, but the container is held before exec until
// `mrun start` (state: created). Returns once it is held; writes its pid to pid_file
// when one is given. Prints nothing, as runc.
int create_detached(const ContainerConfig& config, const Context& ctx, const std::string& pid_file);

}  // namespace mrun::runtime
