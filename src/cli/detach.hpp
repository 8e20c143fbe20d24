// -d/--detach: the container is supervised by a background mrun (the monitor), which
// records its exit; the caller returns once the command has started.
#pragma once

#include "runtime/config.hpp"
#include "runtime/context.hpp"

namespace mrun::cli {

int run_detached(const runtime::ContainerConfig& config, const runtime::Context& ctx);

}  // namespace mrun::cli
