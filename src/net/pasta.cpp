// pasta (from passt) for one container: the same addresses as slirp4netns, so the
// container cannot tell them apart, but a faster data path (no TCP/IP stack of its own
// in user space for the host side: it splices sockets).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.hpp"
#include "base/strings.hpp"
#include "net/network.hpp"
#include "net/network_files.hpp"
#include "sys/fs.hpp"

namespace mrun::net {

namespace {

// pasta's -t/-u syntax: [ADDR/]HOSTPORT:CTRPORT.
std::string pasta_port(const PublishSpec& spec) {
  std::string text = spec.host_ip.empty() ? "" : spec.host_ip + "/";
  return text + std::to_string(spec.host_port) + ":" + std::to_string(spec.container_port);
}

// pasta has no ready fd: it writes its PID file (-P) once the namespace side is
// configured (tap device, address, routes), so that file appearing is the signal.
bool wait_pid_file(const HelperProcess& pasta, const std::string& pid_file, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; ++waited) {
    auto text = sys::read_file(pid_file);
    if (text && !trim(*text).empty()) return true;
    struct pollfd p {
      pasta.pidfd(), POLLIN, 0
    };
    if (::poll(&p, 1, 1) > 0) return false;
  }
  throw Error("pasta did not set up the network within " + std::to_string(timeout_ms / 1000) + "s",
              ETIMEDOUT, "--debug shows its command line");
}

}  // namespace

std::vector<std::string> pasta_arguments(const NetworkRequest& request, const std::string& program,
                                         const std::string& pid_file, int netns_fd) {
  std::vector<std::string> argv{program,         "--config-net",
                                "--foreground",  // stay our child: reaped, killed with us
                                "--quiet",
                                "--ipv4-only",  // as slirp4netns: no host IPv6 address copied in
                                "--address",     container_address,
                                "--netmask",     std::to_string(container_prefix),
                                "--gateway",     gateway_address,
                                "--dns-forward", dns_address,
                                "--mtu",         std::to_string(mtu),
                                "--ns-ifname",   interface_name,
                                "--pid",         pid_file};
  // pasta's gateway mapping is what slirp4netns calls host loopback: 10.0.2.2 leads to
  // the host's 127.0.0.1. Off unless asked for, as with slirp4netns.
  if (!request.allow_host_loopback) argv.emplace_back("--no-map-gw");
  // Nothing is forwarded unless published (pasta's default, "auto", would forward
  // every port the container binds), and nothing from the container to the host's
  // loopback ports (-T/-U).
  bool tcp = false, udp = false;
  for (const auto& spec : request.publish) {
    argv.emplace_back(spec.protocol == Protocol::udp ? "--udp-ports" : "--tcp-ports");
    argv.push_back(pasta_port(spec));
    (spec.protocol == Protocol::udp ? udp : tcp) = true;
  }
  if (!tcp) argv.insert(argv.end(), {"--tcp-ports", "none"});
  if (!udp) argv.insert(argv.end(), {"--udp-ports", "none"});
  argv.insert(argv.end(), {"--tcp-ns", "none", "--udp-ns", "none"});
  if (netns_fd >= 0) {
    // Rootful: pasta would drop to "nobody" and could not join a namespace of root's;
    // it isolates itself in a user namespace of its own before joining, where
    // /proc/PID/ns/net is out of its reach, so it gets the namespace as an open fd.
    argv.insert(argv.end(),
                {"--runas", "0:0", "--netns", "/proc/self/fd/" + std::to_string(netns_fd)});
  } else {
    argv.push_back(std::to_string(request.container_pid));
  }
  return argv;
}

std::unique_ptr<HelperProcess> start_pasta(const NetworkRequest& request) {
  std::string program = sys::find_in_path("pasta", request.path_var);
  if (program.empty()) {
    throw Error("pasta not found in PATH", ENOENT,
                "install it (apt-get install passt), or use --network=slirp4netns");
  }
  const std::string log_path = request.state_dir + "/pasta.log";
  const std::string pid_file = request.state_dir + "/pasta.pid";
  ::unlink(pid_file.c_str());
  UniqueFd netns;
  if (!request.rootless) {
    std::string path = "/proc/" + std::to_string(request.container_pid) + "/ns/net";
    netns = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!netns) throw_errno("open the container's network namespace " + path);
  }
  auto argv = pasta_arguments(request, program, pid_file, netns ? netns.get() : -1);
  request.log.debug("network: " + join(argv, " "));

  sys::SpawnOptions options;
  UniqueFd log = sys::log_output_to(log_path, options);
  options.death_signal = SIGKILL;  // pasta has no exit fd: it dies with mrun
  int netns_fd = netns ? netns.get() : -1;
  options.before_exec = [netns_fd] {
    if (netns_fd >= 0) inherit_fd(netns_fd);
  };
  auto helper = std::make_unique<HelperProcess>("pasta", sys::spawn_program(argv, options),
                                                log_path, UniqueFd());
  netns.reset();
  if (!wait_pid_file(*helper, pid_file, request.ready_timeout_ms)) {
    std::string tail = helper->log_tail();
    helper->stop();
    // pasta binds the published ports before it configures anything: say which one.
    for (const auto& spec : request.publish) {
      std::string why = explain_bind_failure(spec);
      if (!why.empty()) {
        throw Error("publish " + to_string(spec) + ": " + why, 0,
                    "choose another host port, or free this one");
      }
    }
    throw Error(
        "pasta exited before the network was up" + (tail.empty() ? std::string() : ": " + tail), 0,
        "--debug shows its command line");
  }
  ::unlink(pid_file.c_str());
  return helper;
}

}  // namespace mrun::net
