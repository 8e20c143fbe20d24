#include "init/seccomp_agent.hpp"

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/oci_version.hpp"
#include "sys/fd_passing.hpp"

namespace mrun::runtime {

void hand_over_seccomp_listener(const ContainerEnd& sync, UniqueFd listener) {
  // The one syscall between the filter and the agent (see the header).
  int err = sync.send_fd_only(ToMonitor::seccomp_listener, listener.get());
  if (err != 0) {
    throw Error("hand the seccomp notification listener to mrun", err,
                std::string("the profile must allow ") + security::seccomp_notify_handover_syscall);
  }
  listener.reset();
  sync.expect(ToContainer::seccomp_listener_taken);
}

Error listener_never_came(const security::CompiledSeccomp& filter) {
  return Error(
      "the container's process ended before handing its seccomp notification listener "
      "to mrun for listenerPath " +
          filter.listener_path,
      EPIPE, std::string("the profile must allow ") + security::seccomp_notify_handover_syscall);
}

std::string container_process_state_json(pid_t pid, const std::string& metadata,
                                         const std::string& state_json) {
  nlohmann::json j = {
      {"ociVersion", oci_version},
      {"fds", {"seccompFd"}},
      {"pid", pid},
  };
  if (!metadata.empty()) j["metadata"] = metadata;
  j["state"] = nlohmann::json::parse(state_json);
  return j.dump();
}

void pass_listener_to_agent(const MonitorEnd& sync, const SyncMessage<ToMonitor>& message,
                            const security::CompiledSeccomp& filter,
                            const std::string& state_json) {
  if (!message.fd) throw Error("seccomp_listener without a listener", EPROTO);
  const std::string& path = filter.listener_path;
  const std::string what = "seccomp listenerPath " + path;
  try {
    UniqueFd agent = sys::connect_unix_socket(path);
    sys::send_with_fd(
        agent.get(),
        container_process_state_json(message.sender, filter.listener_metadata, state_json),
        message.fd.get(), "send the seccomp listener to " + path);
    // Closed at once: one container process state per connection (the runtime spec).
  } catch (const Error& e) {
    throw Error(what + ": " + e.what_failed(), e.errno_value(),
                "start the seccomp agent so that it listens there first, or fix the profile's "
                "listenerPath");
  }
  sync.send(ToContainer::seccomp_listener_taken);
}

}  // namespace mrun::runtime
