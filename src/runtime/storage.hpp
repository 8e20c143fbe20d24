// Per-container storage (overlay upper/work dirs and the mount point) and its removal.
#pragma once

#include <string>

#include "runtime/context.hpp"

namespace mrun::runtime {

std::string storage_dir_for(const Context& ctx, const std::string& name);

// Removes a container's storage. Rootless, the upper dir may hold files owned by
// subordinate ids that the caller cannot delete directly (as `podman unshare rm`
// would); then the removal runs again as root of a user namespace with the same map.
void remove_storage(const Context& ctx, const std::string& dir, bool subordinate_ids);

}  // namespace mrun::runtime
