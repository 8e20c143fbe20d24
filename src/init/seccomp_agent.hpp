// SCMP_ACT_NOTIFY: the filter's notification listener goes from the container's process
// to the seccomp agent listening at the profile's listenerPath (runtime spec,
// config-linux.md "Seccomp" and "The Container Process State"), in runc's order:
//
//   the container's process (run, create/start, exec)    its monitor (mrun run, exec)
//   load the filter (SECCOMP_FILTER_FLAG_NEW_LISTENER)
//   sendmsg: seccomp_listener + fd ──────────────────▶   connect(listenerPath); one sendmsg:
//                                                        ContainerProcessState JSON + fd
//   waits  ◀────────────────────────────────────────   seccomp_listener_taken
//   ─ execve
//
// Why this shape:
// - The listener exists only once the filter is loaded, and from then on the filter
//   judges every syscall of the process. So exactly one syscall stands between the two,
//   the sendmsg(2) of the listener (SyncSocket::send_fd_only: no allocation, hence no
//   brk or mmap), and a profile may not notify it (seccomp_profile.cpp refuses it, as
//   runc refuses SCMP_ACT_NOTIFY on write(2), which its own hand-over uses; runc's other
//   calls, read and close, may be notified, like mrun's recvmsg and close here: the
//   agent holds the listener by the time they are made). A profile that denies sendmsg
//   outright leaves the listener undelivered: the process dies (125) and the monitor
//   says why. mrun passes the fd itself with SCM_RIGHTS, where runc's parent takes it
//   with pidfd_getfd(2): that needs ptrace access to the process, which a rootless monitor
//   lacks over a command running as a subordinate uid or made non-dumpable (exec).
// - The process waits until the agent holds the listener: its command never makes a
//   notified syscall with no agent to answer it, and a monitor that cannot reach the
//   agent fails the start (125, naming listenerPath) before the command ever ran; the
//   monitor then kills the process, so nothing is left behind.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "runtime/sync_channel.hpp"
#include "security/seccomp_compile.hpp"

namespace mrun::runtime {

// The container's process, right after loading its filter: hands `listener` to the
// monitor and returns once the agent holds it. Throws an Error when the monitor refuses
// or went away.
void hand_over_seccomp_listener(const ContainerEnd& sync, UniqueFd listener);

// The monitor, on a seccomp_listener message: sends the listener with the container
// process state to the agent at filter.listener_path, then tells the process to go on.
// `state_json`: the container's OCI state (oci_state_json). Throws an Error naming
// listenerPath when the agent cannot be reached; the caller then kills the process.
void pass_listener_to_agent(const MonitorEnd& sync, const SyncMessage<ToMonitor>& message,
                            const security::CompiledSeccomp& filter, const std::string& state_json);

// The monitor, when the setup channel ended without the listener a filter makes: the
// process died before handing it over, and (a profile that denies sendmsg) could not
// say why. The error names the profile's listenerPath and sendmsg.
Error listener_never_came(const security::CompiledSeccomp& filter);

// The runtime spec's container process state: {"ociVersion", "fds": ["seccompFd"], "pid",
// "metadata" (when there is any), "state"}, as runc sends it.
std::string container_process_state_json(pid_t pid, const std::string& metadata,
                                         const std::string& state_json);

}  // namespace mrun::runtime
