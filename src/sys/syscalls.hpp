// The only place in mrun that calls mount, pivot_root, clone3, setns and friends.
// Every wrapper throws mrun::Error naming the object on failure, so callers read as
// a list of steps and tests can assert on the message.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.hpp"

namespace mrun::sys {

// mount(2). `what` names the mount in errors ("overlay", "proc", "bind /dev/null").
void mount(const std::string& source, const std::string& target, const std::string& fstype,
           unsigned long flags, const std::string& data, const std::string& what);
void bind_mount(const std::string& source, const std::string& target, bool recursive);
// mount(2) as a question: 0 or the errno, for callers that try several ways in turn.
int try_mount(const char* source, const char* target, const char* fstype, unsigned long flags,
              const char* data) noexcept;
void make_rprivate(const std::string& target);
void umount_detach(const std::string& target);
// pivot_root(".", ".") in `new_root`, then detach the old root: afterwards nothing of
// the host's mount tree is reachable from the process.
void pivot_into(const std::string& new_root);

// --no-pivot: MS_MOVE `new_root` onto / and chroot into it. Weaker than pivot_root: the
// old root stays mounted underneath and a process with CAP_SYS_CHROOT in the container
// can climb out of a chroot; only for filesystems pivot_root refuses (an initramfs).
void move_root_into(const std::string& new_root);

// fchdir(dir) and chroot("."): the root becomes the directory `dir` names, which may lie in
// another mount namespace (or in none: a detached tree). Ends in / of the new root.
void chroot_to(int dir, const std::string& what);

// keyctl(KEYCTL_JOIN_SESSION_KEYRING, name): a fresh session keyring, so the container
// never shares the caller's keys. Returns the errno (0 on success): ENOSYS/EPERM/EACCES
// (no keyrings, or a seccomp filter of an outer container) are the caller's to judge.
int join_session_keyring(const std::string& name);

// Whether this process and `pid` are in the same namespace of `type` ("user", "mnt", ...):
// setns refuses to join one's own user namespace, so exec asks first.
bool same_namespace(pid_t pid, const std::string& type);

// --preserve-fds N, at mrun's start: each of fds 3..3+N-1 the caller did not pass is
// held by a close-on-exec placeholder, so that no descriptor mrun opens later lands
// there and is handed to the container.
void hold_fd_slots(int count);
// --preserve-fds N, right before the command's exec: of fds 3..3+N-1 exactly the
// caller's stay open. Those are told apart by FD_CLOEXEC: an fd inherited over the
// caller's exec of mrun cannot carry it, and every fd mrun opens (placeholders
// included) does, so those are closed. Every fd from 3+N becomes close-on-exec
// (close_range: no /proc listing the container could have covered).
void keep_fds_across_exec(int preserve);

// /proc/<our pid>/<name> (oom_score_adj, ...) of the procfs mounted at /proc, opened
// with `flags` beneath /proc with no symlink and no mount crossed, after checking that
// /proc is procfs at all: a config that puts a tmpfs there, or a file bound over the
// entry, gets an error instead of a write that lands elsewhere (CVE-2025-52881).
UniqueFd open_own_proc_file(const std::string& name, int flags);

// Writes `value` to /proc/sys/<relative> (a sysctl, "net/ipv4/ip_forward") through a
// descriptor: /proc/sys checked to be procfs, the file opened beneath it with no symlink
// and no mount crossed (CVE-2025-52881: a write redirected by a mount elsewhere).
void write_proc_sys(const std::string& relative, const std::string& value);

void set_hostname(const std::string& name);
void set_domainname(const std::string& name);
void set_parent_death_signal(int sig);
// unshare(2) of `flags`; throws naming `what` and `fix`.
void unshare_namespaces(int flags, const std::string& what, const std::string& fix = {});
// unshare(2) as a question: 0 or the errno.
int try_unshare(int flags) noexcept;
// personality(2): the execution domain (PER_LINUX, PER_LINUX32), kept across execve.
void set_personality(unsigned long persona);
// set_mempolicy(2) of `mode` (MPOL_*, MPOL_F_* or'ed in) over the nodes whose bits
// `nodemask` sets (empty: none), kept across execve.
void set_memory_policy(int mode, const std::vector<unsigned long>& nodemask);
// ioprio_set(2) of this process: `io_class` (IOPRIO_CLASS_*) and its level 0..7.
void set_io_priority(int io_class, int level);
// sched_setattr(2) of this process, with struct sched_attr's first (VER0) fields.
struct SchedulerAttributes {
  unsigned policy = 0;
  std::uint64_t flags = 0;
  int nice = 0;
  unsigned priority = 0;
  std::uint64_t runtime = 0, deadline = 0, period = 0;
};
void set_scheduler(const SchedulerAttributes& attributes);
void bring_loopback_up();

// Opens a path strictly inside `root_fd` (openat2 RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS):
// a symlink in an image can never send a mount to the host.
UniqueFd open_in_root(int root_fd, const std::string& path, int flags, mode_t mode = 0);
// The same without an exception: an invalid UniqueFd and `*err` set to the errno, for
// probes whose failure is an ordinary answer (a mount point still to be created).
UniqueFd try_open_in_root(int root_fd, const std::string& path, int flags, int* err);
// The entry `name` of the directory `dir_fd`, following no symlink at all (openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): what mrun has just made there, or ELOOP/ENOENT
// when someone swapped it meanwhile.
UniqueFd try_open_entry(int dir_fd, const std::string& name, int flags, int* err);
// "/proc/self/fd/N", the path form of an fd, for mount(2) targets.
std::string fd_path(int fd);

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
void setns_pidfd(int pidfd, int nstypes, const std::string& what);
// setns(fd, nstype) on a namespace file; returns the errno (0 on success), so that the
// caller can name the namespace and the fix.
int setns_fd(int fd, int nstype) noexcept;
// The CLONE_NEW* kind of the namespace `fd` refers to (ioctl NS_GET_NSTYPE); 0 when it is
// no namespace.
int namespace_type(int fd);

// ---- a sealed in-memory copy of a binary (exec/cloned_binary.hpp) ----
// memfd_create(2) with MFD_CLOEXEC | MFD_ALLOW_SEALING, and MFD_EXEC where the kernel
// knows it (6.3+: without it, vm.memfd_noexec may make the memfd non-executable; older
// kernels refuse the unknown flag, so it is retried without).
UniqueFd memfd_create_executable(const std::string& name);
// fcntl(F_GET_SEALS): the seals of `fd`, or -1 when the file cannot carry seals (EINVAL:
// not a memfd or shmem file).
int file_seals(int fd);
void add_seals(int fd, int seals);
// Copies the first `count` bytes of `from` (from its current offset) to `to` with
// sendfile(2); throws if `from` ends before.
void copy_file_contents(int from, int to, std::size_t count, const std::string& what);
// execveat(fd, "", argv, envp, AT_EMPTY_PATH); returns only by throwing.
void execve_fd(int fd, const std::vector<std::string>& argv, const std::vector<std::string>& envp,
               const std::string& what);
// prctl(PR_SET_DUMPABLE).
void set_dumpable(bool dumpable);

// Whether this kernel runs x32 syscalls (x86_64 only: getpid with the x32 bit; a kernel
// built or booted without them answers ENOSYS). false on other architectures.
bool kernel_runs_x32_syscalls();

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

// `uname -rv`: release and version of the running kernel.
std::string kernel_version();

}  // namespace mrun::sys
