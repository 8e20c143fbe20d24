// Starting the user-mode network of one container. The launcher calls one of these
// after the container's id maps are written and before it lets the container go on,
// so the command is exec'd only once its network is up.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "net/helper_process.hpp"
#include "net/publish_spec.hpp"

namespace mrun::net {

struct NetworkRequest {
  pid_t container_pid = -1;  // its network (and, rootless, user) namespace is the target
  bool rootless = true;      // the target netns is owned by the container's user namespace
  std::string state_dir;     // logs and the API socket live here
  std::vector<PublishSpec> publish;
  bool allow_host_loopback = false;
  std::string path_var;  // PATH to find the helper in
  Logger log;
  int ready_timeout_ms = 10000;
};

// slirp4netns --configure --mtu=65520 --disable-host-loopback --enable-sandbox
// --enable-seccomp, ready fd, exit fd, ports published through its API socket.
std::unique_ptr<HelperProcess> start_slirp4netns(const NetworkRequest& request);

// pasta with the same addresses as slirp4netns (10.0.2.100/24, gateway 10.0.2.2,
// DNS 10.0.2.3 forwarded), IPv4 only, no port forwarded unless published.
std::unique_ptr<HelperProcess> start_pasta(const NetworkRequest& request);
// Its command line (pure; tested). `netns_fd` >= 0: join that network namespace
// (rootful: pasta cannot open /proc/PID/ns/* itself once it has isolated itself);
// -1: join the user and network namespaces of request.container_pid (rootless).
std::vector<std::string> pasta_arguments(const NetworkRequest& request, const std::string& program,
                                         const std::string& pid_file, int netns_fd);

// Why binding `spec` on the host fails, if it does ("" when it can be bound now):
// turns the helpers' vague "failed" into "port 8080 is already in use".
std::string explain_bind_failure(const PublishSpec& spec);

// What slirp4netns's add_hostfwd API request looks like for `spec` (pure; tested).
std::string add_hostfwd_request(const PublishSpec& spec);

}  // namespace mrun::net
