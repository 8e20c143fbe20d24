// `mrun exec`: a new process in a running container. It joins all of the container's
// namespaces (through a pidfd of its init: one setns, the user namespace first, as the
// kernel orders it), its cgroup, and gets the container's own confinement:
// capabilities, no_new_privs, seccomp, user, environment. Nothing is re-read from the
// bundle: the launcher records what exec needs in <state dir>/exec.json.
//
//   mrun exec ─ fork ─ I: join cgroup, setns(all) ─ clone(CLONE_PARENT) ─ P (in the
//   container's pid namespace, mrun exec's child) ─ pty? ─ chdir ─ become_command
//   (runtime/become_command.hpp: the same steps as the container's own command)
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
#include "runtime/state.hpp"
#include "security/security_options.hpp"

namespace mrun::runtime {

// What the container's own process got, for exec's defaults.
struct ExecDefaults {
  std::vector<std::string> env;
  std::string cwd = "/";
  UserSpec user;  // with the additionalGids
  security::SecurityOptions security;
  bool keep_groups = false;
  bool host_capabilities = false;  // see PrivilegeModel
  std::optional<mode_t> umask;
  std::vector<Rlimit> rlimits;
  std::optional<int> oom_score_adj;
  // linux.personality and linux.memoryPolicy: the container's, for its every process.
  std::optional<unsigned long> personality;
  std::optional<MemoryPolicy> memory_policy;
  std::string apparmor_profile;  // process.apparmorProfile, the container's default
  std::string selinux_label;     // process.selinuxLabel, likewise
};
ExecDefaults exec_defaults_of(const ContainerConfig& config, const PrivilegeModel& privilege);
std::string exec_defaults_to_json(const ExecDefaults& defaults);
ExecDefaults exec_defaults_from_json(const std::string& text);

struct ExecRequest {
  std::vector<std::string> args;
  std::vector<std::string> env;  // the whole environment
  std::string cwd = "/";
  UserSpec user;
  security::SecurityOptions security;
  bool keep_groups = false;
  std::optional<mode_t> umask;
  std::vector<Rlimit> rlimits;
  std::optional<int> oom_score_adj;
  std::optional<unsigned long> personality;
  std::optional<MemoryPolicy> memory_policy;
  std::string apparmor_profile;
  std::string selinux_label;
  bool tty = false;
  std::string console_socket;  // tty: where the pty master goes; empty: mrun relays it
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
ExecDefaults read_exec_defaults(const StateStore& store, const std::string& id);

// Runs the process; returns its exit status (0 with detach). Refuses a container that
// is not running: "cannot exec in a stopped container" (125).
int exec_in_container(const ContainerState& state, const ExecRequest& request,
                      const ExecDefaults& defaults, const Context& ctx);

}  // namespace mrun::runtime
