// Writing a planned id map for a child that waits in its new user namespace.
#pragma once

#include <sys/types.h>

#include "userns/idmap.hpp"

namespace mrun::userns {

// Subordinate maps go through newuidmap/newgidmap (setuid root, checks /etc/subuid);
// a single-ID map is written directly, after "deny" to /proc/PID/setgroups, which the
// kernel requires of an unprivileged writer of gid_map.
void apply_id_maps(pid_t pid, const IdMapPlan& plan);

}  // namespace mrun::userns
