// A network helper (slirp4netns, pasta) owned by mrun: started for one container,
// stopped when it exits, never orphaned. Destroying the object stops the helper, so
// every error path of the launcher tears the network down without extra code.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "base/log.hpp"
#include "base/unique_fd.hpp"
#include "net/attached_network.hpp"
#include "sys/spawn.hpp"

namespace mrun::net {

class HelperProcess final : public AttachedNetwork {
 public:
  // `exit_fd`: the write end of slirp4netns's --exit-fd pipe (closing it asks the helper
  // to quit); invalid for helpers that are stopped with SIGTERM.
  HelperProcess(std::string name, sys::SpawnedProcess process, std::string log_path,
                UniqueFd exit_fd);
  ~HelperProcess() override;
  HelperProcess(const HelperProcess&) = delete;
  HelperProcess& operator=(const HelperProcess&) = delete;

  const std::string& name() const noexcept { return name_; }
  pid_t pid() const noexcept { return process_.pid; }
  int pidfd() const noexcept { return process_.pidfd.get(); }
  const std::string& log_path() const noexcept { return log_path_; }

  // While the container runs: a thread waits for the helper; if it dies first, it is
  // reaped at once (no zombie) and mrun says so on stderr, since the container has
  // silently lost its network otherwise.
  void watch(const Logger& log) override;
  // Asks the helper to quit (exit fd, else SIGKILL), SIGKILLs it after a grace period,
  // and reaps it. Idempotent; never throws.
  void stop() noexcept override;

  // The helper's log without its noise, last lines only: for error messages.
  std::string log_tail() const;

 private:
  void reap_locked() noexcept;

  std::string name_;
  sys::SpawnedProcess process_;
  std::string log_path_;
  UniqueFd exit_fd_;
  std::mutex mutex_;  // guards reaped_ and the reaping itself
  bool reaped_ = false;
  int status_ = 0;
  std::thread watcher_;
  UniqueFd wake_;  // eventfd: tells the watcher to stop
  std::atomic<bool> stopping_{false};
};

// Waits until `ready` is readable (the helper is configured) or the helper exits.
// Returns true when ready; false when the helper exited first. Throws on timeout.
bool wait_ready(const HelperProcess& helper, int ready_fd, int timeout_ms);

// Clears FD_CLOEXEC so that `fd` is inherited over exec (in a spawned child only).
void inherit_fd(int fd);

}  // namespace mrun::net
