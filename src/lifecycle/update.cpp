#include "lifecycle/update.hpp"

#include <cerrno>

#include "base/error.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/v1_group.hpp"
#include "lifecycle/lifecycle.hpp"
#include "state/state.hpp"

namespace mrun::runtime {

void update_container(const Context& ctx, const std::string& id,
                      const cgroup::Resources& resources) {
  StateStore store(ctx.state_root);
  existing_container(store, id);
  // Under the state lock: two updates of one container never interleave their writes,
  // and a delete does not remove the leaf halfway.
  StateLock lock(store.root());
  auto state = std::optional<ContainerState>(existing_container(store, id));
  const Status status = effective_status(*state);
  if (status != Status::running && status != Status::created) {
    throw Error("container " + id + " is not running (it is " + to_string(status) + ")", 0,
                "update changes the limits of a created, running or paused container");
  }
  for (const auto& line : resources.ignored) ctx.log.warn("update: " + line);
  if (!state->cgroup_v1.empty()) {
    cgroup::update_v1_group(state->cgroup_v1, resources, ctx.log);
    return;
  }
  if (state->cgroup.empty()) {
    const auto writes = cgroup::plan_resource_files(resources);
    const std::string asked = cgroup::describe_requests(writes);
    if (!asked.empty()) {
      throw Error("container " + id + " has no cgroup: " + asked + " cannot be applied", 0,
                  "it was started where mrun could make no cgroup v2 leaf (see `mrun --debug "
                  "create` for why: no delegated subtree, a hybrid cgroup layout, or "
                  "--cgroups=disabled)");
    }
    if (!writes.empty()) {
      ctx.log.debug("update: " + cgroup::describe_defaults(writes) +
                    ": a fresh cgroup's default, accepted without a cgroup");
    }
    return;
  }
  cgroup::update_leaf(state->cgroup, !state->rootless, resources, ctx.log);
}

}  // namespace mrun::runtime
