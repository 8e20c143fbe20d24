#include "sys/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.hpp"
#include "sys/fs.hpp"
#include "sys/processes.hpp"

namespace mrun::sys {

namespace {
std::vector<char*> to_argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// Child side: report "errno + message" through the CLOEXEC pipe and exit.
[[noreturn]] void report_and_exit(int fd, int err, const std::string& message) {
  std::string payload = std::to_string(err) + ":" + message;
  [[maybe_unused]] ssize_t n = ::write(fd, payload.data(), payload.size());
  ::_exit(127);
}
}  // namespace

UniqueFd log_output_to(const std::string& log_path, SpawnOptions& options) {
  UniqueFd log(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!log) throw_errno("create " + log_path);
  options.stdout_fd = log.get();
  options.stderr_fd = log.get();
  return log;
}

SpawnedProcess spawn_program(const std::vector<std::string>& argv, const SpawnOptions& options) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_errno("pipe for " + argv.at(0));
  UniqueFd status_read(pipe_fds[0]);
  UniqueFd status_write(pipe_fds[1]);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_process_creation_error(errno, "fork for " + argv.at(0));
  if (pid == 0) {
    status_read.reset();
    try {
      if (options.death_signal != 0) {
        set_parent_death_signal(options.death_signal);
        if (::getppid() != parent) ::_exit(127);
      }
      if (options.stdin_fd >= 0 && ::dup2(options.stdin_fd, STDIN_FILENO) < 0) {
        throw_errno("redirect stdin");
      }
      if (options.stdout_fd >= 0 && ::dup2(options.stdout_fd, STDOUT_FILENO) < 0) {
        throw_errno("redirect stdout");
      }
      if (options.stderr_fd >= 0 && ::dup2(options.stderr_fd, STDERR_FILENO) < 0) {
        throw_errno("redirect stderr");
      }
      if (options.before_exec) options.before_exec();
      auto args = to_argv(argv);
      if (options.env) {
        auto env = to_argv(*options.env);
        ::execvpe(args[0], args.data(), env.data());
      } else {
        ::execvp(args[0], args.data());
      }
      report_and_exit(status_write.get(), errno, "execute " + argv[0]);
    } catch (const Error& e) {
      report_and_exit(status_write.get(), e.errno_value(), e.what_failed());
    } catch (const std::exception& e) {
      report_and_exit(status_write.get(), 0, e.what());
    }
  }
  status_write.reset();
  SpawnedProcess child;
  child.pid = pid;
  child.pidfd = pidfd_open(pid);

  std::string report = read_all(status_read.get());
  if (!report.empty()) {
    wait_pidfd(child.pidfd.get());
    auto colon = report.find(':');
    int err = std::atoi(report.substr(0, colon).c_str());
    throw Error(report.substr(colon + 1), err);
  }
  return child;
}

std::vector<ProgramResult> run_programs(const std::vector<std::vector<std::string>>& argvs) {
  struct Running {
    UniqueFd output;
    SpawnedProcess process;
  };
  std::vector<Running> running;
  try {
    for (const auto& argv : argvs) {
      int out_fds[2];
      if (::pipe2(out_fds, O_CLOEXEC) != 0) throw_errno("pipe for " + argv.at(0));
      UniqueFd out_read(out_fds[0]);
      UniqueFd out_write(out_fds[1]);
      SpawnOptions options;
      options.stdout_fd = out_write.get();
      options.stderr_fd = out_write.get();
      SpawnedProcess child = spawn_program(argv, options);
      running.push_back({std::move(out_read), std::move(child)});
    }
  } catch (...) {
    for (auto& r : running) wait_pidfd(r.process.pidfd.get());
    throw;
  }
  std::vector<ProgramResult> results;
  for (auto& r : running) {
    ProgramResult result;
    result.output = read_all(r.output.get());
    result.status = wait_pidfd(r.process.pidfd.get());
    results.push_back(std::move(result));
  }
  return results;
}

ProgramResult run_program(const std::vector<std::string>& argv) {
  return run_programs({argv}).front();
}

ProgramResult run_program(const std::vector<std::string>& argv, SpawnOptions options) {
  int out_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) throw_errno("pipe for " + argv.at(0));
  UniqueFd out_read(out_fds[0]);
  UniqueFd out_write(out_fds[1]);
  options.stdout_fd = out_write.get();
  options.stderr_fd = out_write.get();
  SpawnedProcess child = spawn_program(argv, options);
  out_write.reset();
  ProgramResult result;
  result.output = read_all(out_read.get());
  result.status = wait_pidfd(child.pidfd.get());
  return result;
}

}  // namespace mrun::sys
