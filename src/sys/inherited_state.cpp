#include "sys/inherited_state.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace mrun::sys {

void reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Only an ignored signal survives exec (handlers do not), so this undoes exactly what
  // the caller chose for itself; SIGKILL and SIGSTOP cannot be changed at all.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
}

namespace {

// Not close-on-exec: a closed stdio of the caller becomes /dev/null for the container,
// as if the caller had redirected it there (Go's runtime, and so runc, does the same).
void open_missing_stdio() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd < 0) return;  // no /dev/null: nothing better to hold the slot with
    if (null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

}  // namespace

void reset_inherited_state() {
  reset_signals();
  open_missing_stdio();
  ::umask(022);
}

}  // namespace mrun::sys
