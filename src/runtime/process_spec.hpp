// The process a container runs, resolved: the runtime spec's `process` (args, env, cwd,
// user, terminal, capabilities, noNewPrivileges, rlimits, umask, oomScoreAdj, labels)
// and the parts of `linux` that belong to each process (personality, memoryPolicy, the
// seccomp filter). It is the one model of a process: config.json and `mrun run`'s flags
// fill it in for the container's own command (ContainerConfig::process), exec.json keeps
// it as the container's defaults for exec, `mrun exec` fills it in from those and its
// flags or --process file, and become_command (init/become_command.hpp) applies it.
// A new process field is one member here, one line in its JSON (exec_defaults.cpp) and
// one step in become_command.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "security/security_options.hpp"

namespace mrun::runtime {

struct UserSpec {
  uid_t uid = 0;
  gid_t gid = 0;
  // -u UID without a GID: the container's process takes the uid's primary group from
  // the image's /etc/passwd itself, after pivot_root (init/image_user.hpp); `gid`
  // (0) when the image does not list the uid.
  bool gid_from_image = false;
  // process.user.additionalGids: the supplementary groups, set with setgroups(2) once
  // the id maps are written. Empty: none (the caller's are dropped, see keep_groups).
  std::vector<gid_t> additional_gids;
  bool operator==(const UserSpec&) const = default;
};

// process.rlimits: one resource limit of the container's process (set in it before it
// execs the command; mrun itself and its helpers keep their own).
struct Rlimit {
  std::string type;  // "RLIMIT_NOFILE"
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
  bool operator==(const Rlimit&) const = default;
};
// The setrlimit(2) resource of "RLIMIT_NOFILE" and the rest; nullopt for a name Linux
// does not have.
std::optional<int> rlimit_resource(const std::string& type);

// linux.memoryPolicy: set_mempolicy(2) for the container's processes (kept across
// execve, inherited across fork).
struct MemoryPolicy {
  int mode = 0;                         // MPOL_*
  unsigned flags = 0;                   // MPOL_F_* (or'ed into the mode)
  std::vector<unsigned long> nodemask;  // bit N: node N
  bool operator==(const MemoryPolicy&) const = default;
};

// process.ioPriority: ioprio_set(2) for the process (inherited across fork, kept
// across execve).
struct IoPriority {
  int io_class = 0;  // IOPRIO_CLASS_RT (1), _BE (2), _IDLE (3)
  int priority = 0;  // 0 (highest) .. 7
  bool operator==(const IoPriority&) const = default;
};

// process.scheduler: sched_setattr(2) for the process, as struct sched_attr has it.
struct Scheduler {
  unsigned policy = 0;      // SCHED_OTHER (0), _FIFO, _RR, _BATCH, _ISO, _IDLE, _DEADLINE (6)
  int nice = 0;             // -20..19, for SCHED_OTHER and SCHED_BATCH
  unsigned priority = 0;    // 1..99 for SCHED_FIFO and SCHED_RR, else 0
  std::uint64_t flags = 0;  // SCHED_FLAG_*
  // SCHED_DEADLINE's, in nanoseconds.
  std::uint64_t runtime = 0, deadline = 0, period = 0;
  bool operator==(const Scheduler&) const = default;
};

struct ProcessSpec {
  std::vector<std::string> args;  // process.args
  std::vector<std::string> env;   // process.env: KEY=VALUE, final (HOME added at exec)
  std::string cwd = "/";          // process.cwd
  UserSpec user;                  // process.user
  bool terminal = false;          // process.terminal
  // process.noNewPrivileges, process.capabilities, linux.seccomp (or mrun run's).
  security::SecurityOptions security;
  std::optional<mode_t> umask;  // process.user.umask; unset: 0022
  std::vector<Rlimit> rlimits;  // process.rlimits
  // process.oomScoreAdj, written to /proc/self/oom_score_adj; unset: inherited.
  std::optional<int> oom_score_adj;
  // linux.personality (the execution domain, PER_LINUX or PER_LINUX32) and
  // linux.memoryPolicy, set before execve.
  std::optional<unsigned long> personality;
  std::optional<MemoryPolicy> memory_policy;
  std::optional<IoPriority> io_priority;  // process.ioPriority
  std::optional<Scheduler> scheduler;     // process.scheduler
  // process.apparmorProfile and process.selinuxLabel: the LSM context the command is
  // exec'd into; only where that LSM is enabled (elsewhere the config is refused).
  std::string apparmor_profile;
  std::string selinux_label;
  // annotations["run.oci.keep_original_groups"] = "1" (crun's), or --keep-groups: the
  // caller's supplementary groups stay, and additionalGids are not set.
  bool keep_groups = false;
  bool operator==(const ProcessSpec&) const = default;
};

// process.rlimits (known names, soft <= hard) and oomScoreAdj (-1000..1000), for the
// container's process and for `mrun exec`'s. Throws naming the field.
void validate_process_limits(const ProcessSpec& process);

}  // namespace mrun::runtime
