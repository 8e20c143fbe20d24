#include "init/reaper.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace mrun::runtime {

void run_reaper(pid_t command, const ContainerEnd& sync, const UniqueFd& parent_pidfd,
                bool die_with_parent) {
  // The command reports its own exec result on the sync socket; our copy must not keep
  // it open, or mrun would wait for an EOF that never comes.
  ::close(sync.fd());
  if (die_with_parent) ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  struct pollfd parent {
    parent_pidfd.get(), POLLIN, 0
  };
  if (::poll(&parent, 1, 0) > 0) ::_exit(125);
  ::close(parent_pidfd.get());

  // Signals were blocked by mrun before clone and stay blocked here: we take them from
  // a signalfd instead of handlers, so none is lost between checks.
  sigset_t all;
  sigfillset(&all);
  int sfd = ::signalfd(-1, &all, SFD_CLOEXEC);
  if (sfd < 0) ::_exit(125);

  int status_of_command = -1;
  while (true) {
    struct signalfd_siginfo info {};
    ssize_t n = ::read(sfd, &info, sizeof info);
    if (n != sizeof info) {
      if (n < 0 && errno == EINTR) continue;
      ::_exit(125);
    }
    if (info.ssi_signo != SIGCHLD) {
      ::kill(command, static_cast<int>(info.ssi_signo));
      continue;
    }
    int wstatus = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
      if (pid == command) {
        status_of_command = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
      }
    }
    // When the command is gone we exit; the kernel then kills what is left in the PID
    // namespace, as it would had the command itself been PID 1.
    if (status_of_command >= 0) ::_exit(status_of_command);
  }
}

}  // namespace mrun::runtime
