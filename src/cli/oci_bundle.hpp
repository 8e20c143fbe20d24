// The OCI verbs' shared step: an OCI bundle -> runtime::ContainerConfig, so `mrun run
// --bundle`, `mrun create` and `mrun run`'s flags all reach the same launcher.
#pragma once

#include <string>

#include "runtime/config.hpp"
#include "runtime/context.hpp"
#include "runtime/state.hpp"

namespace mrun::cli {

// Loads <bundle>/config.json (validated), converts it, and applies its rlimits to this
// process (the container inherits them across clone). Throws mrun::Error (125).
runtime::ContainerConfig config_from_bundle(const std::string& bundle, const std::string& id,
                                            const runtime::Context& ctx);

// The container's record, or runc's "container does not exist" error.
runtime::ContainerState read_existing(const runtime::StateStore& store, const std::string& id);

}  // namespace mrun::cli
