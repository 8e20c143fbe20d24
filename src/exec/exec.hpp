// `mrun exec`: a new process in a running container. It joins all of the container's
// namespaces (through a pidfd of its init: one setns, the user namespace first, as the
// kernel orders it), its cgroup, and gets the container's own confinement:
// capabilities, no_new_privs, seccomp, user, environment. Nothing is re-read from the
// bundle: the launcher records what exec needs in <state dir>/exec.json.
//
//   mrun exec ─ fork ─ I: join cgroup, setns(all) ─ clone(CLONE_PARENT) ─ P (in the
//   container's pid namespace, mrun exec's child) ─ pty? ─ chdir ─ become_command
//   (init/become_command.hpp: the same steps as the container's own command)
//
// I exits at once; P is mrun exec's own child, so it is waited for (and its signals
// forwarded) like `mrun run`'s container. --detach returns once P has exec'd.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/config.hpp"
#include "runtime/context.hpp"
#include "runtime/privilege.hpp"
#include "runtime/process_spec.hpp"
#include "state/exec_defaults.hpp"
#include "state/state.hpp"

namespace mrun::runtime {

// The process to run, and how it is wired: exec's options that are not the process's.
struct ExecRequest {
  ProcessSpec process;
  std::string console_socket;  // terminal: where the pty master goes; empty: mrun relays it
  bool detach = false;
  std::string pid_file;
  int preserve_fds = 0;
};

// runc exec's merge: `extra` KEY=VALUE entries replace the same KEY in `base`, else are
// appended.
std::vector<std::string> merge_env(std::vector<std::string> base,
                                   const std::vector<std::string>& extra);
// --user UID[:GID] (numeric, as runc); GID defaults to `fallback.gid`, and the
// supplementary groups stay `fallback`'s (runc's -u changes the ids only).
UserSpec parse_exec_user(const std::string& text, const UserSpec& fallback);

// Reads exec.json of `state`'s container (created by the launcher).
// Runs the process; returns its exit status (0 with detach). Refuses a container that
// is not running: "cannot exec in a stopped container" (125).
int exec_in_container(const ContainerState& state, const ExecRequest& request,
                      const ExecDefaults& defaults, const Context& ctx);

}  // namespace mrun::runtime
