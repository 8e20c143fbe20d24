// Making, watching and becoming processes: clone3 with a pidfd, waits and signals by
// pidfd (no pid a reaped process could hand to another), /proc/PID/stat, the ids of a
// user, execveat.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/unique_fd.hpp"

namespace mrun::sys {

void set_parent_death_signal(int sig);

struct CloneResult {
  pid_t pid = -1;  // in the parent: the child's pid; in the child: 0
  UniqueFd pidfd;  // in the parent: a pidfd for the child
};

// clone3 with CLONE_PIDFD and the given namespace flags, fork semantics (no shared VM).
// With CLONE_PARENT the child is the caller's sibling, the pidfd all the caller has of
// it; clone3 then wants exit_signal 0 (EINVAL otherwise) and the child gets the
// caller's own exit signal.
CloneResult clone_with_pidfd(unsigned long long flags, int exit_signal);

// clone3 with FLAGS alone, fork semantics: the child's pid (0 in the child), or minus the
// errno. Only a system call, so a vfork child (sys::run_in_vfork_child) may make it.
long raw_clone3(unsigned long long flags) noexcept;

// Throws the Error of a failed fork, clone or clone3 (ERR): EAGAIN there is nearly always
// the caller's RLIMIT_NPROC (a login's `ulimit -u`), which the message then names.
[[noreturn]] void throw_process_creation_error(int err, const std::string& what);

UniqueFd pidfd_open(pid_t pid);

// Returns false when the process is already gone (ESRCH).
bool pidfd_send_signal(int pidfd, int sig);

// Blocking wait; returns the shell-style status: code, or 128+signal.
int wait_pidfd(int pidfd);

// Non-blocking: returns -1 when still running.
int try_wait_pidfd(int pidfd);

// Blocks until the process has exited, without reaping it: for a process that is not
// our child (waitid(P_PIDFD) needs one), the pidfd becomes readable when it exits.
void wait_pidfd_exit(int pidfd);

// execveat(fd, "", argv, envp, AT_EMPTY_PATH); returns only by throwing.
void execve_fd(int fd, const std::vector<std::string>& argv, const std::vector<std::string>& envp,
               const std::string& what);

// prctl(PR_SET_DUMPABLE).
void set_dumpable(bool dumpable);

// Start time of a process in clock ticks since boot (/proc/PID/stat field 22): with the
// pid it identifies a process across pid reuse.
unsigned long long process_start_time(pid_t pid);

struct ProcessStat {
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...; '?' when gone
  unsigned long long start_time = 0;
};

ProcessStat process_stat(pid_t pid);

// Becomes the user for good (real, effective and saved ids), with the supplementary
// groups /etc/group gives it (initgroups): what a login of that user would have. For a
// child between fork and exec.
void become_user(const std::string& name, uid_t uid, gid_t gid);

}  // namespace mrun::sys
