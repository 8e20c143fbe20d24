// The last steps of a container's process: what makes it the command that the runtime
// spec's `process` describes. One sequence for the container's own command
// (container_init.cpp, `mrun run` and create/start) and for `mrun exec` (exec.cpp),
// in the one order that works:
//
//   the image's /etc/passwd for the uid (primary gid, HOME), read inside the container
//   ─ rlimits                       while still privileged: raising a hard limit needs
//                                   CAP_SYS_RESOURCE
//   ─ personality, memory policy, scheduler, I/O priority (kept across execve)
//   ─ LSM exec labels
//   ─ setgroups                     additionalGids; needs CAP_SETGID
//   ─ bounding set, keep caps       security::confine_before_user_switch
//   ─ setresgid ─ setresuid
//   ─ capability sets, no_new_privs security::confine_after_user_switch
//   ─ signal mask and dispositions reset ─ umask ─ the command looked up as the user
//   ─ `before_exec`                 run: parent death signal, OCI start's exec fifo
//   ─ inherited fds kept ─ seccomp, last (its notification listener to the monitor over
//     `sync`, init/seccomp_agent.hpp) ─ execve
//
// The caller has already entered the container (pivot_root, or setns for exec), set up
// stdio and the working directory, and (--init) forked off the reaper: everything here
// is the command's alone.
//
// process.oomScoreAdj is the one step before that (set_oom_score_adj below): the file
// /proc/self/oom_score_adj of a non-dumpable process belongs to the host's root, so a
// rootless container's root cannot open it. The container's init writes it before
// --init makes it non-dumpable (the reaper and the command then share the score, as
// with any init process an engine runs), `mrun exec` in its setup process before it
// turns non-dumpable; the command inherits it across fork.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/process_spec.hpp"
#include "runtime/sync_channel.hpp"
#include "security/security_plan.hpp"

namespace mrun::runtime {

// The process and what only the moment of its exec knows.
struct CommandProcess {
  const ProcessSpec& spec;  // HOME is added to its env when absent
  // false: the user namespace denies setgroups (a single-id rootless map).
  bool may_setgroups = true;
  int preserve_fds = 0;  // fds 3..3+N-1 stay open across the exec
};

// Never returns: execs the command, or throws an Error (its exit status 125, 126 or
// 127) for the caller to report. `sync`: the setup channel to the monitor, which takes
// the seccomp filter's notification listener when the profile makes one.
[[noreturn]] void become_command(const CommandProcess& process, const security::SecurityPlan& plan,
                                 const ContainerEnd& sync,
                                 const std::function<void()>& before_exec = {});

// process.oomScoreAdj for this process (and what it forks from now on), as runc does
// before dropping privileges: lowering the score below the lowest this process may set
// needs CAP_SYS_RESOURCE in the host's user namespace. Throws an Error naming the field.
void set_oom_score_adj(int value);

// ---- the pure parts, for tests ----------------------------------------------------------

// What setgroups(2) gets: nullopt to leave the groups alone (--keep-groups, or setgroups
// denied with nothing but the primary gid asked for), else the list (empty: drop the
// caller's). Throws an Error naming process.user.additionalGids when setgroups is denied
// and other groups are asked for.
std::optional<std::vector<gid_t>> supplementary_groups(const CommandProcess& process,
                                                       gid_t primary_gid);

// `env` with HOME=`home` when it has no HOME or an empty one (runc's rule).
std::vector<std::string> with_home(std::vector<std::string> env, const std::string& home);

// Command lookup as execvp does it, against the container's PATH; throws an Error
// carrying exit status 127 (not found) or 126 (not executable).
std::string resolve_command(const std::string& name, const std::string& path_env);

}  // namespace mrun::runtime
