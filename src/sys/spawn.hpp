// Running helper programs (newuidmap, fuse-overlayfs, ...) from the parent.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.hpp"

namespace mrun::sys {

struct ProgramResult {
  int status = 0;      // exit code, or 128+signal
  std::string output;  // stdout and stderr, merged
};

// Runs argv[0] (searched in PATH) to completion, capturing its output.
ProgramResult run_program(const std::vector<std::string>& argv);
// Runs independent programs at the same time (newuidmap and newgidmap: each is a
// setuid exec, and running them side by side takes one off every container start).
std::vector<ProgramResult> run_programs(const std::vector<std::vector<std::string>>& argvs);

struct SpawnOptions {
  // Runs in the child between fork and exec (single-threaded parent: safe). Throwing
  // reports the error to the parent through the exec-status pipe.
  std::function<void()> before_exec;
  int stdin_fd = -1;     // -1: inherit
  int stdout_fd = -1;    // -1: inherit
  int stderr_fd = -1;    // -1: inherit
  int death_signal = 0;  // PR_SET_PDEATHSIG in the child: it dies with us
  // The program's whole environment ("KEY=VALUE"); unset: ours. argv[0] is still
  // searched in our PATH.
  std::optional<std::vector<std::string>> env;
};

struct SpawnedProcess {
  pid_t pid = -1;
  UniqueFd pidfd;
};

// A long-running helper's output (fuse-overlayfs, slirp4netns, pasta): `log_path` made
// anew (0600, truncated) and set as the helper's stdout and stderr in `options`. The
// returned descriptor must stay open until spawn_program returns; the helper keeps its
// own.
UniqueFd log_output_to(const std::string& log_path, SpawnOptions& options);

// Starts argv[0] without waiting for it. Exec failure (or a before_exec error) is
// reported synchronously as an Error.
SpawnedProcess spawn_program(const std::vector<std::string>& argv, const SpawnOptions& options);

// The same with spawn options (their stdout_fd and stderr_fd are replaced by the capture).
ProgramResult run_program(const std::vector<std::string>& argv, SpawnOptions options);

}  // namespace mrun::sys
