// What the user asked for, as typed data. The CLI fills it; the launcher consumes it.
// (The OCI config.json reader will produce the same struct: one path, not two.)
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace mrun::runtime {

enum class OverlayMode { automatic, native, fuse, none };
enum class UsernsMode { automatic, single };
enum class NetworkMode { none, host };

struct Volume {
  std::string source;       // host path, absolute
  std::string destination;  // container path, absolute
  bool read_only = false;
};

struct UserSpec {
  uid_t uid = 0;
  gid_t gid = 0;
};

struct ContainerConfig {
  std::string name;
  std::string rootfs;             // absolute; the lower layer, never written (except overlay=none)
  std::vector<std::string> args;  // the command
  std::vector<std::string> env;   // KEY=VALUE, final
  std::string workdir = "/";
  UserSpec user;
  std::string hostname;
  std::vector<Volume> volumes;
  bool read_only = false;
  OverlayMode overlay = OverlayMode::automatic;
  UsernsMode userns = UsernsMode::automatic;
  NetworkMode network = NetworkMode::none;
  bool init = false;
  bool tty = false;
  bool detach = false;
  bool remove_on_exit = false;
};

std::string to_string(OverlayMode mode);
std::optional<OverlayMode> parse_overlay_mode(const std::string& text);
std::string to_string(NetworkMode mode);
std::optional<NetworkMode> parse_network_mode(const std::string& text);

// Checks that do not touch the system: name syntax, absolute paths, ...
// Throws mrun::Error naming the field and the fix.
void validate(const ContainerConfig& config);
bool valid_container_name(const std::string& name);

}  // namespace mrun::runtime
