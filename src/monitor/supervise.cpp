#include "monitor/supervise.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "base/error.hpp"
#include "sys/processes.hpp"

namespace mrun::runtime {

sigset_t forwarded_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP,
                  SIGTTIN, SIGTTOU, SIGCHLD, SIGPIPE, SIGALRM}) {
    sigaddset(&set, sig);
  }
  return set;
}

SignalBlock::SignalBlock() {
  sigset_t set = forwarded_signals();
  ::sigprocmask(SIG_BLOCK, &set, &previous_);
}

SignalBlock::~SignalBlock() {
  ::sigprocmask(SIG_SETMASK, &previous_, nullptr);
}

void copy_window_size(int pty_master) {
  struct winsize size {};
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (::ioctl(fd, TIOCGWINSZ, &size) == 0) {
      ::ioctl(pty_master, TIOCSWINSZ, &size);
      return;
    }
  }
}

namespace {
// Puts the caller's terminal in raw mode while the container owns the pty, so keys
// like ^C reach the container's line discipline rather than ours.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (::isatty(fd) && ::tcgetattr(fd, &saved_) == 0) {
      struct termios raw = saved_;
      ::cfmakeraw(&raw);
      if (::tcsetattr(fd, TCSANOW, &raw) == 0) active_ = true;
    }
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  int fd_;
  struct termios saved_ {};
  bool active_ = false;
};

bool write_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        struct pollfd p {
          fd, POLLOUT, 0
        };
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Copies what is readable; false on EOF or error (EIO from a pty whose slave closed).
bool pump(int from, int to) {
  char buf[16384];
  ssize_t n = ::read(from, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  return write_all(to, buf, static_cast<std::size_t>(n));
}

void drain(int master) {
  int flags = ::fcntl(master, F_GETFL);
  ::fcntl(master, F_SETFL, flags | O_NONBLOCK);
  while (pump(master, STDOUT_FILENO)) {
    struct pollfd p {
      master, POLLIN, 0
    };
    if (::poll(&p, 1, 0) <= 0) break;
  }
}
}  // namespace

int supervise(int child_pidfd, UniqueFd pty_master, bool reap) {
  sigset_t set = forwarded_signals();
  UniqueFd sfd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sfd) throw_errno("signalfd");

  std::optional<RawTerminal> raw;
  bool stdin_open = pty_master.valid();
  if (pty_master) raw.emplace(STDIN_FILENO);

  while (true) {
    struct pollfd fds[4];
    nfds_t count = 0;
    fds[count++] = {child_pidfd, POLLIN, 0};
    fds[count++] = {sfd.get(), POLLIN, 0};
    nfds_t master_index = 0;
    nfds_t stdin_index = 0;
    if (pty_master) {
      master_index = count;
      fds[count++] = {pty_master.get(), POLLIN, 0};
      if (stdin_open) {
        stdin_index = count;
        fds[count++] = {STDIN_FILENO, POLLIN, 0};
      }
    }
    if (::poll(fds, count, -1) < 0) {
      if (errno == EINTR) continue;
      throw_errno("poll while the container runs");
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info {};
      while (::read(sfd.get(), &info, sizeof info) == sizeof info) {
        int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGCHLD || sig == SIGPIPE) continue;  // ours (fuse-overlayfs); not forwarded
        if (sig == SIGWINCH) {
          if (pty_master) copy_window_size(pty_master.get());
          continue;
        }
        sys::pidfd_send_signal(child_pidfd, sig);
      }
    }
    if (pty_master && (fds[master_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!pump(pty_master.get(), STDOUT_FILENO)) {
        // The slave side is closed by everyone: only the exit remains to be seen.
        pty_master.reset();
      }
    }
    if (stdin_index != 0 && (fds[stdin_index].revents & (POLLIN | POLLHUP | POLLERR))) {
      if (!pump(STDIN_FILENO, pty_master.get())) stdin_open = false;
    }
    if (fds[0].revents & POLLIN) {
      int status = reap ? sys::wait_pidfd(child_pidfd) : exit_status_unknown;
      if (pty_master) drain(pty_master.get());
      return status;
    }
  }
}

}  // namespace mrun::runtime
