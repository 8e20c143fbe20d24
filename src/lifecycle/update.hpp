// `mrun update`: new resource limits for a running container, written to its cgroup v2
// leaf (the one its state records), as runc's update does.
#pragma once

#include <string>

#include "cgroup/resources.hpp"
#include "runtime/context.hpp"

namespace mrun::runtime {

// Applies `resources` (the fields given; the others stay as they are) to the leaf of
// container `id`, created, running or paused. A container without a leaf (no delegated
// cgroup v2 subtree, a hybrid host, --cgroups=disabled) takes only what a fresh cgroup
// has anyway (cpu.shares 1024); anything else is a 125 naming the fields.
void update_container(const Context& ctx, const std::string& id,
                      const cgroup::Resources& resources);

}  // namespace mrun::runtime
