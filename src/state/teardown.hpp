// Taking a container apart once it is gone: its network lease, storage, cgroups and
// state. `mrun delete` removes one; a sweep removes what a killed earlier run left
// behind, run by `mrun list` and by a monitor while its container runs, never before a
// container is made.
#pragma once

#include <string>

#include "runtime/context.hpp"

namespace mrun::runtime {

// Removes containers whose mrun died (SIGKILL, reboot) and that asked for --rm; other
// dead ones are left for `mrun list` to show and `mrun delete` to remove. A monitor,
// once its container runs, looks only at the --rm index (its cost does not grow with
// the kept containers); `mrun list`, which reads every state anyway, looks at all
// (Sweep::every_state).
enum class Sweep { remove_on_exit_index, every_state };
void sweep_leftovers(const Context& ctx, Sweep scope = Sweep::remove_on_exit_index);

// Removes a stopped container's state and storage.
void remove_container(const Context& ctx, const std::string& name);

}  // namespace mrun::runtime
