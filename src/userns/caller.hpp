// The calling user's id map: its name as /etc/subuid knows it, and the map planned from
// its subordinate ranges. Shared by the launcher (to start a container) and by storage
// removal (to re-enter the same map and delete files owned by subordinate ids).
#pragma once

#include <string>

#include "userns/idmap.hpp"

namespace mrun::userns {

// The caller's login name, or its uid in decimal when it has no passwd entry.
std::string caller_name();

// Whether this process runs in the host's (initial) user namespace: its uid_map is the
// identity map of every id. Rootless podman runs its OCI runtime as root of a user
// namespace it made (newuidmap, subordinate ids), where uid 0 is not host root.
bool in_initial_user_namespace();

// Reads the caller's ranges from the two files (when `want_subordinate`) and plans the
// map; a single-ID map when either file has none.
IdMapPlan plan_caller_maps(const std::string& subuid_file, const std::string& subgid_file,
                           bool want_subordinate);

}  // namespace mrun::userns
