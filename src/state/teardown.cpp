#include "state/teardown.hpp"

#include <utility>
#include <vector>

#include "base/error.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/devices_v1.hpp"
#include "cgroup/v1_group.hpp"
#include "net/cni_bridge.hpp"
#include "state/state.hpp"
#include "state/storage.hpp"
#include "sys/fs.hpp"

namespace mrun::runtime {

void remove_container(const Context& ctx, const std::string& name) {
  StateStore store(ctx.state_root);
  auto state = store.read(name);
  // A bridge's lease and port rules, where the monitor was killed before its DEL.
  net::release_leftover_bridge(store.dir_of(name) + "/cni.json", ctx.log);
  if (state) remove_storage(ctx, state->storage_dir, state->subordinate_ids);
  if (state && !state->cgroup.empty()) cgroup::remove_leaf(state->cgroup);  // mrun was killed
  if (state && !state->devices_v1.empty()) cgroup::remove_devices_v1_group(state->devices_v1);
  if (state && !cgroup::remove_v1_dirs(state->cgroup_v1)) {
    ctx.log.warn("could not remove every cgroup v1 directory of " + name +
                 " (processes still in them?)");
  }
  store.remove(name);
}

void sweep_leftovers(const Context& ctx, Sweep scope) {
  StateStore store(ctx.state_root);
  if (!sys::is_dir(store.root())) return;
  StateLock lock(store.root());
  store.sweep_scratch();
  std::vector<ContainerState> states;
  if (scope == Sweep::every_state) {
    states = store.list();
  } else {
    for (const auto& name : store.remove_on_exit_names()) {
      if (auto state = store.read(name)) {
        states.push_back(std::move(*state));
      } else if (!sys::exists(store.dir_of(name))) {
        store.remove(name);  // an index entry of a container already gone
      }
    }
  }
  for (const auto& state : states) {
    if (state.status != Status::stopped && state.remove_on_exit &&
        effective_status(state) == Status::stopped) {
      ctx.log.debug("removing leftover of killed --rm container " + state.name);
      try {
        remove_container(ctx, state.name);
      } catch (const Error& e) {
        ctx.log.warn("could not remove leftover container " + state.name + ": " + e.what());
      }
    }
  }
}

}  // namespace mrun::runtime
