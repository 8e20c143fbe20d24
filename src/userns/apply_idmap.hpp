// Writing a planned id map for a child that waits in its new user namespace.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/unique_fd.hpp"
#include "userns/idmap.hpp"

namespace mrun::userns {

// Subordinate maps go through newuidmap/newgidmap (setuid root, checks /etc/subuid);
// a single-ID map is written directly, after "deny" to /proc/PID/setgroups, which the
// kernel requires of an unprivileged writer of gid_map.
void apply_id_maps(pid_t pid, const IdMapPlan& plan);

// A user namespace with these maps, held by nothing but the returned descriptor (an
// idmapped mount's: mount_setattr MOUNT_ATTR_IDMAP). A short-lived child makes it, the
// caller writes its maps (root may write any), opens it, and lets the child go. Throws
// naming `what`.
UniqueFd user_namespace_with_maps(const std::vector<IdMapEntry>& uids,
                                  const std::vector<IdMapEntry>& gids, const std::string& what);

}  // namespace mrun::userns
