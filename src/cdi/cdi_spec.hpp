// Container Device Interface (CDI) specs as typed data: parsing (nlohmann-json), the
// JSON mrun writes, qualified device names ("fakegpu.example/gpu=0") and their
// resolution to container edits. Pure: no file is read here (cdi_registry.hpp does).
//
// The format is the CDI specification's (github.com/cncf-tags/container-device-interface,
// SPEC.md). mrun writes cdiVersion 0.5.0, the newest version the CDI library vendored
// by podman 4.3 (Debian 12) accepts, and reads 0.3.0 to 0.6.0.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace mrun::cdi {

inline constexpr const char* written_version = "0.5.0";

struct DeviceNode {
  std::string path;                      // in the container
  std::optional<std::string> host_path;  // defaults to path
  std::optional<std::string> type;       // "c" (mrun passes character devices only)
  std::optional<std::int64_t> major, minor;
  std::optional<std::string> permissions;  // rwm subset
  std::optional<std::uint32_t> file_mode, uid, gid;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::optional<std::string> type;  // only "bind" (or none) is honoured
  std::vector<std::string> options;
};

struct ContainerEdits {
  std::vector<std::string> env;  // KEY=VALUE
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  nlohmann::json hooks;  // kept to refuse: mrun runs no CDI hooks
  bool empty() const { return env.empty() && device_nodes.empty() && mounts.empty(); }
};

struct Device {
  std::string name;
  ContainerEdits edits;
};

struct Spec {
  std::string version;
  std::string kind;  // vendor/class
  std::vector<Device> devices;
  ContainerEdits edits;  // applied once when any device of this spec is used
  std::string file;      // where it was read from (for messages); empty when generated
};

// Throws mrun::Error (125) "CDI spec FILE: FIELD: what is wrong".
Spec parse_spec(const std::string& text, const std::string& file);
nlohmann::json to_json(const Spec& spec);

// "vendor/class=name", e.g. "fakegpu.example/gpu=0". nullopt when `text` is not
// shaped like one (a host path is not); throws when it is, but a part is invalid.
struct QualifiedName {
  std::string kind;  // vendor/class
  std::string name;
};
std::optional<QualifiedName> parse_qualified_name(const std::string& text);

// The edits the names stand for: each device's, plus its spec's edits once per spec
// (two GPUs of one spec share its libraries). Throws (125) naming the kinds known, or
// the devices of the kind, when a name is not found; refuses CDI hooks and non-bind
// mounts, which mrun cannot apply.
ContainerEdits resolve(const std::vector<Spec>& specs, const std::vector<QualifiedName>& names);

}  // namespace mrun::cdi
