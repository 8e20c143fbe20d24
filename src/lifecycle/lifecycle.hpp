// The runtime spec's operations on a container that exists (its "Operations" section):
// state, start, kill, delete. Whoever asks (a user, conmon, containerd's shim), the CLI
// verb files only parse their options and call these. Creating one is the launcher's
// (launcher.hpp: `mrun run`, `mrun create`), joining one exec's (exec.hpp).
#pragma once

#include <string>

#include "runtime/context.hpp"
#include "state/state.hpp"

namespace mrun::runtime {

// The container's record, or runc's "container does not exist: ID" (125), the one
// spelling every verb uses.
ContainerState existing_container(const StateStore& store, const std::string& id);

// start: a created container's process goes on to exec (its exec fifo is opened for
// reading, which releases it), the record says running, then the poststart hooks run
// (a failing one is a warning, as the spec says). Refuses any other status, as runc.
void start_container(const Context& ctx, const std::string& id);

// kill: `signal` to the container's init, or with `all` to each of its processes (each
// through its own pidfd: one that exits meanwhile is skipped, never a reused pid).
// A created container can be signalled too (runc's rule).
void kill_container(const Context& ctx, const std::string& id, int signal, bool all);

// delete: removes the record, the storage and the cgroup, then runs the poststop hooks
// (failures warn). A running container needs `force` (then it is killed with SIGKILL and
// its monitor given time to record the exit); a created one is deleted without. Without
// `force` a missing container is an error; with it, nothing to do (runc).
void delete_container(const Context& ctx, const std::string& id, bool force);

}  // namespace mrun::runtime
