#include "sys/syscalls.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.hpp"
#include "sys/fs.hpp"
#include "sys/user_db.hpp"

namespace mrun::sys {

void mount(const std::string& source, const std::string& target, const std::string& fstype,
           unsigned long flags, const std::string& data, const std::string& what) {
  if (::mount(source.empty() ? nullptr : source.c_str(), target.c_str(),
              fstype.empty() ? nullptr : fstype.c_str(), flags,
              data.empty() ? nullptr : data.c_str()) != 0) {
    throw_errno("mount " + what + " on " + target);
  }
}

int try_mount(const char* source, const char* target, const char* fstype, unsigned long flags,
              const char* data) noexcept {
  return ::mount(source, target, fstype, flags, data) == 0 ? 0 : errno;
}

void bind_mount(const std::string& source, const std::string& target, bool recursive) {
  unsigned long flags = MS_BIND | (recursive ? MS_REC : 0);
  if (::mount(source.c_str(), target.c_str(), nullptr, flags, nullptr) != 0) {
    throw_errno("bind mount " + source + " on " + target);
  }
}

void make_rprivate(const std::string& target) {
  if (::mount(nullptr, target.c_str(), nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    throw_errno("make mounts under " + target + " private");
  }
}

void umount_detach(const std::string& target) {
  if (::umount2(target.c_str(), MNT_DETACH) != 0) throw_errno("unmount " + target);
}

void pivot_into(const std::string& new_root) {
  // The pivot_root(".", ".") idiom (as in runc): the old root ends up stacked on top of
  // the new one, so unmounting "." removes it without needing a directory for it
  // inside the image.
  UniqueFd root(::open(new_root.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  if (!root) throw_errno("open new root " + new_root);
  if (::fchdir(root.get()) != 0) throw_errno("chdir to new root " + new_root);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("pivot_root to " + new_root);
  // The old root may have shared mounts we must not propagate our unmount to.
  if (::mount(nullptr, ".", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) {
    throw_errno("make old root a slave");
  }
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("detach old root");
  if (::chdir("/") != 0) throw_errno("chdir to / in the new root");
}

void move_root_into(const std::string& new_root) {
  if (::chdir(new_root.c_str()) != 0) throw_errno("chdir to new root " + new_root);
  if (::mount(new_root.c_str(), "/", nullptr, MS_MOVE, nullptr) != 0) {
    throw_errno("move " + new_root + " onto / (--no-pivot)");
  }
  if (::chroot(".") != 0) throw_errno("chroot into " + new_root + " (--no-pivot)");
  if (::chdir("/") != 0) throw_errno("chdir to / in the new root");
}

void chroot_to(int dir, const std::string& what) {
  if (::fchdir(dir) != 0) throw_errno("chdir to " + what);
  if (::chroot(".") != 0) throw_errno("chroot into " + what);
  if (::chdir("/") != 0) throw_errno("chdir to / in " + what);
}

int join_session_keyring(const std::string& name) {
  constexpr long keyctl_join_session_keyring = 1;  // KEYCTL_JOIN_SESSION_KEYRING
  if (::syscall(SYS_keyctl, keyctl_join_session_keyring, name.c_str()) < 0) return errno;
  return 0;
}

bool same_namespace(pid_t pid, const std::string& type) {
  struct stat self {
  }, other{};
  std::string mine = "/proc/self/ns/" + type;
  std::string theirs = "/proc/" + std::to_string(pid) + "/ns/" + type;
  if (::stat(mine.c_str(), &self) != 0) throw_errno("stat " + mine);
  if (::stat(theirs.c_str(), &other) != 0) throw_errno("stat " + theirs);
  return same_inode(self, other);
}

void hold_fd_slots(int count) {
  for (int fd = 3; fd < 3 + count; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // The lowest free number: `fd` itself, as every lower slot is taken by now.
    int placeholder = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (placeholder < 0) throw_errno("hold fd " + std::to_string(fd) + " for --preserve-fds");
    if (placeholder != fd) {
      int moved = ::dup3(placeholder, fd, O_CLOEXEC);
      ::close(placeholder);
      if (moved < 0) throw_errno("hold fd " + std::to_string(fd) + " for --preserve-fds");
    }
  }
}

void keep_fds_across_exec(int preserve) {
  for (int fd = 3; fd < 3 + preserve; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) != 0) ::close(fd);
  }
  if (::close_range(static_cast<unsigned>(3 + preserve), ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    throw_errno("mark fds from " + std::to_string(3 + preserve) + " close-on-exec");
  }
}

UniqueFd open_own_proc_file(const std::string& name, int flags) {
  UniqueFd proc(::open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct statfs fs {};
  if (!proc || ::fstatfs(proc.get(), &fs) != 0) throw_errno("open /proc");
  if (fs.f_type != PROC_SUPER_MAGIC) {
    throw Error("/proc is not procfs", EXDEV,
                "mount a proc filesystem on /proc (mounts in config.json), as the runtime "
                "spec expects");
  }
  // Our pid as this procfs numbers it (its "self" link: a procfs of another pid namespace,
  // the host's before pivot_root, has its own numbers), then the file by that number,
  // following no link at all: this procfs's own entry for this process, on this mount.
  char self[32] = {};
  ssize_t n = ::readlinkat(proc.get(), "self", self, sizeof self - 1);
  if (n <= 0 ||
      std::string_view(self, static_cast<std::size_t>(n)).find_first_not_of("0123456789") !=
          std::string_view::npos) {
    throw Error("/proc/self does not name this process's pid", EXDEV,
                "mount a proc filesystem on /proc");
  }
  const std::string relative = std::string(self, static_cast<std::size_t>(n)) + "/" + name;
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC | O_NOCTTY);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, proc.get(), relative.c_str(), &how, sizeof how);
  if (fd < 0) throw_errno("open /proc/" + relative);
  return UniqueFd(static_cast<int>(fd));
}

void write_proc_sys(const std::string& relative, const std::string& value) {
  UniqueFd dir(::open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct statfs fs {};
  if (!dir || ::fstatfs(dir.get(), &fs) != 0) throw_errno("open /proc/sys");
  if (fs.f_type != PROC_SUPER_MAGIC) throw Error("/proc/sys is not procfs", EXDEV);
  struct open_how how {};
  how.flags = O_WRONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  long fd = ::syscall(SYS_openat2, dir.get(), relative.c_str(), &how, sizeof how);
  if (fd < 0) throw_errno("open /proc/sys/" + relative);
  UniqueFd file(static_cast<int>(fd));
  ssize_t n;
  do {
    n = ::write(file.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 || static_cast<std::size_t>(n) != value.size())
    throw_errno("write /proc/sys/" + relative);
}

void set_hostname(const std::string& name) {
  if (::sethostname(name.data(), name.size()) != 0) throw_errno("set hostname " + name);
}

void set_domainname(const std::string& name) {
  if (::setdomainname(name.data(), name.size()) != 0) throw_errno("set domain name " + name);
}

int try_unshare(int flags) noexcept {
  return ::unshare(flags) == 0 ? 0 : errno;
}

void unshare_namespaces(int flags, const std::string& what, const std::string& fix) {
  if (::unshare(flags) != 0) throw_errno(what, fix);
}

void set_personality(unsigned long persona) {
  if (::personality(persona) < 0) throw_errno("set execution domain " + std::to_string(persona));
}

void set_memory_policy(int mode, const std::vector<unsigned long>& nodemask) {
  const unsigned long maxnode = nodemask.size() * 8 * sizeof(unsigned long) + 1;
  if (::syscall(SYS_set_mempolicy, mode, nodemask.empty() ? nullptr : nodemask.data(),
                nodemask.empty() ? 0 : maxnode) != 0) {
    throw_errno("set_mempolicy",
                "give nodes this host has (/sys/devices/system/node) and a mode its kernel knows");
  }
}

void set_io_priority(int io_class, int level) {
  constexpr int who_process = 1;   // IOPRIO_WHO_PROCESS
  constexpr int class_shift = 13;  // IOPRIO_CLASS_SHIFT
  if (::syscall(SYS_ioprio_set, who_process, 0, (io_class << class_shift) | level) != 0) {
    const int err = errno;
    throw_errno(err,
                "ioprio_set class " + std::to_string(io_class) + " level " + std::to_string(level),
                err == EPERM ? "the real-time class needs CAP_SYS_ADMIN (or CAP_SYS_NICE) in "
                               "the host's user namespace: use IOPRIO_CLASS_BE or _IDLE"
                             : "");
  }
}

void set_scheduler(const SchedulerAttributes& a) {
  // struct sched_attr as the kernel reads it (SCHED_ATTR_SIZE_VER0): glibc 2.36 has no
  // wrapper, and <linux/sched/types.h> clashes with <sched.h>.
  struct {
    std::uint32_t size;
    std::uint32_t sched_policy;
    std::uint64_t sched_flags;
    std::int32_t sched_nice;
    std::uint32_t sched_priority;
    std::uint64_t sched_runtime, sched_deadline, sched_period;
  } attr{};
  static_assert(sizeof attr == 48, "struct sched_attr, SCHED_ATTR_SIZE_VER0");
  attr.size = sizeof attr;
  attr.sched_policy = a.policy;
  attr.sched_flags = a.flags;
  attr.sched_nice = a.nice;
  attr.sched_priority = a.priority;
  attr.sched_runtime = a.runtime;
  attr.sched_deadline = a.deadline;
  attr.sched_period = a.period;
  if (::syscall(SYS_sched_setattr, 0, &attr, 0u) != 0) {
    const int err = errno;
    throw_errno(err, "sched_setattr policy " + std::to_string(a.policy),
                err == EPERM ? "a real-time policy or a negative nice needs CAP_SYS_NICE in "
                               "the host's user namespace (and RLIMIT_RTPRIO, RLIMIT_NICE)"
                             : "");
  }
}

void set_parent_death_signal(int sig) {
  if (::prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0) throw_errno("set parent death signal");
}

void bring_loopback_up() {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) throw_errno("socket for loopback setup");
  struct ifreq req {};
  std::strncpy(req.ifr_name, "lo", IFNAMSIZ - 1);
  if (::ioctl(sock.get(), SIOCGIFFLAGS, &req) != 0) throw_errno("read flags of lo");
  if ((req.ifr_flags & IFF_UP) != 0) return;  // a spare namespace comes with it up
  req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP | IFF_RUNNING);
  if (::ioctl(sock.get(), SIOCSIFFLAGS, &req) != 0) throw_errno("bring lo up");
}

namespace {
// openat2(RESOLVE_IN_ROOT) fails with EAGAIN when a rename or a mount anywhere on the
// host raced with a ".." of the path (the kernel cannot then prove it stayed inside);
// openat2(2) says to retry. Without the retry a busy host made mount steps fail at
// random (found by tests/fuzz/fuzz_open_in_root.cpp while other processes renamed
// files). Bounded, so that a host renaming without pause still gets an answer.
long openat2_in_root(int root_fd, const std::string& path, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.mode = (flags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::size_t skip = path.find_first_not_of('/');
  const char* rel = skip == std::string::npos ? "." : path.c_str() + skip;
  long fd = -1;
  for (int attempt = 0; attempt < 128; ++attempt) {
    fd = ::syscall(SYS_openat2, root_fd, rel, &how, sizeof how);
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}
}  // namespace

UniqueFd try_open_in_root(int root_fd, const std::string& path, int flags, int* err) {
  long fd = openat2_in_root(root_fd, path, flags, 0);
  *err = fd < 0 ? errno : 0;
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

UniqueFd try_open_entry(int dir_fd, const std::string& name, int flags, int* err) {
  struct open_how how {};
  how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  long fd = ::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof how);
  *err = fd < 0 ? errno : 0;
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

UniqueFd open_in_root(int root_fd, const std::string& path, int flags, mode_t mode) {
  long fd = openat2_in_root(root_fd, path, flags, mode);
  if (fd < 0) throw_errno("open " + path + " inside the container root");
  return UniqueFd(static_cast<int>(fd));
}

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

void throw_process_creation_error(int err, const std::string& what) {
  if (err != EAGAIN) throw_errno(err, what);
  throw_errno(err, what,
              "this user's process limit (RLIMIT_NPROC, ulimit -u) is reached: raise it or "
              "end some of the user's processes");
}

long raw_clone3(unsigned long long flags) noexcept {
  struct clone_args args {};
  args.flags = flags;
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  return pid < 0 ? -errno : pid;
}

CloneResult clone_with_pidfd(unsigned long long flags, int exit_signal) {
  int pidfd = -1;
  struct clone_args args {};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
  args.exit_signal = static_cast<unsigned long long>(exit_signal);
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) throw_process_creation_error(errno, "clone3 into new namespaces");
  CloneResult result;
  result.pid = static_cast<pid_t>(pid);
  if (pid > 0) result.pidfd.reset(pidfd);
  return result;
}

UniqueFd pidfd_open(pid_t pid) {
  long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) throw_errno("pidfd_open " + std::to_string(pid));
  return UniqueFd(static_cast<int>(fd));
}

bool pidfd_send_signal(int pidfd, int sig) {
  if (::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0) return true;
  if (errno == ESRCH) return false;
  throw_errno("send signal " + std::to_string(sig));
}

namespace {
int shell_status(const siginfo_t& info) {
  if (info.si_code == CLD_EXITED) return info.si_status;
  return 128 + info.si_status;  // CLD_KILLED / CLD_DUMPED
}
}  // namespace

int wait_pidfd(int pidfd) {
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
    if (errno != EINTR) throw_errno("wait for container process");
  }
  return shell_status(info);
}

void wait_pidfd_exit(int pidfd) {
  struct pollfd p {
    pidfd, POLLIN, 0
  };
  while (::poll(&p, 1, -1) < 0) {
    if (errno != EINTR) throw_errno("wait for the container process to exit");
  }
}

int try_wait_pidfd(int pidfd) {
  siginfo_t info{};
  if (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &info,
               WEXITED | WNOHANG) != 0) {
    throw_errno("wait for container process");
  }
  if (info.si_pid == 0) return -1;
  return shell_status(info);
}

void setns_pidfd(int pidfd, int nstypes, const std::string& what) {
  if (::setns(pidfd, nstypes) != 0) throw_errno("join namespaces of " + what);
}

int namespace_type(int fd) {
  int type = ::ioctl(fd, NS_GET_NSTYPE);
  return type < 0 ? 0 : type;
}

int setns_fd(int fd, int nstype) noexcept {
  return ::setns(fd, nstype) == 0 ? 0 : errno;
}

UniqueFd memfd_create_executable(const std::string& name) {
#ifndef MFD_EXEC
  constexpr unsigned kMfdExec = 0x0010U;  // linux/memfd.h, 6.3
#else
  constexpr unsigned kMfdExec = MFD_EXEC;
#endif
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  int fd = ::memfd_create(name.c_str(), flags | kMfdExec);
  if (fd < 0 && errno == EINVAL) fd = ::memfd_create(name.c_str(), flags);
  if (fd < 0) {
    throw_errno(
        "memfd_create " + name,
        errno == EACCES ? "vm.memfd_noexec=2 forbids executable memfds; set it to 0 or 1" : "");
  }
  return UniqueFd(fd);
}

int file_seals(int fd) {
  int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 && errno == EINVAL) return -1;
  if (seals < 0) throw_errno("read the seals of fd " + std::to_string(fd));
  return seals;
}

void add_seals(int fd, int seals) {
  if (::fcntl(fd, F_ADD_SEALS, seals) != 0) throw_errno("seal fd " + std::to_string(fd));
}

void copy_file_contents(int from, int to, std::size_t count, const std::string& what) {
  while (count > 0) {
    ssize_t n = ::sendfile(to, from, nullptr, count);
    if (n == 0) throw Error("copy " + what + ": the file ended early", EIO);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("copy " + what);
    count -= static_cast<std::size_t>(n);
  }
}

void execve_fd(int fd, const std::vector<std::string>& argv, const std::vector<std::string>& envp,
               const std::string& what) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const auto& e : envp) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  ::syscall(SYS_execveat, fd, "", args.data(), env.data(), AT_EMPTY_PATH);
  throw_errno("execute " + what);
}

void set_dumpable(bool dumpable) {
  if (::prctl(PR_SET_DUMPABLE, dumpable ? 1 : 0, 0, 0, 0) != 0) throw_errno("set dumpable");
}

bool kernel_runs_x32_syscalls() {
#if defined(__x86_64__)
  constexpr long x32_syscall_bit = 0x40000000;
  return ::syscall(x32_syscall_bit | SYS_getpid) >= 0;
#else
  return false;
#endif
}

unsigned long long process_start_time(pid_t pid) {
  return process_stat(pid).start_time;
}

ProcessStat process_stat(pid_t pid) {
  // Gone (or going: a read of a dying process fails with ESRCH) reads as '?'.
  const std::string content = read_file("/proc/" + std::to_string(pid) + "/stat").value_or("");
  ProcessStat result;
  if (content.empty()) return result;
  // The command name (field 2) may contain spaces and parentheses: parse after the last ')'.
  std::size_t close = content.rfind(')');
  if (close == std::string::npos) return result;
  std::istringstream fields(content.substr(close + 2));
  std::string field;
  // Fields after the name start at 3 (state); starttime is field 22.
  for (int index = 3; index <= 22 && fields >> field; ++index) {
    if (index == 3) result.state = field.empty() ? '?' : field[0];
    if (index == 22) result.start_time = std::stoull(field);
  }
  return result;
}

void become_user(const std::string& name, uid_t uid, gid_t gid) {
  // Groups first: after setresuid we could no longer change them.
  const std::vector<gid_t> groups = groups_of_user(name, gid);
  if (::setgroups(groups.size(), groups.data()) != 0) throw_errno("set the groups of " + name);
  if (::setresgid(gid, gid, gid) != 0) throw_errno("setresgid " + std::to_string(gid));
  if (::setresuid(uid, uid, uid) != 0) throw_errno("setresuid " + std::to_string(uid));
}

std::string kernel_version() {
  struct utsname u {};
  if (::uname(&u) != 0) throw_errno("uname");
  return std::string(u.release) + " " + u.version;
}

}  // namespace mrun::sys
