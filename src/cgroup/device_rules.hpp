// The device cgroup allow-list as data: parsing policy/devices.conf and OCI
// linux.resources.devices, and planning the rules a container's filter gets. Pure (no
// I/O), unit tested; src/cgroup/device_filter.cpp loads the result into the BPF
// program, and mrun-gpu-helper(8) compiles the same default set in.
//
// A rule is what cgroup v1's devices.allow took: TYPE MAJOR:MINOR ACCESS, with type
// a (any), b or c, '*' for any major or minor, and ACCESS any of r, w, m. The filter
// allows a device access when some rule matches its type and numbers and covers every
// access asked for (opening O_RDWR needs both r and w); anything else is EPERM.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mrun::cgroup {

// The values of the BPF program's map (src/cgroup/device_filter.bpf.c): the kernel's
// BPF_DEVCG_DEV_* and BPF_DEVCG_ACC_* numbers.
enum class DeviceType : std::uint32_t { any = 0, block = 1, character = 2 };
inline constexpr std::uint32_t access_mknod = 1;
inline constexpr std::uint32_t access_read = 2;
inline constexpr std::uint32_t access_write = 4;
inline constexpr std::uint32_t any_number = 0xffffffffu;
// Entries of the program's map (MAX_RULES there).
inline constexpr std::size_t max_device_rules = 64;

struct DeviceRule {
  DeviceType type = DeviceType::any;
  std::uint32_t major = any_number;
  std::uint32_t minor = any_number;
  std::uint32_t access = 0;  // BPF_DEVCG_ACC_* bits; never 0 in a plan (0 ends the map)
  bool operator==(const DeviceRule&) const = default;
};

// "rwm" -> bits; std::nullopt when not one or more of r, w, m (each at most once).
std::optional<std::uint32_t> parse_access(const std::string& text);
std::string access_string(std::uint32_t access);
// "c 1:3 rwm", as in devices.conf.
std::string to_string(const DeviceRule& rule);

// One rule a line, '#' starts a comment. Throws mrun::Error naming SOURCE:LINE.
std::vector<DeviceRule> parse_device_rules(const std::string& text, const std::string& source);

// The built-in default set (policy/devices.conf, compiled in).
std::vector<DeviceRule> default_device_rules();

// One linux.resources.devices entry of an OCI config.json.
struct OciDeviceRule {
  bool allow = false;
  std::string type;                          // "a", "b", "c" or empty (all)
  std::optional<std::int64_t> major, minor;  // absent or -1: any
  std::string access;                        // empty: rwm
};
// The common runc/podman shape: a deny-all first (mrun starts from deny anyway), then
// allow entries. Any other deny throws "not supported". Returns the allow rules.
std::vector<DeviceRule> rules_from_oci(const std::vector<OciDeviceRule>& entries);

// A node passed with --device or --gpu, as the host has it.
struct AllowedNode {
  DeviceType type = DeviceType::character;
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::string access = "rw";  // rwm letters
};

struct FilterInput {
  std::vector<DeviceRule> defaults;  // normally default_device_rules()
  std::vector<AllowedNode> nodes;    // --device, --gpu
  std::vector<DeviceRule> extra;     // ContainerConfig::device_rules (OCI)
  bool privileged = false;           // --privileged: every device, as podman
};

// The rules in map order. Throws mrun::Error when they exceed max_device_rules.
std::vector<DeviceRule> plan_device_rules(const FilterInput& input);

}  // namespace mrun::cgroup
