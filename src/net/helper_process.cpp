#include "net/helper_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <chrono>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"

namespace mrun::net {

HelperProcess::HelperProcess(std::string name, sys::SpawnedProcess process, std::string log_path,
                             UniqueFd exit_fd)
    : name_(std::move(name)),
      process_(std::move(process)),
      log_path_(std::move(log_path)),
      exit_fd_(std::move(exit_fd)) {}

HelperProcess::~HelperProcess() {
  stop();
}

void HelperProcess::reap_locked() noexcept {
  if (reaped_) return;
  try {
    status_ = sys::wait_pidfd(process_.pidfd.get());
  } catch (const Error&) {
    status_ = -1;
  }
  reaped_ = true;
}

void HelperProcess::watch(const Logger& log) {
  if (watcher_.joinable()) return;
  wake_ = UniqueFd(::eventfd(0, EFD_CLOEXEC));
  if (!wake_) throw_errno("eventfd for watching " + name_);
  watcher_ = std::thread([this, log] {
    struct pollfd fds[2] = {{process_.pidfd.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    while (::poll(fds, 2, -1) < 0) {
      if (errno != EINTR) return;
    }
    if (stopping_ || !(fds[0].revents & POLLIN)) return;
    std::lock_guard lock(mutex_);
    if (stopping_ || reaped_) return;
    reap_locked();
    std::string tail = log_tail();
    log.error(name_ + " (pid " + std::to_string(process_.pid) + ") exited with status " +
              std::to_string(status_) +
              " while the container runs: the container has no network any more" +
              (tail.empty() ? "" : " (" + tail + ")"));
  });
}

void HelperProcess::stop() noexcept {
  stopping_ = true;
  if (watcher_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof one);
    watcher_.join();
  }
  std::lock_guard lock(mutex_);
  if (reaped_ || !process_.pidfd) return;
  // slirp4netns quits on EOF of its exit fd (and unlinks its API socket). pasta has no
  // such fd, and 0.0~git20230309 lets SIGTERM wait for the grace period below (2 s per
  // container exit, measured); it keeps no state worth a clean exit, so it gets SIGKILL.
  if (exit_fd_) {
    exit_fd_.reset();
  } else {
    sys::pidfd_send_signal(process_.pidfd.get(), SIGKILL);
  }
  struct pollfd p {
    process_.pidfd.get(), POLLIN, 0
  };
  if (::poll(&p, 1, 2000) <= 0) sys::pidfd_send_signal(process_.pidfd.get(), SIGKILL);
  reap_locked();
}

std::string HelperProcess::log_tail() const {
  auto text = sys::read_file(log_path_);
  if (!text) return {};
  std::vector<std::string> kept;
  for (const auto& raw : split(*text, '\n')) {
    std::string line(trim(raw));
    // pasta writes one "Failed to send N bytes to syslog" per line when there is no
    // syslog; slirp4netns chats about fds. Neither helps the user.
    if (line.empty() || starts_with(line, "Failed to send") || starts_with(line, "sent tapfd") ||
        starts_with(line, "received tapfd") || starts_with(line, "WARNING: Support for seccomp")) {
      continue;
    }
    kept.push_back(line);
  }
  if (kept.size() > 3) kept.erase(kept.begin(), kept.end() - 3);
  return join(kept, "; ");
}

bool wait_ready(const HelperProcess& helper, int ready_fd, int timeout_ms) {
  using namespace std::chrono;
  auto deadline = steady_clock::now() + milliseconds(timeout_ms);
  while (true) {
    auto left = duration_cast<milliseconds>(deadline - steady_clock::now()).count();
    if (left <= 0) {
      throw Error(helper.name() + " did not set up the network within " +
                      std::to_string(timeout_ms / 1000) + "s",
                  ETIMEDOUT, "--debug shows its command line");
    }
    struct pollfd fds[2] = {{ready_fd, POLLIN, 0}, {helper.pidfd(), POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("wait for " + helper.name());
    if (fds[0].revents & POLLIN) {
      char c = 0;
      // slirp4netns writes "1"; EOF means it closed the fd without being ready.
      return ::read(ready_fd, &c, 1) == 1;
    }
    if (fds[0].revents & (POLLHUP | POLLERR)) return false;
    if (fds[1].revents & POLLIN) return false;
  }
}

void inherit_fd(int fd) {
  if (::fcntl(fd, F_SETFD, 0) != 0) throw_errno("pass fd " + std::to_string(fd) + " on");
}

}  // namespace mrun::net
