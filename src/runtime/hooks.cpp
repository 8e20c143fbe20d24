#include "runtime/hooks.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/unique_fd.hpp"
#include "sys/processes.hpp"

namespace mrun::runtime {

const std::vector<std::string>& hook_stage_names() {
  static const std::vector<std::string> names{"prestart",       "createRuntime", "createContainer",
                                              "startContainer", "poststart",     "poststop"};
  return names;
}

std::vector<Hook>& hooks_of(Hooks& hooks, const std::string& stage) {
  if (stage == "prestart") return hooks.prestart;
  if (stage == "createRuntime") return hooks.create_runtime;
  if (stage == "createContainer") return hooks.create_container;
  if (stage == "startContainer") return hooks.start_container;
  if (stage == "poststart") return hooks.poststart;
  if (stage == "poststop") return hooks.poststop;
  throw Error("unknown hook stage \"" + stage + "\"", EINVAL);
}
const std::vector<Hook>& hooks_of(const Hooks& hooks, const std::string& stage) {
  return hooks_of(const_cast<Hooks&>(hooks), stage);
}

std::string hooks_to_json(const Hooks& hooks) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& stage : hook_stage_names()) {
    for (const auto& h : hooks_of(hooks, stage)) {
      nlohmann::json one = {{"path", h.path}, {"args", h.args}, {"env", h.env}};
      if (h.timeout) one["timeout"] = *h.timeout;
      j[stage].push_back(one);
    }
  }
  return j.dump();
}

Hooks hooks_from_json(const std::string& text) {
  Hooks hooks;
  auto j = nlohmann::json::parse(text);
  for (const auto& stage : hook_stage_names()) {
    if (!j.contains(stage)) continue;
    for (const auto& one : j[stage]) {
      Hook h;
      h.path = one.at("path").get<std::string>();
      h.args = one.value("args", std::vector<std::string>{});
      h.env = one.value("env", std::vector<std::string>{});
      if (one.contains("timeout")) h.timeout = one["timeout"].get<int>();
      hooks_of(hooks, stage).push_back(h);
    }
  }
  return hooks;
}

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void run_hook(const Hook& hook, const std::string& label, const std::string& state_json) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe for " + label);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::vector<std::string> args =
      hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  auto argv = c_strings(args);
  auto envp = c_strings(hook.env);
  auto child = sys::clone_with_pidfd(0, SIGCHLD);
  if (child.pid == 0) {
    // The state on stdin; stdout and stderr are ours. Signals as a fresh process has them
    // (the launcher blocks the ones it forwards).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(read_end.get(), STDIN_FILENO);
    ::execve(hook.path.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  read_end.reset();
  // A hook that does not read its stdin must not kill us with SIGPIPE.
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);
  [[maybe_unused]] ssize_t n = ::write(write_end.get(), state_json.data(), state_json.size());
  ::sigaction(SIGPIPE, &previous, nullptr);
  write_end.reset();

  struct pollfd p {
    child.pidfd.get(), POLLIN, 0
  };
  int timeout_ms = hook.timeout && *hook.timeout > 0 ? *hook.timeout * 1000 : -1;
  auto start = std::chrono::steady_clock::now();
  int ready;
  while ((ready = ::poll(&p, 1, timeout_ms)) < 0 && errno == EINTR) {
    if (timeout_ms > 0) {
      auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
      timeout_ms = std::max(0, *hook.timeout * 1000 - static_cast<int>(spent));
    }
  }
  if (ready == 0) {
    sys::pidfd_send_signal(child.pidfd.get(), SIGKILL);
    sys::wait_pidfd(child.pidfd.get());
    throw Error(label + ": timed out after " + std::to_string(*hook.timeout) + "s", ETIMEDOUT);
  }
  int status = sys::wait_pidfd(child.pidfd.get());
  if (status == 127) throw Error(label + ": could not be executed (or exited with 127)", ENOENT);
  if (status != 0) throw Error(label + ": exited with status " + std::to_string(status));
}

}  // namespace

void run_hooks(const std::vector<Hook>& hooks, const std::string& stage,
               const std::string& state_json) {
  for (std::size_t i = 0; i < hooks.size(); ++i) {
    run_hook(hooks[i], "hook " + stage + "[" + std::to_string(i) + "] " + hooks[i].path,
             state_json);
  }
}

void run_hooks_warning_on_failure(const std::vector<Hook>& hooks, const std::string& stage,
                                  const std::string& state_json, const Logger& log) {
  for (std::size_t i = 0; i < hooks.size(); ++i) {
    try {
      run_hook(hooks[i], "hook " + stage + "[" + std::to_string(i) + "] " + hooks[i].path,
               state_json);
    } catch (const Error& e) {
      log.warn(e.what());
    }
  }
}

}  // namespace mrun::runtime
