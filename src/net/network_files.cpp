#include "net/network_files.hpp"

#include "sys/fs.hpp"

namespace mrun::net {

std::string render_resolv_conf() {
  // The resolver slirp4netns (and pasta, with --dns-forward) answers on inside the
  // user-mode network; it forwards to the host's resolver.
  return std::string("nameserver ") + dns_address + "\n";
}

std::string render_hosts(const NetworkFilesInput& input) {
  std::string text =
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n";
  text += std::string(container_address) + "\t" + input.hostname + "\n";
  // Only when the gateway really leads to the host's loopback is the name useful.
  if (input.allow_host_loopback) {
    text += std::string(gateway_address) + "\thost.containers.internal\n";
  }
  return text;
}

NetworkFiles write_network_files(const std::string& dir, const NetworkFilesInput& input) {
  NetworkFiles files{dir + "/resolv.conf", dir + "/hosts"};
  sys::write_file_atomic(files.resolv_conf, render_resolv_conf(), 0644);
  sys::write_file_atomic(files.hosts, render_hosts(input), 0644);
  return files;
}

}  // namespace mrun::net
