// The container side of `mrun run`: runs in the cloned child, inside the new
// namespaces, and ends in execve of the user's command (or in _exit with a status).
#pragma once

#include "base/unique_fd.hpp"
#include "init/launch_spec.hpp"
#include "init/namespace_join.hpp"
#include "runtime/sync_channel.hpp"

namespace mrun::runtime {

// `join`: namespaces the container's process enters itself, first (none: nullptr).
[[noreturn]] void container_main(const LaunchSpec& spec, const ContainerEnd& sync,
                                 const UniqueFd& parent_pidfd, const NamespaceJoin* join);

// The session keyring a container joins unless --no-new-keyring: "_ses.<id>", as runc
// names it (keyctl show in the container says whose it is).
std::string session_keyring_name(const std::string& id);

// Opens a pty inside the container's own devpts (so `tty` shows /dev/pts/N there),
// hands the master to mrun over SYNC, optionally waits until mrun has taken it (run
// sizes it first), and makes the slave our controlling terminal and stdio. With
// `console` (the container's own terminal, not exec's) the slave is bound onto
// /dev/console too (mount/console.hpp), as the runtime spec asks.
void attach_new_pty(const ContainerEnd& sync, bool wait_until_ready, bool console = false);

}  // namespace mrun::runtime
