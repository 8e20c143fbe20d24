#include "sys/processes.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <sstream>

#include "base/error.hpp"
#include "sys/fs.hpp"
#include "sys/user_db.hpp"

namespace mrun::sys {

void set_parent_death_signal(int sig) {
  if (::prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0) throw_errno("set parent death signal");
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

}  // namespace mrun::sys
