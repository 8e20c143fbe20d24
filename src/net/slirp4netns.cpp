// slirp4netns for one container: started by mrun in the parent, for the container's
// network namespace, and stopped (exit fd) when the container exits.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "net/network.hpp"
#include "net/network_files.hpp"
#include "sys/fs.hpp"

namespace mrun::net {

namespace {

std::pair<UniqueFd, UniqueFd> make_pipe(const std::string& what) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe for " + what);
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// One request per connection: slirp4netns reads until EOF, answers, closes.
std::string api_call(const std::string& socket_path, const std::string& request) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("socket for the slirp4netns API");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("connect to the slirp4netns API socket " + socket_path);
  }
  std::size_t sent = 0;
  while (sent < request.size()) {
    ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("send to the slirp4netns API socket");
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd.get(), SHUT_WR);
  return sys::read_all(fd.get());
}

void publish_port(const std::string& socket_path, const PublishSpec& spec) {
  std::string reply = api_call(socket_path, add_hostfwd_request(spec));
  nlohmann::json answer = nlohmann::json::parse(reply, nullptr, false);
  if (!answer.is_discarded() && answer.is_object() && answer.contains("return")) return;
  std::string why = explain_bind_failure(spec);
  std::string said = answer.is_object() && answer.contains("error")
                         ? answer["error"].value("desc", reply)
                         : std::string(trim(reply));
  if (why.empty()) why = "slirp4netns refused it: " + said;
  throw Error("publish " + to_string(spec) + ": " + why, 0,
              "choose another host port, or free this one");
}

}  // namespace

std::string add_hostfwd_request(const PublishSpec& spec) {
  nlohmann::json request = {{"execute", "add_hostfwd"},
                            {"arguments",
                             {{"proto", to_string(spec.protocol)},
                              {"host_addr", spec.host_ip.empty() ? "0.0.0.0" : spec.host_ip},
                              {"host_port", spec.host_port},
                              {"guest_addr", container_address},
                              {"guest_port", spec.container_port}}}};
  return request.dump();
}

std::string explain_bind_failure(const PublishSpec& spec) {
  int type = spec.protocol == Protocol::udp ? SOCK_DGRAM : SOCK_STREAM;
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  if (!fd) return {};
  // The helpers listen with SO_REUSEADDR, so a TIME_WAIT leftover is not "in use".
  int one = 1;
  if (type == SOCK_STREAM) ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(spec.host_port);
  if (::inet_pton(AF_INET, spec.host_ip.empty() ? "0.0.0.0" : spec.host_ip.c_str(),
                  &addr.sin_addr) != 1) {
    return "\"" + spec.host_ip + "\" is not an IPv4 address";
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return {};
  int err = errno;
  std::string port = "host port " + std::to_string(spec.host_port) + "/" + to_string(spec.protocol);
  switch (err) {
    case EADDRINUSE: return port + " is already in use";
    case EACCES:
      return port + " is privileged (below net.ipv4.ip_unprivileged_port_start) for this user";
    case EADDRNOTAVAIL: return "address " + spec.host_ip + " is not an address of this host";
    default: return port + " cannot be bound: " + std::strerror(err);
  }
}

std::unique_ptr<HelperProcess> start_slirp4netns(const NetworkRequest& request) {
  std::string program = sys::find_in_path("slirp4netns", request.path_var);
  if (program.empty()) {
    throw Error("slirp4netns not found in PATH", ENOENT,
                "install it (apt-get install slirp4netns), or use --network=pasta or "
                "--network=none");
  }
  const std::string log_path = request.state_dir + "/slirp4netns.log";
  const std::string socket_path = request.state_dir + "/slirp4netns.sock";
  if (!request.publish.empty() && socket_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    throw Error("slirp4netns API socket path " + socket_path + " is too long for a unix socket",
                ENAMETOOLONG, "use a shorter --name or --root");
  }
  auto [ready_read, ready_write] = make_pipe("the slirp4netns ready fd");
  auto [exit_read, exit_write] = make_pipe("the slirp4netns exit fd");

  std::vector<std::string> argv{program,
                                "--configure",
                                "--mtu=" + std::to_string(mtu),
                                "--enable-sandbox",
                                "--enable-seccomp",
                                "--ready-fd=" + std::to_string(ready_write.get()),
                                "--exit-fd=" + std::to_string(exit_read.get())};
  if (!request.allow_host_loopback) argv.emplace_back("--disable-host-loopback");
  if (!request.publish.empty()) argv.push_back("--api-socket=" + socket_path);
  // PID mode: slirp4netns joins /proc/PID/ns/net, and the owning user namespace too.
  argv.push_back(std::to_string(request.container_pid));
  argv.emplace_back(interface_name);
  request.log.debug("network: " + join(argv, " "));

  sys::SpawnOptions options;
  UniqueFd log = sys::log_output_to(log_path, options);
  // The exit fd is the clean way out (slirp4netns removes its socket); the
  // parent-death signal covers an exit fd that leaked somewhere it stays open.
  options.death_signal = SIGKILL;
  int ready_fd = ready_write.get(), exit_fd = exit_read.get();
  options.before_exec = [ready_fd, exit_fd] {
    inherit_fd(ready_fd);
    inherit_fd(exit_fd);
  };
  auto helper = std::make_unique<HelperProcess>("slirp4netns", sys::spawn_program(argv, options),
                                                log_path, std::move(exit_write));
  ready_write.reset();
  exit_read.reset();

  if (!wait_ready(*helper, ready_read.get(), request.ready_timeout_ms)) {
    std::string tail = helper->log_tail();
    helper->stop();
    throw Error("slirp4netns exited before the network was up" +
                    (tail.empty() ? std::string() : ": " + tail),
                0, "--debug shows its command line");
  }
  for (const auto& spec : request.publish) publish_port(socket_path, spec);
  // Every port is published: the socket is not needed any more. Removing it now means
  // no socket is left behind, even when mrun is SIGKILLed.
  if (!request.publish.empty()) ::unlink(socket_path.c_str());
  return helper;
}

}  // namespace mrun::net
