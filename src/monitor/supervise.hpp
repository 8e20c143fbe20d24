// mrun's side while the container runs: forward signals to it, relay the pty, and
// return its exit status (the command's code, or 128+N after signal N).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include "base/unique_fd.hpp"

namespace mrun::runtime {

// Signals mrun takes over from before clone until the container is gone. Blocking them
// first means one that arrives during setup is forwarded afterwards, never lost, and
// never kills mrun in the middle of building the container.
sigset_t forwarded_signals();

class SignalBlock {
 public:
  SignalBlock();
  ~SignalBlock();
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

 private:
  sigset_t previous_;
};

// Copies the caller's terminal size to the pty.
void copy_window_size(int pty_master);

// Relays signals (and the pty, if any) until the process exits; returns its exit status.
// With reap false the process is not our child (OCI create clones it with CLONE_PARENT
// so that the caller's subreaper reaps it): its exit is seen on the pidfd, its status
// is the reaper's, and the result is exit_status_unknown.
inline constexpr int exit_status_unknown = -1;
int supervise(int child_pidfd, UniqueFd pty_master, bool reap = true);

}  // namespace mrun::runtime
