// /etc/resolv.conf and /etc/hosts for a container with a network of its own. They are
// generated into the container's state directory and bind-mounted over the image's
// files (the lower rootfs is never written), as podman does.
#pragma once

#include <optional>
#include <string>

namespace mrun::net {

// The fixed layout of the user-mode network inside the container (slirp4netns's
// defaults; pasta is given the same so that both look alike to the container).
inline constexpr const char* container_address = "10.0.2.100";
inline constexpr int container_prefix = 24;
inline constexpr const char* gateway_address = "10.0.2.2";
inline constexpr const char* dns_address = "10.0.2.3";
inline constexpr int mtu = 65520;
inline constexpr const char* interface_name = "tap0";

struct NetworkFilesInput {
  std::string hostname;
  bool allow_host_loopback = false;         // then host.containers.internal names 10.0.2.2
  std::string address = container_address;  // the container's own (a bridge's lease)
  // --network bridge: the host's resolv.conf, whose servers the container reaches
  // through the bridge; unset: the user-mode network's forwarder (dns_address).
  std::optional<std::string> host_resolv_conf;
};

std::string render_resolv_conf(const NetworkFilesInput& input);
std::string render_hosts(const NetworkFilesInput& input);

struct NetworkFiles {
  std::string resolv_conf;  // host paths of the generated files
  std::string hosts;
};

// Writes both files (mode 0644: any container user may read them) into DIR.
NetworkFiles write_network_files(const std::string& dir, const NetworkFilesInput& input);

}  // namespace mrun::net
