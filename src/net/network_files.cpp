#include "net/network_files.hpp"

#include "base/strings.hpp"
#include "sys/fs.hpp"

namespace mrun::net {

namespace {
bool loopback_server(std::string_view address) {
  return address.starts_with("127.") || address == "::1";
}
}  // namespace

std::string render_resolv_conf(const NetworkFilesInput& input) {
  // The resolver slirp4netns (and pasta, with --dns-forward) answers on inside the
  // user-mode network; it forwards to the host's resolver.
  if (!input.host_resolv_conf) return std::string("nameserver ") + dns_address + "\n";
  // A bridge routes to the host's servers, except those on the host's loopback
  // (systemd-resolved's 127.0.0.53, a local dnsmasq): from the container that is its
  // own loopback. podman drops them the same way.
  std::string text;
  std::size_t servers = 0;
  for (const auto& raw : split(*input.host_resolv_conf, '\n')) {
    std::string_view line = trim(raw);
    if (line.starts_with("nameserver")) {
      std::string_view address = trim(line.substr(10));
      if (loopback_server(address)) continue;
      ++servers;
    } else if (!line.starts_with("search") && !line.starts_with("options") &&
               !line.starts_with("domain")) {
      continue;
    }
    text += std::string(line) + "\n";
  }
  if (servers == 0) {
    text += "# the host's resolvers are all on its loopback, which the bridge does not reach\n";
  }
  return text;
}

std::string render_hosts(const NetworkFilesInput& input) {
  std::string text =
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n";
  text += input.address + "\t" + input.hostname + "\n";
  // Only when the gateway really leads to the host's loopback is the name useful.
  if (input.allow_host_loopback) {
    text += std::string(gateway_address) + "\thost.containers.internal\n";
  }
  return text;
}

NetworkFiles write_network_files(const std::string& dir, const NetworkFilesInput& input) {
  NetworkFiles files{dir + "/resolv.conf", dir + "/hosts"};
  sys::write_file_atomic(files.resolv_conf, render_resolv_conf(input), 0644);
  sys::write_file_atomic(files.hosts, render_hosts(input), 0644);
  return files;
}

}  // namespace mrun::net
