#include "launch/detach.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iostream>

#include "base/error.hpp"
#include "launch/launcher.hpp"
#include "sys/processes.hpp"

namespace mrun::runtime {

namespace {
void write_report(int fd, const std::string& text) {
  [[maybe_unused]] ssize_t n = ::write(fd, text.data(), text.size());
}

// Monitor: detached from the caller's session and terminal. Its stdout/stderr (and so
// the container's) go to <state dir>/container.log once the name is claimed.
[[noreturn]] void monitor_main(ContainerConfig config, const Context& ctx, int report_fd,
                               bool hold) {
  if (hold) {
    // OCI create: the caller's stdio (an engine's pipes, or its terminal) become the
    // container's, as runc's pass-through; the monitor's own go to container.log. With
    // a terminal the container has the pty instead, and these are not needed.
    for (int i = 0; i < 3 && !config.process.terminal; ++i) {
      config.stdio_fds[static_cast<std::size_t>(i)] =
          ::fcntl(i, F_DUPFD_CLOEXEC, 3 + config.preserve_fds);
    }
  }
  ::setsid();
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  LaunchHooks hooks;
  hooks.on_claimed = [](const std::string& state_dir) {
    std::string log = state_dir + "/container.log";
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) throw_errno("create " + log);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  };
  if (hold) {
    hooks.container_to_callers_reaper = true;
    hooks.on_created = [report_fd](pid_t pid) {
      write_report(report_fd, "0 " + std::to_string(pid));
      ::close(report_fd);
    };
  } else {
    hooks.on_started = [report_fd] {
      write_report(report_fd, "0 started");
      ::close(report_fd);
    };
  }
  try {
    run_container(config, ctx, hooks);
    ::_exit(0);
  } catch (const Error& e) {
    write_report(report_fd, std::to_string(e.exit_status()) + " " + e.what());
  } catch (const std::exception& e) {
    write_report(report_fd, "125 " + std::string(e.what()));
  }
  ::_exit(exit_code::runtime_error);
}

// Starts the monitor and waits for its report: "0 WHAT" once the container is up (or
// held), else "STATUS MESSAGE". Returns WHAT.
std::string start_monitor(const ContainerConfig& config, const Context& ctx, bool hold) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe for the container monitor");
  std::cout.flush();
  pid_t monitor = ::fork();
  if (monitor < 0) sys::throw_process_creation_error(errno, "fork the container monitor");
  if (monitor == 0) {
    ::close(fds[0]);
    monitor_main(config, ctx, fds[1], hold);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  ssize_t n;
  // One read: the report is a single write (under PIPE_BUF, so atomic). Not until EOF:
  // a container held before exec (create) still has the write end open.
  while ((n = ::read(fds[0], buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  if (n > 0) report.assign(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  if (report.empty()) throw Error("the container monitor died during setup");
  auto space = report.find(' ');
  int status = std::atoi(report.substr(0, space).c_str());
  if (status != 0) {
    throw Error(report.substr(space + 1), 0, {}, status);
  }
  return space == std::string::npos ? std::string() : report.substr(space + 1);
}
}  // namespace

int run_detached(const ContainerConfig& config, const Context& ctx) {
  start_monitor(config, ctx, false);
  std::cout << config.name << std::endl;
  return 0;
}

int create_detached(const ContainerConfig& config, const Context& ctx,
                    const std::string& pid_file) {
  std::string pid = start_monitor(config, ctx, true);
  if (!pid_file.empty()) {
    // Written whole and renamed into place: an engine polling for it never reads half.
    std::string tmp = pid_file + ".tmp";
    std::ofstream out(tmp, std::ios::trunc);
    out << pid;
    out.close();
    if (!out || ::rename(tmp.c_str(), pid_file.c_str()) != 0) {
      throw_errno("write pid file " + pid_file);
    }
  }
  return 0;
}

}  // namespace mrun::runtime
