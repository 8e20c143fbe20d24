#include "runtime/config.hpp"

#include "net/cni_bridge.hpp"

#include <sys/random.h>

#include <cerrno>
#include <map>

#include "base/error.hpp"

namespace mrun::runtime {

std::string to_string(OverlayMode mode) {
  switch (mode) {
    case OverlayMode::automatic: return "auto";
    case OverlayMode::native: return "native";
    case OverlayMode::fuse: return "fuse";
    case OverlayMode::none: return "none";
  }
  return "?";
}

std::optional<OverlayMode> parse_overlay_mode(const std::string& text) {
  if (text == "auto") return OverlayMode::automatic;
  if (text == "native") return OverlayMode::native;
  if (text == "fuse") return OverlayMode::fuse;
  if (text == "none") return OverlayMode::none;
  return std::nullopt;
}

std::string to_string(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::none: return "none";
    case NetworkMode::host: return "host";
    case NetworkMode::slirp4netns: return "slirp4netns";
    case NetworkMode::pasta: return "pasta";
    case NetworkMode::bridge: return "bridge";
  }
  return "?";
}

bool mrun_connects_network(NetworkMode mode) {
  return mode == NetworkMode::slirp4netns || mode == NetworkMode::pasta ||
         mode == NetworkMode::bridge;
}

std::optional<NetworkMode> parse_network_mode(const std::string& text) {
  if (text == "none") return NetworkMode::none;
  if (text == "host") return NetworkMode::host;
  if (text == "slirp4netns") return NetworkMode::slirp4netns;
  if (text == "pasta") return NetworkMode::pasta;
  if (text == "bridge") return NetworkMode::bridge;
  return std::nullopt;
}

std::optional<DeviceFilterMode> parse_device_filter_mode(const std::string& text) {
  if (text == "auto") return DeviceFilterMode::automatic;
  if (text == "required") return DeviceFilterMode::required;
  if (text == "off") return DeviceFilterMode::off;
  return std::nullopt;
}

std::string generated_container_name() {
  unsigned char bytes[4];
  if (::getrandom(bytes, sizeof bytes, 0) != sizeof bytes) throw_errno("getrandom");
  static const char* hex = "0123456789abcdef";
  std::string name = "mrun-";
  for (unsigned char b : bytes) {
    name += hex[b >> 4];
    name += hex[b & 15];
  }
  return name;
}

bool valid_container_name(const std::string& name) {
  // podman's rule: [a-zA-Z0-9][a-zA-Z0-9_.-]*; we also cap the length so the name fits
  // in paths and in the 64-byte UTS hostname.
  if (name.empty() || name.size() > 64) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) return false;
  for (char c : name) {
    if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

void check_network_options(NetworkMode mode, bool publishes, bool allow_host_loopback) {
  if (publishes && !mrun_connects_network(mode)) {
    throw Error(
        "--publish needs --network=slirp4netns, pasta or bridge, not --network=" + to_string(mode),
        EINVAL, "drop it, or choose --network=slirp4netns, pasta or bridge");
  }
  // The host's loopback is reached through a user-mode helper's gateway; a bridge's
  // gateway is the host's bridge address, which a host service can listen on instead.
  if (allow_host_loopback && mode != NetworkMode::slirp4netns && mode != NetworkMode::pasta) {
    throw Error(
        "--allow-host-loopback needs --network=slirp4netns or --network=pasta, not "
        "--network=" +
            to_string(mode),
        EINVAL,
        mode == NetworkMode::bridge
            ? "drop it: with --network bridge the host is " + std::string(net::bridge_gateway) +
                  " (the bridge's address)"
            : "drop it, or choose --network=slirp4netns or --network=pasta");
  }
}

void validate(const ContainerConfig& config) {
  if (!valid_container_name(config.name)) {
    throw Error("invalid container name \"" + config.name + "\"", EINVAL,
                "use 1-64 characters from [a-zA-Z0-9_.-], starting with a letter or digit");
  }
  if (config.rootfs.empty() || config.rootfs.front() != '/') {
    throw Error("rootfs path \"" + config.rootfs + "\" must be absolute", EINVAL);
  }
  if (config.process.args.empty() || config.process.args.front().empty()) {
    throw Error("no command to run", EINVAL, "give a command after the rootfs");
  }
  const std::string& cwd = config.process.cwd;
  if (cwd.empty() || cwd.front() != '/') {
    throw Error("working directory \"" + cwd + "\" must be absolute", EINVAL);
  }
  if (config.hostname.size() > 64) {
    throw Error("hostname \"" + config.hostname + "\" is longer than 64 characters", EINVAL);
  }
  check_network_options(config.network, !config.run.publish.empty(),
                        config.run.allow_host_loopback);
  validate_process_limits(config.process);
  // With --console-socket the pty goes to whoever listens there; else nobody would have it.
  if (config.process.terminal && config.run.detach && config.console_socket.empty()) {
    throw Error("--tty cannot be combined with --detach", EINVAL,
                "there is no attach command yet; drop -t or -d, or give --console-socket");
  }
}

}  // namespace mrun::runtime
