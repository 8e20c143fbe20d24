#include "init/become_command.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/error.hpp"
#include "base/phase_trace.hpp"
#include "base/strings.hpp"
#include "base/unique_fd.hpp"
#include "init/exec_failure.hpp"
#include "init/image_user.hpp"
#include "init/seccomp_agent.hpp"
#include "security/lsm.hpp"
#include "sys/fd_slots.hpp"
#include "sys/inherited_state.hpp"
#include "sys/process_attributes.hpp"
#include "sys/procfs.hpp"

namespace mrun::runtime {

namespace {

std::string env_value(const std::vector<std::string>& env, const std::string& key) {
  for (const auto& entry : env) {
    if (starts_with(entry, key + "=")) return entry.substr(key.size() + 1);
  }
  return {};
}

std::string gid_list(const std::vector<gid_t>& gids) {
  std::string out;
  for (gid_t gid : gids) out += (out.empty() ? "" : ",") + std::to_string(gid);
  return "[" + out + "]";
}

std::string limit_text(rlim_t value) {
  return value == RLIM_INFINITY ? std::string("unlimited") : std::to_string(value);
}

// Before the uid switch, while the process still holds what raising a hard limit takes
// (CAP_SYS_RESOURCE in the host's user namespace: rootful mrun only).
void set_rlimits(const std::vector<Rlimit>& rlimits) {
  for (const auto& r : rlimits) {
    auto resource = rlimit_resource(r.type);
    if (!resource) throw Error("process.rlimits: unknown rlimit \"" + r.type + "\"", EINVAL);
    struct rlimit current {};
    ::getrlimit(*resource, &current);
    struct rlimit wanted {
      static_cast<rlim_t>(r.soft), static_cast<rlim_t>(r.hard)
    };
    if (::setrlimit(*resource, &wanted) == 0) continue;
    int err = errno;
    std::string what = "process.rlimits: set " + r.type + " to soft " +
                       limit_text(wanted.rlim_cur) + ", hard " + limit_text(wanted.rlim_max);
    if (err == EPERM) {
      throw Error(what, err,
                  "a hard limit above mrun's own (" + limit_text(current.rlim_max) +
                      ") needs CAP_SYS_RESOURCE in the host's user namespace (rootful mrun "
                      "holding it; a rootless container never has it): lower it in the "
                      "config, or raise the caller's hard limit first (ulimit -H)");
    }
    throw Error(what, err, "the soft limit must not exceed the hard one");
  }
}

void set_groups(const CommandProcess& process, gid_t primary_gid) {
  auto groups = supplementary_groups(process, primary_gid);
  if (!groups) return;
  if (::setgroups(groups->size(), groups->data()) == 0) return;
  int err = errno;
  if (groups->empty()) throw_errno(err, "drop supplementary groups");
  throw Error("process.user.additionalGids " + gid_list(*groups) + ": setgroups", err,
              err == EINVAL ? "every gid must be mapped in the container's user namespace "
                              "(rootless: subordinate gids in /etc/subgid)"
                            : std::string());
}

void change_ids(uid_t uid, gid_t gid) {
  if (::setresgid(gid, gid, gid) != 0) {
    throw_errno("switch to gid " + std::to_string(gid),
                "the gid must be mapped in the user namespace (0-65535 with subordinate ids)");
  }
  if (::setresuid(uid, uid, uid) != 0) {
    throw_errno("switch to uid " + std::to_string(uid),
                "the uid must be mapped in the user namespace (0-65535 with subordinate ids)");
  }
}

}  // namespace

// The lowest value an unprivileged writer may set is oom_score_adj_min: the last value
// a holder of CAP_SYS_RESOURCE set, inherited across fork.
void set_oom_score_adj(int value) {
  const char* path = "/proc/self/oom_score_adj";
  std::string text = std::to_string(value);
  const std::string what = "process.oomScoreAdj: write " + text + " to " + path;
  UniqueFd fd;
  try {
    // Through a descriptor of this process's own procfs entry (sys::open_own_proc_file).
    fd = sys::open_own_proc_file("oom_score_adj", O_WRONLY);
  } catch (const Error& e) {
    throw e.wrap(what);
  }
  if (::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size())) return;
  int err = errno;
  if (err == EACCES || err == EPERM) {
    throw Error(what, err,
                "lowering the OOM score adjustment needs CAP_SYS_RESOURCE in the host's user "
                "namespace (rootful mrun); rootless, give a value at least the caller's (cat " +
                    std::string(path) + ")");
  }
  throw Error(what, err, "the value must be within -1000..1000");
}

std::optional<std::vector<gid_t>> supplementary_groups(const CommandProcess& process,
                                                       gid_t primary_gid) {
  // --keep-groups: the kernel checks a node's group against the real kgid, so a
  // root:fakegpu 0660 node stays usable; crun also leaves additionalGids unset then.
  if (process.spec.keep_groups) return std::nullopt;
  const auto& wanted = process.spec.user.additional_gids;
  if (!process.may_setgroups) {
    // A single-id map: the kernel denies setgroups, and the caller's groups stay (they
    // show as nogroup). The primary gid alone is what the process has anyway.
    bool primary_only =
        std::all_of(wanted.begin(), wanted.end(), [&](gid_t gid) { return gid == primary_gid; });
    if (primary_only) return std::nullopt;
    throw Error("process.user.additionalGids " + gid_list(wanted) +
                    " (mrun run --group-add): setgroups is denied in a user namespace with a "
                    "single-id map",
                EPERM,
                "give the user subordinate gids in /etc/subgid (then mrun maps 65536), or "
                "drop the groups");
  }
  return wanted;
}

std::vector<std::string> with_home(std::vector<std::string> env, const std::string& home) {
  auto it = std::find_if(env.begin(), env.end(),
                         [](const std::string& e) { return starts_with(e, "HOME="); });
  if (it == env.end()) {
    env.push_back("HOME=" + home);
  } else if (*it == "HOME=") {
    *it = "HOME=" + home;
  }
  return env;
}

// The messages use the words runc's Go runtime uses (`exec: "NAME": ` first, as Go's
// exec.LookPath writes it, then "executable file not found in $PATH", "no such file or
// directory", "permission denied"), lower case as Go writes errno text: engines read
// them to choose 127 or 126 for `docker run`, and match them case-sensitively.
static Error exec_error(const std::string& name, int err) {
  std::string object = "exec: \"" + name + "\": ";
  switch (err) {
    case ENOENT:
      return Error(object + "no such file or directory", 0,
                   "give a path that exists inside the container's root", exit_code::not_found);
    case EISDIR:
      return Error(object + "is a directory", 0, "give the path of a program",
                   exit_code::cannot_execute);
    default:
      return Error(object + "permission denied", 0,
                   "the file must be executable and every directory above it searchable",
                   exit_code::cannot_execute);
  }
}

std::string resolve_command(const std::string& name, const std::string& path_env) {
  auto check = [&](const std::string& candidate, bool searched) -> int {
    struct stat st {};
    if (::stat(candidate.c_str(), &st) != 0) return ENOENT;
    if (S_ISDIR(st.st_mode)) return searched ? ENOENT : EISDIR;
    if (::access(candidate.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  if (name.find('/') != std::string::npos) {
    int err = check(name, false);
    if (err != 0) throw exec_error(name, err);
    return name;
  }
  int denied = 0;
  for (const auto& dir : split(path_env, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    int err = check(candidate, true);
    if (err == 0) return candidate;
    if (err == EACCES) denied = err;
  }
  if (denied != 0) throw exec_error(name, denied);
  throw Error("exec: \"" + name + "\": executable file not found in $PATH", 0,
              "install it in the image or give its full path", exit_code::not_found);
}

// linux.personality and linux.memoryPolicy: both outlive execve, so they are set here,
// once, for the command (and what it forks).
static void set_execution_domain(const CommandProcess& process) {
  try {
    if (process.spec.personality) sys::set_personality(*process.spec.personality);
  } catch (const Error& e) {
    throw e.wrap("linux.personality");
  }
  try {
    if (process.spec.memory_policy) {
      const MemoryPolicy& p = *process.spec.memory_policy;
      sys::set_memory_policy(p.mode | static_cast<int>(p.flags), p.nodemask);
    }
  } catch (const Error& e) {
    throw e.wrap("linux.memoryPolicy");
  }
}

// process.scheduler and process.ioPriority: both kept across execve and inherited by
// what the command forks. Set after the rlimits (RLIMIT_NICE and RLIMIT_RTPRIO bound
// what an unprivileged process may ask) and while the process is still privileged.
static void set_scheduling(const CommandProcess& process) {
  try {
    if (const auto& s = process.spec.scheduler) {
      sys::set_scheduler(
          {s->policy, s->flags, s->nice, s->priority, s->runtime, s->deadline, s->period});
    }
  } catch (const Error& e) {
    throw e.wrap("process.scheduler");
  }
  try {
    if (const auto& io = process.spec.io_priority) sys::set_io_priority(io->io_class, io->priority);
  } catch (const Error& e) {
    throw e.wrap("process.ioPriority");
  }
}

void become_command(const CommandProcess& process, const security::SecurityPlan& plan,
                    const ContainerEnd& sync, const std::function<void()>& before_exec) {
  // The container's own /etc/passwd, read by this process inside the container (never
  // by mrun on the host, where it could be a symlink to a host file).
  UserSpec user = process.spec.user;
  std::vector<std::string> env = process.spec.env;
  const bool need_home = std::none_of(env.begin(), env.end(), [](const std::string& e) {
    return starts_with(e, "HOME=") && e.size() > 5;
  });
  if (user.gid_from_image || need_home) {
    auto passwd = read_image_passwd();
    if (user.gid_from_image && passwd) {
      user.gid = primary_gid_in_passwd(*passwd, user.uid).value_or(user.gid);
    }
    if (need_home) {
      env = with_home(std::move(env),
                      passwd ? home_in_passwd(*passwd, user.uid).value_or("/") : std::string("/"));
    }
  }

  set_rlimits(process.spec.rlimits);
  set_execution_domain(process);
  set_scheduling(process);
  // Before no_new_privs (which would keep AppArmor from changing profile at execve),
  // while the process may still write its own attr files.
  security::set_exec_labels(process.spec.apparmor_profile, process.spec.selinux_label);
  set_groups(process, user.gid);
  // The uid/gid switch sits between the two halves of the capability setup: the
  // bounding set is cut (and, for a non-root user, PR_SET_KEEPCAPS set) while we still
  // hold every capability; the final sets and no_new_privs follow once the ids are the
  // command's.
  security::confine_before_user_switch(plan);
  if (user.uid != 0 || user.gid != 0) change_ids(user.uid, user.gid);
  security::confine_after_user_switch(plan);

  // mrun blocks and handles signals for its own use (the forwarding SignalBlock, SIGPIPE);
  // the command starts as a fresh program would: nothing blocked, nothing ignored.
  sys::reset_signals();
  // Unset: 0022, as runc and crun give it, whatever the caller's umask was.
  ::umask(process.spec.umask.value_or(022));
  // As the command's user, so that its search permissions decide.
  const auto& args = process.spec.args;
  std::string path = resolve_command(args.front(), env_value(env, "PATH"));
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  if (before_exec) before_exec();
  sys::keep_fds_across_exec(process.preserve_fds);
  // Last, so that the filter judges the command and nothing of mrun's own setup.
  MRUN_PHASE("init:before-seccomp");
  security::load_seccomp_last(
      plan, [&](UniqueFd listener) { hand_over_seccomp_listener(sync, std::move(listener)); });
  MRUN_PHASE("init:exec");
  ::execve(path.c_str(), argv.data(), envp.data());
  throw exec_error(args.front(), path, errno);
}

}  // namespace mrun::runtime
